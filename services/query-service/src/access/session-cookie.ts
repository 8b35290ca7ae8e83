import type { Response } from 'express';
import { serialize } from 'cookie';
import { ROLE_SCOPES, SESSION_COOKIE, type SessionView } from '@telemetry/contract';
import type { PgQueryable } from '@telemetry/platform';
import { tenantsOf } from '@telemetry/store';
import type { SignedIn } from './principal.js';

/**
 * The session cookie (docs/access.md, "Sessions"): HttpOnly, SameSite=Lax, Path=/, and
 * Secure with the `__Host-` prefix unless PUBLIC_URL is plain http on a loopback address
 * (a browser drops a Secure cookie sent over http).
 */

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\]|localhost)$/i;

/** Whether the cookie is Secure: everywhere but http on loopback. */
export function cookieSecure(publicUrl: string): boolean {
  const u = new URL(publicUrl);
  return !(u.protocol === 'http:' && LOOPBACK.test(u.hostname));
}

function cookieName(secure: boolean): string {
  return secure ? `__Host-${SESSION_COOKIE}` : SESSION_COOKIE;
}

/** Sets the session cookie; it lives as long as the session may (the server ends it sooner when idle). */
export function setSessionCookie(res: Response, token: string, expiresAtMs: number, secure: boolean): void {
  res.append(
    'Set-Cookie',
    serialize(cookieName(secure), token, {
      httpOnly: true,
      secure,
      sameSite: 'lax',
      path: '/',
      expires: new Date(expiresAtMs),
    }),
  );
}

/** Clears the session cookie (sign-out, an ended session). */
export function clearSessionCookie(res: Response, secure: boolean): void {
  res.append(
    'Set-Cookie',
    serialize(cookieName(secure), '', { httpOnly: true, secure, sameSite: 'lax', path: '/', expires: new Date(0) }),
  );
}

/** GET /api/session's answer for a session. */
export async function sessionView(db: PgQueryable, s: SignedIn): Promise<SessionView> {
  const tenants = await tenantsOf(db, s.person.id);
  const here = tenants.find((t) => t.id === s.tenantId);
  return {
    person: s.person,
    tenant: { id: s.tenantId, name: here?.name ?? s.tenantId },
    role: s.role,
    scopes: [...ROLE_SCOPES[s.role]],
    tenants,
    csrf_token: s.csrfToken,
    expires_at: new Date(s.expiresAtMs).toISOString(),
  };
}
