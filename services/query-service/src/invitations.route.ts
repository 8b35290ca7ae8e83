import type { Express, Request, RequestHandler, Response } from 'express';
import { INVITATION_ID_PATTERN, ok, type PersonView } from '@telemetry/contract';
import { escapeHtml, type Mailer } from '@telemetry/alerting';
import { AppError, rejectUnknown, single } from '@telemetry/platform';
import {
  acceptInvitation,
  createInvitation,
  createSession,
  endSession,
  ensurePerson,
  hashPassword,
  invitationInvalid,
  invitationView,
  openInvitationLink,
  pendingInvitations,
  personByEmail,
  requireStrongPassword,
  revokeInvitation,
  tenantSettings,
  verifyPassword,
  type InvitationLinks,
  type InvitationRecord,
  type SignInThrottle,
} from '@telemetry/store';
import { clientAddress, reserveAttempt } from './access/throttled.js';
import { authenticate, refuseCsrf, sessionToken, type AccessDeps } from './access/principal.js';
import { sessionView, setSessionCookie } from './access/session-cookie.js';
import { memberActor, refuse, validBody, type PeopleRoutesDeps } from './members.route.js';
import { tenantOf } from './params.js';
import { refuseLimited } from './registry-objects.js';

/**
 * /api/invitations (docs/access.md, "Members"): owners and admins invite by email; the
 * link (`${PUBLIC_URL}/console/#/invite/<token>`, store/people/invitations.ts) is mailed,
 * and answered to the inviter only when the mail could not be sent; whoever follows it previews and accepts it, once. A link that is
 * genuinely signed but cannot be used (expired, used, revoked, another email) is audited
 * as `invitation.refused` in its tenant; a forged one concerns no tenant.
 */

export interface InvitationRoutesDeps extends PeopleRoutesDeps {
  access: AccessDeps;
  links: InvitationLinks;
  mailer: Mailer;
  /** INVITATION_TTL_SECONDS. */
  ttlSeconds: number;
  /** SESSION_MAX_SECONDS: the session an acceptance starts. */
  sessionMaxSeconds: number;
  /** Whether single sign-on is configured (OIDC_ISSUER): the preview says so. */
  sso: boolean;
  /** Sign-in's throttle: accepting as an existing person checks their password. */
  throttle: SignInThrottle;
}

const INVITATION_ID = new RegExp(INVITATION_ID_PATTERN);

