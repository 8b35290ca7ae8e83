import { DEFAULT_TENANT } from '@telemetry/contract';
import { STATUS_FOLLOW_MIGRATION, STATUS_FOLLOW_TABLES } from './schema-followers.js';
import { DELETION_TABLES, DELETIONS_MIGRATION } from './schema-deletions.js';
import { EVENT_SCHEMAS_MIGRATION, EVENT_SCHEMA_TABLES } from './schema-event-schemas.js';
import { CONFIG_KEYS_MIGRATION } from './schema-config-keys.js';
import { migratePostgres, type Logger, type PgMigration, type PgPool } from '@telemetry/platform';

/**
 * The registry in PostgreSQL (docs/architecture.md, "Two stores"): tenants, access keys,
 * monitors (their secrets sealed), heartbeat tokens and status pages. Constraints do what
 * per-process queues did on ClickHouse: key ids and slugs are primary keys, a monitor's
 * version is compared in its UPDATE, and every write takes the registry's write lock
 * (REGISTRY_WRITE_LOCK), so a quota counted in a transaction holds when it commits.
 *
 * Every insert, update and delete of a registry row appends (entity, id) to
 * `registry_changes` and NOTIFYs `registry_changes`: the change feed each replica follows
 * (feed.ts). The trigger takes the write lock too, so sequence numbers are handed out in
 * commit order and a reader that saw sequence n has seen every change before it.
 */

/** The advisory lock every registry write transaction takes first. */
export const REGISTRY_WRITE_LOCK = 7300002;
/** The NOTIFY channel of registry changes. */
export const REGISTRY_CHANNEL = 'registry_changes';

/** Tables of the change feed, by entity name: the column that identifies a row. */
export const REGISTRY_ENTITIES = {
  tenants: 'tenant_id',
  access_keys: 'key_id',
  monitors: 'id',
  heartbeat_tokens: 'monitor_id',
  status_pages: 'slug',
} as const;

/** The alerting tables (migration 3): not in the change feed; each service reads them when it needs them. */
export const ALERTING_TABLES = ['channels', 'escalation_policies', 'incident_alerts'] as const;

/** People, memberships, sign-in and sessions (migration 4, docs/access.md): read by the query service only. */
export const PEOPLE_TABLES = [
  'people',
  'memberships',
  'invitations',
  'sessions',
  'oidc_identities',
  'oidc_flows',
  'password_resets',
  'sign_in_failures',
  'tenant_settings',
] as const;

export type RegistryTable =
  | keyof typeof REGISTRY_ENTITIES
  | 'registry_changes'
  | (typeof ALERTING_TABLES)[number]
  | (typeof PEOPLE_TABLES)[number]
  | (typeof STATUS_FOLLOW_TABLES)[number]
  | (typeof DELETION_TABLES)[number]
  | (typeof EVENT_SCHEMA_TABLES)[number];

const trigger = (table: keyof typeof REGISTRY_ENTITIES): string[] => [
  `CREATE TRIGGER ${table}_changed AFTER INSERT OR UPDATE OR DELETE ON ${table}
     FOR EACH ROW EXECUTE FUNCTION registry_changed('${table}', '${REGISTRY_ENTITIES[table]}')`,
];

