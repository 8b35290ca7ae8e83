import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Express, NextFunction, Request, Response } from 'express';
import { parse as parseCookies, serialize } from 'cookie';
import { ok, type Role } from '@telemetry/contract';
import { AppError, methodNotAllowed, type Logger, type PgPool, type PgQueryable } from '@telemetry/platform';
import {
  acceptInvitation,
  addMembership,
  createSession,
  ensurePerson,
  linkIdentity,
  openInvitationLink,
  personByEmail,
  personById,
  personOfIdentity,
  saveOidcFlow,
  takeOidcFlow,
  tenantsAdmittingDomain,
  tenantsOf,
  type InvitationLinks,
  type PersonRecord,
} from '@telemetry/store';
import type { Auditor } from './access/audit.js';
import type { OidcIdentity, OidcRelyingParty } from './access/oidc.js';
import { cookieSecure, setSessionCookie } from './access/session-cookie.js';
import { clientAddress } from './access/throttled.js';

/**
 * Single sign-on's routes (docs/access.md, "Single sign-on"; docs/api.md): GET /api/sso,
 * GET /auth/oidc/start and GET /auth/oidc/callback. A flow is kept in `oidc_flows` (taken
 * once) and bound to the browser that started it by a short cookie, so a callback URL
 * that leaks or is planted in another browser signs nobody in.
 */

/** Invitations for SSO: libs/store's InvitationLinks and acceptInvitation, wired in service.ts. */
export interface InvitationAcceptor {
  /** Accepts the invitation of a link token for a person (one transaction, once); INVITATION_INVALID. */
  accept(token: string, person: PersonRecord): Promise<{ tenantId: string; role: Role; invitationId: string }>;
  /** The tenant of a genuine link token (to audit a failed sign-in there), else undefined. */
  tenantOf(token: string): Promise<string | undefined>;
}

export function invitationAcceptor(pool: PgPool, links: InvitationLinks): InvitationAcceptor {
  const open = (token: string) => openInvitationLink(pool, links, token, Date.now());
  return {
    accept: async (token, person) => {
      const link = await open(token);
      if (link.forged) throw new AppError('INVITATION_INVALID', 'this invitation link is not one we made');
      if (link.problem) throw new AppError('INVITATION_INVALID', `this invitation was ${link.problem}`);
      // The person's email must be the invitation's (checked in the transaction).
      return { ...(await acceptInvitation(pool, link.invitation.id, person)), invitationId: link.invitation.id };
    },
    tenantOf: async (token) => {
      const link = await open(token);
      return link.forged ? undefined : link.invitation.tenantId;
    },
  };
}

export interface OidcRoutesDeps {
  /** Undefined when OIDC_ISSUER is empty. */
  rp: OidcRelyingParty | undefined;
  displayName: string;
  db: PgQueryable;
  audit: Auditor;
  logger: Logger;
  publicUrl: string;
  sessionMaxSeconds: number;
  /** A flow's invitation (invitationAcceptor). */
  invitations: InvitationAcceptor;
}

/** How long a started sign-in may take at the provider. */
export const OIDC_FLOW_SECONDS = 600;
const FLOW_COOKIE = 'oidc_flow';
const HOME = '/console/#/';

/**
 * Where to go after signing in: `returnTo` when it is a path of this origin under
 * /console/, else the console's home (no open redirect: no scheme, no `//host`, no `\`).
 */
export function safeReturnTo(returnTo: unknown, publicUrl: string): string {
  if (typeof returnTo !== 'string' || returnTo.length > 1000 || !returnTo.startsWith('/console/')) return HOME;
  // No backslash (browsers read it as a slash), no white space or control character.
  if ([...returnTo].some((c) => c === '\\' || c.charCodeAt(0) < 0x21 || c.charCodeAt(0) === 0x7f)) return HOME;
  const base = new URL(publicUrl);
  const u = new URL(returnTo, base);
  return u.origin === base.origin && u.pathname.startsWith('/console/') ? `${u.pathname}${u.search}${u.hash}` : HOME;
}

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

function flowCookieName(secure: boolean): string {
  return secure ? `__Host-${FLOW_COOKIE}` : FLOW_COOKIE;
}

function flowCookie(res: Response, value: string, secure: boolean, maxAge: number): void {
  res.append(
    'Set-Cookie',
    serialize(flowCookieName(secure), value, { httpOnly: true, secure, sameSite: 'lax', path: '/', maxAge }),
  );
}

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const wantsHtml = (req: Request): boolean => (req.get('accept') ?? '').includes('text/html');

