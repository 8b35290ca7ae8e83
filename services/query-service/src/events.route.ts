import type { RequestHandler } from 'express';
import { toIsoSeconds } from '@telemetry/contract';
import { bad, rejectUnknown, single } from '@telemetry/platform';
import { BOT_FILTERS, eventsPerMinuteSql, type BotFilter, type EventsPerMinuteRow } from '@telemetry/store';
import { rangeParams, readRows, tenantOf, type ReadDeps } from './params.js';

/** Rows of one answer: past it, `truncated` is true (narrow the range). */
export const EVENTS_MAX_ROWS = 50_000;

/** The longest range of GET /api/events/per-minute. */
export const EVENTS_MAX_RANGE_SECONDS = 24 * 3600;

/**
 * GET /api/events/per-minute: events per minute by source and category over [from, to)
 * (default: the last hour), from the rollup. Minutes without events are left out.
 * `bots`: `include` (default) counts every event, `exclude` humans only, `only` bots
 * only (is_bot, docs/enrichment.md).
 */
export function eventsPerMinuteRoute(deps: ReadDeps): RequestHandler {
  return async (req, res) => {
    rejectUnknown(req, new Set(['from', 'to', 'bots']));
    const range = rangeParams(req);
    const bots = single(req, 'bots') ?? 'include';
    if (!(BOT_FILTERS as readonly string[]).includes(bots)) throw bad('bots', `must be ${BOT_FILTERS.join(', ')}`);
    const to = Math.ceil((range.to ?? Math.floor(Date.now() / 1000)) / 60) * 60;
    const from = Math.floor((range.from ?? to - 3600) / 60) * 60;
    if (from > to) throw bad('from', 'must not be after to');
    if (to - from > EVENTS_MAX_RANGE_SECONDS) throw bad('from', 'at most 24 hours per request');
    const rows = await readRows<EventsPerMinuteRow>(deps, req, 'events per minute query', () =>
      eventsPerMinuteSql(deps.database, deps.layout, tenantOf(res), from, to, EVENTS_MAX_ROWS + 1, bots as BotFilter),
    );
    res.setHeader('Cache-Control', 'private, no-cache');
    res.json({
      success: true,
      data: {
        from: toIsoSeconds(from),
        to: toIsoSeconds(to),
        truncated: rows.length > EVENTS_MAX_ROWS,
        minutes: rows.slice(0, EVENTS_MAX_ROWS).map((r) => ({
          minute: toIsoSeconds(Number(r.t)),
          source: r.source,
          category: r.category,
          events: Number(r.n),
        })),
      },
    });
  };
}
