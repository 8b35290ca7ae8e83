import { randomBytes } from 'node:crypto';
import type { PgPool, PgQueryable } from '@telemetry/platform';
import { inTransaction } from '@telemetry/platform';
import { registryCall } from '../registry/pg.js';
import { sessionHash } from './sessions.js';

/**
 * Password changes and reset by email (docs/access.md, "Passwords"). A reset link carries
 * a random 256-bit token; `password_resets` keeps only its SHA-256, so a copy of the table
 * resets nobody's password. A link works once, until PASSWORD_RESET_TTL_SECONDS after it
 * was sent; using it ends every session of its person and voids their other links.
 */

/** Reset links a person may be sent per quarter hour (more would let anyone flood their inbox). */
export const MAX_RESETS_PER_15_MINUTES = 3;

/** A new reset token for `personId` (stored as its hash only); undefined past MAX_RESETS_PER_15_MINUTES. */
export async function createPasswordReset(
  db: PgQueryable,
  personId: string,
  ttlSeconds: number,
): Promise<string | undefined> {
  const token = randomBytes(32).toString('base64url');
  const { rowCount } = await registryCall(() =>
    db.query(
      `INSERT INTO password_resets (token_hash, person_id, expires_at)
       SELECT $1, $2, now() + make_interval(secs => $3)
       WHERE (SELECT count(*) FROM password_resets
              WHERE person_id = $2 AND created_at > now() - interval '15 minutes') < $4`,
      [sessionHash(token), personId, ttlSeconds, MAX_RESETS_PER_15_MINUTES],
    ),
  );
  return rowCount === 1 ? token : undefined;
}

/**
 * Uses a reset token: sets the new password hash and ends every session of its person, in
 * one transaction. Undefined when the token is unknown, expired or used.
 */
export async function confirmPasswordReset(
  pool: PgPool,
  token: string,
  passwordHash: string,
): Promise<{ personId: string; sessionsEnded: number; totpDisabled: boolean } | undefined> {
  return registryCall(() =>
    inTransaction(pool, async (tx) => {
      const { rows } = await tx.query<{ person_id: string }>(
        `UPDATE password_resets SET used_at = now()
         WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now() RETURNING person_id`,
        [sessionHash(token)],
      );
      const personId = rows[0]?.person_id;
      if (personId === undefined) return undefined;
      await tx.query('UPDATE password_resets SET used_at = now() WHERE person_id = $1 AND used_at IS NULL', [personId]);
      await setPasswordHash(tx, personId, passwordHash);
      const { rowCount } = await tx.query('DELETE FROM sessions WHERE person_id = $1', [personId]);
      // The person proved their email, not their authenticator: two-step sign-in goes off.
      const totp = await tx.query(
        `UPDATE people SET totp_enabled = false, totp_sealed = NULL
         WHERE person_id = $1 AND (totp_enabled OR totp_sealed IS NOT NULL) RETURNING totp_enabled`,
        [personId],
      );
      return { personId, sessionsEnded: rowCount ?? 0, totpDisabled: (totp.rowCount ?? 0) > 0 };
    }),
  );
}

/** Stores a person's new password hash (a change, a reset, a rehash at sign-in). */
export async function setPasswordHash(db: PgQueryable, personId: string, passwordHash: string): Promise<void> {
  await registryCall(() =>
    db.query('UPDATE people SET password_hash = $2, password_changed_at = now() WHERE person_id = $1', [
      personId,
      passwordHash,
    ]),
  );
}

/** Ends a person's sessions but one (a password change keeps the session that made it). Returns how many. */
export async function endOtherSessions(db: PgQueryable, personId: string, keepHash: string): Promise<number> {
  const { rowCount } = await registryCall(() =>
    db.query('DELETE FROM sessions WHERE person_id = $1 AND session_hash <> $2', [personId, keepHash]),
  );
  return rowCount ?? 0;
}
