import { toIsoSeconds } from '@telemetry/contract';
import type { PgPool, PgQueryable } from '@telemetry/platform';
import { isTenantId, newTenantId, type Tenant } from '../tenants.js';
import { epochOf, registryWrite } from './pg.js';

/** Tenants in PostgreSQL (operators make them: npm run tenants). */
export async function createTenant(db: PgPool, name: string, id = newTenantId()): Promise<Tenant> {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 200) throw new Error('a tenant name is 1-200 characters');
  if (!isTenantId(id)) throw new Error(`not a tenant id: ${id}`);
  const { rows } = await registryWrite(db, (tx) =>
    tx.query<{ c: string }>(
      `INSERT INTO tenants (tenant_id, name) VALUES ($1, $2) RETURNING ${epochOf('created_at')} AS c`,
      [id, trimmed],
    ),
  );
  return { tenant_id: id, name: trimmed, created_at: toIsoSeconds(Number(rows[0]!.c)) };
}

export async function listTenants(db: Pick<PgPool, 'query'>): Promise<Tenant[]> {
  const { rows } = await db.query<{ tenant_id: string; name: string; c: string }>(
    `SELECT tenant_id, name, ${epochOf('created_at')} AS c FROM tenants ORDER BY tenant_id`,
  );
  return rows.map((r) => ({ tenant_id: r.tenant_id, name: r.name, created_at: toIsoSeconds(Number(r.c)) }));
}

/** The tenant, or undefined when no tenant has this id. */
export async function findTenant(db: Pick<PgPool, 'query'>, id: string): Promise<Tenant | undefined> {
  if (!isTenantId(id)) return undefined;
  const { rows } = await db.query<{ tenant_id: string; name: string; c: string }>(
    `SELECT tenant_id, name, ${epochOf('created_at')} AS c FROM tenants WHERE tenant_id = $1`,
    [id],
  );
  const r = rows[0];
  return r ? { tenant_id: r.tenant_id, name: r.name, created_at: toIsoSeconds(Number(r.c)) } : undefined;
}

/** Makes the tenants that do not exist yet, inside the caller's registry write transaction (npm run migrate's batches); how many were made. */
export async function ensureTenantsIn(tx: PgQueryable, tenants: readonly Tenant[]): Promise<number> {
  if (tenants.length === 0) return 0;
  const { rowCount } = await tx.query(
    `INSERT INTO tenants (tenant_id, name, created_at)
     SELECT r.tenant_id, r.name, to_timestamp(r.c) FROM jsonb_to_recordset($1::jsonb) AS r(tenant_id text, name text, c bigint)
     ON CONFLICT (tenant_id) DO NOTHING`,
    [
      JSON.stringify(
        tenants.map((t) => ({ tenant_id: t.tenant_id, name: t.name, c: Math.floor(Date.parse(t.created_at) / 1000) })),
      ),
    ],
  );
  return rowCount ?? 0;
}
