import type { MemberView, Role } from '@telemetry/contract';
import { AppError, inTransaction, type PgClient, type PgPool, type PgQueryable } from '@telemetry/platform';
import { registryCall } from '../registry/pg.js';

/**
 * A tenant's members (docs/access.md, "Members"). A role change and a removal each run in
 * one transaction that first locks the tenant's owner rows (SELECT … FOR UPDATE): two
 * concurrent demotions of the last two owners queue on that lock, and the second sees one
 * owner left (PostgreSQL re-checks `role = 'owner'` on the row the first one changed), so
 * a tenant is never left without an owner (409 LAST_OWNER).
 */

/** Who asks for a change: a person's role, or an API key (which never counts as an owner). */
export interface MemberActor {
  role: Role | 'api_key';
  personId?: string;
}

const MEMBER = `p.person_id AS id, p.email, p.name, m.role,
  to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS joined_at,
  p.password_hash IS NOT NULL AS password, p.totp_enabled AS totp`;

/** Every member of a tenant, oldest first. */
export async function listMembers(db: PgQueryable, tenantId: string): Promise<MemberView[]> {
  const { rows } = await registryCall(() =>
    db.query<MemberView>(
      `SELECT ${MEMBER} FROM memberships m JOIN people p USING (person_id)
       WHERE m.tenant_id = $1 ORDER BY m.created_at, p.email`,
      [tenantId],
    ),
  );
  return rows;
}

/** One member, or undefined. */
export async function memberOf(db: PgQueryable, tenantId: string, personId: string): Promise<MemberView | undefined> {
  const { rows } = await registryCall(() =>
    db.query<MemberView>(
      `SELECT ${MEMBER} FROM memberships m JOIN people p USING (person_id)
       WHERE m.tenant_id = $1 AND m.person_id = $2`,
      [tenantId, personId],
    ),
  );
  return rows[0];
}

/**
 * In the caller's transaction: locks the tenant's owners and the member; the member as it
 * is, and how many owners there are. 404 MEMBER_NOT_FOUND when they are not a member.
 */
async function lockMember(tx: PgClient, tenantId: string, personId: string): Promise<[MemberView, number]> {
  const owners = await tx.query<{ person_id: string }>(
    `SELECT person_id FROM memberships WHERE tenant_id = $1 AND role = 'owner' ORDER BY person_id FOR UPDATE`,
    [tenantId],
  );
  const { rows } = await tx.query<MemberView>(
    `SELECT ${MEMBER} FROM memberships m JOIN people p USING (person_id)
     WHERE m.tenant_id = $1 AND m.person_id = $2 FOR UPDATE OF m`,
    [tenantId, personId],
  );
  if (!rows[0]) throw new AppError('MEMBER_NOT_FOUND', `there is no member ${personId} in this tenant`);
  return [rows[0], owners.rowCount ?? 0];
}

/** 403 ROLE_NOT_ALLOWED unless the actor is an owner (who alone grants, takes or removes the owner role). */
function requireOwner(actor: MemberActor, what: string): void {
  if (actor.role !== 'owner') throw new AppError('ROLE_NOT_ALLOWED', `only an owner may ${what}`);
}

function refuseLastOwner(member: MemberView, owners: number, what: string): void {
  if (member.role === 'owner' && owners <= 1)
    throw new AppError('LAST_OWNER', `${member.email} is the last owner of this tenant and cannot ${what}`);
}

function tx<T>(pool: PgPool, fn: (tx: PgClient) => Promise<T>): Promise<T> {
  return registryCall(() => inTransaction(pool, fn));
}

/** Changes a member's role: the member before and after. */
export function changeRole(
  pool: PgPool,
  c: { tenantId: string; personId: string; role: Role; actor: MemberActor },
): Promise<{ before: MemberView; after: MemberView }> {
  return tx(pool, async (t) => {
    const [before, owners] = await lockMember(t, c.tenantId, c.personId);
    if (before.role === c.role) return { before, after: before };
    if (before.role === 'owner') requireOwner(c.actor, 'take the owner role');
    if (c.role === 'owner') requireOwner(c.actor, 'grant the owner role');
    refuseLastOwner(before, owners, 'be given another role; make another member owner first');
    await t.query('UPDATE memberships SET role = $3 WHERE tenant_id = $1 AND person_id = $2', [
      c.tenantId,
      c.personId,
      c.role,
    ]);
    return { before, after: { ...before, role: c.role } };
  });
}

/**
 * Removes a member (or a member leaves: `actor.personId` is theirs) and ends their sessions
 * in this tenant: the member as they were.
 */
export function removeMember(
  pool: PgPool,
  c: { tenantId: string; personId: string; actor: MemberActor },
): Promise<MemberView> {
  return tx(pool, async (t) => {
    const [member, owners] = await lockMember(t, c.tenantId, c.personId);
    const leaving = c.actor.personId === c.personId;
    if (member.role === 'owner' && !leaving) requireOwner(c.actor, 'remove an owner');
    refuseLastOwner(member, owners, leaving ? 'leave it' : 'be removed');
    await t.query('DELETE FROM memberships WHERE tenant_id = $1 AND person_id = $2', [c.tenantId, c.personId]);
    // resolveSession joins memberships, so these would be refused anyway; they go at once.
    await t.query('DELETE FROM sessions WHERE tenant_id = $1 AND person_id = $2', [c.tenantId, c.personId]);
    return member;
  });
}
