import type { AuditEntry, AuditOutcome, ActorType, Validators } from '@telemetry/contract';
import { sqlIdentifier, sqlNumber, sqlString, type MigrationsByVersion } from '@telemetry/platform';
import { auditDatabase } from './databases.js';
import { beforeCursor, decodeTimed, type Decoded } from './rows.js';
import { pageRead } from './distributed-reads.js';
import { tableRef, type TableLayout } from './layout.js';

/**
 * The `audit_log` table (docs/access.md, "Audit log"; docs/clickhouse.md): one row per
 * audited action (every write of the registry, members, keys, settings, sign-ins and
 * refusals), published by the query service to AUDIT_TOPIC and written by the stream
 * consumer. Append-only: it lives in its own database, `<db>_audit`, which the consumer's
 * own user (it drops the data tables' partitions) cannot reach; the audit writer may only
 * INSERT, the query service and analysts only SELECT (databases.ts). The
 * ReplacingMergeTree only folds the copies of one entry (`id`) a Kafka redelivery made.
 * No retention: entries stay until the operator removes them.
 */
export const auditLogMigrations: MigrationsByVersion = {
  16: (_db, name) => {
    const db = sqlIdentifier(auditDatabase(name));
    return [
      `CREATE DATABASE IF NOT EXISTS ${db}`,
      `CREATE TABLE IF NOT EXISTS ${db}.audit_log (
        tenant_id String, at DateTime('UTC'), id String, at_ms UInt64,
        actor_type String, actor_id String, actor_email String,
        action String, target_type String, target_id String, outcome String,
        changes String, ip String, user_agent String, request_id String,
        inserted_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(inserted_at)
      PARTITION BY toYYYYMM(at)
      ORDER BY (tenant_id, at, id)`,
    ];
  },
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

/** An AUDIT_TOPIC message as its row: JSON, the AuditEntry schema, `at` in range. */
export function decodeAuditEntry(v: Validators, value: Buffer | null): Decoded<AuditLogRow> {
  return decodeTimed(v.auditEntry, 'audit entry', value, 'at', (e: AuditEntry, at, now, ms) => ({
    tenant_id: e.tenant_id,
    at,
    id: e.id,
    at_ms: ms,
    actor_type: e.actor.type,
    actor_id: e.actor.id,
    actor_email: e.actor.email,
    action: e.action,
    target_type: e.target.type,
    target_id: e.target.id,
    outcome: e.outcome,
    changes: JSON.stringify(e.changes),
    ip: e.ip,
    user_agent: e.user_agent,
    request_id: e.request_id,
    inserted_at: now,
  }));
}

/** What GET /api/audit asks (every value validated by the route; escaped here). */
export interface AuditQuery {
  tenantId: string;
  limit: number;
  /** Unix seconds, inclusive. */
  from?: number;
  /** Unix seconds, exclusive. */
  to?: number;
  /** A person's id, a key's id or an email. */
  actor?: string;
  /** An action, or a prefix of one ending in `.` (`monitor.`). */
  action?: string;
  targetType?: string;
  targetId?: string;
  outcome?: AuditOutcome;
  /** The (at_ms, id) of the last entry of the previous page. */
  cursor?: { ms: number; id: string };
}

/**
 * A tenant's audit entries, newest first, one row per entry (`LIMIT 1 BY id` hides copies
 * not merged yet), one row more than the limit (a next page exists). The tenant always
 * comes first: the sort key's prefix. Runs on 18.16 (no startsWith there: a prefix is
 * compared with substring).
 */
export function auditLogSql(database: string, layout: TableLayout, q: AuditQuery): string {
  const where = [`tenant_id = ${sqlString(q.tenantId)}`];
  if (q.from !== undefined) where.push(`at >= toDateTime(${sqlNumber(q.from)})`);
  if (q.to !== undefined) where.push(`at < toDateTime(${sqlNumber(q.to)})`);
  if (q.actor !== undefined) where.push(`(actor_id = ${sqlString(q.actor)} OR actor_email = ${sqlString(q.actor)})`);
  if (q.action !== undefined) {
    where.push(
      q.action.endsWith('.')
        ? `substring(action, 1, ${sqlNumber(Buffer.byteLength(q.action))}) = ${sqlString(q.action)}`
        : `action = ${sqlString(q.action)}`,
    );
  }
  if (q.targetType !== undefined) where.push(`target_type = ${sqlString(q.targetType)}`);
  if (q.targetId !== undefined) where.push(`target_id = ${sqlString(q.targetId)}`);
  if (q.outcome !== undefined) where.push(`outcome = ${sqlString(q.outcome)}`);
  if (q.cursor) where.push(...beforeCursor('at', 'at_ms', q.cursor));
  const sql = `SELECT id, tenant_id, at_ms, actor_type, actor_id, actor_email, action, target_type, target_id, outcome,
      changes, ip, user_agent, request_id
    FROM ${tableRef(database, 'audit_log', layout)}
    WHERE ${where.join(' AND ')}
    ORDER BY at_ms DESC, id DESC
    LIMIT 1 BY id
    LIMIT ${sqlNumber(q.limit + 1)}`;
  return pageRead(layout, q.limit + 1, sql, 'at_ms DESC, id DESC');
}

/** A row of auditLogSql's result (ClickHouse sends 64-bit integers as strings). */
export type AuditLogReadRow = Omit<AuditLogRow, 'at' | 'at_ms' | 'inserted_at'> & { at_ms: number | string };

export function rowToAuditEntry(r: AuditLogReadRow): AuditEntry {
  let changes: AuditEntry['changes'] = {};
  try {
    changes = JSON.parse(r.changes) as AuditEntry['changes'];
  } catch {
    // Written by the consumer from a validated message: never, but an entry is still shown.
  }
  return {
    id: r.id,
    tenant_id: r.tenant_id,
    at: new Date(Number(r.at_ms)).toISOString(),
    actor: { type: r.actor_type as ActorType, id: r.actor_id, email: r.actor_email },
    action: r.action,
    target: { type: r.target_type, id: r.target_id },
    outcome: r.outcome as AuditOutcome,
    changes,
    ip: r.ip,
    user_agent: r.user_agent,
    request_id: r.request_id,
  };
}
