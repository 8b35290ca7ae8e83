/**
 * Data and scenarios of `npm run bench:query`: the server-side load of synthetic checks,
 * the fixtures every scenario draws from (monitors, deep-page cursors, filtered ranges,
 * summary windows, each with the row counts its answers must have), and the requests
 * themselves, to the query service and, with the same SQL, straight to ClickHouse.
 */
import { randomUUID } from 'node:crypto';
import type { PgPool } from '@telemetry/platform';
import type { ClickHouseClient } from '@telemetry/platform';
import { sqlIdentifier, sqlNumber, sqlString } from '@telemetry/platform';
import { DEFAULT_TENANT, toIsoSeconds } from '@telemetry/contract';
import {
  checksSql,
  incidentSpansSql,
  MonitorStore,
  placeholderMonitor,
  summarySql,
  type CheckHistoryRow,
  type ChecksQuery,
  type SummaryQuery,
} from '@telemetry/store';
import { runSecretBox } from '../../harness/processes.js';
import { prng } from '../../harness/prng.js';
import { countOf, type HttpClient, type Op, type Outcome, type Reply } from '../../harness/load.js';

const HOUR = 3600;
const DAY = 86_400;

// ---------------------------------------------------------------- the data

/**
 * Row n (0 <= n < checks) is a check of monitor `mon-<n % monitors>` in minute
 * floor(n / monitors): every monitor has one check a minute, at its own second of the
 * minute, ending before `end`. About 3% are down, 5% degraded.
 */
export class DataSpec {
  readonly minutes: number;
  readonly start: number;

  constructor(
    readonly checks: number,
    readonly monitors: number,
    /** Unix seconds, on an hour boundary: every check is older. */
    readonly end: number,
  ) {
    this.minutes = Math.ceil(checks / monitors);
    this.start = end - this.minutes * 60;
  }

  monitorId(m: number): string {
    return `mon-${m}`;
  }

  /** Checks of monitor m. */
  perMonitor(m: number): number {
    return Math.floor(this.checks / this.monitors) + (m < this.checks % this.monitors ? 1 : 0);
  }

  /** [first, last] check time of monitor m, unix seconds. */
  span(m: number): [number, number] {
    return [this.start + (m % 60), this.start + (this.perMonitor(m) - 1) * 60 + (m % 60)];
  }

  /** The INSERT ... SELECT of rows [offset, offset + count) (runs on ClickHouse 18.16). */
  insertSql(db: string, offset: number, count: number): string {
    const d = sqlIdentifier(db);
    const M = sqlNumber(this.monitors);
    return `INSERT INTO ${d}.checks (tenant_id, monitor_id, created_at, id, status, response_time, status_code)
      SELECT
        ${sqlString(DEFAULT_TENANT)} AS tenant_id,
        concat('mon-', toString(n % ${M})) AS monitor_id,
        toDateTime(${sqlNumber(this.start)} + intDiv(n, ${M}) * 60 + (n % ${M}) % 60) AS created_at,
        concat('chk-', toString(n)) AS id,
        multiIf(r < 30, 'down', r < 80, 'degraded', 'up') AS status,
        multiIf(r < 30, toFloat64(0), r < 80, 800 + (h % 400000) / 100, 20 + (h % 30000) / 100) AS response_time,
        toUInt16(multiIf(r < 10, 0, r < 30, 503, r < 40, 429, 200)) AS status_code
      FROM (SELECT number + ${sqlNumber(offset)} AS n, cityHash64(n) AS h, h % 1000 AS r FROM numbers(${sqlNumber(count)}))`;
  }
}

export interface LoadFigures {
  rows: number;
  insertSeconds: number;
  rowsPerSecond: number;
  /** OPTIMIZE ... FINAL of checks and checks_hourly afterwards (no merges during the runs). */
  optimizeSeconds: number;
  checksParts: number;
  rollupRows: number;
  diskBytes: number;
}

