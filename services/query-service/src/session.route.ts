import type { Express, Request, RequestHandler, Response } from 'express';
import { ACCESS_LIMITS, ok } from '@telemetry/contract';
import type { Mailer } from '@telemetry/alerting';
import { AppError, type Logger, type PgPool } from '@telemetry/platform';
import {
  createSession,
  endSession,
  endSessionsOf,
  hashPassword,
  needsRehash,
  normalEmail,
  personByEmail,
  sessionHash,
  setPasswordHash,
  switchSessionTenant,
  tenantsOf,
  verifyPassword,
  type PersonRecord,
  type SignInThrottle,
  type TotpStore,
} from '@telemetry/store';
import {
  authenticate,
  refuseCsrf,
  sessionToken,
  type AccessDeps,
  type Principal,
  type SignedIn,
} from './access/principal.js';
import type { AuditRecord } from './access/audit.js';
import { clientAddress, reserveAttempt } from './access/throttled.js';
import { clearSessionCookie, setSessionCookie, sessionView } from './access/session-cookie.js';
import { invalid, jsonBody } from './registry-objects.js';

/**
 * Password sign-in and the session routes (docs/access.md, "Signing in" and "Sessions";
 * docs/api.md). Sign-in is throttled (libs/store/src/people/throttle.ts): while a bucket's
 * delay runs, an attempt is refused before its password is looked at. An unknown email and
 * a wrong password answer the same SIGN_IN_FAILED, after the same work (verifyPassword
 * hashes a dummy for an unknown account; the failure's audit runs after the answer).
 */

export interface SignInDeps {
  pool: PgPool;
  access: AccessDeps;
  throttle: SignInThrottle;
  totp: TotpStore;
  mailer: Mailer;
  logger: Logger;
  /** Whether the cookie is Secure (cookieSecure(PUBLIC_URL)). */
  secureCookie: boolean;
  publicUrl: string;
  sessionMaxSeconds: number;
  passwordResetTtlSeconds: number;
}

/** A JSON object body's string fields: `required` must be there, the rest may, nothing else (closed, as every body is). */
export async function stringFields<R extends string, O extends string = never>(
  req: Request,
  required: readonly R[],
  optional: readonly O[] = [],
  max = 1024,
): Promise<Record<R, string> & Partial<Record<O, string>>> {
  const body = await jsonBody(req);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid('body', [{ path: '/', message: 'must be an object' }]);
  }
  const b = body as Record<string, unknown>;
  const known = new Set<string>([...required, ...optional]);
  const unknown = Object.keys(b).filter((k) => !known.has(k));
  const problems = [
    ...unknown.map((k) => ({ path: `/${k}`, message: 'is not a known field' })),
    ...[...required, ...optional].flatMap((k) => {
      const v = b[k];
      if (v === undefined && !required.includes(k as R)) return [];
      if (typeof v !== 'string')
        return [{ path: `/${k}`, message: v === undefined ? 'is required' : 'must be a string' }];
      return v.length > max ? [{ path: `/${k}`, message: `must be at most ${max} characters` }] : [];
    }),
  ];
  if (problems.length > 0) throw invalid('body', problems);
  return b as Record<R, string> & Partial<Record<O, string>>;
}

/** The person signed in (a session cookie, not an API key); CSRF-checked unless `safe`. */
export function sessionOnly(access: AccessDeps, safe = false): RequestHandler {
  return async (req, res, next) => {
    const principal = await authenticate(access, req);
    if (!principal.session) throw new AppError('MISSING_CREDENTIALS', 'this route is for a signed-in person');
    res.locals.key = principal;
    if (!safe) await refuseCsrf(access, req, res, principal.session);
    next();
  };
}

/** Answers `data` that holds a secret (a CSRF token, a TOTP secret): never stored by a cache. */
export function sendPrivate(res: Response, data: unknown): void {
  res.set('Cache-Control', 'no-store').json(ok(data));
}

export function signedIn(res: Response): SignedIn {
  return (res.locals.key as Principal).session!;
}

const actorOf = (p: Pick<PersonRecord, 'id' | 'email'>) => ({ type: 'person' as const, id: p.id, email: p.email });

/** Records `r` in every tenant of `person`, as them (no session names one tenant). */
export async function auditEverywhere(
  deps: SignInDeps,
  req: Request,
  res: Response,
  person: Pick<PersonRecord, 'id' | 'email'>,
  r: Omit<AuditRecord, 'tenantId' | 'actor'>,
): Promise<void> {
  for (const t of await tenantsOf(deps.pool, person.id)) {
    await deps.access.audit.record(req, res, { ...r, tenantId: t.id, actor: actorOf(person) });
  }
}

