import {
  CHECK_STATUSES,
  DEFAULT_TENANT,
  toIsoSeconds,
  type Check,
  type CheckMessage,
  type CheckTimings,
  type Validators,
} from '@telemetry/contract';
import { sqlNumber, sqlString, sqlStringList, type MigrationsByVersion } from '@telemetry/platform';
import { lowCardinality } from './modern.js';
import { decodeTimed, type Decoded } from './rows.js';
import { pageRead } from './distributed-reads.js';
import { tableRef, type TableLayout } from './layout.js';

/**
 * The `checks` table and its `checks_hourly` rollup (docs/clickhouse.md): migrations,
 * the row the stream consumer inserts, and every statement that reads them (history
 * pages and export, summaries, a monitor's newest check). A new column of `checks`
 * touches this module and a migration entry below, nothing else.
 */

/** Statements per migration version (see migrations.ts). */
export const checksMigrations: MigrationsByVersion = {
  1: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.checks (
        monitor_id String, created_at DateTime('UTC'), id String, status String, response_time Float64,
        status_code UInt16, inserted_at DateTime('UTC') DEFAULT now()
      ) ENGINE = ReplacingMergeTree(inserted_at)
      PARTITION BY toYYYYMM(created_at)
      ORDER BY (monitor_id, created_at, id)`,
  ],
  // Rollups count distinct ids (uniqExact); quantile digests take every stored row, so a
  // rare duplicate weighs twice.
  2: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.checks_hourly (
        monitor_id String, hour DateTime('UTC'), status String,
        checks AggregateFunction(uniqExact, String),
        response_time AggregateFunction(quantilesTDigest(0.5, 0.95, 0.99), Float64)
      ) ENGINE = AggregatingMergeTree()
      PARTITION BY toYYYYMM(hour)
      ORDER BY (monitor_id, hour, status)`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.checks_hourly_mv TO ${db}.checks_hourly AS
      SELECT monitor_id, toStartOfHour(created_at) AS hour, status,
        uniqExactState(id) AS checks,
        quantilesTDigestState(0.5, 0.95, 0.99)(response_time) AS response_time
      FROM ${db}.checks
      GROUP BY monitor_id, hour, status`,
  ],
  3: () => [{ addColumn: { table: 'checks', column: 'error', type: 'String' } }],
  // Tenants lead both sort keys. As for events: the view is re-made, the copy of `checks`
  // feeds the new rollup through it, and the old rollup is copied only for the hours
  // older than any check still kept.
  4: (db) => [
    `DROP TABLE IF EXISTS ${db}.checks_hourly_mv`,
    { setAside: { table: 'checks_hourly', marker: 'tenant_id' } },
    `CREATE TABLE IF NOT EXISTS ${db}.checks_hourly (
        tenant_id String, monitor_id String, hour DateTime('UTC'), status String,
        checks AggregateFunction(uniqExact, String),
        response_time AggregateFunction(quantilesTDigest(0.5, 0.95, 0.99), Float64)
      ) ENGINE = AggregatingMergeTree()
      PARTITION BY toYYYYMM(hour)
      ORDER BY (tenant_id, monitor_id, hour, status)`,
    { setAside: { table: 'checks', marker: 'tenant_id' } },
    `CREATE TABLE IF NOT EXISTS ${db}.checks (
        tenant_id String, monitor_id String, created_at DateTime('UTC'), id String, status String,
        response_time Float64, status_code UInt16, error String, inserted_at DateTime('UTC') DEFAULT now()
      ) ENGINE = ReplacingMergeTree(inserted_at)
      PARTITION BY toYYYYMM(created_at)
      ORDER BY (tenant_id, monitor_id, created_at, id)`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.checks_hourly_mv TO ${db}.checks_hourly AS
      SELECT tenant_id, monitor_id, toStartOfHour(created_at) AS hour, status,
        uniqExactState(id) AS checks,
        quantilesTDigestState(0.5, 0.95, 0.99)(response_time) AS response_time
      FROM ${db}.checks
      GROUP BY tenant_id, monitor_id, hour, status`,
    {
      copyBack: {
        table: 'checks_hourly',
        sql: (from) => `INSERT INTO ${db}.checks_hourly (tenant_id, monitor_id, hour, status, checks, response_time)
          SELECT '${DEFAULT_TENANT}', monitor_id, hour, status, checks, response_time FROM ${from}
          WHERE hour < (SELECT if(count() = 0, toDateTime(4294967295), toStartOfHour(min(created_at)))
                        FROM ${db}.checks__old)`,
      },
    },
    {
      copyBack: {
        table: 'checks',
        sql: (from) => `INSERT INTO ${db}.checks (tenant_id, monitor_id, created_at, id, status, response_time,
            status_code, error, inserted_at)
          SELECT '${DEFAULT_TENANT}', monitor_id, created_at, id, status, response_time, status_code, error,
            inserted_at FROM ${from}`,
      },
    },
  ],
  8: (db, _name, engine) => lowCardinality(db, engine, 'checks', ['status']),
  10: () => [
    { addColumn: { table: 'checks', column: 'location', type: 'String' } },
    { addColumn: { table: 'checks', column: 'tls_days_left', type: 'Nullable(Int32)' } },
  ],
  19: () => [
    { addColumn: { table: 'checks', column: 'detail', type: 'String' } },
    { addColumn: { table: 'checks', column: 'timings', type: 'String' } },
    { addColumn: { table: 'checks', column: 'screenshot', type: 'UInt8' } },
  ],
};