/** Loads the checks server-side in chunks; the materialized view fills checks_hourly meanwhile. */
export async function loadChecks(
  admin: ClickHouseClient,
  registry: PgPool,
  db: string,
  spec: DataSpec,
  log: (line: string) => void,
  chunk = 1_000_000,
): Promise<LoadFigures> {
  const d = sqlIdentifier(db);
  const t0 = performance.now();
  for (let offset = 0; offset < spec.checks; offset += chunk) {
    const count = Math.min(chunk, spec.checks - offset);
    await admin.command({ query: spec.insertSql(db, offset, count) });
    const s = (performance.now() - t0) / 1000;
    log(`  ${(offset + count).toLocaleString('en-US')} rows in ${s.toFixed(1)} s`);
  }
  const insertSeconds = (performance.now() - t0) / 1000;
  // The service answers 404 for monitors the registry does not hold.
  const store = new MonitorStore(registry, runSecretBox());
  for (let m = 0; m < spec.monitors; m += 1000) {
    const ids = Array.from({ length: Math.min(1000, spec.monitors - m) }, (_, i) => spec.monitorId(m + i));
    await store.saveMany(ids.map((id) => placeholderMonitor(id)));
  }
  const rows = await scalar(admin, `SELECT count() FROM ${d}.checks`);
  if (rows !== spec.checks) throw new Error(`${db}.checks has ${rows} rows, expected ${spec.checks}`);
  const t1 = performance.now();
  for (const table of ['checks', 'checks_hourly']) {
    const rs = await admin.query({
      query: `SELECT DISTINCT partition FROM system.parts WHERE database = '${db}' AND table = '${table}' AND active`,
      format: 'JSONEachRow',
    });
    for (const { partition } of await rs.json<{ partition: string }>()) {
      if (!/^\d+$/.test(partition)) throw new Error(`unexpected partition ${partition}`);
      await admin.command({ query: `OPTIMIZE TABLE ${d}.${table} PARTITION ${partition} FINAL` });
    }
  }
  const optimizeSeconds = (performance.now() - t1) / 1000;
  const rollupChecks = await scalar(
    admin,
    `SELECT sum(n) FROM (SELECT uniqExactMerge(checks) AS n FROM ${d}.checks_hourly GROUP BY monitor_id, hour, status)`,
  );
  if (rollupChecks !== spec.checks)
    throw new Error(`checks_hourly counts ${rollupChecks} checks, expected ${spec.checks}`);
  return {
    rows,
    insertSeconds: round(insertSeconds, 1),
    rowsPerSecond: Math.round(rows / insertSeconds),
    optimizeSeconds: round(optimizeSeconds, 1),
    checksParts: await scalar(
      admin,
      `SELECT count() FROM system.parts WHERE database = '${db}' AND table = 'checks' AND active`,
    ),
    rollupRows: await scalar(admin, `SELECT count() FROM ${d}.checks_hourly`),
    diskBytes: await scalar(
      admin,
      `SELECT sum(bytes_on_disk) FROM system.parts WHERE database = '${db}' AND table = 'checks' AND active`,
    ),
  };
}

