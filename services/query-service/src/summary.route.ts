import type { RequestHandler } from 'express';
import { bad, rejectUnknown, sendCacheable, single, StoreUnavailableError, type ByteLru } from '@telemetry/platform';
import { CHECK_STATUSES, toIsoSeconds } from '@telemetry/contract';
import {
  incidentSpansSql,
  slaOf,
  summarySql,
  uptimePercent,
  type IncidentSpanRow,
  type SummaryCountRow,
  type SummaryQuantileRow,
  type SummaryQuery,
} from '@telemetry/store';
import { cacheControlFor, isClosed, monitorIdOf, rangeParams, tenantOf, type ReadDeps } from './params.js';

const KNOWN = new Set(['from', 'to', 'interval']);
const INTERVALS = { hour: { seconds: 3600, maxBuckets: 24 * 31 }, day: { seconds: 86_400, maxBuckets: 366 } } as const;

export function parseSummaryQuery(
  req: Parameters<RequestHandler>[0],
  nowMs = Date.now(),
): Omit<SummaryQuery, 'tenantId'> {
  const monitorId = monitorIdOf(req);
  rejectUnknown(req, KNOWN);
  const intervalRaw = single(req, 'interval') ?? 'hour';
  if (intervalRaw !== 'hour' && intervalRaw !== 'day') throw bad('interval', 'must be hour or day');
  const { seconds, maxBuckets } = INTERVALS[intervalRaw];
  const range = rangeParams(req);
  // Rollups are hourly: bounds are rounded to the interval (from down, to up).
  const to = Math.ceil((range.to ?? Math.floor(nowMs / 1000)) / seconds) * seconds;
  const from = Math.floor((range.from ?? to - (intervalRaw === 'hour' ? 24 : 30) * seconds) / seconds) * seconds;
  if (from > to) throw bad('to', 'must not be before from');
  if ((to - from) / seconds > maxBuckets) throw bad('from', `at most ${maxBuckets} ${intervalRaw}s per summary`);
  return { monitorId, interval: intervalRaw, from, to };
}

interface Stats {
  checks: number;
  up: number;
  down: number;
  degraded: number;
  /** (up + degraded) / checks, in percent; null without checks. */
  uptime_percent: number | null;
  /** Approximate (t-digest) response-time quantiles in ms; null without checks. */
  response_time: { p50: number; p95: number; p99: number } | null;
}

function stats(counts: Record<string, number>, q: number[] | undefined): Stats {
  const s: Stats = { checks: 0, up: 0, down: 0, degraded: 0, uptime_percent: null, response_time: null };
  for (const status of CHECK_STATUSES) {
    s[status] = counts[status] ?? 0;
    s.checks += s[status];
  }
  if (s.checks > 0) {
    s.uptime_percent = uptimePercent(s.up + s.degraded, s.checks);
    if (q && q.length === 3) s.response_time = { p50: q[0]!, p95: q[1]!, p99: q[2]! };
  }
  return s;
}

export interface SummaryRouteDeps extends ReadDeps {
  /**
   * Summaries of closed ranges (ended more than CLOSED_AFTER_SECONDS ago), which no longer
   * change: answered again without ClickHouse.
   */
  closed: ByteLru<object>;
}

export function summaryRoute(deps: SummaryRouteDeps): RequestHandler {
  return async (req, res) => {
    const q = { ...parseSummaryQuery(req), tenantId: tenantOf(res) };
    const closed = isClosed(q.to);
    const cacheKey = [q.tenantId, q.monitorId, q.interval, q.from, q.to].join('\u0000');
    const kept = closed ? deps.closed.get(cacheKey) : undefined;
    if (kept) {
      sendCacheable(req, res, kept, cacheControlFor(q.to));
      return;
    }
    const sql = summarySql(deps.database, deps.layout, q);
    let countRows: SummaryCountRow[];
    let quantiles: { data: SummaryQuantileRow[]; totals?: SummaryQuantileRow };
    let incidents: IncidentSpanRow[];
    try {
      const signal = AbortSignal.timeout(deps.queryTimeoutMs);
      const [c, qs, inc] = await Promise.all([
        deps.reader.query<SummaryCountRow>(sql.counts, signal),
        deps.reader.query<SummaryQuantileRow>(sql.quantiles, signal),
        deps.reader.query<IncidentSpanRow>(
          incidentSpansSql(deps.database, deps.layout, q.tenantId, q.monitorId, q.from, q.to),
          signal,
        ),
      ]);
      incidents = inc.data;
      countRows = c.data;
      quantiles = { data: qs.data, totals: qs.totals };
    } catch (err) {
      deps.logger.warn('summary query failed', { request_id: req.id, err: String(err) });
      throw new StoreUnavailableError();
    }
    const byBucket = new Map<number, Record<string, number>>();
    const total: Record<string, number> = {};
    for (const r of countRows) {
      const t = Number(r.t);
      const b = byBucket.get(t) ?? {};
      b[r.status] = (b[r.status] ?? 0) + Number(r.n);
      byBucket.set(t, b);
      total[r.status] = (total[r.status] ?? 0) + Number(r.n);
    }
    const qByBucket = new Map(quantiles.data.map((r) => [Number(r.t), r.q]));
    const body = {
      success: true,
      data: {
        monitor_id: q.monitorId,
        interval: q.interval,
        from: toIsoSeconds(q.from),
        to: toIsoSeconds(q.to),
        total: stats(total, quantiles.totals?.q),
        sla: slaOf(incidents, q.from, q.to, Math.floor(Date.now() / 1000)),
        intervals: [...byBucket.entries()]
          .sort(([a], [b]) => a - b)
          .map(([t, counts]) => ({ start: toIsoSeconds(t), ...stats(counts, qByBucket.get(t)) })),
      },
    };
    if (closed) deps.closed.set(cacheKey, body, JSON.stringify(body).length);
    sendCacheable(req, res, body, cacheControlFor(q.to));
  };
}
