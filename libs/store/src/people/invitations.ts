import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { ACCESS_LIMITS, type InvitationView, type PersonView, type Role } from '@telemetry/contract';
import { AppError, inTransaction, type PgPool, type PgQueryable, type SealingKey } from '@telemetry/platform';
import { registryCall } from '../registry/pg.js';
import { normalEmail } from './people.js';

/**
 * Invitations (docs/access.md, "Members"): a pending row in `invitations` and a link
 * `${PUBLIC_URL}/console/#/invite/<invitation_id>.<signature>`. The signature is 32 bytes
 * of HMAC-SHA256 under a key derived (HKDF) from a key of the SECRETS_KEYS ring (the first
 * signs, every key verifies, as acknowledge links do):
 * - its first 16 bytes are the MAC of the invitation id alone, so a forged or mangled link
 *   is refused before any database read (`idOf`);
 * - its last 16 bytes are the MAC of the id, tenant, email, role and expiry, checked
 *   against the row (`verify`), so a link is worth only the invitation it was made for.
 * (128-bit tags: NIST SP 800-107 allows HMAC truncated to 128 bits.)
 * The row says whether it is still pending: accepted or revoked once, never again.
 */

/** A new invitation id: `inv_` and 20 lower-case hex digits. */
export function newInvitationId(): string {
  return `inv_${randomBytes(10).toString('hex')}`;
}

/** What a link's signature covers. */
export interface SignedInvitation {
  id: string;
  tenantId: string;
  email: string;
  role: Role;
  /** Epoch ms (signed to the second). */
  expiresAtMs: number;
}

/** An invitation as stored. */
export interface InvitationRecord extends SignedInvitation {
  invitedBy: string;
  createdAtMs: number;
  acceptedAtMs: number | null;
  revokedAtMs: number | null;
}

const INFO = 'telemetry invitation links v1';
const TOKEN = /^(inv_[a-z0-9]{20})\.([A-Za-z0-9_-]{43})$/;

export class InvitationLinks {
  private readonly keys: Buffer[];

  constructor(
    ring: readonly SealingKey[],
    private readonly publicUrl: string,
  ) {
    if (ring.length === 0) throw new Error('invitation links need a key');
    this.keys = ring.map((k) => Buffer.from(hkdfSync('sha256', k.key, Buffer.alloc(0), INFO, 32)));
  }

  private static mac(key: Buffer, payload: string): Buffer {
    return createHmac('sha256', key).update(payload).digest().subarray(0, 16);
  }

  private static claim(i: SignedInvitation): string {
    return JSON.stringify([i.id, i.tenantId, normalEmail(i.email), i.role, Math.floor(i.expiresAtMs / 1000)]);
  }

  /** The token of an invitation (signed with the ring's first key). */
  token(i: SignedInvitation): string {
    const k = this.keys[0]!;
    const sig = Buffer.concat([InvitationLinks.mac(k, `id:${i.id}`), InvitationLinks.mac(k, InvitationLinks.claim(i))]);
    return `${i.id}.${sig.toString('base64url')}`;
  }

  /** The console's page for it. */
  link(i: SignedInvitation): string {
    return `${this.publicUrl.replace(/\/+$/, '')}/console/#/invite/${this.token(i)}`;
  }

  /** The invitation id of a well-formed token that one of the ring's keys signed; undefined for anything else. */
  idOf(token: string): string | undefined {
    const m = TOKEN.exec(token);
    if (!m) return undefined;
    const head = Buffer.from(m[2]!, 'base64url').subarray(0, 16);
    return this.keys.some((k) => timingSafeEqual(InvitationLinks.mac(k, `id:${m[1]!}`), head)) ? m[1] : undefined;
  }

  /** Whether `token` was made for exactly this invitation (its id, tenant, email, role and expiry). */
  verify(token: string, i: SignedInvitation): boolean {
    if (this.idOf(token) !== i.id) return false;
    const tail = Buffer.from(TOKEN.exec(token)![2]!, 'base64url').subarray(16);
    const claim = InvitationLinks.claim(i);
    return this.keys.some((k) => timingSafeEqual(InvitationLinks.mac(k, claim), tail));
  }
}

