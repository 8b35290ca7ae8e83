/**
 * The fixtures of `npm run bench:query`, drawn once before measuring: monitors with a
 * deep-page cursor (followed through the service), a filtered range, and summary windows,
 * each with the row counts its answers must have; and a random monitor's first page.
 */
import { DEFAULT_TENANT, toIsoSeconds } from '@telemetry/contract';
import { LOCAL_LAYOUT, checksSql, summarySql, type ChecksQuery, type SummaryQuery } from '@telemetry/store';
import { prng } from '../../harness/prng.js';
import type { DataSpec } from './data.js';
import {
  checksPath,
  direct,
  firstPageQuery,
  json,
  serviceHeaders,
  type DirectTarget,
  type ServiceList,
  type ServiceTarget,
} from './requests.js';

const HOUR = 3600;
const DAY = 86_400;

export interface ChecksFixture {
  servicePath: string;
  query: ChecksQuery;
  /** Checks the service returns; ClickHouse returns one more row when there is a next page. */
  serviceRows: number;
  directRows: number;
}

export interface SummaryFixture {
  servicePath: string;
  query: SummaryQuery;
  intervals: number;
  countRows: number;
  quantileRows: number;
}

export interface Fixtures {
  limit: number;
  deepPage: number;
  filteredHours: number;
  deep: ChecksFixture[];
  filtered: ChecksFixture[];
  summaryHour: SummaryFixture[];
  summaryDay: SummaryFixture[];
  /** Down checks per filtered fixture: min, median, max. */
  filteredRows: [number, number, number];
}

