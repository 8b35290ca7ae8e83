import { randomBytes } from 'node:crypto';
import type { DELETION_TABLES, EVENT_SCHEMA_TABLES, PgPrivilege, STATUS_FOLLOW_TABLES } from '@telemetry/store';
import type { PgQueryable } from '@telemetry/platform';

/** Rows of the status-follow tables the probes name (made by the database's owner: followerFixtures). */
export interface FollowerFixtures {
  tenant: string;
  slug: string;
  report: string;
  subscriber: string;
  notice: string;
}

const h = (n: number): string => randomBytes(n).toString('hex');

/** A report, an active subscriber and a notice on page `slug`, as the owner. */
export async function followerFixtures(db: PgQueryable, tenant: string, slug: string): Promise<FollowerFixtures> {
  const f = { tenant, slug, report: `rpt_${h(10)}`, subscriber: `sub_${h(10)}`, notice: `ntc_${h(10)}` };
  await db.query(
    `INSERT INTO status_reports (report_id, slug, tenant_id, title, impact, state) VALUES ($1, $2, $3, 'probe', 'minor', 'investigating')`,
    [f.report, slug, tenant],
  );
  await db.query(
    `INSERT INTO status_subscribers (subscriber_id, slug, tenant_id, kind, address_hash, email, state)
     VALUES ($1, $2, $3, 'email', $4, 'probe@example.test', 'active')`,
    [f.subscriber, slug, tenant, h(32)],
  );
  await db.query(
    `INSERT INTO status_notices (notice_id, slug, tenant_id, kind, title, body, payload) VALUES ($1, $2, $3, 'report_opened', 'probe', 'probe', '{}')`,
    [f.notice, slug, tenant],
  );
  return f;
}

/**
 * The probes of a table whose rows need nothing else: count it, insert a row of its own
 * (`insert`), update and delete no row (a refusal shows all the same).
 */
export function plainProbes(
  table: string,
  insert: () => [string, unknown[]],
  column: string,
): Record<PgPrivilege, () => [string, unknown[]]> {
  return {
    SELECT: () => [`SELECT count(*) FROM ${table}`, []],
    INSERT: insert,
    UPDATE: () => [`UPDATE ${table} SET ${column} = ${column} WHERE false`, []],
    DELETE: () => [`DELETE FROM ${table} WHERE false`, []],
  };
}

/** The probes of the status-follow tables (migration 5): each statement on one row of its own, or none. */
export function followerProbes(
  fx: () => FollowerFixtures,
): Record<(typeof STATUS_FOLLOW_TABLES)[number], Record<PgPrivilege, () => [string, unknown[]]>> {
  const plain = plainProbes;
  return {
    status_reports: plain(
      'status_reports',
      () => [
        `INSERT INTO status_reports (report_id, slug, tenant_id, title, impact, state) VALUES ($1, $2, $3, 'probe', 'minor', 'identified')`,
        [`rpt_${h(10)}`, fx().slug, fx().tenant],
      ],
      'title',
    ),
    status_report_updates: plain(
      'status_report_updates',
      () => [
        `INSERT INTO status_report_updates (update_id, report_id, state, message, at) VALUES ($1, $2, 'identified', 'probe', now())`,
        [`upd_${h(10)}`, fx().report],
      ],
      'message',
    ),
    status_subscribers: plain(
      'status_subscribers',
      () => [
        `INSERT INTO status_subscribers (subscriber_id, slug, tenant_id, kind, address_hash, email, state)
         VALUES ($1, $2, $3, 'email', $4, 'probe2@example.test', 'pending')`,
        [`sub_${h(10)}`, fx().slug, fx().tenant, h(32)],
      ],
      'state',
    ),
    status_notices: plain(
      'status_notices',
      () => [
        `INSERT INTO status_notices (notice_id, slug, tenant_id, kind, title, body, payload) VALUES ($1, $2, $3, 'maintenance_started', 'probe', 'probe', '{}')`,
        [`ntc_${h(10)}`, fx().slug, fx().tenant],
      ],
      'title',
    ),
    status_deliveries: plain(
      'status_deliveries',
      () => [
        `INSERT INTO status_deliveries (notice_id, subscriber_id) VALUES ($1, $2)`,
        [fx().notice, fx().subscriber],
      ],
      'attempts',
    ),
    custom_domains: plain(
      'custom_domains',
      () => [
        `INSERT INTO custom_domains (hostname, slug, tenant_id, token) VALUES ($1, $2, $3, $4)`,
        [`probe-${h(4)}.example.test`, fx().slug, fx().tenant, h(16)],
      ],
      'checked_at',
    ),
    rate_buckets: plain(
      'rate_buckets',
      () => [`INSERT INTO rate_buckets (bucket, window_start, hits) VALUES ($1, now(), 1)`, [`probe:${h(8)}`]],
      'hits',
    ),
  };
}

/** The probes of the deletion tables (migration 7): each INSERT a row of its own in `tenant()`. */
export function deletionProbes(
  tenant: () => string,
): Record<(typeof DELETION_TABLES)[number], Record<PgPrivilege, () => [string, unknown[]]>> {
  return {
    deletions: plainProbes(
      'deletions',
      () => [
        `INSERT INTO deletions (deletion_id, tenant_id, requested_by, user_ids) VALUES ($1, $2, 'probe', ARRAY['probe'])`,
        [`del_${h(10)}`, tenant()],
      ],
      'state',
    ),
    suppressions: plainProbes(
      'suppressions',
      () => [`INSERT INTO suppressions (tenant_id, kind, value) VALUES ($1, 'user_id', $2)`, [tenant(), h(8)]],
      'value',
    ),
  };
}

/** An event schema of `tenant` with its version 1, as the owner (the probes of migration 6 name it). */
export async function eventSchemaFixture(db: PgQueryable, tenant: string): Promise<string> {
  const id = `sch_${h(10)}`;
  await db.query(
    `INSERT INTO event_schemas (schema_id, tenant_id, source, category, action) VALUES ($1, $2, $3, 'probe', 'route')`,
    [id, tenant, `probe${h(4)}`],
  );
  await db.query(`INSERT INTO event_schema_versions (schema_id, version, definition) VALUES ($1, 1, '{}')`, [id]);
  return id;
}

/** The probes of the event-schema tables (migration 6): each statement on one row of its own, or none. */
export function eventSchemaProbes(
  fx: () => { tenant: string; schema: string },
): Record<(typeof EVENT_SCHEMA_TABLES)[number], Record<PgPrivilege, () => [string, unknown[]]>> {
  return {
    event_schemas: {
      SELECT: () => ['SELECT count(*) FROM event_schemas', []],
      INSERT: () => [
        `INSERT INTO event_schemas (schema_id, tenant_id, source, category, action) VALUES ($1, $2, $3, 'probe', 'reject')`,
        [`sch_${h(10)}`, fx().tenant, `probe${h(4)}`],
      ],
      UPDATE: () => ['UPDATE event_schemas SET action = action WHERE false', []],
      DELETE: () => ['DELETE FROM event_schemas WHERE false', []],
    },
    event_schema_versions: {
      SELECT: () => ['SELECT count(*) FROM event_schema_versions', []],
      INSERT: () => [
        `INSERT INTO event_schema_versions (schema_id, version, definition) VALUES ($1, $2, '{}')`,
        [fx().schema, 2 + Math.floor(Math.random() * 1_000_000)],
      ],
      UPDATE: () => ['UPDATE event_schema_versions SET definition = definition WHERE false', []],
      DELETE: () => ['DELETE FROM event_schema_versions WHERE false', []],
    },
  };
}
