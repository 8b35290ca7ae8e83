import { DEFAULT_TENANT, type EventMessage, type Validators } from '@telemetry/contract';
import type { MigrationsByVersion } from '@telemetry/platform';
import { decodeTimed, MAX_TS, MIN_TS, toUnix, type Decoded } from './rows.js';

/**
 * The `events` table and its `events_per_minute` rollup (docs/clickhouse.md): their
 * migrations, the row the stream consumer inserts, and how a Kafka event message
 * becomes that row.
 */

/** Statements per migration version (see migrations.ts). */
export const eventsMigrations: MigrationsByVersion = {
  1: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.events (
        event_id UUID, key_id String, source String, category String, payload String,
        client_event_id String, event_time DateTime('UTC'), client_ts Nullable(DateTime('UTC')),
        sent_at Nullable(DateTime('UTC')), received_at DateTime('UTC'),
        inserted_at DateTime('UTC') DEFAULT now()
      ) ENGINE = ReplacingMergeTree(inserted_at)
      PARTITION BY toYYYYMMDD(received_at)
      ORDER BY (source, category, received_at, event_id)`,
  ],
  // Rollups count distinct ids (uniqExact), so a row Kafka delivered twice counts once.
  2: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.events_per_minute (
        minute DateTime('UTC'), source String, category String,
        events AggregateFunction(uniqExact, UUID)
      ) ENGINE = AggregatingMergeTree()
      PARTITION BY toYYYYMMDD(minute)
      ORDER BY (source, category, minute)`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.events_per_minute_mv TO ${db}.events_per_minute AS
      SELECT toStartOfMinute(received_at) AS minute, source, category, uniqExactState(event_id) AS events
      FROM ${db}.events
      GROUP BY minute, source, category`,
  ],
  // Tenants lead both sort keys. The rollup's view is re-made over the new tables; the
  // copy of `events` feeds the new rollup through it, and the old rollup is copied only
  // for the minutes older than any event still kept (retention may have dropped those).
  4: (db) => [
    `DROP TABLE IF EXISTS ${db}.events_per_minute_mv`,
    { setAside: { table: 'events_per_minute', marker: 'tenant_id' } },
    `CREATE TABLE IF NOT EXISTS ${db}.events_per_minute (
        tenant_id String, minute DateTime('UTC'), source String, category String,
        events AggregateFunction(uniqExact, UUID)
      ) ENGINE = AggregatingMergeTree()
      PARTITION BY toYYYYMMDD(minute)
      ORDER BY (tenant_id, source, category, minute)`,
    { setAside: { table: 'events', marker: 'tenant_id' } },
    `CREATE TABLE IF NOT EXISTS ${db}.events (
        tenant_id String, event_id UUID, key_id String, source String, category String, payload String,
        client_event_id String, event_time DateTime('UTC'), client_ts Nullable(DateTime('UTC')),
        sent_at Nullable(DateTime('UTC')), received_at DateTime('UTC'),
        inserted_at DateTime('UTC') DEFAULT now()
      ) ENGINE = ReplacingMergeTree(inserted_at)
      PARTITION BY toYYYYMMDD(received_at)
      ORDER BY (tenant_id, source, category, received_at, event_id)`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.events_per_minute_mv TO ${db}.events_per_minute AS
      SELECT tenant_id, toStartOfMinute(received_at) AS minute, source, category, uniqExactState(event_id) AS events
      FROM ${db}.events
      GROUP BY tenant_id, minute, source, category`,
    {
      copyBack: {
        table: 'events_per_minute',
        sql: (from) => `INSERT INTO ${db}.events_per_minute (tenant_id, minute, source, category, events)
          SELECT '${DEFAULT_TENANT}', minute, source, category, events FROM ${from}
          WHERE minute < (SELECT if(count() = 0, toDateTime(4294967295), toStartOfMinute(min(received_at)))
                          FROM ${db}.events__old)`,
      },
    },
    {
      copyBack: {
        table: 'events',
        sql: (from) => `INSERT INTO ${db}.events (tenant_id, event_id, key_id, source, category, payload,
            client_event_id, event_time, client_ts, sent_at, received_at, inserted_at)
          SELECT '${DEFAULT_TENANT}', event_id, key_id, source, category, payload, client_event_id, event_time,
            client_ts, sent_at, received_at, inserted_at FROM ${from}`,
      },
    },
  ],
};

/** A row of `events` as inserted (JSONEachRow). DateTimes are unix seconds, UTC. */
export interface EventRow {
  tenant_id: string;
  event_id: string;
  key_id: string;
  source: string;
  category: string;
  payload: string;
  client_event_id: string;
  event_time: number;
  client_ts: number | null;
  sent_at: number | null;
  received_at: number;
  inserted_at: number;
}

/**
 * When the event happened, on the server's clock. With a client timestamp and the
 * client's `sent_at`, the client clock's offset (received_at - sent_at) is added to
 * the client timestamp (the same correction Snowplow and PostHog make). With a client
 * timestamp alone it is taken as is; without one, the receive time is used.
 */
export function eventTime(receivedAt: number, clientTs: number | null, sentAt: number | null): number {
  if (clientTs === null) return receivedAt;
  const t = sentAt === null ? clientTs : clientTs + (receivedAt - sentAt);
  return t >= MIN_TS && t <= MAX_TS ? t : receivedAt;
}

export function decodeEvent(v: Validators, value: Buffer | null): Decoded<EventRow> {
  return decodeTimed(v.eventMessage, 'event', value, 'received_at', (e: EventMessage, receivedAt, now) => {
    const clientTs = toUnix(e.client_ts);
    const sentAt = toUnix(e.sent_at);
    return {
      tenant_id: e.tenant_id ?? DEFAULT_TENANT,
      event_id: e.event_id,
      key_id: e.key_id,
      source: e.source,
      category: e.category,
      payload: JSON.stringify(e.payload),
      client_event_id: e.client_event_id ?? '',
      event_time: eventTime(receivedAt, clientTs, sentAt),
      client_ts: clientTs,
      sent_at: sentAt,
      received_at: receivedAt,
      inserted_at: now,
    };
  });
}
