/**
 * The tables the stream consumer writes, each typed with its row (as Langfuse's
 * ClickHouse writer maps a table name to its record type): handing a BatchWriter rows of
 * the wrong table does not compile.
 */
import { table, type Table } from '@telemetry/platform';
import type { AlertRow } from './alerts.js';
import type { AuditLogRow } from './audit-log.js';
import type { CheckRow } from './checks.js';
import type { EventRow } from './events.js';
import type { FailedEventRow } from './failed-events.js';
import { tableRef, type TableLayout } from './layout.js';
import type { ScreenshotRow } from './screenshots.js';
import type { WebhookDeliveryRow } from './webhook-deliveries.js';

/** Each table the stream consumer writes, and the row it holds. */
export interface StreamTableRows {
  events: EventRow;
  checks: CheckRow;
  alerts: AlertRow;
  webhook_deliveries: WebhookDeliveryRow;
  audit_log: AuditLogRow;
  failed_events: FailedEventRow;
  check_screenshots: ScreenshotRow;
}

export type StreamTables = { readonly [K in keyof StreamTableRows]: Table<StreamTableRows[K]> };

/**
 * The stream consumer's tables of data database `database` as `layout` reaches them
 * (tableRef: quoted `db.name`, or `db.name_all` on a cluster); the audit log in its
 * sibling `<database>_audit` (databases.ts).
 */
export function streamTables(database: string, layout: TableLayout): StreamTables {
  const t = (name: keyof StreamTableRows): string => tableRef(database, name, layout);
  return {
    events: table<EventRow>(t('events')),
    checks: table<CheckRow>(t('checks')),
    alerts: table<AlertRow>(t('alerts')),
    webhook_deliveries: table<WebhookDeliveryRow>(t('webhook_deliveries')),
    audit_log: table<AuditLogRow>(t('audit_log')),
    failed_events: table<FailedEventRow>(t('failed_events')),
    check_screenshots: table<ScreenshotRow>(t('check_screenshots')),
  };
}
