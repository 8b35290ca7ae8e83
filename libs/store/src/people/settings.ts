import type { Role } from '@telemetry/contract';
import { AppError, type PgPool, type PgQueryable } from '@telemetry/platform';
import { registryCall, registryWrite } from '../registry/pg.js';

/**
 * A tenant's settings (docs/access.md, "Members"): its name (in `tenants`, which is in the
 * change feed: a rename is a registry write) and the email-domain rule of single sign-on
 * (`tenant_settings`: a verified email of one of these domains joins as auto_admit_role).
 * A tenant without a row has no domains and `viewer`.
 */

export type AutoAdmitRole = Exclude<Role, 'owner'>;

export interface TenantSettings {
  name: string;
  auto_admit_domains: string[];
  auto_admit_role: AutoAdmitRole;
}

export async function tenantSettings(db: PgQueryable, tenantId: string): Promise<TenantSettings> {
  const { rows } = await registryCall(() =>
    db.query<TenantSettings>(
      `SELECT t.name, coalesce(s.auto_admit_domains, '{}') AS auto_admit_domains,
              coalesce(s.auto_admit_role, 'viewer') AS auto_admit_role
       FROM tenants t LEFT JOIN tenant_settings s USING (tenant_id) WHERE t.tenant_id = $1`,
      [tenantId],
    ),
  );
  if (!rows[0]) throw new AppError('NOT_A_MEMBER', `there is no tenant ${tenantId}`);
  return rows[0];
}

/** Changes what `patch` names (domains kept in lower case, once each): the settings before and after. */
export function updateTenantSettings(
  pool: PgPool,
  tenantId: string,
  patch: Partial<TenantSettings>,
): Promise<{ before: TenantSettings; after: TenantSettings }> {
  return registryWrite(pool, async (tx) => {
    const before = await tenantSettings(tx, tenantId);
    const after: TenantSettings = {
      name: patch.name?.trim() ?? before.name,
      auto_admit_domains:
        patch.auto_admit_domains === undefined
          ? before.auto_admit_domains
          : [...new Set(patch.auto_admit_domains.map((d) => d.trim().toLowerCase()))],
      auto_admit_role: patch.auto_admit_role ?? before.auto_admit_role,
    };
    if (after.name !== before.name)
      await tx.query('UPDATE tenants SET name = $2 WHERE tenant_id = $1', [tenantId, after.name]);
    await tx.query(
      `INSERT INTO tenant_settings (tenant_id, auto_admit_domains, auto_admit_role) VALUES ($1, $2, $3)
       ON CONFLICT (tenant_id) DO UPDATE SET auto_admit_domains = $2, auto_admit_role = $3,
         version = tenant_settings.version + 1, updated_at = now()`,
      [tenantId, after.auto_admit_domains, after.auto_admit_role],
    );
    return { before, after };
  });
}

/** The tenants whose rule admits an email of `domain` (single sign-on), with the role each gives. */
export async function tenantsAdmitting(
  db: PgQueryable,
  domain: string,
): Promise<{ tenantId: string; role: AutoAdmitRole }[]> {
  const { rows } = await registryCall(() =>
    db.query<{ tenant_id: string; auto_admit_role: AutoAdmitRole }>(
      `SELECT tenant_id, auto_admit_role FROM tenant_settings WHERE auto_admit_domains @> ARRAY[$1::text]
       ORDER BY tenant_id`,
      [domain.trim().toLowerCase()],
    ),
  );
  return rows.map((r) => ({ tenantId: r.tenant_id, role: r.auto_admit_role }));
}
