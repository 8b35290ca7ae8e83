import type { Role, SessionView } from '@telemetry/contract/access';
import { call, session } from './api.js';
import { h, loadView, show } from './dom.js';
import { field, onSubmit, statusLine, value } from './people-form.js';
import { SIGN_IN_ERRORS, ssoLink, ssoName, type Navigate } from './sign-in.js';

/**
 * The pages an emailed link opens (docs/console.md): #/invite/TOKEN (join a tenant) and
 * #/reset/TOKEN (choose a new password). WEAK_PASSWORD's message says what is wrong.
 *
 * Ids a test can find: #invitation (the tenant, email and role), #sso-accept,
 * form#accept-invitation with #invite-name, #invite-password and #invite-status;
 * form#reset-password with #reset-password-new and #reset-password-status.
 */

interface Preview {
  tenant: { id: string; name: string };
  email: string;
  role: Role;
  expires_at: string;
  sso: boolean;
  has_account: boolean;
}

const explain = (err: { code: string }): string | null =>
  err.code === 'WEAK_PASSWORD' ? null : (SIGN_IN_ERRORS[err.code] ?? null);

/** #/invite/TOKEN */
export async function invitePage(main: HTMLElement, token: string, navigate: Navigate): Promise<void> {
  const title = 'Join a tenant';
  const found = await loadView(
    main,
    title,
    'Reading the invitation…',
    async () => {
      const preview = await call<Preview>(
        'GET',
        `/api/invitations/preview?token=${encodeURIComponent(token)}`,
        undefined,
        false,
      );
      return { preview: preview.data, sso: preview.data.sso ? await ssoName() : null };
    },
    () => void invitePage(main, token, navigate),
  );
  if (!found) return;
  const { preview, sso } = found;
  const about = h(
    'p',
    { id: 'invitation' },
    'You are invited to ',
    h('strong', { 'data-tenant': preview.tenant.id }, preview.tenant.name),
    ' as ',
    h('strong', {}, preview.role),
    ', with the email ',
    h('strong', {}, preview.email),
    '.',
  );
  if (sso) {
    show(
      main,
      h('h1', {}, title),
      about,
      h('p', {}, ssoLink('sso-accept', sso, `invitation=${encodeURIComponent(token)}`)),
    );
    return;
  }
  const status = statusLine('invite-status');
  const form = h(
    'form',
    { id: 'accept-invitation' },
    preview.has_account ? null : field('invite-name', 'Your name', { autocomplete: 'name', required: true }),
    field(
      'invite-password',
      preview.has_account ? 'Your password' : 'Choose a password',
      { type: 'password', autocomplete: preview.has_account ? 'current-password' : 'new-password', required: true },
      preview.has_account ? 'The password you sign in with already.' : 'At least 12 characters, not a common one.',
    ),
    status,
    h('button', { type: 'submit', class: 'primary' }, 'Accept the invitation'),
  );
  onSubmit(
    form,
    status,
    async () => {
      const body: Record<string, string> = { token, password: value(form, 'invite-password') };
      if (!preview.has_account) body.name = value(form, 'invite-name');
      session.set((await call<SessionView>('POST', '/api/invitations/accept', body, false)).data);
      navigate('#/');
    },
    explain,
  );
  show(main, h('h1', {}, title), about, form);
}

/** #/reset/TOKEN */
export function resetPage(main: HTMLElement, token: string): void {
  const status = statusLine('reset-password-status');
  const form = h(
    'form',
    { id: 'reset-password' },
    field(
      'reset-password-new',
      'New password',
      { type: 'password', autocomplete: 'new-password', required: true },
      'At least 12 characters, not a common one. Every session of yours ends: sign in again after.',
    ),
    status,
    h('button', { type: 'submit', class: 'primary' }, 'Set the password'),
  );
  onSubmit(
    form,
    status,
    async () => {
      await call('POST', '/api/password-resets/confirm', { token, password: value(form, 'reset-password-new') }, false);
      show(
        main,
        h('h1', {}, 'Password changed'),
        h(
          'p',
          { role: 'status' },
          'Your password is changed and every session of yours ended. ',
          h('a', { href: '#/sign-in' }, 'Sign in'),
          '.',
        ),
      );
    },
    explain,
  );
  show(main, h('h1', {}, 'Choose a new password'), form);
}