export async function scalar(client: ClickHouseClient, query: string): Promise<number> {
  const rs = await client.query({ query, format: 'JSONEachRow' });
  const row = (await rs.json<Record<string, unknown>>())[0];
  return Number(row ? Object.values(row)[0] : NaN);
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

// ---------------------------------------------------------------- the two ways in

/** The query service, with an API key. */
export interface ServiceTarget {
  http: HttpClient;
  apiKey: string;
}

/**
 * ClickHouse's HTTP interface, as the service's client (@clickhouse/client) uses it: POST
 * of the SQL plus FORMAT, the same user, database and per-query settings, a query_id.
 */
export interface DirectTarget {
  http: HttpClient;
  user: string;
  password: string;
  database: string;
  /** The service's settings: max_execution_time from QUERY_TIMEOUT_MS, max_result_rows. */
  settings: Record<string, number>;
}

export function serviceHeaders(t: ServiceTarget): Record<string, string> {
  return { Authorization: `Bearer ${t.apiKey}` };
}

export function directHeaders(t: DirectTarget): Record<string, string> {
  return { Authorization: `Basic ${Buffer.from(`${t.user}:${t.password}`).toString('base64')}` };
}

export function directPath(t: DirectTarget): string {
  const params = new URLSearchParams({ query_id: randomUUID() });
  for (const [k, v] of Object.entries(t.settings)) params.set(k, String(v));
  params.set('database', t.database);
  return `/?${params.toString()}`;
}

export function directBody(sql: string, format: 'JSONEachRow' | 'JSON'): string {
  return `${sql} \nFORMAT ${format}`;
}

function direct(t: DirectTarget, sql: string, format: 'JSONEachRow' | 'JSON'): Promise<Reply> {
  return t.http.request('POST', directPath(t), directHeaders(t), directBody(sql, format));
}

// ---------------------------------------------------------------- answers

/** undefined when the service's check list has `rows` checks, else what is wrong. */
export function serviceChecksProblem(body: string, rows: number): string | undefined {
  if (!body.startsWith('{"success":true,"data":[')) return `unexpected body ${body.slice(0, 200)}`;
  const n = countOf(body, '"status_code":');
  return n === rows ? undefined : `${n} checks, expected ${rows}`;
}

/** undefined when a JSONEachRow answer has `rows` rows. */
export function directRowsProblem(body: string, rows: number): string | undefined {
  const n = countOf(body, '\n');
  return n === rows ? undefined : `${n} rows, expected ${rows}: ${body.slice(0, 200)}`;
}

function serviceSummaryProblem(body: string, intervals: number): string | undefined {
  if (!body.startsWith('{"success":true,"data":{')) return `unexpected body ${body.slice(0, 200)}`;
  const n = countOf(body, '"start":');
  return n === intervals ? undefined : `${n} intervals, expected ${intervals}`;
}

function directJsonProblem(body: string, rows: number): string | undefined {
  const m = /"rows":\s*(\d+)/.exec(body);
  if (!m || !body.includes('"totals":')) return `unexpected body ${body.slice(0, 200)}`;
  return Number(m[1]) === rows ? undefined : `${m[1]} rows, expected ${rows}`;
}

function outcome(r: Reply, problem: (body: string) => string | undefined): Outcome {
  if (r.status !== 200) return { status: r.status, ok: false, problem: `status ${r.status}: ${r.body.slice(0, 200)}` };
  const p = problem(r.body);
  return p === undefined ? { status: 200, ok: true } : { status: 200, ok: false, problem: p };
}

// ---------------------------------------------------------------- fixtures

interface ChecksFixture {
  servicePath: string;
  query: ChecksQuery;
  /** Checks the service returns; ClickHouse returns one more row when there is a next page. */
  serviceRows: number;
  directRows: number;
}

interface SummaryFixture {
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

function checksPath(monitorId: string, params: Record<string, string> = {}): string {
  const qs = new URLSearchParams(params).toString();
  return `/api/monitors/${encodeURIComponent(monitorId)}/checks${qs ? `?${qs}` : ''}`;
}

function firstPageQuery(monitorId: string, limit: number): ChecksQuery {
  return {
    tenantId: DEFAULT_TENANT,
    monitorId,
    limit,
    order: 'desc',
    from: undefined,
    to: undefined,
    statuses: [],
    cursor: undefined,
  };
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

function json<T>(r: Reply, what: string): T {
  if (r.status !== 200) throw new Error(`${what}: status ${r.status}: ${r.body.slice(0, 300)}`);
  return JSON.parse(r.body) as T;
}

interface ServiceList {
  data: { id: string; created_at: string }[];
  next_cursor: string | null;
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
    const countSql = `SELECT count() AS n FROM (${checksSql(opts.direct.database, { ...query, limit: null })})`;
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
    const sql = summarySql(opts.direct.database, query);
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

// ---------------------------------------------------------------- scenarios

export interface Scenario {
  key: 'first_page' | 'deep_page' | 'filtered' | 'summary_hour' | 'summary_day';
  title: string;
  service: Op;
  direct: Op;
}

function pick<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)]!;
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

export function checksOps(
  service: ServiceTarget,
  directTarget: DirectTarget,
  next: () => ChecksFixture,
): { service: Op; direct: Op } {
  return {
    service: async () => {
      const f = next();
      const r = await service.http.request('GET', f.servicePath, serviceHeaders(service));
      return outcome(r, (b) => serviceChecksProblem(b, f.serviceRows));
    },
    direct: async () => {
      const f = next();
      const r = await direct(directTarget, checksSql(directTarget.database, f.query), 'JSONEachRow');
      return outcome(r, (b) => directRowsProblem(b, f.directRows));
    },
  };
}

function summaryOps(service: ServiceTarget, directTarget: DirectTarget, fixtures: SummaryFixture[]) {
  return {
    service: async (): Promise<Outcome> => {
      const f = pick(fixtures);
      const r = await service.http.request('GET', f.servicePath, serviceHeaders(service));
      return outcome(r, (b) => serviceSummaryProblem(b, f.intervals));
    },
    // The service's three queries (counts, quantiles, the incidents behind the SLA
    // figures), sent in parallel as the service sends them. The data has no incidents.
    direct: async (): Promise<Outcome> => {
      const f = pick(fixtures);
      const { tenantId, monitorId, from, to } = f.query;
      const sql = summarySql(directTarget.database, f.query);
      const [c, q, i] = await Promise.all([
        direct(directTarget, sql.counts, 'JSONEachRow'),
        direct(directTarget, sql.quantiles, 'JSON'),
        direct(directTarget, incidentSpansSql(directTarget.database, tenantId, monitorId, from, to), 'JSONEachRow'),
      ]);
      const oc = outcome(c, (b) => directRowsProblem(b, f.countRows));
      const oq = outcome(q, (b) => directJsonProblem(b, f.quantileRows));
      const oi = outcome(i, (b) => directRowsProblem(b, 0));
      return !oc.ok ? oc : !oq.ok ? oq : oi;
    },
  };
}

export function scenarios(
  spec: DataSpec,
  fx: Fixtures,
  service: ServiceTarget,
  directTarget: DirectTarget,
): Scenario[] {
  return [
    {
      key: 'first_page',
      title: `first page of ${fx.limit} checks, random monitor of ${spec.monitors.toLocaleString('en-US')}`,
      ...checksOps(service, directTarget, () => firstPage(spec, fx.limit)),
    },
    {
      key: 'deep_page',
      title: `page ${fx.deepPage + 1} (cursor followed ${fx.deepPage} pages in), ${fx.deep.length} monitors`,
      ...checksOps(service, directTarget, () => pick(fx.deep)),
    },
    {
      key: 'filtered',
      title: `${fx.filteredHours} h range + status=down (${fx.filteredRows[0]}-${fx.filteredRows[2]} rows), ${fx.filtered.length} monitors`,
      ...checksOps(service, directTarget, () => pick(fx.filtered)),
    },
    {
      key: 'summary_hour',
      title: `summary, interval=hour over 24 h (3 queries), ${fx.summaryHour.length} monitors`,
      ...summaryOps(service, directTarget, fx.summaryHour),
    },
    {
      key: 'summary_day',
      title: `summary, interval=day over 30 days (3 queries), ${fx.summaryDay.length} monitors`,
      ...summaryOps(service, directTarget, fx.summaryDay),
    },
  ];
}

// ---------------------------------------------------------------- equivalence

/**
 * Before measuring: for a few fixtures of each scenario, the service's answer holds
 * exactly what the same SQL returns from ClickHouse (same checks in the same order,
 * same summary counts). Returns how many pairs were compared.
 */
export async function verifyEquivalence(
  spec: DataSpec,
  fx: Fixtures,
  service: ServiceTarget,
  directTarget: DirectTarget,
  samples = 5,
): Promise<number> {
  let compared = 0;
  const lists = [
    ...Array.from({ length: samples }, () => firstPage(spec, fx.limit)),
    ...fx.deep.slice(0, samples),
    ...fx.filtered.slice(0, samples),
  ];
  for (const f of lists) {
    const s = json<ServiceList>(
      await service.http.request('GET', f.servicePath, serviceHeaders(service)),
      f.servicePath,
    );
    const d = await direct(directTarget, checksSql(directTarget.database, f.query), 'JSONEachRow');
    const rows = d.body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as CheckHistoryRow);
    const want = rows.slice(0, fx.limit).map((r) => `${r.id}@${toIsoSeconds(Number(r.ts))}`);
    const got = s.data.map((c) => `${c.id}@${c.created_at}`);
    if (JSON.stringify(want) !== JSON.stringify(got) || rows.length > fx.limit !== (s.next_cursor !== null)) {
      throw new Error(`service and ClickHouse disagree on ${f.servicePath}`);
    }
    if (got.length !== f.serviceRows || rows.length !== f.directRows) {
      throw new Error(`${f.servicePath}: ${got.length}/${rows.length} rows, expected ${f.serviceRows}/${f.directRows}`);
    }
    compared++;
  }
  for (const f of [...fx.summaryHour.slice(0, samples), ...fx.summaryDay.slice(0, samples)]) {
    const s = json<{ data: { total: { checks: number }; intervals: { start: string; checks: number }[] } }>(
      await service.http.request('GET', f.servicePath, serviceHeaders(service)),
      f.servicePath,
    );
    const d = await direct(directTarget, summarySql(directTarget.database, f.query).counts, 'JSONEachRow');
    const rows = d.body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { t: number; n: string | number });
    const total = rows.reduce((a, r) => a + Number(r.n), 0);
    if (s.data.total.checks !== total || s.data.intervals.length !== f.intervals) {
      throw new Error(`service and ClickHouse disagree on ${f.servicePath}`);
    }
    compared++;
  }
  return compared;
}
