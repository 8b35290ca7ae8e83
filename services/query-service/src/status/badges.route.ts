import type { Express, Request, Response } from 'express';
import { makeBadge } from 'badge-maker';
import type { Registry } from 'prom-client';
import { BADGE_WINDOWS, type BadgeWindow, type MonitorStatus } from '@telemetry/contract';
import { AppError, bad, methodNotAllowed, rejectUnknown, single, type Mirror } from '@telemetry/platform';
import {
  monitorStatus,
  summarySql,
  uptimePercent,
  type MonitorStore,
  type StoredStatusPage,
  type SummaryCountRow,
  type SummaryQuantileRow,
} from '@telemetry/store';
import { monitorActivity } from '../monitor-activity.js';
import type { RenderCache } from '../render-cache.js';
import type { ReadDeps } from '../params.js';
import { countedCaches, keptOf, publicPageOf, sendKept, type Kept } from './public-answers.js';

export interface BadgeRoutesDeps extends ReadDeps {
  /** Every tenant's pages by slug: only a monitor of a page has badges. */
  directory: Mirror<StoredStatusPage>;
  monitors: MonitorStore;
  /** How long a badge is answered from memory (and may be kept by proxies): STATUS_PAGE_CACHE_SECONDS. */
  cacheSeconds: number;
  registry: Registry;
}

const KINDS = ['status', 'uptime', 'response-time'] as const;
type Kind = (typeof KINDS)[number];
const HOUR = 3600;
const WINDOW_HOURS: Record<BadgeWindow, number> = { '24h': 24, '7d': 7 * 24, '30d': 30 * 24 };
/** The response-time badge's window. */
const RESPONSE_WINDOW: BadgeWindow = '24h';
const SVG = 'image/svg+xml; charset=utf-8';

/** A badge's label, text and colour (shields.io's colour names). */
export interface BadgeFace {
  label: string;
  message: string;
  color: string;
}

const STATUS_COLORS: Record<MonitorStatus, string> = {
  up: 'brightgreen',
  down: 'red',
  paused: 'lightgrey',
  pending: 'yellow',
};

export function statusFace(status: MonitorStatus): BadgeFace {
  return { label: 'status', message: status, color: STATUS_COLORS[status] };
}

/** Uptime in percent (null: no checks in the window), coloured as shields.io's uptime badges. */
export function uptimeFace(window: BadgeWindow, percent: number | null): BadgeFace {
  const label = `uptime ${window}`;
  if (percent === null) return { label, message: 'no data', color: 'lightgrey' };
  const color =
    percent >= 99.9
      ? 'brightgreen'
      : percent >= 99
        ? 'green'
        : percent >= 97
          ? 'yellowgreen'
          : percent >= 95
            ? 'yellow'
            : percent >= 90
              ? 'orange'
              : 'red';
  return { label, message: `${percent}%`, color };
}

/** The median response time in ms (null: no checks in the window). */
export function responseTimeFace(ms: number | null): BadgeFace {
  const label = `response time ${RESPONSE_WINDOW}`;
  if (ms === null) return { label, message: 'no data', color: 'lightgrey' };
  const rounded = Math.round(ms);
  const color =
    rounded <= 200
      ? 'brightgreen'
      : rounded <= 500
        ? 'green'
        : rounded <= 1000
          ? 'yellow'
          : rounded <= 2000
            ? 'orange'
            : 'red';
  return { label, message: `${rounded} ms`, color };
}

/** What a badge says when its numbers cannot be read (ClickHouse down, nothing kept). */
export function unknownFace(kind: Kind, window: BadgeWindow): BadgeFace {
  const label =
    kind === 'status' ? 'status' : kind === 'uptime' ? `uptime ${window}` : `response time ${RESPONSE_WINDOW}`;
  return { label, message: 'unknown', color: 'lightgrey' };
}

export function badgeSvg(face: BadgeFace): string {
  return makeBadge({ ...face, style: 'flat' });
}

/**
 * GET /status/{slug}/badges/{monitor_id}/status.svg, uptime.svg?window=24h|7d|30d (30d) and
 * response-time.svg (docs/console.md, "Feeds and badges"): SVG badges of a monitor of a
 * public page, in shields.io's flat style (badge-maker). Each (page, monitor, kind, window)
 * is computed at most once per cacheSeconds per replica, one computation at a time; when
 * ClickHouse cannot be read, the last good badge is answered, or an "unknown" one: an image
 * in a README never breaks.
 */
