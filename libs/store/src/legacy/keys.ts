import type { ClickHouseClient } from '@clickhouse/client';
import { DEFAULT_TENANT } from '@telemetry/contract';
import { type MigrationsByVersion, sqlIdentifier } from '@telemetry/platform';
import { keysDatabase, tableIn } from '../databases.js';
import { newKeyRecord, type KeyRecord, type NewKey } from '../keys.js';

/**
 * Access keys as ClickHouse held them before the registry moved to PostgreSQL
 * (`npm run migrate` reads them; the migration test writes them).
 */

/** Statements per migration version (see migrations.ts). */
export const keysMigrations: MigrationsByVersion = {
  1: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.access_keys (
        key_id String, kind String, name String, secret_hash String, scopes Array(String),
        monitor_ids Array(String), allowed_origins Array(String), allowed_sources Array(String),
        revoked UInt8, created_at DateTime('UTC'), version UInt64
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY key_id`,
  ],
  // Tenants: every key belongs to one (existing keys: the default tenant); keys can expire.
  4: (db) => [
    { setAside: { table: 'access_keys', marker: 'tenant_id' } },
    `CREATE TABLE IF NOT EXISTS ${db}.access_keys (
        tenant_id String, key_id String, kind String, name String, secret_hash String, scopes Array(String),
        monitor_ids Array(String), allowed_origins Array(String), allowed_sources Array(String),
        revoked UInt8, created_at DateTime('UTC'), expires_at Nullable(DateTime('UTC')), version UInt64
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY (tenant_id, key_id)`,
    {
      copyBack: {
        table: 'access_keys',
        sql: (from) => `INSERT INTO ${db}.access_keys (tenant_id, key_id, kind, name, secret_hash, scopes, monitor_ids,
            allowed_origins, allowed_sources, revoked, created_at, expires_at, version)
          SELECT '${DEFAULT_TENANT}', key_id, kind, name, secret_hash, scopes, monitor_ids, allowed_origins,
            allowed_sources, revoked, created_at, NULL, version
          FROM ${from}`,
      },
    },
  ],
  // Least privilege: keys get their own database (databases.ts), with the tenants.
  5: (_db, name) => [
    `CREATE DATABASE IF NOT EXISTS ${sqlIdentifier(keysDatabase(name))}`,
    { moveTable: { table: 'access_keys', to: keysDatabase(name) } },
  ],
};

export class ClickHouseKeySource {
  constructor(
    private readonly client: ClickHouseClient,
    private readonly database: string,
  ) {}

  async loadAll(): Promise<KeyRecord[]> {
    const rs = await this.client.query({
      query: `SELECT tenant_id, key_id, kind, name, secret_hash, scopes, monitor_ids, allowed_origins, allowed_sources,
                revoked, toString(created_at) AS created_at, toString(expires_at) AS expires_at, version
              FROM ${tableIn(this.database, 'keys', 'access_keys')} FINAL`,
      format: 'JSONEachRow',
    });
    return (await rs.json<KeyRecord>()).map((r) => ({ ...r, revoked: Number(r.revoked), version: Number(r.version) }));
  }
}

/** A key record as the ClickHouse registry of before held it: no `created_by` (people came after it), no `ip_storage`. */
export function legacyKeyRow(record: KeyRecord): Omit<KeyRecord, 'created_by' | 'ip_storage'> {
  const { created_by: _madeBy, ip_storage: _ipStorage, ...row } = record;
  return row;
}

/** Issues a key in the ClickHouse registry of before (tests of the migration). */
export async function legacyIssueKey(
  client: ClickHouseClient,
  database: string,
  spec: NewKey,
): Promise<{ key: string; record: KeyRecord }> {
  const issued = newKeyRecord(spec);
  await client.insert({
    table: tableIn(database, 'keys', 'access_keys'),
    values: [legacyKeyRow(issued.record)],
    format: 'JSONEachRow',
  });
  return issued;
}
