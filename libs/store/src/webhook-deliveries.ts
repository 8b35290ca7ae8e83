import {
  DEFAULT_TENANT,
  type WebhookDelivery,
  type WebhookDeliveryMessage,
  type ChannelType,
  type NotificationKind,
  type CheckError,
  type Validators,
} from '@telemetry/contract';
import { sqlNumber, sqlString, type MigrationsByVersion } from '@telemetry/platform';
import { lowCardinality } from './modern.js';
import { beforeCursor, decodeTimed, type Decoded } from './rows.js';
import { pageRead } from './distributed-reads.js';
import { tableRef, type TableLayout } from './layout.js';

/**
 * The `webhook_deliveries` table (docs/clickhouse.md): one row per attempt to deliver an
 * alert to a webhook, published by the check runner and written by the stream consumer.
 * GET /api/monitors/{id}/webhook-deliveries reads it.
 */

/** Statements per migration version (see migrations.ts). */
export const webhookDeliveriesMigrations: MigrationsByVersion = {
  6: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.webhook_deliveries (
        tenant_id String, monitor_id String, attempted_at DateTime('UTC'), id String,
        attempted_at_ms UInt64, alert_id String, alert_type String, url String, attempt UInt16,
        status String, status_code UInt16, duration_ms UInt32, error String, inserted_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(inserted_at)
      PARTITION BY toYYYYMM(attempted_at)
      ORDER BY (tenant_id, monitor_id, attempted_at, id)`,
  ],
  8: (db, _name, engine) => lowCardinality(db, engine, 'webhook_deliveries', ['alert_type', 'status']),
  // Rows from before hold webhook deliveries: the default says so.
  12: () => [
    { addColumn: { table: 'webhook_deliveries', column: 'channel', type: `String DEFAULT ${sqlString('webhook')}` } },
  ],
  // Channel objects (/api/channels): which one, and what was sent (empty: a monitor's own webhooks, before).
  14: () => [
    { addColumn: { table: 'webhook_deliveries', column: 'channel_id', type: 'String' } },
    { addColumn: { table: 'webhook_deliveries', column: 'kind', type: 'String' } },
  ],
};

/** A row of `webhook_deliveries` as inserted. */
export interface WebhookDeliveryRow {
  tenant_id: string;
  monitor_id: string;
  attempted_at: number;
  id: string;
  attempted_at_ms: number;
  alert_id: string;
  alert_type: string;
  url: string;
  attempt: number;
  status: string;
  status_code: number;
  duration_ms: number;
  error: string;
  inserted_at: number;
  channel: ChannelType;
  /** The channel object's id; empty for a monitor's own webhooks (migration 14). */
  channel_id: string;
  /** What was sent (down, up, reminder, ...); empty in records published before (migration 14). */
  kind: string;
}

export function decodeWebhookDelivery(v: Validators, value: Buffer | null): Decoded<WebhookDeliveryRow> {
  return decodeTimed(
    v.webhookDeliveryMessage,
    'webhook delivery',
    value,
    'attempted_at',
    (d: WebhookDeliveryMessage, at, now) => ({
      tenant_id: d.tenant_id ?? DEFAULT_TENANT,
      monitor_id: d.monitor_id,
      attempted_at: at,
      id: d.id,
      attempted_at_ms: Date.parse(d.attempted_at),
      alert_id: d.alert_id,
      alert_type: d.alert_type,
      url: d.url,
      attempt: d.attempt,
      status: d.status,
      status_code: d.status_code,
      duration_ms: d.duration_ms,
      error: d.error ?? '',
      inserted_at: now,
      // Published before channels: a webhook.
      channel: d.channel ?? 'webhook',
      channel_id: d.channel_id ?? '',
      kind: d.kind ?? '',
    }),
  );
}

export interface WebhookDeliveriesQuery {
  tenantId: string;
  /** One monitor's attempts (GET /api/monitors/{id}/webhook-deliveries), */
  monitorId?: string;
  /** or one channel object's (GET /api/channels/{id}/deliveries); one of the two. */
  channelId?: string;
  limit: number;
  status?: string;
  alertId?: string;
  /** The (attempted_at_ms, id) of the last attempt of the previous page. */
  cursor?: { ms: number; id: string };
}

/**
 * A monitor's (or a channel's) delivery attempts, newest first, one row per attempt
 * (`LIMIT 1 BY id` hides copies not merged yet). One row more than the limit says whether
 * a next page exists. NOTE: a channel's attempts are not in the sort key's prefix
 * (tenant_id, monitor_id): its read scans the tenant's rows, bounded by the cursor's time.
 */
export function webhookDeliveriesSql(database: string, layout: TableLayout, q: WebhookDeliveriesQuery): string {
  if ((q.monitorId === undefined) === (q.channelId === undefined)) {
    throw new Error('webhookDeliveriesSql: give a monitor or a channel');
  }
  const where = [`tenant_id = ${sqlString(q.tenantId)}`];
  if (q.monitorId !== undefined) where.push(`monitor_id = ${sqlString(q.monitorId)}`);
  if (q.channelId !== undefined) where.push(`channel_id = ${sqlString(q.channelId)}`);
  if (q.status !== undefined) where.push(`status = ${sqlString(q.status)}`);
  if (q.alertId !== undefined) where.push(`alert_id = ${sqlString(q.alertId)}`);
  if (q.cursor) where.push(...beforeCursor('attempted_at', 'attempted_at_ms', q.cursor));
  const sql = `SELECT id, monitor_id, alert_id, alert_type, url, attempt, status, status_code, duration_ms, error,
      attempted_at_ms, channel, channel_id, kind
    FROM ${tableRef(database, 'webhook_deliveries', layout)}
    WHERE ${where.join(' AND ')}
    ORDER BY attempted_at_ms DESC, id DESC
    LIMIT 1 BY id
    LIMIT ${sqlNumber(q.limit + 1)}`;
  return pageRead(layout, q.limit + 1, sql, 'attempted_at_ms DESC, id DESC');
}

/** A row of webhookDeliveriesSql's result (ClickHouse sends 64-bit integers as strings). */
export interface WebhookDeliveryReadRow {
  id: string;
  monitor_id: string;
  alert_id: string;
  alert_type: string;
  url: string;
  attempt: number | string;
  status: string;
  status_code: number | string;
  duration_ms: number | string;
  error: string;
  attempted_at_ms: number | string;
  channel: string;
  channel_id: string;
  kind: string;
}

export function rowToWebhookDelivery(r: WebhookDeliveryReadRow): WebhookDelivery {
  return {
    id: r.id,
    monitor_id: r.monitor_id,
    alert_id: r.alert_id,
    alert_type: r.alert_type as WebhookDelivery['alert_type'],
    url: r.url,
    attempt: Number(r.attempt),
    status: r.status as WebhookDelivery['status'],
    status_code: Number(r.status_code),
    duration_ms: Number(r.duration_ms),
    error: (r.error || null) as CheckError | null,
    attempted_at: new Date(Number(r.attempted_at_ms)).toISOString(),
    channel: r.channel as ChannelType,
    // Empty in rows of a monitor's own webhooks, and in rows from before channel objects.
    channel_id: r.channel_id || null,
    ...(r.kind ? { kind: r.kind as NotificationKind } : {}),
  };
}