export function sessionRoutes(app: Express, deps: SignInDeps): void {
  const { access } = deps;
  const failed = (): AppError => new AppError('SIGN_IN_FAILED', 'the email or password is not right');

  app.post('/api/session/password', async (req, res) => {
    const body = await stringFields(req, ['email', 'password'], ['totp', 'tenant_id']);
    if (body.email.length > ACCESS_LIMITS.maxEmailLength) throw failed();
    const email = normalEmail(body.email);
    const address = clientAddress(req);
    // Counted as a failure before the password is checked (parallel guesses all count).
    const reservation = await reserveAttempt(deps.throttle, email, address);
    const person = await personByEmail(deps.pool, email);
    const right = await verifyPassword(person?.password_hash, body.password);
    const fail = (): never => {
      // After the answer: the audit's work must not tell a known email from an unknown one.
      if (person) {
        res.on('finish', () => {
          auditEverywhere(deps, req, res, person, {
            action: 'session.sign_in',
            target: { type: 'person', id: person.id },
            outcome: 'failed',
            changes: { method: { after: 'password' } },
          }).catch((err: unknown) => deps.logger.warn('sign-in failure not audited', { err: String(err) }));
        });
      }
      throw failed();
    };
    if (!person || !right) return fail();
    if (person.totp_enabled) {
      if (body.totp === undefined || body.totp === '')
        throw new AppError('TOTP_REQUIRED', 'enter the code of your authenticator app');
      if (!(await deps.totp.accept(person, body.totp.trim()))) return fail();
    }
    if (needsRehash(person.password_hash!)) {
      await setPasswordHash(deps.pool, person.id, await hashPassword(body.password));
    }
    await reservation.succeeded();
    const tenants = await tenantsOf(deps.pool, person.id);
    const tenant = tenants.find((t) => t.id === body.tenant_id) ?? tenants[0];
    if (!tenant) throw new AppError('NOT_A_MEMBER', 'you are not a member of any tenant; ask for an invitation');
    const s = await createSession(deps.pool, {
      personId: person.id,
      tenantId: tenant.id,
      method: 'password',
      ip: address,
      userAgent: req.get('user-agent') ?? '',
      maxSeconds: deps.sessionMaxSeconds,
    });
    // The session this browser held before (if any) ends: its cookie is replaced.
    const previous = sessionToken(access, req);
    if (previous !== undefined) await endSession(deps.pool, sessionHash(previous));
    setSessionCookie(res, s.token, s.expiresAtMs, deps.secureCookie);
    await access.audit.record(req, res, {
      action: 'session.sign_in',
      target: { type: 'person', id: person.id },
      changes: { method: { after: 'password' } },
      tenantId: tenant.id,
      actor: actorOf(person),
    });
    const view = await sessionView(deps.pool, {
      sessionHash: '',
      person: { id: person.id, email: person.email, name: person.name },
      tenantId: tenant.id,
      role: tenant.role,
      csrfToken: s.csrfToken,
      expiresAtMs: s.expiresAtMs,
    });
    sendPrivate(res, view);
  });

  app.get('/api/session', sessionOnly(access, true), async (_req, res) => {
    sendPrivate(res, await sessionView(deps.pool, signedIn(res)));
  });

  app.delete('/api/session', sessionOnly(access), async (req, res) => {
    const s = signedIn(res);
    await endSession(deps.pool, s.sessionHash);
    clearSessionCookie(res, deps.secureCookie);
    await access.audit.record(req, res, { action: 'session.sign_out', target: { type: 'person', id: s.person.id } });
    res.json(ok({}));
  });

  app.post('/api/session/sign-out-everywhere', sessionOnly(access), async (req, res) => {
    const s = signedIn(res);
    const ended = await endSessionsOf(deps.pool, s.person.id);
    clearSessionCookie(res, deps.secureCookie);
    await access.audit.record(req, res, {
      action: 'session.sign_out_everywhere',
      target: { type: 'person', id: s.person.id },
      changes: { sessions_ended: { after: ended } },
    });
    res.json(ok({ ended }));
  });

  app.post('/api/session/tenant', sessionOnly(access), async (req, res) => {
    const s = signedIn(res);
    const { tenant_id } = await stringFields(req, ['tenant_id']);
    const tenant = (await tenantsOf(deps.pool, s.person.id)).find((t) => t.id === tenant_id);
    if (!tenant || !(await switchSessionTenant(deps.pool, s.sessionHash, tenant.id))) {
      throw new AppError('NOT_A_MEMBER', `you are not a member of ${tenant_id.slice(0, 100)}`);
    }
    const now: SignedIn = { ...s, tenantId: tenant.id, role: tenant.role };
    await access.audit.record(req, res, {
      action: 'session.switch_tenant',
      target: { type: 'person', id: s.person.id },
      changes: { tenant: { before: s.tenantId, after: tenant.id } },
      tenantId: tenant.id,
    });
    sendPrivate(res, await sessionView(deps.pool, now));
  });
}
