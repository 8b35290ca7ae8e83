import { randomBytes } from 'node:crypto';
import { TENANT_ID_PATTERN } from '@telemetry/contract';

/**
 * Tenants (docs/api.md, "Tenants"): every key, monitor, check, alert and event belongs
 * to exactly one. A tenant is created by an operator (`npm run tenants -- create`) and
 * its keys with `npm run keys -- create --tenant ten_…`. They live in PostgreSQL
 * (registry/tenants.ts).
 */
export interface Tenant {
  tenant_id: string;
  name: string;
  created_at: string;
}

const TENANT_ID = new RegExp(TENANT_ID_PATTERN);

export function isTenantId(s: string): boolean {
  return s.length <= 36 && TENANT_ID.test(s);
}

/** A new tenant id: `ten_` and 16 hex digits. */
export function newTenantId(): string {
  return `ten_${randomBytes(8).toString('hex')}`;
}
