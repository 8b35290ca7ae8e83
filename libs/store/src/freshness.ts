import type { MigrationsByVersion } from '@telemetry/platform';

/**
 * The `freshness` table (docs/clickhouse.md, "How far behind the tables are"): each
 * stream consumer replica writes, every FRESHNESS_INTERVAL_MS, one row per table it
 * fills: the messages it has not read yet and when its last insert succeeded.
 */

/** Statements per migration version (see migrations.ts). */
export const freshnessMigrations: MigrationsByVersion = {
  6: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.freshness (
        table_name String, topic String, consumer String, lag_messages UInt64,
        last_insert_at DateTime('UTC'), updated_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(updated_at)
      PARTITION BY toYYYYMM(updated_at)
      ORDER BY (table_name, consumer)`,
  ],
};

/** A row of `freshness` as inserted. Times are unix seconds; last_insert_at 0: none since the replica started. */
export interface FreshnessRow {
  table_name: string;
  topic: string;
  consumer: string;
  lag_messages: number;
  last_insert_at: number;
  updated_at: number;
}
