import type { MigrationsByVersion } from '@telemetry/platform';

/**
 * The `audit_log` table (docs/access.md, "Audit log"; docs/clickhouse.md): one row per
 * audited action (every write of the registry, members, keys, settings, sign-ins and
 * refusals), published by the query service to AUDIT_TOPIC and written by the stream
 * consumer. Append-only: no service user may ALTER or DELETE it; the ReplacingMergeTree
 * only folds the copies of one entry (`id`) a Kafka redelivery made.
 */
export const auditLogMigrations: MigrationsByVersion = {
  16: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.audit_log (
        tenant_id String, at DateTime('UTC'), id String, at_ms UInt64,
        actor_type String, actor_id String, actor_email String,
        action String, target_type String, target_id String, outcome String,
        changes String, ip String, user_agent String, request_id String,
        inserted_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(inserted_at)
      PARTITION BY toYYYYMM(at)
      ORDER BY (tenant_id, at, id)`,
  ],
};

/** A row of `audit_log` as inserted (AuditEntry flattened; `changes` as JSON text). */
export interface AuditLogRow {
  tenant_id: string;
  at: number;
  id: string;
  at_ms: number;
  actor_type: string;
  actor_id: string;
  actor_email: string;
  action: string;
  target_type: string;
  target_id: string;
  outcome: string;
  changes: string;
  ip: string;
  user_agent: string;
  request_id: string;
  inserted_at: number;
}
