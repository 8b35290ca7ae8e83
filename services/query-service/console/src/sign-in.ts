import type { SessionView } from '@telemetry/contract/access';
import { ApiError, call, probeKey, session } from './api.js';
import { h, show } from './dom.js';
import { field, onSubmit, statusLine, value } from './people-form.js';

/**
 * The sign-in pages (docs/console.md): #/sign-in (single sign-on, email and password with a
 * TOTP code when the account asks for one, a forgotten password) and #/sign-in/key (an API
 * key kept in this tab's sessionStorage). `?error=CODE` (a failed single sign-on) says the
 * code's meaning.
 *
 * Ids a test can find: #sign-in-message, #sso-sign-in, form#password-sign-in with
 * #sign-in-email, #sign-in-password, #sign-in-totp (shown on TOTP_REQUIRED) and
 * #sign-in-status; details#forgot with #reset-email and #reset-status; #use-api-key;
 * form#key-sign-in with #api-key and #key-error.
 */

export type Navigate = (hash: string) => void;

/** What a code a sign-in can end with means, in the person's words. */
export const SIGN_IN_ERRORS: Record<string, string> = {
  SIGN_IN_FAILED: 'The email or password is wrong.',
  OIDC_FAILED: 'Single sign-on did not complete (the attempt expired or the provider’s answer was refused): try again.',
  NOT_A_MEMBER: 'You are not a member of this tenant (or of any): ask an owner or admin for an invitation.',
  INVITATION_INVALID:
    'This invitation is no longer valid: it expired, was revoked or used, or was sent to another email. Ask for a new one.',
  SSO_NOT_CONFIGURED: 'Single sign-on is not set up here: sign in with your email and password.',
  SSO_UNAVAILABLE:
    'The sign-on provider did not answer: try again in a moment, or sign in with your email and password.',
  SESSION_EXPIRED: 'Your session has ended (idle too long, at its limit, or signed out elsewhere): sign in again.',
  MISSING_CREDENTIALS: 'You are signed out: sign in again.',
  RESET_LINK_INVALID: 'This reset link is no longer valid (expired or used): ask for a new one.',
};

/** GET /api/sso: the single sign-on button's label, or null when there is none. */
export async function ssoName(): Promise<string | null> {
  try {
    const sso = (await call<{ enabled: boolean; name: string }>('GET', '/api/sso', undefined, false)).data;
    return sso.enabled ? sso.name : null;
  } catch {
    // No single sign-on route (or the server is away): the password form still works.
    return null;
  }
}

/** A link to the identity provider; the console asks GET /api/session when it comes back. */
export function ssoLink(id: string, name: string, query: string): HTMLElement {
  return h(
    'a',
    { class: 'button primary', id, href: `/auth/oidc/start?${query}`, onclick: () => session.expect() },
    `Continue with ${name}`,
  );
}

/** Signed in: the session is kept and the console opens where the person was going. */
export function signedIn(view: SessionView, navigate: Navigate): void {
  session.set(view);
  navigate(location.hash.startsWith('#/sign-in') || !location.hash ? '#/' : location.hash);
}

