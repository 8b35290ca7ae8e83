import type { MemberView, SessionView } from '@telemetry/contract/access';
import { call, get, session } from './api.js';
import { h, show, time } from './dom.js';
import { field, onSubmit, statusLine, value } from './people-form.js';
import type { Navigate } from './sign-in.js';

/**
 * #/account (docs/console.md): who is signed in and where, the tenant switcher (when the
 * person belongs to several), a new password, TOTP set-up and removal, and signing out here
 * or everywhere.
 *
 * Ids a test can find: #account-person, form#tenant-switch with #tenant-select;
 * form#password-change with #current-password, #new-password and #password-status;
 * button#totp-setup, #totp-secret, #totp-url, form#totp-enable with #totp-enable-code and
 * #totp-enable-password, form#totp-disable with #totp-disable-code and #totp-disable-password;
 * button#account-sign-out and
 * button#sign-out-everywhere.
 */

/** Ends the session here (or every session of the person) and shows the sign-in page. */
export async function signOut(navigate: Navigate, everywhere = false): Promise<void> {
  const key = session.mode() === 'key';
  if (!key) {
    // Signed out here whatever the server answers (it may have ended the session already).
    await (everywhere ? call('POST', '/api/session/sign-out-everywhere') : call('DELETE', '/api/session')).catch(
      () => undefined,
    );
  }
  session.signOut();
  navigate(key ? '#/sign-in/key' : '#/sign-in');
}

export async function accountPage(main: HTMLElement, navigate: Navigate): Promise<void> {
  const view = session.view();
  if (session.mode() === 'key' || !view) {
    show(
      main,
      h('h1', {}, 'Account'),
      h(
        'p',
        {},
        'You are signed in with an API key: the account page is for people signed in with a password or single sign-on.',
      ),
    );
    return;
  }
  // Whether TOTP is on is on the member list (members:read, which every role holds).
  const me = await get<MemberView[]>('/api/members').then(
    (list) => list.find((m) => m.id === view.person.id),
    () => undefined,
  );
  show(
    main,
    h('h1', {}, 'Account'),
    h(
      'p',
      { id: 'account-person' },
      h('strong', {}, view.person.name || view.person.email),
      ` (${view.person.email}), ${view.role} of `,
      h('strong', {}, view.tenant.name),
      '. This session ends at ',
      time(view.expires_at),
      ' at the latest.',
    ),
    view.tenants.length > 1 ? tenantSwitch(view, navigate) : null,
    h('h2', {}, 'Password'),
    passwordChange(),
    h('h2', {}, 'Authenticator (TOTP)'),
    totp(me),
    h('h2', {}, 'Sign out'),
    h(
      'p',
      { class: 'actions' },
      h('button', { type: 'button', id: 'account-sign-out', onclick: () => void signOut(navigate) }, 'Sign out'),
      ' ',
      h(
        'button',
        { type: 'button', id: 'sign-out-everywhere', class: 'danger', onclick: () => void signOut(navigate, true) },
        'Sign out everywhere',
      ),
    ),
  );
}

function tenantSwitch(view: SessionView, navigate: Navigate): HTMLElement {
  const status = statusLine('tenant-status');
  const form = h(
    'form',
    { id: 'tenant-switch' },
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'tenant-select' }, 'Tenant'),
      h(
        'select',
        { id: 'tenant-select' },
        view.tenants.map((t) =>
          h('option', { value: t.id, selected: t.id === view.tenant.id }, `${t.name} (${t.role})`),
        ),
      ),
    ),
    status,
    h('button', { type: 'submit' }, 'Switch'),
  );
  onSubmit(form, status, async () => {
    session.set(
      (await call<SessionView>('POST', '/api/session/tenant', { tenant_id: value(form, 'tenant-select') })).data,
    );
    navigate('#/');
  });
  return form;
}

function passwordChange(): HTMLElement {
  const status = statusLine('password-status');
  const form = h(
    'form',
    { id: 'password-change' },
    field('current-password', 'Current password', {
      type: 'password',
      autocomplete: 'current-password',
      required: true,
    }),
    field(
      'new-password',
      'New password',
      { type: 'password', autocomplete: 'new-password', required: true },
      'At least 12 characters, not a common one.',
    ),
    status,
    h('button', { type: 'submit' }, 'Change the password'),
  );
  onSubmit(form, status, async () => {
    await call('PUT', '/api/me/password', {
      current_password: value(form, 'current-password'),
      password: value(form, 'new-password'),
    });
    form.reset();
    show(status, 'Your password is changed.');
  });
  return form;
}

function totp(me: MemberView | undefined): HTMLElement {
  const box = h('div', { id: 'totp' });
  const codeForm = (id: string, label: string, path: string, method: string, done: string): HTMLElement => {
    const status = statusLine(`${id}-status`);
    const form = h(
      'form',
      { id },
      field(`${id}-code`, 'Code from the app', { autocomplete: 'one-time-code', inputmode: 'numeric', required: true }),
      // The password too: a session left open (or stolen) cannot change how its owner signs in.
      field(`${id}-password`, 'Current password', {
        type: 'password',
        autocomplete: 'current-password',
        required: true,
      }),
      status,
      h('button', { type: 'submit' }, label),
    );
    onSubmit(form, status, async () => {
      await call(method, path, { code: value(form, `${id}-code`), current_password: value(form, `${id}-password`) });
      show(box, h('p', { role: 'status' }, done));
    });
    return form;
  };
  const setup = h('button', { type: 'button', id: 'totp-setup' }, 'Set up an authenticator');
  setup.addEventListener('click', () => {
    call<{ secret: string; otpauth_url: string }>('POST', '/api/me/totp').then(
      (r) =>
        show(
          box,
          h(
            'p',
            {},
            'Add this account to your authenticator app (paste the secret, or open the otpauth link), then enter the code it shows.',
          ),
          h('p', {}, 'Secret: ', h('code', { id: 'totp-secret' }, r.data.secret)),
          h('p', {}, 'Link: ', h('code', { id: 'totp-url' }, r.data.otpauth_url)),
          codeForm(
            'totp-enable',
            'Turn on',
            '/api/me/totp/enable',
            'POST',
            'Sign-in now asks for a code from the app.',
          ),
        ),
      (err: unknown) =>
        show(box, h('p', { class: 'error', role: 'alert' }, err instanceof Error ? err.message : String(err))),
    );
  });
  const off = codeForm('totp-disable', 'Turn off', '/api/me/totp', 'DELETE', 'Sign-in no longer asks for a code.');
  show(
    box,
    me?.totp === true
      ? [h('p', {}, 'Sign-in asks for a code from your authenticator app.'), off]
      : me?.totp === false
        ? [h('p', {}, 'Sign-in asks for your password only.'), setup]
        : [setup, h('p', { class: 'muted' }, 'Or, if it is on:'), off],
  );
  return box;
}
