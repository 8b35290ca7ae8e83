import { createHash, randomBytes } from 'node:crypto';
import type { PersonView, Role } from '@telemetry/contract';
import type { PgQueryable } from '@telemetry/platform';
import { registryCall } from '../registry/pg.js';

/**
 * Server-side sessions (docs/access.md, "Sessions") in PostgreSQL's `sessions` table. The
 * cookie carries a random 256-bit token; the table keeps only its SHA-256, so a copy of
 * the table signs nobody in. A session names one tenant; its role is read from
 * `memberships` on every request, so a role change or a removal acts on the next one.
 */

/** SHA-256 of a session token, hex (the sessions table's key). */
export function sessionHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A new session token (43 base64url characters) and a new CSRF token. */
export function newSessionTokens(): { token: string; csrfToken: string } {
  return { token: randomBytes(32).toString('base64url'), csrfToken: randomBytes(32).toString('base64url') };
}

/** A session as resolved for a request. */
export interface ResolvedSession {
  /** SHA-256 of the cookie's token (the sessions table's key). */
  sessionHash: string;
  person: PersonView;
  tenantId: string;
  role: Role;
  csrfToken: string;
  /** Absolute expiry (epoch ms). */
  expiresAtMs: number;
}

interface Row {
  session_hash: string;
  person_id: string;
  email: string;
  name: string;
  tenant_id: string;
  role: Role;
  csrf_token: string;
  expires_ms: string;
}

/**
 * The live session of `token`, touching its idle clock (at most once a minute), or
 * undefined: unknown, expired (absolute, or idle past `idleSeconds`), or its person no
 * longer a member of its tenant. One statement: the role comes from memberships as it is now.
 */
export async function resolveSession(
  db: PgQueryable,
  token: string,
  idleSeconds: number,
): Promise<ResolvedSession | undefined> {
  const { rows } = await registryCall(() =>
    db.query<Row>(
      `WITH live AS (
         UPDATE sessions s SET last_seen_at = now()
         WHERE s.session_hash = $1 AND s.expires_at > now()
           AND s.last_seen_at > now() - make_interval(secs => $2)
           AND s.last_seen_at < now() - interval '60 seconds'
         RETURNING s.session_hash)
       SELECT s.session_hash, s.person_id, p.email, p.name, s.tenant_id, m.role, s.csrf_token,
              (extract(epoch FROM s.expires_at) * 1000)::bigint AS expires_ms
       FROM sessions s
       JOIN people p ON p.person_id = s.person_id
       JOIN memberships m ON m.tenant_id = s.tenant_id AND m.person_id = s.person_id
       WHERE s.session_hash = $1 AND s.expires_at > now()
         AND s.last_seen_at > now() - make_interval(secs => $2)`,
      [sessionHash(token), idleSeconds],
    ),
  );
  const r = rows[0];
  if (!r) return undefined;
  return {
    sessionHash: r.session_hash,
    person: { id: r.person_id, email: r.email, name: r.name },
    tenantId: r.tenant_id,
    role: r.role,
    csrfToken: r.csrf_token,
    expiresAtMs: Number(r.expires_ms),
  };
}

export interface NewSession {
  personId: string;
  tenantId: string;
  method: 'password' | 'oidc';
  ip: string;
  userAgent: string;
  /** Absolute lifetime (SESSION_MAX_SECONDS). */
  maxSeconds: number;
}

/** Starts a session: its cookie token (never stored) and CSRF token, and when it ends at the latest. */
export async function createSession(
  db: PgQueryable,
  s: NewSession,
): Promise<{ token: string; csrfToken: string; expiresAtMs: number }> {
  const { token, csrfToken } = newSessionTokens();
  const { rows } = await registryCall(() =>
    db.query<{ expires_ms: string }>(
      `INSERT INTO sessions (session_hash, person_id, tenant_id, method, csrf_token, expires_at, ip, user_agent)
       VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6), $7, $8)
       RETURNING (extract(epoch FROM expires_at) * 1000)::bigint AS expires_ms`,
      [
        sessionHash(token),
        s.personId,
        s.tenantId,
        s.method,
        csrfToken,
        s.maxSeconds,
        s.ip.slice(0, 100),
        s.userAgent.slice(0, 512),
      ],
    ),
  );
  return { token, csrfToken, expiresAtMs: Number(rows[0]!.expires_ms) };
}

/** Ends one session (sign-out). */
export async function endSession(db: PgQueryable, hash: string): Promise<void> {
  await registryCall(() => db.query('DELETE FROM sessions WHERE session_hash = $1', [hash]));
}

/** Ends every session of a person, in every tenant ("sign out everywhere", a password reset). Returns how many. */
export async function endSessionsOf(db: PgQueryable, personId: string): Promise<number> {
  const { rowCount } = await registryCall(() => db.query('DELETE FROM sessions WHERE person_id = $1', [personId]));
  return rowCount ?? 0;
}

/** Every tenant a person belongs to, with its name and their role there (oldest membership first). */
export async function tenantsOf(
  db: PgQueryable,
  personId: string,
): Promise<{ id: string; name: string; role: Role }[]> {
  const { rows } = await registryCall(() =>
    db.query<{ id: string; name: string; role: Role }>(
      `SELECT m.tenant_id AS id, t.name, m.role FROM memberships m JOIN tenants t USING (tenant_id)
       WHERE m.person_id = $1 ORDER BY m.created_at, m.tenant_id`,
      [personId],
    ),
  );
  return rows;
}

/** Moves a session to another tenant of its person (POST /api/session/tenant); false when it is not theirs. */
export async function switchSessionTenant(db: PgQueryable, hash: string, tenantId: string): Promise<boolean> {
  const { rowCount } = await registryCall(() =>
    db.query(
      `UPDATE sessions s SET tenant_id = $2 WHERE s.session_hash = $1
         AND EXISTS (SELECT 1 FROM memberships m WHERE m.tenant_id = $2 AND m.person_id = s.person_id)`,
      [hash, tenantId],
    ),
  );
  return rowCount === 1;
}
