import { sqlString } from '@telemetry/platform';
import { tableRef, type TableLayout } from '../layout.js';

/**
 * One incident of a tenant by its id, from the `alerts` table (as incidentsSql reads them):
 * its monitor and when it started (unix seconds), if a down alert opened it; no row for
 * another tenant's or an unknown incident. What POST …/reports/from-incident starts from.
 */
export function incidentByIdSql(database: string, layout: TableLayout, tenantId: string, incidentId: string): string {
  return `SELECT any(monitor_id) AS monitor_id, toUnixTimestamp(minIf(created_at, type = 'monitor.down')) AS started
    FROM ${tableRef(database, 'alerts', layout)}
    WHERE tenant_id = ${sqlString(tenantId)} AND incident_id = ${sqlString(incidentId)}
    GROUP BY incident_id
    HAVING countIf(type = 'monitor.down') > 0`;
}

/** A row of incidentByIdSql's result. */
export interface IncidentByIdRow {
  monitor_id: string;
  started: number | string;
}