const refused = (message: string): AppError => new AppError('OIDC_FAILED', message);

/** A query parameter that is one string of at most `max` characters, or undefined. */
function param(req: Request, name: string, max: number): string | undefined {
  const v: unknown = req.query[name];
  return typeof v === 'string' && v.length <= max ? v : undefined;
}

/**
 * Whether a request is a navigation from one of our own pages (`Sec-Fetch-Site:
 * same-origin`; from a browser that sends none, a Referer of this origin): an invitation
 * is accepted through SSO only from its preview page, where the person saw what they join.
 */
export function fromOurPage(req: Request, origin: string): boolean {
  const site = req.get('sec-fetch-site');
  if (site !== undefined) return site === 'same-origin';
  const referer = req.get('referer');
  if (!referer || !URL.canParse(referer)) return false;
  return new URL(referer).origin === origin;
}

export function oidcRoutes(app: Express, deps: OidcRoutesDeps): void {
  const secure = cookieSecure(deps.publicUrl);
  const origin = new URL(deps.publicUrl).origin;

  /** A failure: a browser goes back to the sign-in page with the code; others get the envelope. */
  const browserFailure =
    (handler: (req: Request, res: Response) => Promise<void>) =>
    async (req: Request, res: Response, next: NextFunction): Promise<void> => {
      try {
        await handler(req, res);
      } catch (err) {
        if (!(err instanceof AppError) || !wantsHtml(req)) return next(err);
        res.set('Cache-Control', 'no-store').redirect(302, `/console/#/sign-in?error=${encodeURIComponent(err.code)}`);
      }
    };

  const rpOf = (): OidcRelyingParty => {
    if (!deps.rp) throw new AppError('SSO_NOT_CONFIGURED', 'single sign-on is not configured here');
    return deps.rp;
  };

  app.get('/api/sso', (_req, res) => {
    res.set('Cache-Control', 'no-store').json(ok({ enabled: deps.rp !== undefined, name: deps.displayName }));
  });

  app.get(
    '/auth/oidc/start',
    browserFailure(async (req, res) => {
      const invitation = param(req, 'invitation', 2000) || null;
      // A link from elsewhere would join whoever is signed in at the provider, unseen: to the preview first.
      if (invitation !== null && !fromOurPage(req, origin)) {
        res.set('Cache-Control', 'no-store').redirect(302, `/console/#/invite/${encodeURIComponent(invitation)}`);
        return;
      }
      const { secrets, url } = await rpOf().begin();
      const browser = randomBytes(32).toString('base64url');
      await saveOidcFlow(
        deps.db,
        {
          ...secrets,
          browserHash: sha256(browser),
          invitation,
          returnTo: safeReturnTo(req.query.return_to, deps.publicUrl),
        },
        OIDC_FLOW_SECONDS,
      );
      flowCookie(res, browser, secure, OIDC_FLOW_SECONDS);
      res.set('Cache-Control', 'no-store').redirect(302, url);
    }),
  );

  app.get(
    '/auth/oidc/callback',
    browserFailure(async (req, res) => {
      const rp = rpOf();
      // The flow is taken (deleted) before anything else is checked: a state works once.
      const state = param(req, 'state', 200);
      const flow = state ? await takeOidcFlow(deps.db, state) : undefined;
      if (!flow) throw refused('this sign-in is unknown, used already or expired; sign in again');
      // Cleared only now: a forged callback does not spoil this browser's own sign-in under way.
      flowCookie(res, '', secure, 0);
      const browser = parseCookies(req.get('cookie') ?? '')[flowCookieName(secure)];
      if (!browser || !sameHash(sha256(browser), flow.browserHash))
        throw refused('this sign-in was started in another browser; sign in again');
      const search = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
      let admitted: { person: PersonRecord; tenantId: string };
      try {
        admitted = await admit(deps, req, res, await rp.finish(search, flow), flow.invitation);
      } catch (err) {
        await auditFailure(deps, req, res, flow.invitation, err);
        throw err;
      }
      const { person, tenantId } = admitted;
      const session = await createSession(deps.db, {
        personId: person.id,
        tenantId,
        method: 'oidc',
        ip: clientAddress(req),
        userAgent: req.get('user-agent') ?? '',
        maxSeconds: deps.sessionMaxSeconds,
      });
      setSessionCookie(res, session.token, session.expiresAtMs, secure);
      await deps.audit.record(req, res, {
        action: 'session.sign_in',
        target: { type: 'person', id: person.id },
        tenantId,
        actor: { type: 'person', id: person.id, email: person.email },
        changes: { method: { after: 'oidc' } },
      });
      res.set('Cache-Control', 'no-store').redirect(302, flow.returnTo || HOME);
    }),
  );
  methodNotAllowed(app, '/api/sso', ['GET', 'HEAD']);
  methodNotAllowed(app, '/auth/oidc/start', ['GET', 'HEAD']);
  methodNotAllowed(app, '/auth/oidc/callback', ['GET', 'HEAD']);
}