export const REGISTRY_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    name: 'registry',
    statements: [
      `CREATE TABLE tenants (
         tenant_id text PRIMARY KEY CHECK (tenant_id ~ '^ten_[a-z0-9]{1,32}$'),
         name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
         created_at timestamptz NOT NULL DEFAULT now())`,
      `CREATE TABLE access_keys (
         key_id text PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{16}$'),
         tenant_id text NOT NULL REFERENCES tenants,
         kind text NOT NULL CHECK (kind IN ('telemetry', 'api')),
         name text NOT NULL,
         secret_hash text NOT NULL CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
         scopes text[] NOT NULL DEFAULT '{}',
         monitor_ids text[] NOT NULL DEFAULT '{}',
         allowed_origins text[] NOT NULL DEFAULT '{}',
         allowed_sources text[] NOT NULL DEFAULT '{}',
         revoked boolean NOT NULL DEFAULT false,
         created_at timestamptz NOT NULL DEFAULT now(),
         expires_at timestamptz)`,
      `CREATE INDEX access_keys_tenant ON access_keys (tenant_id)`,
      // spec: the settings as JSON, secrets masked; sealed: the secrets (monitor-rows.ts).
      `CREATE TABLE monitors (
         id text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 100),
         tenant_id text NOT NULL REFERENCES tenants,
         version bigint NOT NULL CHECK (version > 0),
         spec text NOT NULL,
         sealed text NOT NULL,
         created_at timestamptz NOT NULL,
         updated_at timestamptz NOT NULL)`,
      `CREATE UNIQUE INDEX monitors_tenant ON monitors (tenant_id, id)`,
      // The gateway's part of a heartbeat monitor: the nonce its token carries a MAC of.
      `CREATE TABLE heartbeat_tokens (
         monitor_id text PRIMARY KEY,
         tenant_id text NOT NULL,
         nonce text NOT NULL,
         FOREIGN KEY (tenant_id, monitor_id) REFERENCES monitors (tenant_id, id) ON DELETE CASCADE)`,
      `CREATE TABLE status_pages (
         slug text PRIMARY KEY CHECK (length(slug) BETWEEN 1 AND 100),
         tenant_id text NOT NULL REFERENCES tenants,
         version bigint NOT NULL CHECK (version > 0),
         title text NOT NULL,
         description text,
         monitor_ids text[] NOT NULL,
         created_at timestamptz NOT NULL,
         updated_at timestamptz NOT NULL)`,
      `CREATE INDEX status_pages_tenant ON status_pages (tenant_id)`,
      `CREATE TABLE registry_changes (
         seq bigserial PRIMARY KEY,
         entity text NOT NULL,
         id text NOT NULL,
         at timestamptz NOT NULL DEFAULT now())`,
      // SECURITY DEFINER: the services' roles write no change log of their own.
      `CREATE FUNCTION registry_changed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
         SET search_path = pg_catalog, public AS $$
       DECLARE
         row_id text;
       BEGIN
         PERFORM pg_advisory_xact_lock(${REGISTRY_WRITE_LOCK});
         IF TG_OP = 'DELETE' THEN
           row_id := to_jsonb(OLD) ->> TG_ARGV[1];
         ELSE
           row_id := to_jsonb(NEW) ->> TG_ARGV[1];
         END IF;
         INSERT INTO public.registry_changes (entity, id) VALUES (TG_ARGV[0], row_id);
         PERFORM pg_notify('${REGISTRY_CHANNEL}', '');
         RETURN NULL;
       END $$`,
      ...(Object.keys(REGISTRY_ENTITIES) as (keyof typeof REGISTRY_ENTITIES)[]).flatMap(trigger),
      // The log's oldest entries go (prune_registry_changes); a replica behind them reloads all.
      `CREATE FUNCTION prune_registry_changes(keep interval) RETURNS bigint LANGUAGE sql SECURITY DEFINER
         SET search_path = pg_catalog, public AS $$
         WITH gone AS (
           DELETE FROM public.registry_changes
           WHERE seq < coalesce((SELECT min(seq) FROM public.registry_changes WHERE at >= now() - keep),
                                (SELECT max(seq) FROM public.registry_changes))
             AND seq < (SELECT max(seq) FROM public.registry_changes)
           RETURNING 1)
         SELECT count(*) FROM gone $$`,
      `REVOKE ALL ON FUNCTION prune_registry_changes(interval) FROM PUBLIC`,
    ],
  },
  {
    version: 2,
    name: 'default tenant',
    // The tenant of keys and monitors made before tenants existed (a constant of ours,
    // checked against the tenant id pattern by the CHECK above).
    statements: [
      `INSERT INTO tenants (tenant_id, name) VALUES ('${DEFAULT_TENANT}', 'default') ON CONFLICT (tenant_id) DO NOTHING`,
    ],
  },
  {
    version: 3,
    name: 'alerting',
    statements: [
      // spec: the settings as JSON with the config masked; sealed: the config (channels.ts).
      `CREATE TABLE channels (
         id text PRIMARY KEY CHECK (id ~ '^chn_[a-z0-9]{20}$'),
         tenant_id text NOT NULL REFERENCES tenants,
         type text NOT NULL,
         version bigint NOT NULL CHECK (version > 0),
         spec text NOT NULL,
         sealed text NOT NULL,
         created_at timestamptz NOT NULL,
         updated_at timestamptz NOT NULL)`,
      `CREATE UNIQUE INDEX channels_tenant ON channels (tenant_id, id)`,
      `CREATE TABLE escalation_policies (
         id text PRIMARY KEY CHECK (id ~ '^esc_[a-z0-9]{20}$'),
         tenant_id text NOT NULL REFERENCES tenants,
         version bigint NOT NULL CHECK (version > 0),
         name text NOT NULL,
         steps jsonb NOT NULL,
         created_at timestamptz NOT NULL,
         updated_at timestamptz NOT NULL)`,
      `CREATE UNIQUE INDEX escalation_policies_tenant ON escalation_policies (tenant_id, id)`,
      // One row per incident that opened with someone to notify: where its escalation
      // stands (the policy's steps as they were when it opened), its reminders, who
      // acknowledged it. A runner works on a due row under a lease (incident-alerts.ts).
      `CREATE TABLE incident_alerts (
         incident_id text PRIMARY KEY CHECK (length(incident_id) BETWEEN 1 AND 128),
         tenant_id text NOT NULL,
         monitor_id text NOT NULL,
         opened_at timestamptz NOT NULL,
         alert jsonb NOT NULL,
         steps jsonb NOT NULL,
         step integer NOT NULL DEFAULT 0,
         step_at timestamptz NOT NULL,
         reminders jsonb NOT NULL DEFAULT '{}',
         next_due_at timestamptz,
         acknowledged_at timestamptz,
         acknowledged_by text,
         resolved_at timestamptz,
         lease_until timestamptz,
         lease_owner text)`,
      `CREATE INDEX incident_alerts_due ON incident_alerts (next_due_at)
         WHERE resolved_at IS NULL AND acknowledged_at IS NULL AND next_due_at IS NOT NULL`,
      `CREATE INDEX incident_alerts_monitor ON incident_alerts (tenant_id, monitor_id)`,
    ],
  },
  {
    version: 4,
    name: 'people',
    statements: [
      // A person: one per email (lower case). password_hash: a PHC string of the memory-hard
      // hash (docs/access.md, "Passwords"), null when they sign in by SSO only; totp_sealed:
      // their TOTP secret sealed with SECRETS_KEYS; totp_last_step: the last time step
      // accepted, so that a code is used once.
      `CREATE TABLE people (
         person_id text PRIMARY KEY CHECK (person_id ~ '^per_[a-z0-9]{20}$'),
         email text NOT NULL UNIQUE CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254),
         name text NOT NULL DEFAULT '' CHECK (length(name) <= 200),
         password_hash text,
         password_changed_at timestamptz,
         totp_sealed text,
         totp_enabled boolean NOT NULL DEFAULT false,
         totp_last_step bigint NOT NULL DEFAULT 0,
         created_at timestamptz NOT NULL DEFAULT now())`,
      `CREATE TABLE memberships (
         tenant_id text NOT NULL REFERENCES tenants ON DELETE CASCADE,
         person_id text NOT NULL REFERENCES people ON DELETE CASCADE,
         role text NOT NULL CHECK (role IN ('viewer', 'editor', 'admin', 'owner')),
         created_at timestamptz NOT NULL DEFAULT now(),
         created_by text NOT NULL DEFAULT '',
         PRIMARY KEY (tenant_id, person_id))`,
      `CREATE INDEX memberships_person ON memberships (person_id)`,
      // The link carries the id and a signature (SECRETS_KEYS); the row says whether it is
      // still pending: accepted or revoked once, never again.
      `CREATE TABLE invitations (
         invitation_id text PRIMARY KEY CHECK (invitation_id ~ '^inv_[a-z0-9]{20}$'),
         tenant_id text NOT NULL REFERENCES tenants ON DELETE CASCADE,
         email text NOT NULL CHECK (email = lower(email)),
         role text NOT NULL CHECK (role IN ('viewer', 'editor', 'admin', 'owner')),
         invited_by text NOT NULL,
         created_at timestamptz NOT NULL DEFAULT now(),
         expires_at timestamptz NOT NULL,
         accepted_at timestamptz,
         accepted_by text,
         revoked_at timestamptz)`,
      `CREATE INDEX invitations_tenant ON invitations (tenant_id) WHERE accepted_at IS NULL AND revoked_at IS NULL`,
      // A session: SHA-256 of the cookie's token (the token is never stored), the tenant it
      // is signed in to, its CSRF token, its absolute expiry; idle expiry is last_seen_at
      // plus SESSION_IDLE_SECONDS.
      `CREATE TABLE sessions (
         session_hash text PRIMARY KEY CHECK (session_hash ~ '^[0-9a-f]{64}$'),
         person_id text NOT NULL REFERENCES people ON DELETE CASCADE,
         tenant_id text NOT NULL REFERENCES tenants ON DELETE CASCADE,
         method text NOT NULL CHECK (method IN ('password', 'oidc')),
         csrf_token text NOT NULL,
         created_at timestamptz NOT NULL DEFAULT now(),
         last_seen_at timestamptz NOT NULL DEFAULT now(),
         expires_at timestamptz NOT NULL,
         ip text NOT NULL DEFAULT '',
         user_agent text NOT NULL DEFAULT '')`,
      `CREATE INDEX sessions_person ON sessions (person_id)`,
      `CREATE INDEX sessions_expiry ON sessions (expires_at)`,
      `CREATE TABLE oidc_identities (
         issuer text NOT NULL,
         subject text NOT NULL,
         person_id text NOT NULL REFERENCES people ON DELETE CASCADE,
         created_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (issuer, subject))`,
      // A sign-in started at the identity provider: used once (DELETE … RETURNING), bound
      // to the browser that started it by a cookie whose hash is browser_hash.
      `CREATE TABLE oidc_flows (
         state text PRIMARY KEY,
         browser_hash text NOT NULL,
         nonce text NOT NULL,
         code_verifier text NOT NULL,
         invitation text,
         return_to text NOT NULL DEFAULT '',
         created_at timestamptz NOT NULL DEFAULT now(),
         expires_at timestamptz NOT NULL)`,
      `CREATE TABLE password_resets (
         token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
         person_id text NOT NULL REFERENCES people ON DELETE CASCADE,
         created_at timestamptz NOT NULL DEFAULT now(),
         expires_at timestamptz NOT NULL,
         used_at timestamptz)`,
      // Failed sign-ins per bucket (an account, an address, the pair): the growing delay.
      `CREATE TABLE sign_in_failures (
         bucket text PRIMARY KEY CHECK (length(bucket) <= 600),
         failures integer NOT NULL CHECK (failures >= 0),
         last_failure_at timestamptz NOT NULL,
         blocked_until timestamptz NOT NULL)`,
      // The email-domain rule: a verified SSO email in one of these domains joins as auto_admit_role.
      `CREATE TABLE tenant_settings (
         tenant_id text PRIMARY KEY REFERENCES tenants ON DELETE CASCADE,
         auto_admit_domains text[] NOT NULL DEFAULT '{}',
         auto_admit_role text NOT NULL DEFAULT 'viewer' CHECK (auto_admit_role IN ('viewer', 'editor', 'admin')),
         version bigint NOT NULL DEFAULT 1 CHECK (version > 0),
         updated_at timestamptz NOT NULL DEFAULT now())`,
      `CREATE INDEX tenant_settings_domains ON tenant_settings USING gin (auto_admit_domains)`,
      // Who made a key: a person's id, 'operator' (npm run keys), '' before people.
      `ALTER TABLE access_keys ADD COLUMN created_by text NOT NULL DEFAULT ''`,
    ],
  },
  STATUS_FOLLOW_MIGRATION,
  EVENT_SCHEMAS_MIGRATION,
  DELETIONS_MIGRATION,
  {
    version: 8,
    name: 'access-key ip_storage',
    statements: [
      // What a telemetry key's events keep of the client's address in ClickHouse
      // (docs/enrichment.md, "What is stored of the address"); existing keys: truncated.
      `ALTER TABLE access_keys ADD COLUMN ip_storage text NOT NULL DEFAULT 'truncated'
         CHECK (ip_storage IN ('full', 'truncated', 'none'))`,
    ],
  },
  CONFIG_KEYS_MIGRATION,
];