/** Runs `fn` over `items`, `concurrency` at a time. */
async function pool<T, R>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let i = 0;
  const worker = async (): Promise<void> => {
    while (i < items.length) {
      const k = i++;
      out[k] = await fn(items[k]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return out;
}

function decodeCursor(cursor: string): { t: number; id: string } {
  const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
  if (!Array.isArray(v) || typeof v[0] !== 'number' || typeof v[1] !== 'string') {
    throw new Error(`unexpected cursor ${cursor}`);
  }
  return { t: v[0], id: v[1] };
}

/** Draws the fixtures; follows next_cursor through the service for the deep pages. */
export async function makeFixtures(opts: {
  spec: DataSpec;
  service: ServiceTarget;
  direct: DirectTarget;
  count: number;
  limit: number;
  deepPage: number;
  filteredHours: number;
  seed: number;
}): Promise<Fixtures> {
  const { spec, service, limit } = opts;
  const rand = prng(opts.seed);
  const picked = new Set<number>();
  const n = Math.min(opts.count, spec.monitors);
  while (picked.size < n) picked.add(Math.floor(rand() * spec.monitors));
  const monitors = [...picked];
  const minChecks = Math.min(...monitors.map((m) => spec.perMonitor(m)));
  const deepPage = Math.min(opts.deepPage, Math.floor((minChecks - 1) / limit));
  if (deepPage < 1) throw new Error(`monitors have ${minChecks} checks: too few for a second page of ${limit}`);

  const deep = await pool(monitors, 4, async (m): Promise<ChecksFixture> => {
    const monitorId = spec.monitorId(m);
    let cursor: string | null = null;
    for (let page = 1; page <= deepPage; page++) {
      const path = checksPath(monitorId, cursor ? { cursor } : {});
      const list: ServiceList = json<ServiceList>(
        await service.http.request('GET', path, serviceHeaders(service)),
        `page ${page} of ${monitorId}`,
      );
      if (list.data.length !== limit || !list.next_cursor) {
        throw new Error(`page ${page} of ${monitorId}: ${list.data.length} checks, next_cursor ${list.next_cursor}`);
      }
      cursor = list.next_cursor;
    }
    const remaining = spec.perMonitor(m) - deepPage * limit;
    return {
      servicePath: checksPath(monitorId, { cursor: cursor! }),
      query: { ...firstPageQuery(monitorId, limit), cursor: decodeCursor(cursor!) },
      serviceRows: Math.min(limit, remaining),
      directRows: Math.min(limit + 1, remaining),
    };
  });

  const filtered = await pool(monitors, 4, async (m): Promise<ChecksFixture> => {
    const monitorId = spec.monitorId(m);
    const [first, last] = spec.span(m);
    const width = opts.filteredHours * HOUR;
    const from = first + Math.floor((rand() * Math.max(1, last + 1 - width - first)) / 60) * 60;
    const to = from + width;
    const query: ChecksQuery = { ...firstPageQuery(monitorId, limit), from, to, statuses: ['down'] };
    const countSql = `SELECT count() AS n FROM (${checksSql(opts.direct.database, LOCAL_LAYOUT, { ...query, limit: null })})`;
    const r = await direct(opts.direct, countSql, 'JSONEachRow');
    const down = Number(json<{ n: string | number }>(r, 'count').n);
    return {
      servicePath: checksPath(monitorId, { from: toIsoSeconds(from), to: toIsoSeconds(to), status: 'down' }),
      query,
      serviceRows: Math.min(limit, down),
      directRows: Math.min(limit + 1, down),
    };
  });

  const summary = async (m: number, interval: 'hour' | 'day', from: number, to: number): Promise<SummaryFixture> => {
    const monitorId = spec.monitorId(m);
    const query: SummaryQuery = { tenantId: DEFAULT_TENANT, monitorId, interval, from, to };
    const sql = summarySql(opts.direct.database, LOCAL_LAYOUT, query);
    const counts = await direct(opts.direct, sql.counts, 'JSONEachRow');
    const quantiles = await direct(opts.direct, sql.quantiles, 'JSON');
    if (counts.status !== 200) throw new Error(`summary counts: ${counts.status} ${counts.body.slice(0, 300)}`);
    const countLines = counts.body.split('\n').filter((l) => l !== '');
    const buckets = new Set(countLines.map((l) => (JSON.parse(l) as { t: number }).t));
    const q = json<{ rows: number }>(quantiles, 'summary quantiles');
    if (q.rows !== buckets.size)
      throw new Error(`summary of ${monitorId}: ${q.rows} quantile rows, ${buckets.size} buckets`);
    return {
      servicePath: `/api/monitors/${encodeURIComponent(monitorId)}/checks/summary?${new URLSearchParams({
        interval,
        from: toIsoSeconds(from),
        to: toIsoSeconds(to),
      }).toString()}`,
      query,
      intervals: buckets.size,
      countRows: countLines.length,
      quantileRows: q.rows,
    };
  };
  const summaryHour = await pool(monitors, 4, (m) => {
    // A 24-hour window ending on an hour boundary inside the data (the whole data when shorter).
    const ends: number[] = [];
    for (let t = spec.end; t - DAY >= spec.start; t -= HOUR) ends.push(t);
    const to = ends.length > 0 ? ends[Math.floor(rand() * ends.length)]! : spec.end;
    return summary(m, 'hour', to - DAY, to);
  });
  const dayEnd = Math.ceil(spec.end / DAY) * DAY;
  const summaryDay = await pool(monitors, 4, (m) => summary(m, 'day', dayEnd - 30 * DAY, dayEnd));

  const downs = filtered.map((f) => f.directRows).sort((a, b) => a - b);
  return {
    limit,
    deepPage,
    filteredHours: opts.filteredHours,
    deep,
    filtered,
    summaryHour,
    summaryDay,
    filteredRows: [downs[0] ?? 0, downs[Math.floor(downs.length / 2)] ?? 0, downs[downs.length - 1] ?? 0],
  };
}

/** A random monitor's first page: service path, SQL, and the rows each answer must have. */
export function firstPage(spec: DataSpec, limit: number): ChecksFixture {
  const m = Math.floor(Math.random() * spec.monitors);
  const monitorId = spec.monitorId(m);
  const rows = spec.perMonitor(m);
  return {
    servicePath: checksPath(monitorId),
    query: firstPageQuery(monitorId, limit),
    serviceRows: Math.min(limit, rows),
    directRows: Math.min(limit + 1, rows),
  };
}