/** A refused sign-in, audited as session.sign_in failed where a tenant is known: the flow's invitation's. */
async function auditFailure(
  deps: OidcRoutesDeps,
  req: Request,
  res: Response,
  invitation: string | null,
  err: unknown,
): Promise<void> {
  if (invitation === null || !(err instanceof AppError)) return;
  const tenantId = await deps.invitations.tenantOf(invitation).catch(() => undefined);
  if (tenantId === undefined) return;
  await deps.audit.record(req, res, {
    action: 'session.sign_in',
    target: { type: 'tenant', id: tenantId },
    outcome: 'failed',
    tenantId,
    changes: { method: { after: 'oidc' }, code: { after: err.code } },
  });
}

/**
 * The person of a validated identity, and the tenant the session opens in:
 * (issuer, subject) already linked; else a verified email (the person made only when an
 * invitation or the domain rule is about to admit them, and the identity linked); then the
 * flow's invitation, else the email-domain rule; else NOT_A_MEMBER.
 */
async function admit(
  deps: OidcRoutesDeps,
  req: Request,
  res: Response,
  id: OidcIdentity,
  invitation: string | null,
): Promise<{ person: PersonRecord; tenantId: string }> {
  const linked = await personOfIdentity(deps.db, id.issuer, id.subject);
  let person = linked === undefined ? undefined : await personById(deps.db, linked);
  // NOTE: an unverified email is never trusted: anyone may type any address at some providers.
  const email = id.email !== undefined && id.emailVerified ? id.email : undefined;
  const domain = email?.slice(email.lastIndexOf('@') + 1).toLowerCase();
  const rules = domain === undefined || invitation !== null ? [] : await tenantsAdmittingDomain(deps.db, domain);
  if (!person && email) {
    // Nobody is made for a sign-in that nothing admits: a stranger leaves no row behind.
    person = await personByEmail(deps.db, email);
    if (!person && (invitation !== null || rules.length > 0))
      person = (await ensurePerson(deps.db, { email, name: id.name })).person;
    if (person) {
      const link = await linkIdentity(deps.db, id.issuer, id.subject, person.id);
      if (link.passwordCleared)
        for (const t of await tenantsOf(deps.db, person.id))
          await deps.audit.record(req, res, {
            action: 'person.password_cleared',
            target: { type: 'person', id: person.id },
            tenantId: t.id,
            actor: { type: 'person', id: person.id, email: person.email },
            changes: { sessions_ended: { after: link.sessionsEnded }, method: { after: 'oidc' } },
          });
      if (link.personId !== person.id || link.passwordCleared) person = await personById(deps.db, link.personId);
    }
  }
  if (!person) {
    if (invitation !== null && !email)
      throw new AppError('INVITATION_INVALID', 'the identity provider did not verify your email');
    throw new AppError(
      'NOT_A_MEMBER',
      email
        ? 'you are not a member of any tenant here; ask an owner or admin for an invitation'
        : 'the identity provider did not verify your email, and this identity is not linked to anyone here',
    );
  }
  const actor = { type: 'person' as const, id: person.id, email: person.email };
  if (invitation !== null) {
    const { tenantId, role, invitationId } = await deps.invitations.accept(invitation, person);
    await deps.audit.record(req, res, {
      action: 'invitation.accept',
      target: { type: 'invitation', id: invitationId },
      tenantId,
      actor,
      changes: { role: { after: role }, method: { after: 'oidc' } },
    });
    return { person, tenantId };
  }
  for (const rule of rules) {
    const added = await addMembership(deps.db, { ...rule, personId: person.id, createdBy: 'auto_admit' });
    if (added)
      await deps.audit.record(req, res, {
        action: 'member.auto_admit',
        target: { type: 'person', id: person.id },
        tenantId: rule.tenantId,
        actor,
        changes: { role: { after: rule.role }, domain: { after: domain } },
      });
  }
  const tenants = await tenantsOf(deps.db, person.id);
  if (tenants.length === 0)
    throw new AppError(
      'NOT_A_MEMBER',
      'you are not a member of any tenant here; ask an owner or admin for an invitation',
    );
  return { person, tenantId: tenants[0]!.id };
}
