import type { ClickHouseClient } from '@clickhouse/client';
import { runMigrations, type Logger, type Migration } from '@telemetry/platform';

/**
 * Versioned ClickHouse migrations. Each runs on ClickHouse 18.16 and on current
 * ClickHouse (no TTL, CODEC, DateTime64, LowCardinality). Applied versions are
 * recorded in `schema_migrations`; every statement is idempotent (IF NOT EXISTS), so
 * two services migrating at once is harmless. Never edit a released migration: add one.
 * The tables are a public interface for analysts: see docs/clickhouse.md.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'events, checks and access keys',
    statements: (db) => [
      `CREATE TABLE IF NOT EXISTS ${db}.events (
        event_id UUID,
        key_id String,
        source String,
        category String,
        payload String,
        client_event_id String,
        event_time DateTime('UTC'),
        client_ts Nullable(DateTime('UTC')),
        sent_at Nullable(DateTime('UTC')),
        received_at DateTime('UTC'),
        inserted_at DateTime('UTC') DEFAULT now()
      ) ENGINE = ReplacingMergeTree(inserted_at)
      PARTITION BY toYYYYMMDD(received_at)
      ORDER BY (source, category, received_at, event_id)`,
      `CREATE TABLE IF NOT EXISTS ${db}.checks (
        monitor_id String,
        created_at DateTime('UTC'),
        id String,
        status String,
        response_time Float64,
        status_code UInt16,
        inserted_at DateTime('UTC') DEFAULT now()
      ) ENGINE = ReplacingMergeTree(inserted_at)
      PARTITION BY toYYYYMM(created_at)
      ORDER BY (monitor_id, created_at, id)`,
      `CREATE TABLE IF NOT EXISTS ${db}.access_keys (
        key_id String,
        kind String,
        name String,
        secret_hash String,
        scopes Array(String),
        monitor_ids Array(String),
        allowed_origins Array(String),
        allowed_sources Array(String),
        revoked UInt8,
        created_at DateTime('UTC'),
        version UInt64
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY key_id`,
    ],
  },
  {
    version: 2,
    name: 'rollups: events per minute, checks per hour',
    // Rollups count distinct ids (uniqExact), so a row Kafka delivered twice counts once.
    // Quantile digests take every stored row: a rare duplicate weighs twice.
    statements: (db) => [
      `CREATE TABLE IF NOT EXISTS ${db}.events_per_minute (
        minute DateTime('UTC'),
        source String,
        category String,
        events AggregateFunction(uniqExact, UUID)
      ) ENGINE = AggregatingMergeTree()
      PARTITION BY toYYYYMMDD(minute)
      ORDER BY (source, category, minute)`,
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.events_per_minute_mv TO ${db}.events_per_minute AS
      SELECT toStartOfMinute(received_at) AS minute, source, category, uniqExactState(event_id) AS events
      FROM ${db}.events
      GROUP BY minute, source, category`,
      `CREATE TABLE IF NOT EXISTS ${db}.checks_hourly (
        monitor_id String,
        hour DateTime('UTC'),
        status String,
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
  },
  {
    version: 3,
    name: 'monitor registry, alerts, check errors',
    statements: (db) => [
      // One row per change; the newest version of an id is the monitor (deleted = 1: gone).
      `CREATE TABLE IF NOT EXISTS ${db}.monitors (
        id String,
        version UInt64,
        deleted UInt8,
        spec String,
        created_at DateTime('UTC'),
        updated_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY id`,
      // One row per state change of a monitor, written by the consumer from the alerts topic.
      `CREATE TABLE IF NOT EXISTS ${db}.alerts (
        id String,
        monitor_id String,
        incident_id String,
        type String,
        created_at DateTime('UTC'),
        check_id String,
        status String,
        status_code UInt16,
        error String,
        response_time Float64,
        inserted_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(inserted_at)
      ORDER BY (monitor_id, incident_id, type)`,
      { addColumn: { table: 'checks', column: 'error', type: 'String' } },
    ],
  },
];

/** Applies every migration of MIGRATIONS not yet applied to `database`. */
export function migrate(client: ClickHouseClient, database: string, logger: Logger): Promise<number[]> {
  return runMigrations(client, database, MIGRATIONS, logger);
}