/** A row of `checks` as inserted (JSONEachRow). DateTimes are unix seconds, UTC. */
export interface CheckRow {
  tenant_id: string;
  monitor_id: string;
  created_at: number;
  id: string;
  status: string;
  response_time: number;
  status_code: number;
  error: string;
  /** The runner's location; '' for checks made before locations (migration 10). */
  location: string;
  tls_days_left: number | null;
  /** What failed, in words; '' when nothing (migration 19). */
  detail: string;
  /** The check's timings as JSON (CheckTimings); '' when none. */
  timings: string;
  /** 1 when a screenshot of the failure was published (check_screenshots). */
  screenshot: number;
  inserted_at: number;
}

export function decodeCheck(v: Validators, value: Buffer | null): Decoded<CheckRow> {
  return decodeTimed(v.checkMessage, 'check', value, 'created_at', (c: CheckMessage, createdAt, now) => ({
    tenant_id: c.tenant_id ?? DEFAULT_TENANT,
    monitor_id: c.monitor_id,
    created_at: createdAt,
    id: c.id,
    status: c.status,
    response_time: c.response_time,
    status_code: c.status_code,
    error: c.error ?? '',
    location: c.location ?? '',
    tls_days_left: c.tls_days_left ?? null,
    detail: c.detail ?? '',
    timings: c.timings ? JSON.stringify(c.timings) : '',
    screenshot: c.screenshot ? 1 : 0,
    inserted_at: now,
  }));
}

/** A page (or, without a limit, the export) of one monitor's history. */
export interface ChecksQuery {
  tenantId: string;
  monitorId: string;
  /** Page size; null for no limit (the export). */
  limit: number | null;
  order: 'asc' | 'desc';
  from: number | undefined;
  to: number | undefined;
  statuses: string[];
  cursor: { t: number; id: string } | undefined;
  /** Only these check ids (the runner reading other locations' checks of a slot). */
  ids?: readonly string[];
  /** Only checks from these locations ('' : heartbeat calls, and checks made before locations). */
  locations?: readonly string[];
}

/**
 * The documented read pattern for checks: the sort key is (monitor_id, created_at, id),
 * so a monitor's rows are contiguous, and `LIMIT 1 BY id` hides duplicate rows that
 * ReplacingMergeTree has not merged yet. A page asks for one row more than its limit:
 * that row says whether there is a next page.
 */
export function checksSql(database: string, layout: TableLayout, q: ChecksQuery): string {
  const dir = q.order === 'desc' ? 'DESC' : 'ASC';
  const cmp = q.order === 'desc' ? '<' : '>';
  const where = [`tenant_id = ${sqlString(q.tenantId)}`, `monitor_id = ${sqlString(q.monitorId)}`];
  if (q.from !== undefined) where.push(`created_at >= toDateTime(${sqlNumber(q.from)})`);
  if (q.to !== undefined) where.push(`created_at < toDateTime(${sqlNumber(q.to)})`);
  if (q.statuses.length > 0) where.push(`status IN ${sqlStringList(q.statuses)}`);
  if (q.ids !== undefined) where.push(`id IN ${sqlStringList(q.ids)}`);
  if (q.locations !== undefined) where.push(`location IN ${sqlStringList(q.locations)}`);
  if (q.cursor) {
    const t = `toDateTime(${sqlNumber(q.cursor.t)})`;
    where.push(`(created_at ${cmp} ${t} OR (created_at = ${t} AND id ${cmp} ${sqlString(q.cursor.id)}))`);
  }
  const sql = `SELECT id, monitor_id, status, response_time, status_code, error, location, tls_days_left,
      detail, timings, screenshot, toUnixTimestamp(created_at) AS ts
    FROM ${tableRef(database, 'checks', layout)}
    WHERE ${where.join(' AND ')}
    ORDER BY created_at ${dir}, id ${dir}
    LIMIT 1 BY id${q.limit === null ? '' : `\n    LIMIT ${sqlNumber(q.limit + 1)}`}`;
  return pageRead(layout, q.limit === null ? null : q.limit + 1, sql, `ts ${dir}, id ${dir}`);
}

/** A row of checksSql's result. */
export interface CheckHistoryRow {
  id: string;
  monitor_id: string;
  status: string;
  response_time: number;
  status_code: number;
  error: string;
  location: string;
  tls_days_left: number | string | null;
  detail: string;
  timings: string;
  screenshot: number | string;
  ts: number | string;
}

/** Where the query service serves a check's screenshot (the monitor's tenant only). */
export function screenshotPath(monitorId: string, checkId: string): string {
  return `/api/monitors/${encodeURIComponent(monitorId)}/checks/${encodeURIComponent(checkId)}/screenshot`;
}

