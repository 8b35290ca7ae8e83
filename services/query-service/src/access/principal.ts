import { timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { parse as parseCookies } from 'cookie';
import { CSRF_HEADER, ROLE_SCOPES, SESSION_COOKIE, type ActorType, type Scope } from '@telemetry/contract';
import { AppError } from '@telemetry/platform';
import type { KeyStore, ResolvedSession, VerifiedKey } from '@telemetry/store';
import type { Auditor } from './audit.js';

/**
 * Who a request is from (docs/access.md): an API key (`Authorization: Bearer`), or a person
 * signed in to one tenant (the session cookie). Routes read either as a VerifiedKey
 * (`res.locals.key`: its tenant, its scopes, the monitors it is limited to); the audit log
 * reads its `actor`.
 */

export interface Actor {
  type: ActorType;
  id: string;
  email: string;
}

/** A session as it stands now: resolved on every request, so a role change or removal acts at once. */
export type SignedIn = ResolvedSession;

export interface Principal extends VerifiedKey {
  actor: Actor;
  /** Set when a session cookie authenticated the request. */
  session?: SignedIn;
}

/**
 * Resolves a session cookie's token to its session, touching its idle clock; undefined
 * when it is unknown, signed out, expired (idle or absolute), or its person is no longer
 * a member of its tenant.
 */
export interface SessionResolver {
  resolve(token: string): Promise<SignedIn | undefined>;
}

export interface AccessDeps {
  keys: Pick<KeyStore, 'authenticate'>;
  sessions: SessionResolver;
  audit: Auditor;
  /** This service's own origin (`new URL(PUBLIC_URL).origin`): the only Origin a cookie-authenticated write may come from. */
  origin: string;
  /** Whether the session cookie is Secure (cookieSecure(PUBLIC_URL)): then only its `__Host-` name is read. */
  secureCookie: boolean;
}

/** The principal an authenticated route runs as (set by `authorize`). */
export function principalOf(res: Response): Principal {
  return res.locals.key as Principal;
}

/**
 * The session cookie's token, if the request carries one. A Secure cookie is read only
 * under its `__Host-` name: a sibling subdomain can plant the unprefixed one (login CSRF),
 * never a `__Host-` one.
 */
export function sessionToken(deps: Pick<AccessDeps, 'secureCookie'>, req: Request): string | undefined {
  const header = req.get('cookie');
  if (!header) return undefined;
  const cookies = parseCookies(header);
  const token = deps.secureCookie ? cookies[`__Host-${SESSION_COOKIE}`] : cookies[SESSION_COOKIE];
  return token && token.length <= 200 ? token : undefined;
}

/** The principal of a session (its role's scopes; limited to no monitors). */
export function sessionPrincipal(s: SignedIn): Principal {
  return {
    keyId: `session:${s.person.id}`,
    tenantId: s.tenantId,
    name: s.person.email,
    kind: 'api',
    scopes: new Set<string>(ROLE_SCOPES[s.role]),
    monitorIds: new Set(),
    allowedOrigins: new Set(),
    allowedSources: new Set(),
    ipStorage: 'truncated',
    actor: { type: 'person', id: s.person.id, email: s.person.email },
    session: s,
  };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Why a state-changing request a cookie authenticated is refused, or undefined: it must
 * come from this origin (Origin, when sent, is PUBLIC_URL's: behind a TLS proxy the
 * request itself arrives as plain http; Sec-Fetch-Site, when sent, is same-origin) and
 * carry the session's CSRF token. SameSite=Lax alone lets a sibling origin of the same
 * site (another port of the same host) send the cookie.
 */
export function csrfProblem(deps: Pick<AccessDeps, 'origin'>, req: Request, s: SignedIn): string | undefined {
  const origin = req.get('origin');
  if (origin !== undefined && origin !== deps.origin)
    return `requests from ${origin.slice(0, 100)} may not change anything here`;
  const site = req.get('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none')
    return 'requests from another site or origin may not change anything here';
  const token = req.get(CSRF_HEADER);
  if (!token) return 'send the session’s CSRF token as X-CSRF-Token';
  if (!sameText(token, s.csrfToken)) return 'the X-CSRF-Token is not this session’s';
  return undefined;
}

/** Refuses (CSRF_FAILED, audited as denied to res.locals.key) a cookie-authenticated write that fails csrfProblem. */
export async function refuseCsrf(deps: AccessDeps, req: Request, res: Response, s: SignedIn): Promise<void> {
  const problem = csrfProblem(deps, req, s);
  if (problem === undefined) return;
  await deps.audit.denied(req, res, 'CSRF_FAILED');
  throw new AppError('CSRF_FAILED', problem);
}

/**
 * Authenticates the request (an API key first, else the session cookie) and requires
 * `scope`. A cookie-authenticated state-changing request must pass csrfProblem. Refusals
 * of a known principal (a missing scope, a failed CSRF check) are audited as denied.
 */
export function authorize(deps: AccessDeps, scope: Scope): RequestHandler {
  return async (req, res, next) => {
    const principal = await authenticate(deps, req);
    res.locals.key = principal;
    if (principal.session && !SAFE_METHODS.has(req.method)) await refuseCsrf(deps, req, res, principal.session);
    if (!principal.scopes.has(scope)) {
      await deps.audit.denied(req, res, 'INSUFFICIENT_SCOPE');
      throw new AppError(
        'INSUFFICIENT_SCOPE',
        principal.session
          ? `a ${principal.session.role} may not do this (it needs the ${scope} scope)`
          : `this API key lacks the ${scope} scope`,
        { scope },
      );
    }
    next();
  };
}

/** The request's principal: AppError MISSING_CREDENTIALS, INVALID_CREDENTIALS, KEY_EXPIRED or SESSION_EXPIRED. */
export async function authenticate(deps: AccessDeps, req: Request): Promise<Principal> {
  const header = req.get('authorization');
  if (header) {
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    if (!m) throw new AppError('INVALID_CREDENTIALS', 'the API key is not valid');
    const key = deps.keys.authenticate(m[1]!, 'api');
    return { ...key, actor: { type: 'api_key', id: key.keyId, email: '' } };
  }
  const token = sessionToken(deps, req);
  if (token === undefined)
    throw new AppError('MISSING_CREDENTIALS', 'sign in, or send Authorization: Bearer <API key>');
  const session = await deps.sessions.resolve(token);
  if (!session) throw new AppError('SESSION_EXPIRED', 'your session has ended; sign in again');
  return sessionPrincipal(session);
}
