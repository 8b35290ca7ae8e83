import { SCOPES, SCOPE_DESCRIPTIONS, type MemberView, type Scope } from '@telemetry/contract/access';
import { call, get, session } from './api.js';
import { failure, h, loadView, scroller, show, table, time } from './dom.js';
import { guard, guardForm, roleNote } from './guard.js';
import { field, onSubmit, shownOnce, statusLine, value } from './people-form.js';

/**
 * #/keys (docs/console.md): the tenant's API and telemetry keys (never their secrets), a
 * create form whose scopes are those the person holds (the API refuses any other), the new
 * key shown once with a copy button, and revocation after a confirmation.
 *
 * Ids a test can find: table#keys with tr[data-key=ID] (its cells .key-ip-storage and .key-revoked, its
 * button.key-revoke); form#key-form with #key-kind, #key-name, input[name=key-scope]
 * checkboxes (value = the scope), #key-expiry and #key-status; the new key in #new-key
 * (with #new-key-copy); #keys-notice.
 */

export interface KeyView {
  id: string;
  kind: 'api' | 'telemetry';
  name: string;
  scopes: string[];
  created_at: string;
  created_by: string | null;
  expires_at: string | null;
  revoked: boolean;
  /** What a telemetry key's events keep of the client's address (docs/enrichment.md). */
  ip_storage?: 'full' | 'truncated' | 'none';
}

const DAY = 86_400;
const EXPIRIES: [string, number | null][] = [
  ['Never', null],
  ['In 1 day', DAY],
  ['In 7 days', 7 * DAY],
  ['In 30 days', 30 * DAY],
  ['In 90 days', 90 * DAY],
  ['In a year', 365 * DAY],
];

export async function keysPage(main: HTMLElement, made?: { name: string; key: string }): Promise<void> {
  const title = 'Keys';
  const loaded = await loadView(
    main,
    title,
    'Loading the keys…',
    () =>
      Promise.all([
        get<KeyView[]>('/api/keys'),
        // Who made a key, by email for a person who may read the members (else their id).
        session.mode() === 'session' && session.can('members:read')
          ? get<MemberView[]>('/api/members').catch((): MemberView[] => [])
          : [],
      ]),
    () => void keysPage(main),
  );
  if (!loaded) return;
  const [keys, members] = loaded;
  const emails = new Map(members.map((m) => [m.id, m.email]));
  const notice = h('div', { id: 'keys-notice', role: 'status' });
  const revoke = (k: KeyView): void => {
    if (!confirm(`Revoke the key “${k.name}”? Whatever uses it is refused from now on. This cannot be undone.`)) return;
    call('DELETE', `/api/keys/${k.id}`).then(
      () =>
        void keysPage(main).then(() => show(main.querySelector('#keys-notice') ?? notice, `“${k.name}” is revoked.`)),
      (err: unknown) => show(notice, failure(err)),
    );
  };
  const list = table(
    { id: 'keys' },
    ['Name', 'Kind', 'Scopes', 'Addresses kept', 'Created by', 'Created', 'Expires', 'Revoked', ''],
    keys.map((k) => [
      h('td', {}, k.name),
      h('td', {}, k.kind),
      h('td', {}, k.kind === 'api' ? k.scopes.join(', ') || '—' : '—'),
      h('td', { class: 'key-ip-storage' }, k.kind === 'telemetry' ? (k.ip_storage ?? 'truncated') : '—'),
      h('td', {}, k.created_by ? (emails.get(k.created_by) ?? k.created_by) : '—'),
      h('td', {}, time(k.created_at)),
      h('td', {}, k.expires_at ? time(k.expires_at) : 'never'),
      h('td', { class: 'key-revoked' }, k.revoked ? 'revoked' : 'no'),
      h(
        'td',
        {},
        k.revoked
          ? null
          : guard(
              'keys:write',
              h('button', { type: 'button', class: 'danger key-revoke', onclick: () => revoke(k) }, `Revoke ${k.name}`),
            ),
      ),
    ]),
  );
  list.querySelectorAll('tbody tr').forEach((tr, i) => tr.setAttribute('data-key', keys[i]!.id));

  // A person gives a key only scopes their role holds; with an API key, any (the API judges).
  const mine: Scope[] = SCOPES.filter((s) => session.mode() === 'key' || session.view()?.scopes.includes(s));
  const scopes = h(
    'fieldset',
    { id: 'key-scopes' },
    h('legend', {}, 'Scopes (API keys; telemetry keys only send events)'),
    mine.map((s) =>
      h(
        'label',
        { class: 'check' },
        h('input', { type: 'checkbox', name: 'key-scope', value: s }),
        ' ',
        h('code', {}, s),
        ` ${SCOPE_DESCRIPTIONS[s]}`,
      ),
    ),
  );
  const status = statusLine('key-status');
  const kind = h(
    'select',
    { id: 'key-kind', name: 'key-kind' },
    h('option', { value: 'api' }, 'API key (reads and changes through the API)'),
    h('option', { value: 'telemetry' }, 'Telemetry key (sends events)'),
  );
  kind.addEventListener('change', () => (scopes.hidden = kind.value !== 'api'));
  const form = h(
    'form',
    { id: 'key-form' },
    h('div', { class: 'field' }, h('label', { for: 'key-kind' }, 'Kind'), kind),
    field(
      'key-name',
      'Name',
      { required: true, maxlength: 200, autocomplete: 'off' },
      'What uses it: “deploy script”.',
    ),
    scopes,
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'key-expiry' }, 'Expires'),
      h(
        'select',
        { id: 'key-expiry', name: 'key-expiry' },
        EXPIRIES.map(([label, s]) => h('option', { value: s === null ? '' : String(s) }, label)),
      ),
    ),
    status,
    h('button', { type: 'submit', class: 'primary' }, 'Create the key'),
  );
  onSubmit(form, status, async () => {
    const body: Record<string, unknown> = { kind: kind.value, name: value(form, 'key-name') };
    if (kind.value === 'api')
      body.scopes = [...form.querySelectorAll<HTMLInputElement>('input[name="key-scope"]:checked')].map((c) => c.value);
    const expiry = value(form, 'key-expiry');
    if (expiry) body.expires_in = Number(expiry);
    const r = await call<KeyView & { key: string }>('POST', '/api/keys', body);
    await keysPage(main, { name: r.data.name, key: r.data.key });
  });

  show(
    main,
    h('h1', {}, title),
    roleNote('keys:write'),
    made ? shownOnce('new-key', `The new key “${made.name}”`, made.key) : null,
    notice,
    keys.length === 0 ? h('p', { class: 'empty' }, 'No keys yet.') : scroller('Keys', list),
    h('h2', {}, 'New key'),
    guardForm('keys:write', form),
  );
}