/** The seed's check object (section 2.2) from a row: numbers as numbers, time as `YYYY-MM-DDThh:mm:ssZ`. */
export function rowToCheck(r: CheckHistoryRow): Check {
  return {
    id: r.id,
    monitor_id: r.monitor_id,
    status: r.status as Check['status'],
    // Float64 printed by ClickHouse 18.16 shows binary noise (1.3599999999999999): µs is plenty.
    response_time: Math.round(Number(r.response_time) * 1000) / 1000,
    status_code: Number(r.status_code),
    error: (r.error || null) as Check['error'],
    location: r.location || null,
    tls_days_left: r.tls_days_left === null ? null : Number(r.tls_days_left),
    detail: r.detail || null,
    timings: r.timings ? (JSON.parse(r.timings) as CheckTimings) : null,
    screenshot: Number(r.screenshot) === 1 ? screenshotPath(r.monitor_id, r.id) : null,
    created_at: toIsoSeconds(Number(r.ts)),
  };
}

/**
 * Uptime in percent, with three decimals, of `good` (up or degraded) checks out of `all`;
 * null without checks. Summaries and status pages show it alike.
 */
export function uptimePercent(good: number, all: number): number | null {
  return all === 0 ? null : Math.round((good / all) * 100_000) / 1000;
}

export interface SummaryQuery {
  tenantId: string;
  monitorId: string;
  interval: 'hour' | 'day';
  /** Inclusive, on an interval boundary. */
  from: number;
  /** Exclusive, on an interval boundary. */
  to: number;
}

/** Counts per interval and status, and response-time quantiles per interval and in total (WITH TOTALS). */
export function summarySql(
  database: string,
  layout: TableLayout,
  q: SummaryQuery,
): { counts: string; quantiles: string } {
  const bucket = q.interval === 'hour' ? 'hour' : 'toStartOfDay(hour)';
  const where = `tenant_id = ${sqlString(q.tenantId)} AND monitor_id = ${sqlString(q.monitorId)} AND hour >= toDateTime(${sqlNumber(q.from)}) AND hour < toDateTime(${sqlNumber(q.to)})`;
  const table = tableRef(database, 'checks_hourly', layout);
  return {
    counts: `SELECT toUInt32(${bucket}) AS t, status, uniqExactMerge(checks) AS n
      FROM ${table} WHERE ${where} GROUP BY t, status ORDER BY t`,
    quantiles: `SELECT toUInt32(${bucket}) AS t, quantilesTDigestMerge(0.5, 0.95, 0.99)(response_time) AS q
      FROM ${table} WHERE ${where} GROUP BY t WITH TOTALS ORDER BY t`,
  };
}

/**
 * One statement per bucket of [from, to) that has checks: its counts per status of
 * CHECK_STATUSES (n, in that order: the same uniqExactMerge as summarySql's counts, per
 * status), its quantiles (q: the same quantilesTDigestMerge as summarySql's, over the same
 * rows) and its t-digest state (s: hex, for TDigest.fromHex) so that totals over many
 * buckets can be merged without ClickHouse. Runs on 18.16 (hex of toString of a state).
 */
export function summaryBucketsSql(database: string, layout: TableLayout, q: SummaryQuery): string {
  const bucket = q.interval === 'hour' ? 'hour' : 'toStartOfDay(hour)';
  const where = `tenant_id = ${sqlString(q.tenantId)} AND monitor_id = ${sqlString(q.monitorId)} AND hour >= toDateTime(${sqlNumber(q.from)}) AND hour < toDateTime(${sqlNumber(q.to)})`;
  const counts = CHECK_STATUSES.map((s) => `uniqExactMergeIf(checks, status = ${sqlString(s)})`).join(', ');
  return `SELECT toUInt32(${bucket}) AS t, [${counts}] AS n,
      quantilesTDigestMerge(0.5, 0.95, 0.99)(response_time) AS q,
      hex(toString(quantilesTDigestMergeState(0.5, 0.95, 0.99)(response_time))) AS s
    FROM ${tableRef(database, 'checks_hourly', layout)} WHERE ${where} GROUP BY t ORDER BY t`;
}

/** A row of summaryBucketsSql (UInt64 counts come as strings). */
export interface SummaryBucketRow {
  t: number;
  n: (string | number)[];
  q: number[];
  s: string;
}

/** Rows of summarySql's two statements. */
export interface SummaryCountRow {
  t: number;
  status: string;
  n: string;
}
export interface SummaryQuantileRow {
  t: number;
  q: number[];
}

/** The newest check of each of `tenantId`'s monitors in `ids` (columns monitor_id, t: unix seconds). */
export function lastChecksSql(database: string, layout: TableLayout, tenantId: string, ids: readonly string[]): string {
  return `SELECT monitor_id, toUnixTimestamp(max(created_at)) AS t
    FROM ${tableRef(database, 'checks', layout)}
    WHERE tenant_id = ${sqlString(tenantId)} AND monitor_id IN ${sqlStringList(ids)}
    GROUP BY monitor_id`;
}