export function statusBadgeRoutes(app: Express, deps: BadgeRoutesDeps): void {
  const newCache = countedCaches<Kept>(
    deps.registry,
    'status_badge_renders_total',
    'Status page badges computed, by outcome (ok, failed)',
    deps.cacheSeconds,
  );
  /** One cache per page: a page changed or deleted forgets its badges at once. */
  const caches = new Map<string, RenderCache<Kept>>();
  const cacheOf = (slug: string): RenderCache<Kept> => {
    let c = caches.get(slug);
    if (!c) {
      c = newCache();
      caches.set(slug, c);
    }
    return c;
  };
  deps.directory.onChange((slugs) => {
    for (const slug of slugs) caches.delete(slug);
  });

  /** Checks of the monitor by status, and the median response time, over the window up to the next full hour. */
  const checksOver = async (page: StoredStatusPage, monitorId: string, window: BadgeWindow, signal: AbortSignal) => {
    const to = Math.ceil(Date.now() / 1000 / HOUR) * HOUR;
    const from = to - WINDOW_HOURS[window] * HOUR;
    const sql = summarySql(deps.database, deps.layout, {
      tenantId: page.tenant_id,
      monitorId,
      interval: 'hour',
      from,
      to,
    });
    const [counts, quantiles] = await Promise.all([
      deps.reader.query<SummaryCountRow>(sql.counts, signal),
      deps.reader.query<SummaryQuantileRow>(sql.quantiles, signal),
    ]);
    let all = 0;
    let down = 0;
    for (const r of counts.data) {
      all += Number(r.n);
      if (r.status === 'down') down += Number(r.n);
    }
    const median = quantiles.totals?.q[0];
    return {
      uptime: uptimePercent(all - down, all),
      medianMs: all > 0 && typeof median === 'number' && Number.isFinite(median) ? median : null,
    };
  };

  const face = async (page: StoredStatusPage, monitorId: string, kind: Kind, window: BadgeWindow) => {
    const signal = AbortSignal.timeout(deps.queryTimeoutMs);
    if (kind === 'uptime') return uptimeFace(window, (await checksOver(page, monitorId, window, signal)).uptime);
    if (kind === 'response-time')
      return responseTimeFace((await checksOver(page, monitorId, RESPONSE_WINDOW, signal)).medianMs);
    // The public page's own status logic: paused, down while an incident is open, up once checked.
    const [monitor] = await deps.monitors.list({ tenantId: page.tenant_id, ids: [monitorId] });
    if (!monitor) throw new AppError('MONITOR_NOT_FOUND', `there is no monitor ${monitorId} on this status page`);
    const activity = await monitorActivity(
      deps.reader,
      deps.database,
      deps.layout,
      page.tenant_id,
      [monitorId],
      signal,
    );
    return statusFace(monitorStatus(monitor, activity.get(monitorId) ?? {}));
  };

  const route =
    (kind: Kind) =>
    async (req: Request, res: Response): Promise<void> => {
      rejectUnknown(req, new Set(kind === 'uptime' ? ['window'] : []));
      const given = kind === 'uptime' ? (single(req, 'window') ?? '30d') : RESPONSE_WINDOW;
      if (!(BADGE_WINDOWS as readonly string[]).includes(given)) {
        throw bad('window', `must be one of ${BADGE_WINDOWS.join(', ')}`);
      }
      const window = given as BadgeWindow;
      const page = publicPageOf(req, deps.directory);
      const monitorId = String(req.params.monitor_id);
      if (!page.monitor_ids.includes(monitorId)) {
        throw new AppError('MONITOR_NOT_FOUND', `there is no monitor ${monitorId.slice(0, 64)} on this status page`);
      }
      const key = `${monitorId}\u0000${kind}\u0000${window}`;
      try {
        const kept = await cacheOf(page.slug).get(key, async () =>
          keptOf(badgeSvg(await face(page, monitorId, kind, window))),
        );
        if (kept.stale) res.setHeader('X-Status-Page-Stale', '1');
        sendKept(req, res, kept.value, SVG, (kept.until - Date.now()) / 1000);
      } catch (err) {
        if (err instanceof AppError && err.status < 500) throw err;
        // Never a broken image: an "unknown" badge, kept no longer than the next try.
        deps.logger.warn('status badge failed', { request_id: req.id, err: String(err) });
        sendKept(req, res, keptOf(badgeSvg(unknownFace(kind, window))), SVG, deps.cacheSeconds);
      }
    };
  for (const kind of KINDS) {
    const path = `/status/:slug/badges/:monitor_id/${kind}.svg`;
    app.get(path, route(kind));
    methodNotAllowed(app, path, ['GET', 'HEAD']);
  }
}
