import { EVENT_SCHEMA_LIMITS } from '@telemetry/contract';
import type { PgMigration } from '@telemetry/platform';

/**
 * Tenants' event schemas (migration 6, docs/event-schemas.md): one per tenant and
 * (source, category), with its action (`reject` | `route`, changeable) and its versions
 * (each immutable: the query role may insert them, never update them, and a trigger
 * refuses an update by anyone). In the change feed as entity `event_schemas` by
 * schema_id: adding a version bumps its schema's row, so every gateway's copy learns it.
 */
export const EVENT_SCHEMA_TABLES = ['event_schemas', 'event_schema_versions'] as const;

/** Migration 6: the tables of EVENT_SCHEMA_TABLES. */
export const EVENT_SCHEMAS_MIGRATION: PgMigration = {
  version: 6,
  name: 'event schemas',
  statements: [
    `CREATE TABLE event_schemas (
       schema_id text PRIMARY KEY CHECK (schema_id ~ '^sch_[a-z0-9]{20}$'),
       tenant_id text NOT NULL REFERENCES tenants ON DELETE CASCADE,
       source text NOT NULL CHECK (length(source) BETWEEN 1 AND ${EVENT_SCHEMA_LIMITS.maxNameLength}),
       category text NOT NULL CHECK (length(category) BETWEEN 1 AND ${EVENT_SCHEMA_LIMITS.maxNameLength}),
       action text NOT NULL CHECK (action IN ('reject', 'route')),
       latest_version integer NOT NULL DEFAULT 1 CHECK (latest_version > 0),
       version bigint NOT NULL DEFAULT 1 CHECK (version > 0),
       created_by text NOT NULL DEFAULT '',
       created_at timestamptz NOT NULL DEFAULT now(),
       updated_at timestamptz NOT NULL DEFAULT now(),
       UNIQUE (tenant_id, source, category))`,
    `CREATE TABLE event_schema_versions (
       schema_id text NOT NULL REFERENCES event_schemas ON DELETE CASCADE,
       version integer NOT NULL CHECK (version > 0),
       definition text NOT NULL CHECK (octet_length(definition) <= ${EVENT_SCHEMA_LIMITS.maxSchemaBytes}),
       created_by text NOT NULL DEFAULT '',
       created_at timestamptz NOT NULL DEFAULT now(),
       PRIMARY KEY (schema_id, version))`,
    `CREATE FUNCTION event_schema_version_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       RAISE EXCEPTION 'an event schema version never changes; add a new one' USING ERRCODE = '23514';
     END $$`,
    `CREATE TRIGGER event_schema_versions_immutable BEFORE UPDATE ON event_schema_versions
       FOR EACH ROW EXECUTE FUNCTION event_schema_version_immutable()`,
    `CREATE TRIGGER event_schemas_changed AFTER INSERT OR UPDATE OR DELETE ON event_schemas
       FOR EACH ROW EXECUTE FUNCTION registry_changed('event_schemas', 'schema_id')`,
  ],
};
