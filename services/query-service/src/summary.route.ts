import type { RequestHandler } from 'express';
import { bad, rejectUnknown, sendCacheable, single, StoreUnavailableError, type ByteLru } from '@telemetry/platform';
import { CHECK_STATUSES, toIsoSeconds } from '@telemetry/contract';
import {
  float32Shortest,
  incidentSpansSql,
  slaOf,
  summaryBucketsSql,
  TDigest,
  uptimePercent,
  type IncidentSpanRow,
  type SummaryBucketRow,
  type SummaryQuery,
} from '@telemetry/store';
import {
  cacheControlFor,
  CLOSED_AFTER_SECONDS,
  isClosed,
  monitorIdOf,
  rangeParams,
  tenantOf,
  type ReadDeps,
} from './params.js';
import { SummaryBuckets, type Bucket } from './summary-buckets.js';

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
  /** Completed buckets (summary-buckets.ts): only the open ones and those not kept are asked. */
  buckets: SummaryBuckets;
}

const LEVELS = [0.5, 0.95, 0.99] as const;

function bucketOf(r: SummaryBucketRow): Bucket {
  return { n: r.n.map(Number), q: r.q, digest: TDigest.fromHex(r.s) };
}

/**
 * The buckets of [q.from, q.to) that have checks, in order. Completed buckets come from
 * `deps.buckets` where kept; one statement asks ClickHouse for the rest, from the first
 * bucket not kept to the end (the open part), and the completed ones it returns, or finds
 * empty, are kept.
 */
async function keptBuckets(
  deps: SummaryRouteDeps,
  q: SummaryQuery,
  signal: AbortSignal,
  nowSeconds: number,
): Promise<[number, Bucket][]> {
  const { seconds } = INTERVALS[q.interval];
  const split = Math.min(Math.max(completedEnd(nowSeconds, seconds), q.from), q.to);
  const out: [number, Bucket][] = [];
  let askFrom = split;
  for (let t = q.from; t < split; t += seconds) {
    const b = deps.buckets.get(SummaryBuckets.key(q.tenantId, q.monitorId, q.interval, t));
    if (!b) {
      askFrom = t;
      break;
    }
    if (b.n) out.push([t, b]);
  }
  if (askFrom >= q.to) return out;
  const rows = (
    await deps.reader.query<SummaryBucketRow>(
      summaryBucketsSql(deps.database, deps.layout, { ...q, from: askFrom }),
      signal,
    )
  ).data;
  let i = 0;
  for (let t = askFrom; t < q.to; t += seconds) {
    const row = rows[i] !== undefined && Number(rows[i]!.t) === t ? rows[i++] : undefined;
    const b: Bucket = row ? bucketOf(row) : { n: undefined, q: [], digest: undefined };
    if (t < split) deps.buckets.set(SummaryBuckets.key(q.tenantId, q.monitorId, q.interval, t), b);
    if (b.n) out.push([t, b]);
  }
  return out;
}

/** The start of the first bucket of `seconds` that is not completed at `nowSeconds`. */
function completedEnd(nowSeconds: number, seconds: number): number {
  return Math.floor((nowSeconds - CLOSED_AFTER_SECONDS) / seconds) * seconds;
}

/**
 * The buckets of the summary. By day, the days not yet completed are made of their hours,
 * so that their completed hours are kept too and ClickHouse is asked only for the last
 * ones: counts add up (a check has one time, so one hour), and the day's quantiles merge
 * its hours' t-digests (tdigest.ts) where ClickHouse would merge the same rows at once.
 */
async function bucketsOf(
  deps: SummaryRouteDeps,
  q: SummaryQuery,
  signal: AbortSignal,
  nowSeconds: number,
): Promise<[number, Bucket][]> {
  if (q.interval === 'hour') return keptBuckets(deps, q, signal, nowSeconds);
  const day = INTERVALS.day.seconds;
  const split = Math.min(Math.max(completedEnd(nowSeconds, day), q.from), q.to);
  const none: [number, Bucket][] = [];
  const [days, hours] = await Promise.all([
    split > q.from ? keptBuckets(deps, { ...q, to: split }, signal, nowSeconds) : none,
    split < q.to ? keptBuckets(deps, { ...q, interval: 'hour', from: split }, signal, nowSeconds) : none,
  ]);
  const open = new Map<number, Bucket[]>();
  for (const [t, b] of hours) {
    const d = Math.floor(t / day) * day;
    const parts = open.get(d);
    if (parts) parts.push(b);
    else open.set(d, [b]);
  }
  for (const [t, parts] of open) {
    const digest = new TDigest();
    const n = CHECK_STATUSES.map(() => 0);
    for (const b of parts) {
      b.n!.forEach((c, k) => (n[k]! += c));
      if (b.digest) digest.merge(b.digest);
    }
    const quantiles = digest.size > 0 ? digest.quantiles(LEVELS).map(float32Shortest) : [];
    days.push([t, { n, q: quantiles, digest }]);
  }
  return days;
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
    let buckets: [number, Bucket][];
    let incidents: IncidentSpanRow[];
    try {
      const signal = AbortSignal.timeout(deps.queryTimeoutMs);
      const [b, inc] = await Promise.all([
        bucketsOf(deps, q, signal, Date.now() / 1000),
        deps.reader.query<IncidentSpanRow>(
          incidentSpansSql(deps.database, deps.layout, q.tenantId, q.monitorId, q.from, q.to),
          signal,
        ),
      ]);
      incidents = inc.data;
      buckets = b;
    } catch (err) {
      deps.logger.warn('summary query failed', { request_id: req.id, err: String(err) });
      throw new StoreUnavailableError();
    }
    const total: Record<string, number> = {};
    // The total's quantiles: the buckets' t-digests merged in order (tdigest.ts), as
    // quantilesTDigestMerge WITH TOTALS merges them.
    const digest = new TDigest();
    for (const [, b] of buckets) {
      CHECK_STATUSES.forEach((status, k) => (total[status] = (total[status] ?? 0) + b.n![k]!));
      if (b.digest) digest.merge(b.digest);
    }
    const body = {
      success: true,
      data: {
        monitor_id: q.monitorId,
        interval: q.interval,
        from: toIsoSeconds(q.from),
        to: toIsoSeconds(q.to),
        total: stats(total, digest.size > 0 ? digest.quantiles(LEVELS).map(float32Shortest) : undefined),
        sla: slaOf(incidents, q.from, q.to, Math.floor(Date.now() / 1000)),
        intervals: buckets.map(([t, b]) => ({
          start: toIsoSeconds(t),
          ...stats(Object.fromEntries(CHECK_STATUSES.map((status, k) => [status, b.n![k]!])), b.q),
        })),
      },
    };
    if (closed) deps.closed.set(cacheKey, body, JSON.stringify(body).length);
    sendCacheable(req, res, body, cacheControlFor(q.to));
  };
}
