import type { ClickHouseClient } from '@clickhouse/client';
import { DEFAULT_TENANT, toIsoSeconds } from '@telemetry/contract';
import { sqlIdentifier, type MigrationsByVersion } from '@telemetry/platform';
import { keysDatabase, tableIn } from '../databases.js';
import { isTenantId, newTenantId, type Tenant } from '../tenants.js';

/**
 * Tenants as ClickHouse held them before the registry moved to PostgreSQL (docs/api.md, "Tenants"): every key, monitor, check, alert and event belongs
 * to exactly one. A tenant is created by an operator (`npm run tenants -- create`) and
 * its keys with `npm run keys -- create --tenant ten_…`. Rows written before tenants
 * existed belong to DEFAULT_TENANT (migration 4).
 */

/** Statements per migration version (see migrations.ts). */
export const tenantsMigrations: MigrationsByVersion = {
  4: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.tenants (
        tenant_id String, name String, created_at DateTime('UTC'), version UInt64
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY tenant_id`,
    // The tenant that existing rows move to (version 1: any later rename wins).
    `INSERT INTO ${db}.tenants (tenant_id, name, created_at, version) VALUES ('${DEFAULT_TENANT}', 'default', now(), 1)`,
  ],
  // Tenants live with the keys (databases.ts).
  5: (_db, name) => [
    `CREATE DATABASE IF NOT EXISTS ${sqlIdentifier(keysDatabase(name))}`,
    { moveTable: { table: 'tenants', to: keysDatabase(name) } },
  ],
};

/** Before the registry moved to PostgreSQL (npm run migrate reads these tables; tests write them). */
export async function legacyCreateTenant(client: ClickHouseClient, database: string, name: string): Promise<Tenant> {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 200) throw new Error('a tenant name is 1-200 characters');
  const now = Math.floor(Date.now() / 1000);
  const tenant = { tenant_id: newTenantId(), name: trimmed, created_at: now, version: Date.now() };
  await client.insert({ table: tableIn(database, 'keys', 'tenants'), values: [tenant], format: 'JSONEachRow' });
  return { tenant_id: tenant.tenant_id, name: tenant.name, created_at: toIsoSeconds(now) };
}

export async function legacyListTenants(client: ClickHouseClient, database: string): Promise<Tenant[]> {
  const rs = await client.query({
    query: `SELECT tenant_id, argMax(name, version) AS n, toUnixTimestamp(argMax(created_at, version)) AS c
            FROM ${tableIn(database, 'keys', 'tenants')} GROUP BY tenant_id ORDER BY tenant_id`,
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ tenant_id: string; n: string; c: number | string }>();
  return rows.map((r) => ({ tenant_id: r.tenant_id, name: r.n, created_at: toIsoSeconds(Number(r.c)) }));
}

/** The tenant, or undefined when no tenant has this id. */
export async function legacyFindTenant(
  client: ClickHouseClient,
  database: string,
  id: string,
): Promise<Tenant | undefined> {
  if (!isTenantId(id)) return undefined;
  return (await legacyListTenants(client, database)).find((t) => t.tenant_id === id);
}