interface Row {
  invitation_id: string;
  tenant_id: string;
  email: string;
  role: Role;
  invited_by: string;
  created_ms: string;
  expires_ms: string;
  accepted_ms: string | null;
  revoked_ms: string | null;
}

const ms = (c: string): string => `(extract(epoch FROM ${c}) * 1000)::bigint`;
const COLUMNS = `invitation_id, tenant_id, email, role, invited_by, ${ms('created_at')} AS created_ms,
  ${ms('expires_at')} AS expires_ms, ${ms('accepted_at')} AS accepted_ms, ${ms('revoked_at')} AS revoked_ms`;
const PENDING = 'accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()';

function decode(r: Row): InvitationRecord {
  const n = (v: string | null): number | null => (v === null ? null : Number(v));
  return {
    id: r.invitation_id,
    tenantId: r.tenant_id,
    email: r.email,
    role: r.role,
    invitedBy: r.invited_by,
    createdAtMs: Number(r.created_ms),
    expiresAtMs: Number(r.expires_ms),
    acceptedAtMs: n(r.accepted_ms),
    revokedAtMs: n(r.revoked_ms),
  };
}

/** GET /api/invitations's view of an invitation. */
export function invitationView(i: InvitationRecord): InvitationView {
  return {
    id: i.id,
    email: i.email,
    role: i.role,
    invited_by: i.invitedBy,
    created_at: new Date(i.createdAtMs).toISOString(),
    expires_at: new Date(i.expiresAtMs).toISOString(),
  };
}

/**
 * A new pending invitation. 409 ALREADY_MEMBER when the email is a member's already; 409
 * QUOTA_EXCEEDED past ACCESS_LIMITS.maxPendingInvitations pending in the tenant.
 * `ttlSeconds` is INVITATION_TTL_SECONDS (a test may make one already expired).
 */
export function createInvitation(
  pool: PgPool,
  c: { tenantId: string; email: string; role: Role; invitedBy: string; ttlSeconds: number },
): Promise<InvitationRecord> {
  const email = normalEmail(c.email);
  return registryCall(() =>
    inTransaction(pool, async (tx) => {
      // One invitation at a time per tenant: the pending count holds at COMMIT.
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`invitations:${c.tenantId}`]);
      const member = await tx.query(
        `SELECT 1 FROM memberships m JOIN people p USING (person_id) WHERE m.tenant_id = $1 AND p.email = $2`,
        [c.tenantId, email],
      );
      if (member.rowCount) throw new AppError('ALREADY_MEMBER', `${email} is a member of this tenant already`);
      const pending = await tx.query<{ n: string }>(
        `SELECT count(*) AS n FROM invitations WHERE tenant_id = $1 AND ${PENDING}`,
        [c.tenantId],
      );
      if (Number(pending.rows[0]!.n) >= ACCESS_LIMITS.maxPendingInvitations)
        throw new AppError(
          'QUOTA_EXCEEDED',
          `a tenant has at most ${ACCESS_LIMITS.maxPendingInvitations} pending invitations; revoke some first`,
          { limit: 'maxPendingInvitations' },
        );
      const { rows } = await tx.query<Row>(
        `INSERT INTO invitations (invitation_id, tenant_id, email, role, invited_by, expires_at)
         VALUES ($1, $2, $3, $4, $5, date_trunc('second', now()) + make_interval(secs => $6))
         RETURNING ${COLUMNS}`,
        [newInvitationId(), c.tenantId, email, c.role, c.invitedBy, c.ttlSeconds],
      );
      return decode(rows[0]!);
    }),
  );
}

/** The tenant's pending invitations (not accepted, not revoked, not expired), newest first. */
export async function pendingInvitations(db: PgQueryable, tenantId: string): Promise<InvitationRecord[]> {
  const { rows } = await registryCall(() =>
    db.query<Row>(
      `SELECT ${COLUMNS} FROM invitations WHERE tenant_id = $1 AND ${PENDING} ORDER BY created_at DESC, invitation_id`,
      [tenantId],
    ),
  );
  return rows.map(decode);
}