/** Applies the registry's migrations (as the database's owner). */
export function migrateRegistry(pool: PgPool, logger: Logger): Promise<number[]> {
  return migratePostgres(pool, REGISTRY_MIGRATIONS, logger);
}

/** What a service's role may do on one table. */
export type PgPrivilege = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';

export interface PgRoleGrant {
  table: RegistryTable;
  privileges: readonly PgPrivilege[];
}

/** Reads a table. */
const READ: readonly PgPrivilege[] = ['SELECT'];
/** Reads and writes a table's rows. */
const WRITE: readonly PgPrivilege[] = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'];

/** The same privileges on each of `tables`, in that order. */
function grant(privileges: readonly PgPrivilege[], ...tables: RegistryTable[]): PgRoleGrant[] {
  return tables.map((table) => ({ table, privileges }));
}

/**
 * One PostgreSQL role per service (named `<database>_<service>`: pgRoleName), with only what it needs (docs/operations.md,
 * "PostgreSQL roles"): the one definition of who may do what. From it come the dev
 * stack's roles (tools/devstack/postgres.ts), deploy/postgres/roles.sql (`npm run docs`)
 * and test/e2e/registry.int.test.ts, which checks each role is refused the rest.
 * Operators' tools (tenants, keys, migrate) connect as the database's owner.
 */
