import {
  DEFAULT_TENANT,
  STATE_ALERT_TYPES,
  toIsoSeconds,
  type AlertMessage,
  type Incident,
  type Validators,
} from '@telemetry/contract';
import { sqlNumber, sqlString, sqlStringList, type MigrationsByVersion } from '@telemetry/platform';
import { lowCardinality } from './modern.js';
import { decodeTimed, type Decoded } from './rows.js';
import { tableRef, type TableLayout } from './layout.js';

/**
 * The `alerts` table (docs/clickhouse.md): one row per state change of a monitor,
 * written by the stream consumer from the alerts topic. Incidents and a monitor's
 * current state are read from it.
 */

/** Statements per migration version (see migrations.ts). */
export const alertsMigrations: MigrationsByVersion = {
  3: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.alerts (
        id String, monitor_id String, incident_id String, type String, created_at DateTime('UTC'),
        check_id String, status String, status_code UInt16, error String, response_time Float64,
        inserted_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(inserted_at)
      ORDER BY (monitor_id, incident_id, type)`,
  ],
  // Tenants lead the sort key.
  4: (db) => [
    { setAside: { table: 'alerts', marker: 'tenant_id' } },
    `CREATE TABLE IF NOT EXISTS ${db}.alerts (
        tenant_id String, id String, monitor_id String, incident_id String, type String,
        created_at DateTime('UTC'), check_id String, status String, status_code UInt16, error String,
        response_time Float64, inserted_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(inserted_at)
      ORDER BY (tenant_id, monitor_id, incident_id, type)`,
    {
      copyBack: {
        table: 'alerts',
        sql: (from) => `INSERT INTO ${db}.alerts (tenant_id, id, monitor_id, incident_id, type, created_at, check_id,
            status, status_code, error, response_time, inserted_at)
          SELECT '${DEFAULT_TENANT}', id, monitor_id, incident_id, type, created_at, check_id, status, status_code,
            error, response_time, inserted_at FROM ${from}`,
      },
    },
  ],
  8: (db, _name, engine) => lowCardinality(db, engine, 'alerts', ['status']),
  11: () => [{ addColumn: { table: 'alerts', column: 'maintenance', type: 'UInt8' } }],
  // incident.acknowledged / unacknowledged: who.
  14: () => [{ addColumn: { table: 'alerts', column: 'actor', type: 'String' } }],
};

/** A row of `alerts` as inserted: one state change of a monitor. */
export interface AlertRow {
  tenant_id: string;
  id: string;
  monitor_id: string;
  incident_id: string;
  type: string;
  created_at: number;
  check_id: string;
  status: string;
  status_code: number;
  error: string;
  response_time: number;
  /** 1: made during a maintenance window (migration 11). */
  maintenance: number;
  /** Who acknowledged (incident.acknowledged, incident.unacknowledged); empty otherwise (migration 14). */
  actor: string;
  inserted_at: number;
}

export function decodeAlert(v: Validators, value: Buffer | null): Decoded<AlertRow> {
  return decodeTimed(v.alertMessage, 'alert', value, 'created_at', (a: AlertMessage, createdAt, now) => ({
    tenant_id: a.tenant_id ?? DEFAULT_TENANT,
    id: a.id,
    monitor_id: a.monitor_id,
    incident_id: a.incident_id,
    type: a.type,
    created_at: createdAt,
    // An acknowledgement has no check: its columns stay empty.
    check_id: a.check?.id ?? '',
    status: a.check?.status ?? '',
    status_code: a.check?.status_code ?? 0,
    error: a.check?.error ?? '',
    response_time: a.check?.response_time ?? 0,
    maintenance: a.maintenance ? 1 : 0,
    actor: a.actor ?? '',
    inserted_at: now,
  }));
}

/**
 * The last alert of each monitor in `ids` (columns monitor_id, t: type, i: incident id),
 * of `tenantId`'s monitors only when given. By time, and at equal seconds an up after
 * the down it closes.
 */
export function lastAlertsSql(
  database: string,
  layout: TableLayout,
  ids: readonly string[],
  tenantId?: string,
): string {
  return `SELECT monitor_id,
      argMax(type, toUInt64(created_at) * 2 + (type = 'monitor.up')) AS t,
      argMax(incident_id, toUInt64(created_at) * 2 + (type = 'monitor.up')) AS i,
      argMax(maintenance, toUInt64(created_at) * 2 + (type = 'monitor.up')) AS h
    FROM ${tableRef(database, 'alerts', layout)}
    WHERE ${tenantId === undefined ? '' : `tenant_id = ${sqlString(tenantId)} AND `}monitor_id IN ${sqlStringList(ids)}
      AND type IN ${sqlStringList(STATE_ALERT_TYPES)}
    GROUP BY monitor_id`;
}

/** A row of lastAlertsSql's result. */
export interface LastAlertRow {
  monitor_id: string;
  t: string;
  i: string;
  /** 1 when that alert was made in a maintenance window. */
  h: number | string;
}

/**
 * Incidents from the alerts table: each is the down alert that opened it and, once it
 * closed, the up alert with the same incident_id. Newest first.
 */
export function incidentsSql(
  database: string,
  layout: TableLayout,
  tenantId: string,
  monitorId: string,
  limit: number,
  status?: string,
): string {
  const having = ["countIf(type = 'monitor.down') > 0"];
  if (status === 'open') having.push("countIf(type = 'monitor.up') = 0");
  if (status === 'resolved') having.push("countIf(type = 'monitor.up') > 0");
  return `SELECT incident_id,
      toUnixTimestamp(minIf(created_at, type = 'monitor.down')) AS started,
      toUnixTimestamp(maxIf(created_at, type = 'monitor.up')) AS resolved,
      countIf(type = 'monitor.up') AS ups,
      anyIf(status_code, type = 'monitor.down') AS code,
      anyIf(error, type = 'monitor.down') AS err,
      maxIf(maintenance, type = 'monitor.down') AS mw
    FROM ${tableRef(database, 'alerts', layout)}
    WHERE tenant_id = ${sqlString(tenantId)} AND monitor_id = ${sqlString(monitorId)}
    GROUP BY incident_id
    HAVING ${having.join(' AND ')}
    ORDER BY started DESC, incident_id DESC
    LIMIT ${sqlNumber(limit)}`;
}

/** A row of incidentsSql's result. */
export interface IncidentRow {
  incident_id: string;
  started: number | string;
  resolved: number | string;
  ups: number | string;
  code: number | string;
  err: string;
  mw: number | string;
}

export function rowToIncident(r: IncidentRow, monitorId: string, now: number): Incident {
  const started = Number(r.started);
  const resolved = Number(r.ups) > 0 ? Number(r.resolved) : null;
  return {
    id: r.incident_id,
    monitor_id: monitorId,
    status: resolved === null ? 'open' : 'resolved',
    started_at: toIsoSeconds(started),
    resolved_at: resolved === null ? null : toIsoSeconds(resolved),
    duration_seconds: Math.max(0, (resolved ?? now) - started),
    cause: { status_code: Number(r.code), error: (r.err || null) as Incident['cause']['error'] },
    maintenance: Number(r.mw) === 1,
  };
}

/**
 * The incidents of a monitor that overlap [from, to) (unix seconds): when each started,
 * and when an up alert before `to` resolved it (none: still open at `to`).
 */
export function incidentSpansSql(
  database: string,
  layout: TableLayout,
  tenantId: string,
  monitorId: string,
  from: number,
  to: number,
): string {
  return `SELECT toUnixTimestamp(minIf(created_at, type = 'monitor.down')) AS started,
      countIf(type = 'monitor.up') AS ups,
      toUnixTimestamp(maxIf(created_at, type = 'monitor.up')) AS resolved
    FROM ${tableRef(database, 'alerts', layout)}
    WHERE tenant_id = ${sqlString(tenantId)} AND monitor_id = ${sqlString(monitorId)}
      AND created_at < toDateTime(${sqlNumber(to)})
    GROUP BY incident_id
    HAVING countIf(type = 'monitor.down') > 0
      AND (countIf(type = 'monitor.up') = 0 OR maxIf(created_at, type = 'monitor.up') > toDateTime(${sqlNumber(from)}))`;
}

/** A row of incidentSpansSql's result. */
export interface IncidentSpanRow {
  started: number | string;
  ups: number | string;
  resolved: number | string;
}

/** SLA figures of a range, as Better Stack gives them. */
export interface Sla {
  /** 100 x (1 - downtime / the range's length up to now); null for a range that has not begun. */
  availability_percent: number | null;
  downtime_seconds: number;
  incidents: number;
  /** Of the incidents' parts inside the range; null without incidents. */
  longest_incident_seconds: number | null;
  mean_incident_seconds: number | null;
}

/**
 * SLA figures of [from, to) from its incidents, each counted for its part inside the range
 * and before `now` (an open one lasts until then).
 */
export function slaOf(rows: readonly IncidentSpanRow[], from: number, to: number, now: number): Sla {
  const end = Math.min(to, now);
  const spans = rows
    .map((r) => {
      const resolved = Number(r.ups) > 0 ? Number(r.resolved) : end;
      return Math.max(0, Math.min(resolved, end) - Math.max(Number(r.started), from));
    })
    .filter((_, i) => Number(rows[i]!.started) < end);
  const downtime = spans.reduce((a, b) => a + b, 0);
  const round3 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    availability_percent: end > from ? round3(100 * (1 - downtime / (end - from))) : null,
    downtime_seconds: downtime,
    incidents: spans.length,
    longest_incident_seconds: spans.length > 0 ? Math.max(...spans) : null,
    mean_incident_seconds: spans.length > 0 ? round3(downtime / spans.length) : null,
  };
}
