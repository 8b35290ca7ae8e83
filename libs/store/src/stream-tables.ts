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
 * The stream consumer's tables in database `db` (a validated, quoted identifier), as
 * `db.name`; the audit log in `auditDb` (`<db>_audit`, quoted likewise: databases.ts).
 */
export function streamTables(db: string, auditDb: string): StreamTables {
  return {
    events: table<EventRow>(`${db}.events`),
    checks: table<CheckRow>(`${db}.checks`),
    alerts: table<AlertRow>(`${db}.alerts`),
    webhook_deliveries: table<WebhookDeliveryRow>(`${db}.webhook_deliveries`),
    audit_log: table<AuditLogRow>(`${auditDb}.audit_log`),
    failed_events: table<FailedEventRow>(`${db}.failed_events`),
    check_screenshots: table<ScreenshotRow>(`${db}.check_screenshots`),
  };
}