export const PG_SERVICE_ROLES = {
  ingest: {
    usedBy: 'ingest gateway: authenticates telemetry keys and heartbeat tokens; validates events against event schemas',
    // suppressions: the ids whose new events it drops (docs/deletions.md).
    grants: grant(READ, 'access_keys', 'heartbeat_tokens', 'registry_changes', 'suppressions', ...EVENT_SCHEMA_TABLES),
    functions: [] as string[],
  },
  runner: {
    usedBy:
      "check runner: reads the monitors it checks and the alert channels and escalation policies it notifies; keeps where each incident's notifications stand; makes maintenance notices and delivers status-page notices to subscribers",
    grants: [
      ...grant(READ, 'monitors', 'registry_changes', 'channels', 'escalation_policies'),
      { table: 'incident_alerts', privileges: ['SELECT', 'INSERT', 'UPDATE'] },
      // Status-page notices: maintenance notices made, every notice delivered to subscribers.
      ...grant(READ, 'status_pages', 'status_subscribers'),
      { table: 'status_notices', privileges: ['SELECT', 'INSERT'] },
      { table: 'status_deliveries', privileges: ['SELECT', 'INSERT', 'UPDATE'] },
    ],
    functions: [] as string[],
  },
  query: {
    usedBy:
      'query service: authenticates API keys and sessions; writes monitors, heartbeat tokens, status pages (their reports, subscribers, notices and custom domains), alert channels and escalation policies, event schemas, deletion requests, people, memberships and sessions; renames tenants; issues and revokes keys; acknowledges incidents',
    grants: [
      // UPDATE: a tenant's owner or admin renames it (PATCH /api/settings).
      { table: 'tenants', privileges: ['SELECT', 'UPDATE'] },
      { table: 'access_keys', privileges: ['SELECT', 'INSERT', 'UPDATE'] },
      ...grant(WRITE, ...PEOPLE_TABLES),
      ...grant(WRITE, 'monitors', 'heartbeat_tokens', 'status_pages', 'channels', 'escalation_policies'),
      ...grant(WRITE, ...STATUS_FOLLOW_TABLES),
      ...grant(WRITE, 'event_schemas'),
      // Versions never change (a trigger refuses UPDATE too); they go with their schema.
      { table: 'event_schema_versions', privileges: ['SELECT', 'INSERT', 'DELETE'] },
      { table: 'incident_alerts', privileges: ['SELECT', 'UPDATE'] },
      ...grant(READ, 'registry_changes'),
      // Deletion requests and the suppressions they add, in one transaction; never changed after.
      ...grant(['SELECT', 'INSERT'], ...DELETION_TABLES),
    ],
    functions: ['prune_registry_changes(interval)'],
  },
  consumer: {
    usedBy:
      'stream consumer: claims deletion requests under a lease, runs them in ClickHouse and records their progress',
    grants: [{ table: 'deletions', privileges: ['SELECT', 'UPDATE'] }],
    functions: [] as string[],
  },
} as const satisfies Record<string, { usedBy: string; grants: readonly PgRoleGrant[]; functions: readonly string[] }>;

