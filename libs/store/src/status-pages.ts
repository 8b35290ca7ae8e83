import { toIsoSeconds, type StatusPage } from '@telemetry/contract';
import { sqlNumber, sqlString, sqlStringList } from '@telemetry/platform';
import { tableRef, type TableLayout } from './layout.js';

/** A status page as stored: its tenant and row version. */
export interface StoredStatusPage extends StatusPage {
  tenant_id: string;
  version: number;
}

/** What a store keeps of a page besides its times and version (the ClickHouse table it replaced had no key). */
export type StatusPageFields = Pick<
  StoredStatusPage,
  'slug' | 'tenant_id' | 'title' | 'description' | 'monitor_ids'
> & {
  key?: string | null;
};

/**
 * A stored page from a store's row: its fields, and its times (unix seconds) and version as
 * the database answers them (numbers or strings). The registry and the ClickHouse table it
 * replaced (legacy/status-pages.ts) both read pages this way.
 */
export function storedStatusPageOf(
  f: StatusPageFields,
  createdAt: number | string,
  updatedAt: number | string,
  version: number | string,
): StoredStatusPage {
  return {
    slug: f.slug,
    tenant_id: f.tenant_id,
    title: f.title,
    description: f.description,
    monitor_ids: f.monitor_ids,
    key: f.key ?? null,
    created_at: toIsoSeconds(Number(createdAt)),
    updated_at: toIsoSeconds(Number(updatedAt)),
    version: Number(version),
  };
}

/** Only what anyone may see of a status page's own settings. */
export function publicStatusPageOf(p: StoredStatusPage): StatusPage {
  return {
    slug: p.slug,
    title: p.title,
    description: p.description,
    monitor_ids: p.monitor_ids,
    key: p.key,
    created_at: p.created_at,
    updated_at: p.updated_at,
  };
}

/**
 * Checks per day (UTC), monitor and status of `tenantId`'s monitors in `ids`, from the
 * hourly rollup, over [from, to) (unix seconds on day boundaries). Columns monitor_id,
 * t (the day), status, n.
 */
export function dailyCountsSql(
  database: string,
  layout: TableLayout,
  tenantId: string,
  ids: readonly string[],
  from: number,
  to: number,
): string {
  return `SELECT monitor_id, toUInt32(toStartOfDay(hour)) AS t, status, uniqExactMerge(checks) AS n
    FROM ${tableRef(database, 'checks_hourly', layout)}
    WHERE tenant_id = ${sqlString(tenantId)} AND monitor_id IN ${sqlStringList(ids)}
      AND hour >= toDateTime(${sqlNumber(from)}) AND hour < toDateTime(${sqlNumber(to)})
    GROUP BY monitor_id, t, status`;
}

/** A row of dailyCountsSql's result. */
export interface DailyCountRow {
  monitor_id: string;
  t: number | string;
  status: string;
  n: number | string;
}

/**
 * The open incident of each of `tenantId`'s monitors in `ids` that has one: columns
 * monitor_id and started (unix seconds). An incident is open while its down alert has
 * no up alert with the same incident id.
 */
export function openIncidentsSql(
  database: string,
  layout: TableLayout,
  tenantId: string,
  ids: readonly string[],
): string {
  return `SELECT monitor_id, toUnixTimestamp(minIf(created_at, type = 'monitor.down')) AS started
    FROM ${tableRef(database, 'alerts', layout)}
    WHERE tenant_id = ${sqlString(tenantId)} AND monitor_id IN ${sqlStringList(ids)}
    GROUP BY monitor_id, incident_id
    HAVING countIf(type = 'monitor.down') > 0 AND countIf(type = 'monitor.up') = 0
    ORDER BY started DESC`;
}

/** A row of openIncidentsSql's result. */
export interface OpenIncidentRow {
  monitor_id: string;
  started: number | string;
}
