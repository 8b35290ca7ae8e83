import type { Role } from '@telemetry/contract';
import type { PgQueryable } from '@telemetry/platform';
import { registryCall } from '../registry/pg.js';

/**
 * Single sign-on's state in PostgreSQL (docs/access.md, "Single sign-on"): the flows under
 * way (`oidc_flows`, each taken once), the identities linked to people (`oidc_identities`,
 * by issuer and subject), and the tenants whose email-domain rule admits a domain.
 */

/** A sign-in started at the identity provider. */
export interface OidcFlow {
  state: string;
  /** SHA-256 (hex) of the browser-binding cookie's value. */
  browserHash: string;
  nonce: string;
  codeVerifier: string;
  /** The invitation token the sign-in accepts, or null. */
  invitation: string | null;
  returnTo: string;
}

/** Stores a flow that lives `ttlSeconds`, and drops the flows that expired. */
export async function saveOidcFlow(db: PgQueryable, f: OidcFlow, ttlSeconds: number): Promise<void> {
  await registryCall(async () => {
    await db.query('DELETE FROM oidc_flows WHERE expires_at < now()');
    await db.query(
      `INSERT INTO oidc_flows (state, browser_hash, nonce, code_verifier, invitation, return_to, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))`,
      [f.state, f.browserHash, f.nonce, f.codeVerifier, f.invitation, f.returnTo, ttlSeconds],
    );
  });
}

/** Takes the live flow of `state` (at most once: it is deleted as it is read), or undefined. */
export async function takeOidcFlow(db: PgQueryable, state: string): Promise<OidcFlow | undefined> {
  const { rows } = await registryCall(() =>
    db.query<{
      state: string;
      browser_hash: string;
      nonce: string;
      code_verifier: string;
      invitation: string | null;
      return_to: string;
      live: boolean;
    }>(
      `DELETE FROM oidc_flows WHERE state = $1
       RETURNING state, browser_hash, nonce, code_verifier, invitation, return_to, expires_at > now() AS live`,
      [state],
    ),
  );
  const r = rows[0];
  if (!r?.live) return undefined;
  return {
    state: r.state,
    browserHash: r.browser_hash,
    nonce: r.nonce,
    codeVerifier: r.code_verifier,
    invitation: r.invitation,
    returnTo: r.return_to,
  };
}

/** The person an identity (issuer, subject) is linked to, or undefined. */
export async function personOfIdentity(db: PgQueryable, issuer: string, subject: string): Promise<string | undefined> {
  const { rows } = await registryCall(() =>
    db.query<{ person_id: string }>('SELECT person_id FROM oidc_identities WHERE issuer = $1 AND subject = $2', [
      issuer,
      subject,
    ]),
  );
  return rows[0]?.person_id;
}

/**
 * Links an identity to a person (found by verified email); an identity already linked keeps
 * its person. When the link is new and the person has a password, that password and their
 * TOTP are cleared and their sessions ended, in the same statement: nothing proves who set
 * that password (an inviter who accepted the invitation themself, say); the person sets one
 * again by reset. Returns the linked person, and what was cleared.
 */
export async function linkIdentity(
  db: PgQueryable,
  issuer: string,
  subject: string,
  personId: string,
): Promise<{ personId: string; passwordCleared: boolean; sessionsEnded: number }> {
  const { rows } = await registryCall(() =>
    db.query<{ cleared: number; ended: number }>(
      `WITH linked AS (
         INSERT INTO oidc_identities (issuer, subject, person_id) VALUES ($1, $2, $3)
         ON CONFLICT (issuer, subject) DO NOTHING RETURNING person_id),
       cleared AS (
         UPDATE people SET password_hash = NULL, password_changed_at = now(), totp_sealed = NULL, totp_enabled = false
         WHERE person_id IN (SELECT person_id FROM linked) AND password_hash IS NOT NULL RETURNING person_id),
       ended AS (DELETE FROM sessions WHERE person_id IN (SELECT person_id FROM cleared) RETURNING 1)
       SELECT (SELECT count(*) FROM cleared)::int AS cleared, (SELECT count(*) FROM ended)::int AS ended`,
      [issuer, subject, personId],
    ),
  );
  return {
    personId: (await personOfIdentity(db, issuer, subject)) ?? personId,
    passwordCleared: rows[0]!.cleared > 0,
    sessionsEnded: rows[0]!.ended,
  };
}

/** The tenants whose email-domain rule admits `domain` (lower case), with the role they admit as. */
export async function tenantsAdmittingDomain(
  db: PgQueryable,
  domain: string,
): Promise<{ tenantId: string; role: Role }[]> {
  const { rows } = await registryCall(() =>
    db.query<{ tenant_id: string; role: Role }>(
      `SELECT s.tenant_id, s.auto_admit_role AS role FROM tenant_settings s
       WHERE s.auto_admit_domains @> ARRAY[$1::text] ORDER BY s.tenant_id`,
      [domain],
    ),
  );
  return rows.map((r) => ({ tenantId: r.tenant_id, role: r.role }));
}