/** The mail of an invitation: plain text and HTML, the link in both. */
function invitationMail(i: InvitationRecord, tenantName: string, inviter: string, link: string) {
  const by = inviter ? ` by ${inviter}` : '';
  const until = new Date(i.expiresAtMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const subject = `You are invited to ${tenantName}`;
  const text = `You are invited to ${tenantName}${by} as ${i.role}.\n\nAccept the invitation: ${link}\n\nThe link works once, until ${until}.\n`;
  const html =
    `<p>You are invited to <b>${escapeHtml(tenantName)}</b>${escapeHtml(by)} as ${i.role}.</p>` +
    `<p><a href="${escapeHtml(link)}">Accept the invitation</a></p>` +
    `<p>The link works once, until ${until}.</p>`;
  return { to: i.email, subject, text, html, messageId: `<${i.id}@invitations.telemetry>` };
}

export function invitationRoutes(app: Express, deps: InvitationRoutesDeps): void {
  /** Opens a link; refuses (and audits a genuine one) when it cannot be used now. */
  const open = async (req: Request, res: Response, token: string): Promise<InvitationRecord> => {
    const link = await openInvitationLink(deps.db, deps.links, token, Date.now());
    if (link.forged) throw invitationInvalid('it is not a link we made');
    if (link.problem) {
      await refused(req, res, link.invitation, link.problem);
      throw invitationInvalid(`it was ${link.problem}`);
    }
    return link.invitation;
  };
  const refused = (req: Request, res: Response, i: InvitationRecord, reason: string): Promise<void> =>
    deps.audit.record(req, res, {
      action: 'invitation.refused',
      target: { type: 'invitation', id: i.id },
      outcome: 'denied',
      tenantId: i.tenantId,
      changes: { reason: { after: reason } },
    });

  app.get('/api/invitations', deps.auth('members:read'), async (req, res) => {
    rejectUnknown(req, new Set());
    res.setHeader('Cache-Control', 'no-store');
    res.json(ok((await pendingInvitations(deps.db, tenantOf(res))).map(invitationView)));
  });

  app.post('/api/invitations', deps.auth('members:write'), async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'invitations');
    const body = await validBody(req, deps.validators.invitationCreate, 'invitation');
    const actor = memberActor(res);
    if (body.role === 'owner' && actor.role !== 'owner')
      await refuse(deps, req, res, new AppError('ROLE_NOT_ALLOWED', 'only an owner may invite an owner'));
    const tenantId = tenantOf(res);
    const principal = res.locals.key as { actor: { id: string; email: string } };
    const invitation = await createInvitation(deps.db, {
      tenantId,
      email: body.email,
      role: body.role,
      invitedBy: principal.actor.id,
      ttlSeconds: deps.ttlSeconds,
    });
    const link = deps.links.link(invitation);
    await deps.audit.record(req, res, {
      action: 'member.invite',
      target: { type: 'invitation', id: invitation.id },
      changes: { email: { after: invitation.email }, role: { after: invitation.role } },
    });
    const { name } = await tenantSettings(deps.db, tenantId);
    const answer = await deps.mailer.send(invitationMail(invitation, name, principal.actor.email, link));
    const mailSent = answer.statusCode >= 200 && answer.statusCode < 300;
    if (!mailSent)
      deps.logger.warn('invitation mail not sent', {
        request_id: req.id,
        invitation_id: invitation.id,
        status_code: answer.statusCode,
        error: answer.error,
      });
    res.status(201).setHeader('Cache-Control', 'no-store');
    // The link proves control of the invited email: the inviter sees it only when no mail went
    // out (then they must hand it over); a mailed invitation answers no link (docs/access.md).
    res.json(ok({ ...invitationView(invitation), ...(mailSent ? {} : { link }), mail_sent: mailSent }));
  });

  // /api/invitations/preview and /accept are not invitations: their other methods answer 405 (app.ts).
  const anId: RequestHandler = (req, _res, next) =>
    ['preview', 'accept'].includes(String(req.params.id)) ? next('route') : next();
  app.delete('/api/invitations/:id', anId, deps.auth('members:write'), async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'invitations');
    const id = String(req.params.id);
    const gone = INVITATION_ID.test(id) ? await revokeInvitation(deps.db, tenantOf(res), id) : undefined;
    if (!gone) throw new AppError('INVITATION_NOT_FOUND', 'there is no such pending invitation in this tenant');
    await deps.audit.record(req, res, {
      action: 'invitation.revoke',
      target: { type: 'invitation', id },
      changes: { email: { before: gone.email }, role: { before: gone.role } },
    });
    res.json(ok({}));
  });

  app.get('/api/invitations/preview', async (req, res) => {
    rejectUnknown(req, new Set(['token']));
    res.setHeader('Cache-Control', 'no-store');
    const i = await open(req, res, single(req, 'token') ?? '');
    const [settings, person] = await Promise.all([
      tenantSettings(deps.db, i.tenantId),
      personByEmail(deps.db, i.email),
    ]);
    res.json(
      ok({
        tenant: { id: i.tenantId, name: settings.name },
        email: i.email,
        role: i.role,
        expires_at: new Date(i.expiresAtMs).toISOString(),
        sso: deps.sso,
        has_account: person !== undefined,
      }),
    );
  });

  app.post('/api/invitations/accept', async (req, res) => {
    rejectUnknown(req, new Set());
    const body = await validBody(req, deps.validators.invitationAccept, 'acceptance');
    // Signed in: that person accepts (a state-changing request a cookie authenticates: CSRF checked).
    const principal = sessionToken(deps.access, req) === undefined ? undefined : await authenticate(deps.access, req);
    const signedIn = principal?.session;
    if (signedIn) {
      // A refusal is audited as denied to the signed-in person (docs/access.md).
      res.locals.key = principal;
      await refuseCsrf(deps.access, req, res, signedIn);
    }
    const invitation = await open(req, res, body.token);
    const person =
      signedIn?.person ?? (await personFor(invitation.email, body.name, body.password, clientAddress(req)));
    let joined: { tenantId: string };
    try {
      joined = await acceptInvitation(deps.db, invitation.id, person);
    } catch (err) {
      if (err instanceof AppError && err.code === 'INVITATION_INVALID')
        await refused(req, res, invitation, err.message);
      throw err;
    }
    const session = await createSession(deps.db, {
      personId: person.id,
      tenantId: joined.tenantId,
      method: 'password',
      ip: clientAddress(req),
      userAgent: req.get('user-agent') ?? '',
      maxSeconds: deps.sessionMaxSeconds,
    });
    // The session it came with (another tenant's) gives way to the new one.
    if (signedIn) await endSession(deps.db, signedIn.sessionHash);
    setSessionCookie(res, session.token, session.expiresAtMs, deps.cookieSecure);
    const role = invitation.role;
    await deps.audit.record(req, res, {
      action: 'invitation.accept',
      target: { type: 'invitation', id: invitation.id },
      tenantId: joined.tenantId,
      actor: { type: 'person', id: person.id, email: person.email },
      changes: { role: { after: role } },
    });
    res.setHeader('Cache-Control', 'no-store');
    res.json(
      ok(
        await sessionView(deps.db, {
          sessionHash: '',
          person,
          tenantId: joined.tenantId,
          role,
          csrfToken: session.csrfToken,
          expiresAtMs: session.expiresAtMs,
        }),
      ),
    );
  });

  /**
   * Who accepts without a session: a new person (a strong password, WEAK_PASSWORD), or an
   * existing one with their password (401 SIGN_IN_FAILED; with TOTP or without a password
   * they sign in first and accept signed in).
   */
  async function personFor(
    email: string,
    name: string | undefined,
    password: string | undefined,
    address: string,
  ): Promise<PersonView> {
    if (password === undefined)
      throw new AppError('VALIDATION_FAILED', 'the acceptance is not valid: /password is required', {
        problems: [{ path: '/password', message: 'is required (or sign in first)' }],
      });
    const known = await personByEmail(deps.db, email);
    if (!known) {
      requireStrongPassword(password);
      const { person, created } = await ensurePerson(deps.db, {
        email,
        name: name ?? '',
        passwordHash: await hashPassword(password),
      });
      if (created) return { id: person.id, email: person.email, name: person.name };
    }
    const existing = known ?? (await personByEmail(deps.db, email))!;
    if (existing.totp_enabled || existing.password_hash === null)
      throw new AppError('SIGN_IN_FAILED', 'sign in first, then open the invitation link again');
    // An existing person's password is guessed here as at sign-in: the same throttle.
    const reservation = await reserveAttempt(deps.throttle, email, address);
    if (!(await verifyPassword(existing.password_hash, password)))
      throw new AppError('SIGN_IN_FAILED', 'the email or password is not right');
    await reservation.succeeded();
    return { id: existing.id, email: existing.email, name: existing.name };
  }
}
