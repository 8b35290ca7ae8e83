import { ApiError, get, session } from './api.js';
import { channelForm } from './channel-form.js';
import { channelList, channelPage } from './channels.js';
import { h, show } from './dom.js';
import { escalationPolicies } from './escalation-policies.js';
import { eventsOverview } from './events.js';
import { monitorForm } from './monitor-form.js';
import { monitorList } from './monitor-list.js';
import { monitorPage } from './monitor-page.js';
import { statusPagesView } from './status-pages.js';

const main = document.getElementById('main')!;
const nav = document.getElementById('nav')!;
let leave: (() => void) | undefined;

function navigate(hash: string): void {
  if (location.hash === hash) void route();
  else location.hash = hash;
}

function signIn(message?: string): void {
  show(nav);
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
    { class: 'sign-in' },
    h('h1', {}, 'Sign in'),
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
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const key = input.value.trim();
    session.signIn(key);
    // One read proves the key before the console opens.
    get('/api/monitors?limit=1').then(
      () => navigate('#/'),
      (err: unknown) => {
        session.signOut();
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

function navigation(): void {
  const here = location.hash || '#/';
  const link = (href: string, label: string, active: boolean): HTMLElement =>
    h('a', { href, 'aria-current': active ? 'page' : false }, label);
  show(
    nav,
    link('#/', 'Monitors', here === '#/' || here.startsWith('#/monitors')),
    link('#/events', 'Events', here.startsWith('#/events')),
    link('#/status-pages', 'Status pages', here.startsWith('#/status-pages')),
    link('#/channels', 'Alert channels', here.startsWith('#/channels') || here.startsWith('#/escalation-policies')),
    h(
      'button',
      {
        type: 'button',
        id: 'sign-out',
        onclick: () => {
          session.signOut();
          navigate('#/sign-in');
        },
      },
      'Sign out',
    ),
  );
}

async function route(): Promise<void> {
  leave?.();
  leave = undefined;
  const hash = location.hash || '#/';
  if (!session.key() || hash === '#/sign-in') {
    signIn();
    return;
  }
  navigation();
  main.focus({ preventScroll: true });
  const parts = hash.slice(2).split('/');
  // Each route renders into a view of its own: a page still loading when the person moves
  // on (the list's monitors, a slow answer) finishes into a detached view, not over the next.
  const view = h('div', { class: 'view' });
  show(main, view);
  try {
    if (parts[0] === 'monitors' && parts[1] === 'new') await monitorForm(view, undefined, navigate);
    else if (parts[0] === 'monitors' && parts[1] && parts[2] === 'edit') await monitorForm(view, parts[1], navigate);
    else if (parts[0] === 'monitors' && parts[1]) {
      const stop = await monitorPage(view, parts[1], navigate);
      // Left while it loaded: its refreshes stop at once.
      if (view.isConnected) leave = stop;
      else stop();
    } else if (parts[0] === 'events') await eventsOverview(view);
    else if (parts[0] === 'status-pages') await statusPagesView(view);
    else if (parts[0] === 'channels' && parts[1] === 'new') await channelForm(view, undefined, navigate);
    else if (parts[0] === 'channels' && parts[1] && parts[2] === 'edit') await channelForm(view, parts[1], navigate);
    else if (parts[0] === 'channels' && parts[1]) await channelPage(view, parts[1], navigate);
    else if (parts[0] === 'channels') await channelList(view);
    else if (parts[0] === 'escalation-policies') await escalationPolicies(view, parts[1] || undefined, navigate);
    else await monitorList(view);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      session.signOut();
      signIn('Your key is no longer accepted; sign in again.');
    } else throw err;
  }
}

window.addEventListener('hashchange', () => void route());
void route();