/** An invitation by id, whatever its state. */
export async function invitationById(db: PgQueryable, id: string): Promise<InvitationRecord | undefined> {
  const { rows } = await registryCall(() =>
    db.query<Row>(`SELECT ${COLUMNS} FROM invitations WHERE invitation_id = $1`, [id]),
  );
  return rows[0] && decode(rows[0]);
}

/** Revokes a pending invitation of the tenant: it as it was, or undefined when there is no such pending one. */
export async function revokeInvitation(
  db: PgQueryable,
  tenantId: string,
  id: string,
): Promise<InvitationRecord | undefined> {
  const { rows } = await registryCall(() =>
    db.query<Row>(
      `UPDATE invitations SET revoked_at = now() WHERE tenant_id = $1 AND invitation_id = $2 AND ${PENDING}
       RETURNING ${COLUMNS}`,
      [tenantId, id],
    ),
  );
  return rows[0] && decode(rows[0]);
}

/** Why a genuinely signed invitation cannot be used now, or undefined when it can. */
export function invitationProblem(i: InvitationRecord, now: number): 'accepted' | 'revoked' | 'expired' | undefined {
  if (i.acceptedAtMs !== null) return 'accepted';
  if (i.revokedAtMs !== null) return 'revoked';
  if (i.expiresAtMs <= now) return 'expired';
  return undefined;
}

/**
 * What a link stands for: `forged` (malformed, not signed by the ring, or not made for the
 * invitation it names: nothing to audit), else the invitation and why it cannot be used
 * (`problem`), if it cannot. The id is checked before the one database read.
 */
export async function openInvitationLink(
  db: PgQueryable,
  links: InvitationLinks,
  token: string,
  now: number,
): Promise<
  { forged: true } | { forged: false; invitation: InvitationRecord; problem: ReturnType<typeof invitationProblem> }
> {
  const id = links.idOf(token);
  if (id === undefined) return { forged: true };
  const invitation = await invitationById(db, id);
  if (!invitation || !links.verify(token, invitation)) return { forged: true };
  return { forged: false, invitation, problem: invitationProblem(invitation, now) };
}

/** 400 INVITATION_INVALID. */
export function invitationInvalid(why: string): AppError {
  return new AppError('INVITATION_INVALID', `this invitation link cannot be used: ${why}; ask for a new invitation`);
}

/**
 * Accepts an invitation for `person`, in one transaction: it must be pending, unexpired,
 * unrevoked and sent to the person's email, else 400 INVITATION_INVALID; the person becomes
 * a member with its role (409 ALREADY_MEMBER when they are one already) and the invitation
 * is marked accepted, so the link works once. The caller has checked the link's signature.
 */
export function acceptInvitation(
  pool: PgPool,
  invitationId: string,
  person: Pick<PersonView, 'id' | 'email'>,
): Promise<{ tenantId: string; role: Role }> {
  return registryCall(() =>
    inTransaction(pool, async (tx) => {
      const { rows } = await tx.query<Row>(`SELECT ${COLUMNS} FROM invitations WHERE invitation_id = $1 FOR UPDATE`, [
        invitationId,
      ]);
      const found = rows[0] && decode(rows[0]);
      if (!found) throw invitationInvalid('there is no such invitation');
      // The database's clock decides expiry, as it made it.
      const { rows: clock } = await tx.query<{ now: string }>(`SELECT ${ms('now()')} AS now`);
      const problem = invitationProblem(found, Number(clock[0]!.now));
      if (problem) throw invitationInvalid(`it was ${problem}`);
      if (found.email !== normalEmail(person.email)) throw invitationInvalid('it was sent to another email');
      const made = await tx.query(
        `INSERT INTO memberships (tenant_id, person_id, role, created_by) VALUES ($1, $2, $3, $4)
         ON CONFLICT (tenant_id, person_id) DO NOTHING`,
        [found.tenantId, person.id, found.role, found.invitedBy],
      );
      if (!made.rowCount) throw new AppError('ALREADY_MEMBER', `${found.email} is a member of this tenant already`);
      await tx.query('UPDATE invitations SET accepted_at = now(), accepted_by = $2 WHERE invitation_id = $1', [
        invitationId,
        person.id,
      ]);
      return { tenantId: found.tenantId, role: found.role };
    }),
  );
}
