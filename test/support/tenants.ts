import type { ClickHouseClient } from '@telemetry/platform';
import type { Role } from '@telemetry/contract/access';
import { addMembership, createTenant, ensurePerson, hashPassword } from '@telemetry/store';
import { adminRegistry, testStack, uid } from './fixtures.js';

/**
 * What the browser tests set up in the registry and ClickHouse for a tenant of their own:
 * its owner (a person who signs in with a password), and an incident as the runner records it.
 */

/** A new tenant (named `prefix-…`) owned by the person `email` with `password`: its id. */
export async function tenantWithOwner(prefix: string, email: string, password: string): Promise<string> {
  const tenantId = (await createTenant(adminRegistry(), uid(prefix))).tenant_id;
  await addPerson(tenantId, email, password, 'owner');
  return tenantId;
}

/** The person `email` (made, with `password`, when new) as a member of `tenantId` in `role`. */
export async function addPerson(tenantId: string, email: string, password: string, role: Role): Promise<void> {
  const db = adminRegistry();
  const { person } = await ensurePerson(db, { email, name: email, passwordHash: await hashPassword(password) });
  await addMembership(db, { tenantId, personId: person.id, role, createdBy: 'test' });
}

/** An incident opened at `at` (unix seconds): its monitor.down alert (HTTP 503) in the run's `alerts` table. */
export async function insertDownAlert(
  ch: ClickHouseClient,
  a: { tenantId: string; monitorId: string; incidentId: string; alertId: string; at: number },
): Promise<void> {
  await ch.insert({
    table: `${testStack().database}.alerts`,
    format: 'JSONEachRow',
    values: [
      {
        tenant_id: a.tenantId,
        id: a.alertId,
        monitor_id: a.monitorId,
        incident_id: a.incidentId,
        type: 'monitor.down',
        created_at: a.at,
        check_id: a.incidentId,
        status: 'down',
        status_code: 503,
        error: '',
        response_time: 12,
        maintenance: 0,
        actor: '',
        inserted_at: a.at,
      },
    ],
  });
}
