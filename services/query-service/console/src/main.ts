import { ApiError, refreshSession, session } from './api.js';
import { accountPage, signOut } from './account.js';
import { auditPage } from './audit.js';
import { channelForm } from './channel-form.js';
import { channelList, channelPage } from './channels.js';
import { failure, h, show } from './dom.js';
import { escalationPolicies } from './escalation-policies.js';
import { eventsOverview } from './events.js';
import { invitePage, resetPage } from './invitation.js';
import { keysPage } from './keys.js';
import { membersPage } from './members.js';
import { monitorForm } from './monitor-form.js';
import { monitorList } from './monitor-list.js';
import { monitorPage } from './monitor-page.js';
import { keySignIn, SIGN_IN_ERRORS, signInPage } from './sign-in.js';
import { statusPageAdmin } from './status-page-admin.js';
import { statusPagesView } from './status-pages.js';

/**
 * The console's router. Ids a test can find in the navigation: #nav-members, #nav-keys and
 * #nav-audit (shown only with members:read, keys:read and audit:read), #nav-account
 * (signed in as a person), button#sign-out.
 */

const main = document.getElementById('main')!;
const nav = document.getElementById('nav')!;
let leave: (() => void) | undefined;

function navigate(hash: string): void {
  if (location.hash === hash) void route();
  else location.hash = hash;
}

/** Back to the sign-in page (the one the person used) with why. */
function signedOut(err: ApiError): void {
  // A page refreshing itself (a monitor's) stops asking.
  leave?.();
  leave = undefined;
  const key = session.mode() === 'key';
  session.signOut();
  show(nav);
  if (key) keySignIn(main, navigate, 'Your key is no longer accepted; sign in again.');
  else
    void signInPage(
      main,
      new URLSearchParams(),
      navigate,
      SIGN_IN_ERRORS[err.code] ?? SIGN_IN_ERRORS.MISSING_CREDENTIALS,
    );
}
session.onUnauthorized(signedOut);

function navigation(): void {
  const here = location.hash || '#/';
  const link = (href: string, label: string, active: boolean, id?: string): HTMLElement =>
    h('a', { href, id: id ?? false, 'aria-current': active ? 'page' : false }, label);
  show(
    nav,
    link('#/', 'Monitors', here === '#/' || here.startsWith('#/monitors')),
    link('#/events', 'Events', here.startsWith('#/events')),
    link('#/status-pages', 'Status pages', here.startsWith('#/status-pages')),
    link('#/channels', 'Alert channels', here.startsWith('#/channels') || here.startsWith('#/escalation-policies')),
    session.can('members:read') && link('#/members', 'Members', here.startsWith('#/members'), 'nav-members'),
    session.can('keys:read') && link('#/keys', 'Keys', here.startsWith('#/keys'), 'nav-keys'),
    session.can('audit:read') && link('#/audit', 'Audit', here.startsWith('#/audit'), 'nav-audit'),
    session.mode() === 'session' && link('#/account', 'Account', here.startsWith('#/account'), 'nav-account'),
    h('button', { type: 'button', id: 'sign-out', onclick: () => void signOut(navigate) }, 'Sign out'),
  );
}

/** Whether someone is signed in: an API key, or a session GET /api/session confirms. */
async function signedIn(): Promise<boolean> {
  if (session.mode() === 'key') return true;
  // No sign-in since the last sign-out here: no request (a first visit makes no 401).
  if (!session.view() && !session.maybe()) return false;
  try {
    // Every page asks again: a role changed or a removal shows on the next page the person
    // opens, as the server applies it on their next request.
    await refreshSession();
    return true;
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 401) {
      // The server did not answer: the page opens with what was known (its calls say why they fail).
      if (session.view()) return true;
      throw err;
    }
    session.signOut();
    return false;
  }
}

async function route(): Promise<void> {
  leave?.();
  leave = undefined;
  const hash = location.hash || '#/';
  const [path = '', query = ''] = hash.slice(2).split('?');
  const parts = path.split('/');
  // The pages one reaches signed out.
  if (parts[0] === 'sign-in') {
    show(nav);
    if (parts[1] === 'key') keySignIn(main, navigate);
    else await signInPage(main, new URLSearchParams(query), navigate);
    return;
  }
  if (parts[0] === 'invite' && parts[1]) {
    show(nav);
    await invitePage(main, parts[1], navigate);
    return;
  }
  if (parts[0] === 'reset' && parts[1]) {
    show(nav);
    resetPage(main, parts[1]);
    return;
  }
  try {
    if (!(await signedIn())) {
      show(nav);
      await signInPage(main, new URLSearchParams(), navigate);
      return;
    }
  } catch (err) {
    show(
      main,
      failure(err, () => void route()),
    );
    return;
  }
  navigation();
  main.focus({ preventScroll: true });
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
    else if (parts[0] === 'status-pages' && parts[1]) await statusPageAdmin(view, parts[1]);
    else if (parts[0] === 'status-pages') await statusPagesView(view);
    else if (parts[0] === 'channels' && parts[1] === 'new') await channelForm(view, undefined, navigate);
    else if (parts[0] === 'channels' && parts[1] && parts[2] === 'edit') await channelForm(view, parts[1], navigate);
    else if (parts[0] === 'channels' && parts[1]) await channelPage(view, parts[1], navigate);
    else if (parts[0] === 'channels') await channelList(view);
    else if (parts[0] === 'escalation-policies') await escalationPolicies(view, parts[1] || undefined, navigate);
    else if (parts[0] === 'members') await membersPage(view);
    else if (parts[0] === 'keys') await keysPage(view);
    else if (parts[0] === 'audit') auditPage(view);
    else if (parts[0] === 'account') await accountPage(view, navigate);
    else await monitorList(view);
  } catch (err) {
    // A 401 already showed the sign-in page (signedOut).
    if (!(err instanceof ApiError && err.status === 401)) throw err;
  }
}

window.addEventListener('hashchange', () => void route());
void route();
