import type { PgMigration } from '@telemetry/platform';

/**
 * Deletion on request (migration 7, docs/deletions.md): each request to delete the events
 * of some user ids and anonymous ids of a tenant (`deletions`: who asked, when, what, how
 * far it got), and the ids no new event may be stored for (`suppressions`). Suppressions
 * are in the change feed as entity `suppressions` by tenant id: every gateway keeps a copy
 * of each tenant's list (SuppressionList) and drops new events of those ids.
 */
export const DELETION_TABLES = ['deletions', 'suppressions'] as const;

/** The change feed's name for suppressions (registry_changes.entity); the id is the tenant's. */
export const SUPPRESSIONS_ENTITY = 'suppressions';

/** Migration 7: the tables of DELETION_TABLES. */
export const DELETIONS_MIGRATION: PgMigration = {
  version: 7,
  name: 'deletions and suppressions',
  statements: [
    // A request: pending until an executor (the stream consumer) claims it under a lease,
    // running while it deletes, then done or failed. `counts`: rows deleted so far per table
    // (and `rollup_minutes`: the events_per_minute minutes recomputed).
    `CREATE TABLE deletions (
       deletion_id text PRIMARY KEY CHECK (deletion_id ~ '^del_[a-z0-9]{20}$'),
       tenant_id text NOT NULL REFERENCES tenants ON DELETE CASCADE,
       requested_by text NOT NULL CHECK (length(requested_by) <= 300),
       created_at timestamptz NOT NULL DEFAULT now(),
       user_ids text[] NOT NULL DEFAULT '{}',
       anonymous_ids text[] NOT NULL DEFAULT '{}',
       state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done', 'failed')),
       counts jsonb NOT NULL DEFAULT '{}',
       error text NOT NULL DEFAULT '' CHECK (length(error) <= 2000),
       attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
       started_at timestamptz,
       finished_at timestamptz,
       lease_until timestamptz,
       CHECK (cardinality(user_ids) + cardinality(anonymous_ids) > 0))`,
    `CREATE INDEX deletions_tenant ON deletions (tenant_id, created_at DESC, deletion_id DESC)`,
    `CREATE INDEX deletions_open ON deletions (created_at) WHERE state IN ('pending', 'running')`,
    // An id of a tenant no event is stored for any more; the first deletion that named it.
    `CREATE TABLE suppressions (
       tenant_id text NOT NULL REFERENCES tenants ON DELETE CASCADE,
       kind text NOT NULL CHECK (kind IN ('user_id', 'anonymous_id')),
       value text NOT NULL CHECK (length(value) BETWEEN 1 AND 256),
       created_at timestamptz NOT NULL DEFAULT now(),
       deletion_id text REFERENCES deletions ON DELETE SET NULL,
       PRIMARY KEY (tenant_id, kind, value))`,
    `CREATE TRIGGER suppressions_changed AFTER INSERT OR UPDATE OR DELETE ON suppressions
       FOR EACH ROW EXECUTE FUNCTION registry_changed('${SUPPRESSIONS_ENTITY}', 'tenant_id')`,
  ],
};
