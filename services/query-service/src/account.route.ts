import { createHash } from 'node:crypto';
import type { Express, Request, Response } from 'express';
import { ok } from '@telemetry/contract';
import { AppError } from '@telemetry/platform';
import {
  confirmPasswordReset,
  createPasswordReset,
  endOtherSessions,
  hashPassword,
  personByEmail,
  personById,
  requireStrongPassword,
  setPasswordHash,
  verifyPassword,
  type PersonRecord,
  type Reservation,
} from '@telemetry/store';
import { auditEverywhere, sendPrivate, sessionOnly, signedIn, stringFields, type SignInDeps } from './session.route.js';
import { clientAddress, reserveAttempt } from './access/throttled.js';
import { invalid } from './registry-objects.js';

/**
 * A person's own account (docs/access.md, "Signing in"; docs/api.md): reset by email,
 * changing the password, and two-step sign-in (TOTP).
 */

/** The reset link of `token` (the console's reset page). */
export function resetLink(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/console/#/reset/${token}`;
}

function resetMail(to: string, link: string, ttlSeconds: number, token: string) {
  const minutes = Math.round(ttlSeconds / 60);
  const text =
    `Someone (we hope you) asked to reset the password of ${to}.\n\n` +
    `Choose a new password here (the link works once, for ${minutes} minutes):\n${link}\n\n` +
    'If it was not you, ignore this mail: your password stays as it is.\n';
  const html = `<p>Someone (we hope you) asked to reset the password of ${to.replace(/[<>&"]/g, '')}.</p>
<p><a href="${link}">Choose a new password</a> (the link works once, for ${minutes} minutes).</p>
<p>If it was not you, ignore this mail: your password stays as it is.</p>`;
  const id = createHash('sha256').update(token).digest('hex').slice(0, 24);
  return { to, subject: 'Reset your password', text, html, messageId: `<reset-${id}@telemetry>` };
}

/** The body of turning TOTP on or off: the current code and the current password. */
async function totpFields(req: Request): Promise<{ code: string; current_password: string }> {
  const body = await stringFields(req, ['code', 'current_password']);
  if (body.code.length > 20) throw invalid('body', [{ path: '/code', message: 'must be at most 20 characters' }]);
  return body;
}

export function accountRoutes(app: Express, deps: SignInDeps): void {
  const { access } = deps;
  /** The signed-in person as stored (their hash, their TOTP state). */
  const me = async (res: Response): Promise<PersonRecord> => {
    const person = await personById(deps.pool, signedIn(res).person.id);
    if (!person) throw new AppError('SESSION_EXPIRED', 'your session has ended; sign in again');
    return person;
  };
  const audit = (req: Request, res: Response, action: string, person: PersonRecord) =>
    access.audit.record(req, res, { action, target: { type: 'person', id: person.id } });
  const wrongCode = () => invalid('code', [{ path: '/code', message: 'is not the current code' }]);
  /**
   * The signed-in person's current password, checked under sign-in's throttle (a stolen
   * session guesses it as sign-in would). The reservation stays counted until `succeeded()`.
   */
  const proveSelf = async (req: Request, person: PersonRecord, currentPassword: string): Promise<Reservation> => {
    const reservation = await reserveAttempt(deps.throttle, person.email, clientAddress(req));
    if (!(await verifyPassword(person.password_hash, currentPassword))) {
      throw invalid('body', [{ path: '/current_password', message: 'is not your current password' }]);
    }
    return reservation;
  };

  app.post('/api/password-resets', async (req, res) => {
    const { email } = await stringFields(req, ['email'], [], 254);
    const person = await personByEmail(deps.pool, email);
    // 202 at once, whoever the email is: the mail goes out after the answer.
    res.status(202).json(ok({}));
    if (!person) return;
    try {
      const token = await createPasswordReset(deps.pool, person.id, deps.passwordResetTtlSeconds);
      if (token === undefined) return;
      const link = resetLink(deps.publicUrl, token);
      const sent = await deps.mailer.send(resetMail(person.email, link, deps.passwordResetTtlSeconds, token));
      if (sent.error !== undefined || sent.statusCode >= 300) throw new Error(sent.error ?? `SMTP ${sent.statusCode}`);
    } catch (err) {
      // Answered already: the person asks again.
      deps.logger.warn('password reset mail not sent', { person_id: person.id, err: String(err) });
    }
  });

  app.post('/api/password-resets/confirm', async (req, res) => {
    const { token, password } = await stringFields(req, ['token', 'password']);
    requireStrongPassword(password);
    const done = await confirmPasswordReset(deps.pool, token, await hashPassword(password));
    if (!done) throw new AppError('RESET_LINK_INVALID', 'this reset link is not valid (expired, or used already)');
    const person = (await personById(deps.pool, done.personId))!;
    await auditEverywhere(deps, req, res, person, {
      action: 'person.password_reset',
      target: { type: 'person', id: person.id },
      changes: { sessions_ended: { after: done.sessionsEnded } },
    });
    if (done.totpDisabled) {
      await auditEverywhere(deps, req, res, person, {
        action: 'person.totp_disable',
        target: { type: 'person', id: person.id },
        changes: { reason: { after: 'password_reset' } },
      });
    }
    res.json(ok({}));
  });

  app.put('/api/me/password', sessionOnly(access), async (req, res) => {
    const body = await stringFields(req, ['current_password', 'password']);
    const person = await me(res);
    const reservation = await proveSelf(req, person, body.current_password);
    await reservation.succeeded();
    requireStrongPassword(body.password);
    await setPasswordHash(deps.pool, person.id, await hashPassword(body.password));
    const ended = await endOtherSessions(deps.pool, person.id, signedIn(res).sessionHash);
    await access.audit.record(req, res, {
      action: 'person.password_change',
      target: { type: 'person', id: person.id },
      changes: { other_sessions_ended: { after: ended } },
    });
    res.json(ok({}));
  });

  app.post('/api/me/totp', sessionOnly(access), async (_req, res) => {
    const started = await deps.totp.start(await me(res));
    if (!started) {
      throw invalid('request', [{ path: '/', message: 'two-step sign-in is on already: turn it off first' }]);
    }
    sendPrivate(res, started);
  });

  app.post('/api/me/totp/enable', sessionOnly(access), async (req, res) => {
    const { code, current_password } = await totpFields(req);
    const person = await me(res);
    if (person.totp_enabled || !person.totp_sealed) {
      throw invalid('request', [{ path: '/', message: 'start with POST /api/me/totp (two-step sign-in is off)' }]);
    }
    // A stolen session must not enrol its own authenticator: the password too, and a wrong code counts.
    const reservation = await proveSelf(req, person, current_password);
    if (!(await deps.totp.accept(person, code.trim()))) throw wrongCode();
    await reservation.succeeded();
    await deps.totp.enable(person.id);
    await audit(req, res, 'person.totp_enable', person);
    res.json(ok({}));
  });

  app.delete('/api/me/totp', sessionOnly(access), async (req, res) => {
    const { code, current_password } = await totpFields(req);
    const person = await me(res);
    if (!person.totp_enabled) throw invalid('request', [{ path: '/', message: 'two-step sign-in is off' }]);
    const reservation = await proveSelf(req, person, current_password);
    if (!(await deps.totp.accept(person, code.trim()))) throw wrongCode();
    await reservation.succeeded();
    await deps.totp.disable(person.id);
    await audit(req, res, 'person.totp_disable', person);
    res.json(ok({}));
  });
}
