/**
 * The data of `npm run bench:query`: which synthetic checks there are (DataSpec: one a
 * minute per monitor, ~3% down, ~5% degraded), and their server-side load into ClickHouse
 * (INSERT ... SELECT FROM numbers() in chunks, the monitors saved in the registry, then
 * OPTIMIZE ... FINAL) with its figures.
 */
import type { PgPool } from '@telemetry/platform';
import type { ClickHouseClient } from '@telemetry/platform';
import { sqlIdentifier, sqlNumber, sqlString } from '@telemetry/platform';
import { DEFAULT_TENANT } from '@telemetry/contract';
import { MonitorStore, placeholderMonitor } from '@telemetry/store';
import { runSecretBox } from '../../harness/processes.js';

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