export type PgServiceRole = keyof typeof PG_SERVICE_ROLES;

/**
 * The GRANTs of every service role, after REVOKE ALL, for the database's tables (the
 * roles themselves are made with a password by whoever runs them: see roles.sql).
 */
export function pgGrantStatements(
  database: string,
  roleName: (service: PgServiceRole) => string = (service) => pgRoleName(database, service),
): { service: PgServiceRole; role: string; usedBy: string; statements: string[] }[] {
  const tables: RegistryTable[] = [
    ...(Object.keys(REGISTRY_ENTITIES) as RegistryTable[]),
    'registry_changes',
    ...ALERTING_TABLES,
    ...PEOPLE_TABLES,
    ...STATUS_FOLLOW_TABLES,
    ...DELETION_TABLES,
    ...EVENT_SCHEMA_TABLES,
  ];
  return PG_SERVICE_ROLE_NAMES.map((service) => {
    const { usedBy, grants, functions } = PG_SERVICE_ROLES[service];
    const role = roleName(service);
    return {
      service,
      role,
      usedBy,
      statements: [
        // Nobody but the roles named here may connect, and none may make temporary tables.
        `REVOKE ALL ON DATABASE ${quoteIdent(database)} FROM PUBLIC`,
        `GRANT CONNECT ON DATABASE ${quoteIdent(database)} TO ${role}`,
        `GRANT USAGE ON SCHEMA public TO ${role}`,
        `REVOKE ALL ON ${tables.join(', ')} FROM ${role}`,
        // A restore (pg_restore --no-acl) gives functions back PUBLIC's EXECUTE: taken again here.
        `REVOKE ALL ON FUNCTION prune_registry_changes(interval) FROM PUBLIC`,
        ...(grants as readonly PgRoleGrant[]).map((g) => `GRANT ${g.privileges.join(', ')} ON ${g.table} TO ${role}`),
        ...(functions as readonly string[]).map((f) => `GRANT EXECUTE ON FUNCTION ${f} TO ${role}`),
      ],
    };
  });
}

export const PG_SERVICE_ROLE_NAMES = Object.keys(PG_SERVICE_ROLES) as PgServiceRole[];

/** A service's role in database `database`: `<database>_<service>` (telemetry_ingest, …). */
export function pgRoleName(database: string, service: PgServiceRole): string {
  const name = `${database}_${service}`;
  // Lower case only: the GRANTs name the role unquoted, where PostgreSQL folds to lower case.
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name))
    throw new Error(`a role name is lower case letters, digits and _: ${name}`);
  return name;
}

/** Does `role`'s service hold `privilege` on `table`? */
export function pgIsGranted(role: PgServiceRole, table: RegistryTable, privilege: PgPrivilege): boolean {
  return (PG_SERVICE_ROLES[role].grants as readonly PgRoleGrant[]).some(
    (g) => g.table === table && g.privileges.includes(privilege),
  );
}

/** A PostgreSQL identifier, double-quoted (a database name in GRANT; checked by its caller). */
export function quoteIdent(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)) throw new Error(`not a plain identifier: ${name}`);
  return `"${name}"`;
}