/** #/sign-in: `message` (why the person is here) or the meaning of `?error=CODE`. */
export async function signInPage(main: HTMLElement, params: URLSearchParams, navigate: Navigate, message?: string) {
  const code = params.get('error');
  const said = message ?? (code ? (SIGN_IN_ERRORS[code] ?? `Sign-in failed (${code}).`) : '');
  const status = statusLine('sign-in-status');
  const totp = field(
    'sign-in-totp',
    'Authenticator code',
    { autocomplete: 'one-time-code', inputmode: 'numeric', maxlength: 10 },
    'The six digits your authenticator app shows for this account.',
  );
  totp.hidden = true;
  const form = h(
    'form',
    { id: 'password-sign-in', class: 'sign-in' },
    field('sign-in-email', 'Email', { type: 'email', autocomplete: 'username', required: true }),
    field('sign-in-password', 'Password', { type: 'password', autocomplete: 'current-password', required: true }),
    totp,
    status,
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
  );
  onSubmit(
    form,
    status,
    async () => {
      const body: Record<string, string> = {
        email: value(form, 'sign-in-email'),
        password: value(form, 'sign-in-password'),
      };
      if (!totp.hidden && value(form, 'sign-in-totp')) body.totp = value(form, 'sign-in-totp');
      const r = await call<SessionView>('POST', '/api/session/password', body, false);
      signedIn(r.data, navigate);
    },
    (err) => {
      if (err.code === 'TOTP_REQUIRED') {
        const again = !totp.hidden;
        totp.hidden = false;
        form.querySelector<HTMLInputElement>('#sign-in-totp')?.focus();
        return again
          ? 'That code was not accepted: enter the current one.'
          : 'Enter the code from your authenticator app.';
      }
      if (err.code === 'SIGN_IN_THROTTLED')
        return `Too many failed sign-ins: try again in ${waitText(err.retryAfter)}.`;
      return SIGN_IN_ERRORS[err.code] ?? null;
    },
  );
  const sso = await ssoName();
  show(
    main,
    h(
      'div',
      { class: 'sign-in-page' },
      h('h1', {}, 'Sign in'),
      h('p', { id: 'sign-in-message', class: said ? 'error' : 'muted', role: 'alert' }, said),
      sso ? h('p', {}, ssoLink('sso-sign-in', sso, 'return_to=/console/')) : null,
      sso ? h('p', { class: 'muted' }, 'or with your email and password:') : null,
      form,
      forgotPassword(),
      h('p', {}, h('a', { id: 'use-api-key', href: '#/sign-in/key' }, 'Use an API key instead')),
    ),
  );
  if (!sso) form.querySelector<HTMLInputElement>('#sign-in-email')?.focus();
}

/** "3 minutes", "45 seconds": how long SIGN_IN_THROTTLED asks to wait. */
function waitText(seconds: number | null): string {
  if (seconds === null) return 'a moment';
  if (seconds < 90) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  return `${Math.ceil(seconds / 60)} minutes`;
}

/** "Forgot your password?": always the same answer, whether the account exists or not. */
function forgotPassword(): HTMLElement {
  const status = statusLine('reset-status');
  const form = h(
    'form',
    { id: 'reset-request' },
    field('reset-email', 'Email', { type: 'email', autocomplete: 'username', required: true }),
    status,
    h('button', { type: 'submit' }, 'Send a reset link'),
  );
  onSubmit(form, status, async () => {
    await call('POST', '/api/password-resets', { email: value(form, 'reset-email') }, false);
    show(status, h('p', {}, 'If the account exists, a link to choose a new password is on its way to that email.'));
  });
  return h('details', { id: 'forgot' }, h('summary', {}, 'Forgot your password?'), form);
}

/** #/sign-in/key: an API key (ak_…), proved by one read, kept in this tab's sessionStorage. */
export function keySignIn(main: HTMLElement, navigate: Navigate, message?: string): void {
  const error = h('p', { class: 'field-error', id: 'key-error', role: 'alert' }, message ?? '');
  const input = h('input', {
    id: 'api-key',
    name: 'key',
    type: 'password',
    autocomplete: 'off',
    required: true,
    'aria-describedby': 'key-help key-error',
  });
  const form = h(
    'form',
    { class: 'sign-in', id: 'key-sign-in' },
    h('h1', {}, 'Sign in with an API key'),
    h('label', { for: 'api-key' }, 'API key'),
    input,
    h(
      'p',
      { id: 'key-help', class: 'muted' },
      'Use an API key (ak_…) with the monitors:read, monitors:write, checks:read and events:read scopes. ',
      'It is kept in this tab’s sessionStorage only: it is gone when you close the tab or sign out, and never sent anywhere but this server.',
    ),
    error,
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
    h('p', {}, h('a', { href: '#/sign-in' }, 'Sign in with email and password instead')),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    probeKey(input.value.trim()).then(
      () => navigate(location.hash.startsWith('#/sign-in') || !location.hash ? '#/' : location.hash),
      (err: unknown) => {
        error.textContent =
          err instanceof ApiError && err.status === 401
            ? 'This key was not accepted: it is unknown, revoked or expired.'
            : err instanceof Error
              ? err.message
              : String(err);
        input.focus();
      },
    );
  });
  show(main, form);
  input.focus();
}
