import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ROLE_SCOPES, type Role } from '@telemetry/contract';
import { addMembership, createTenant, ensurePerson, hashPassword, totpCode } from '@telemetry/store';
import { apiClient } from '../support/api.js';
import { mailedInvitationLink, runMailpit } from '../support/mailpit.js';
import {
  buildConsole,
  expectAccessible,
  launchChromium,
  PageErrors,
  photograph,
  showPageIfFailed,
} from '../support/browser.js';
import { adminRegistry, eventually, newKey, runConsumer, runQuery, uid, type Running } from '../support/fixtures.js';

/**
 * The console as people use it (issue 42), in a real Chromium against the query service on
 * PostgreSQL, Kafka and ClickHouse: signing in with email and password, controls a role
 * cannot use shown disabled with why (a viewer) and usable (an editor), an invitation
 * accepted from its link, TOTP turned on from the account page, a password reset from the
 * mailed link (the open page of the person whose sessions it ended goes to sign-in), the
 * keys page making and revoking a key, and the audit page listing what was done. The people
 * are made in the registry as its owner (ensurePerson, addMembership, hashPassword).
 */
describe('the console for people: sign-in, roles, keys and the audit log (Chromium)', function () {
  this.timeout(180_000);
  let query: Running;
  let consumer: Running;
  let browser: Browser;
  let tenantId: string;
  let key: string;
  let monitorId: string;
  let page: Page | undefined;
  /** The editor's page, left on a monitor (it refreshes itself) when their password is reset. */
  let editorPage: Page;
  const contexts: BrowserContext[] = [];
  const pageErrors = new PageErrors();
  const password = `correct horse ${uid('pw')}`;
  const people: Record<'viewer' | 'editor' | 'admin' | 'totp', string> = {
    viewer: '',
    editor: '',
    admin: '',
    totp: '',
  };

  const api = apiClient(
    () => query.url,
    () => key,
  );

  /** A page of a new browser context (no cookie, no storage), signed in as `who` with the form. */
  async function signIn(who: keyof typeof people): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    page = await context.newPage();
    pageErrors.watch(page);
    await page.goto(`${query.url}/`);
    await page.getByLabel('Email').first().fill(people[who]);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Monitors' }).waitFor();
    return page;
  }

  before(async () => {
    await buildConsole();
    [query, consumer] = await Promise.all([runQuery(), runConsumer()]);
    const db = adminRegistry();
    tenantId = (await createTenant(db, uid('access'))).tenant_id;
    const hash = await hashPassword(password);
    const roles: [keyof typeof people, Role][] = [
      ['viewer', 'viewer'],
      ['editor', 'editor'],
      ['admin', 'admin'],
      ['totp', 'viewer'],
    ];
    for (const [who, role] of roles) {
      const email = `${who}-${uid('p')}@example.test`;
      const { person } = await ensurePerson(db, { email, name: `The ${who}`, passwordHash: hash });
      await addMembership(db, { tenantId, personId: person.id, role, createdBy: 'test' });
      people[who] = email;
    }
    key = await newKey({ tenantId, kind: 'api', name: 'access test', scopes: ['monitors:read', 'monitors:write'] });
    const made = await eventually('key loaded', async () => {
      const r = await api<{ id: string }>('POST', '/api/monitors', {
        name: uid('Shop'),
        type: 'http',
        url: 'http://127.0.0.1:9/',
        paused: true,
      });
      return r.status === 201 ? r.body.data : undefined;
    });
    monitorId = made.id;
    browser = await launchChromium();
  });

  afterEach(async function () {
    await showPageIfFailed(this.currentTest, page);
  });

  after(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await Promise.all([query?.stop(), consumer?.stop()]);
  });

  it('refuses a wrong password with a message, and signs in with the right one (no API key stored)', async () => {
    const context = await browser.newContext();
    contexts.push(context);
    page = await context.newPage();
    pageErrors.watch(page);
    await page.goto(`${query.url}/`);
    await page.locator('form#password-sign-in').waitFor();
    await expectAccessible(page, 'sign-in');
    await photograph(page, 'sign-in-password');
    // A single sign-on that failed comes back with its code: the page says what it means.
    await page.goto(`${query.url}/#/sign-in?error=NOT_A_MEMBER`);
    await page.locator('#sign-in-message', { hasText: 'You are not a member of this tenant' }).waitFor();
    await page.getByLabel('Email').first().fill(people.viewer);
    await page.getByLabel('Password').fill('not the password at all');
    await pageErrors.provoking(async () => {
      await page!.getByRole('button', { name: 'Sign in' }).click();
      await page!.locator('#sign-in-status', { hasText: 'The email or password is wrong.' }).waitFor();
    });
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Monitors' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).to.equal(0);
    const cookies = await context.cookies();
    expect(cookies.map((c) => c.httpOnly)).to.include(true);
  });

  it('shows a viewer the write controls disabled with why, and no Keys or Audit in the navigation', async () => {
    const p = await signIn('viewer');
    const why = 'Your role (viewer) cannot change monitors';
    const newMonitor = p.locator('#new-monitor');
    expect(await newMonitor.isDisabled()).to.equal(true);
    expect(await newMonitor.getAttribute('title')).to.equal(why);
    await p.locator('.role-note[data-role-note="monitors:write"]', { hasText: why }).waitFor();
    expect(await p.locator('#nav-members').count()).to.equal(1);
    expect(await p.locator('#nav-keys').count()).to.equal(0);
    expect(await p.locator('#nav-audit').count()).to.equal(0);
    await expectAccessible(p, 'monitors, as a viewer');

    await p.goto(`${query.url}/#/monitors/${monitorId}`);
    await p.locator('#edit-monitor').waitFor();
    for (const id of ['#edit-monitor', '#pause-monitor', '#delete-monitor']) {
      expect(await p.locator(id).isDisabled(), id).to.equal(true);
      expect(await p.locator(id).getAttribute('data-needs-scope'), id).to.equal('monitors:write');
    }
    await p.goto(`${query.url}/#/status-pages`);
    expect(await p.locator('#publish-status-page').isDisabled()).to.equal(true);
    await p.goto(`${query.url}/#/channels`);
    await p.locator('#new-channel').waitFor();
    expect(await p.locator('#new-channel').isDisabled()).to.equal(true);
    expect(await p.locator('#new-channel').getAttribute('title')).to.equal(
      'Your role (viewer) cannot change alert channels or escalation policies',
    );
    await p.goto(`${query.url}/#/members`);
    await p.locator('table#members').waitFor();
    expect(await p.locator('#invite-form button[type="submit"]').isDisabled()).to.equal(true);
  });

  it('gives an editor the same controls enabled', async () => {
    const p = await signIn('editor');
    editorPage = p;
    expect(await p.locator('#new-monitor').isDisabled()).to.equal(false);
    expect(await p.locator('.role-note').count()).to.equal(0);
    await p.goto(`${query.url}/#/monitors/${monitorId}`);
    await p.locator('#edit-monitor').waitFor();
    for (const id of ['#edit-monitor', '#pause-monitor', '#delete-monitor'])
      expect(await p.locator(id).isDisabled(), id).to.equal(false);
    await p.goto(`${query.url}/#/channels`);
    await p.locator('#new-channel').waitFor();
    expect(await p.locator('#new-channel').isDisabled()).to.equal(false);
    expect(await p.locator('#nav-keys').count()).to.equal(0);
    // A write of the editor's session carries the CSRF token: pausing works.
    await p.goto(`${query.url}/#/monitors/${monitorId}`);
    await p.getByRole('button', { name: 'Resume' }).click();
    await p.getByRole('button', { name: 'Pause' }).waitFor();
    expect((await api<{ paused: boolean }>('GET', `/api/monitors/${monitorId}`)).body.data.paused).to.equal(false);
  });

  it('lets an admin invite someone, who joins from the link (a weak password refused with why) and signs out everywhere', async () => {
    const p = await signIn('admin');
    await p.locator('#nav-members').click();
    await p.locator('table#members').waitFor();
    await expectAccessible(p, 'members');
    await photograph(p, 'members');
    const email = `new-${uid('p')}@example.test`;
    await p.locator('#invite-email').fill(email);
    await p.locator('#invite-role').selectOption('editor');
    await p.getByRole('button', { name: 'Send the invitation' }).click();
    await p.locator('#invitation-link-box', { hasText: `An invitation is on its way to ${email}` }).waitFor();
    await p.locator('#invitations tbody tr', { hasText: email }).waitFor();
    // Mailed: the admin never sees the link; it is in the invitee's mailbox alone.
    expect(await p.locator('#invitation-link').count()).to.equal(0);
    const link = await mailedInvitationLink(email);
    // The link as mailed (PUBLIC_URL/console/#/invite/…), opened on this run's query service.
    const mailed = new URL(link);
    expect(mailed.pathname).to.equal('/console/');
    expect(mailed.hash).to.match(/^#\/invite\/./);

    const context = await browser.newContext();
    contexts.push(context);
    const q = await context.newPage();
    pageErrors.watch(q);
    await q.goto(`${query.url}${mailed.pathname}${mailed.hash}`);
    await q.locator('#invitation', { hasText: email }).waitFor();
    expect(await q.locator('#invitation').innerText()).to.contain('editor');
    await expectAccessible(q, 'invitation');
    await q.getByLabel('Your name').fill('New Person');
    await q.getByLabel('Choose a password').fill('too short');
    await pageErrors.provoking(async () => {
      await q.getByRole('button', { name: 'Accept the invitation' }).click();
      await q.locator('#invite-status', { hasText: 'WEAK_PASSWORD' }).waitFor();
    });
    expect(await q.locator('#invite-status').innerText()).to.contain('12 characters');
    await q.getByLabel('Choose a password').fill(password);
    await q.getByRole('button', { name: 'Accept the invitation' }).click();
    await q.getByRole('heading', { name: 'Monitors' }).waitFor();
    expect(await q.locator('#new-monitor').isDisabled(), 'an editor may make monitors').to.equal(false);

    await q.locator('#nav-account').click();
    await q.locator('#account-person', { hasText: email }).waitFor();
    const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    await q.locator('#sign-out-everywhere').click();
    await q.locator('form#password-sign-in').waitFor();
    const after = await fetch(`${query.url}/api/session`, { headers: { cookie } });
    expect(after.status, 'the ended session is refused').to.equal(401);
  });

  it('turns on TOTP on the account page; sign-in then asks for a code', async () => {
    const p = await signIn('totp');
    await p.locator('#nav-account').click();
    await p.locator('#account-person', { hasText: people.totp }).waitFor();
    await expectAccessible(p, 'account');
    await photograph(p, 'account');
    await p.locator('#totp-setup').click();
    const secret = await p.locator('#totp-secret').innerText();
    expect(await p.locator('#totp-url').innerText()).to.match(/^otpauth:\/\/totp\//);
    await p.locator('#totp-enable-code').fill(totpCode(secret));
    // The current password too: a session left open cannot enrol another authenticator.
    await p.locator('#totp-enable-password').fill(password);
    await p.getByRole('button', { name: 'Turn on' }).click();
    await p.locator('#totp', { hasText: 'Sign-in now asks for a code' }).waitFor();
    await p.locator('#account-sign-out').click();
    await p.locator('form#password-sign-in').waitFor();

    await p.getByLabel('Email').first().fill(people.totp);
    await p.getByLabel('Password').fill(password);
    await pageErrors.provoking(async () => {
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.locator('#sign-in-status', { hasText: 'Enter the code from your authenticator app.' }).waitFor();
    });
    // The step after the one that turned it on (each step signs in once; one step either side is accepted).
    await p.getByLabel('Authenticator code').fill(totpCode(secret, Date.now() + 30_000));
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('heading', { name: 'Monitors' }).waitFor();
  });

  it('sends a reset link for a forgotten password, and the mailed link sets a new one', async () => {
    const context = await browser.newContext();
    contexts.push(context);
    const q = await context.newPage();
    pageErrors.watch(q);
    await q.goto(`${query.url}/`);
    await q.getByText('Forgot your password?').click();
    await q.locator('#reset-email').fill(people.editor);
    await q.getByRole('button', { name: 'Send a reset link' }).click();
    await q.locator('#reset-status', { hasText: 'If the account exists' }).waitFor();
    const [mail] = await runMailpit().waitFor(`to:${people.editor}`);
    const link = /https?:\/\/[^\s/]+(\/console\/#\/reset\/[A-Za-z0-9_-]+)/.exec(mail!.Text);
    expect(link, mail!.Text).to.not.equal(null);
    await q.goto(`${query.url}${link![1]}`);
    await q.getByLabel('New password').fill('password');
    await pageErrors.provoking(async () => {
      await q.getByRole('button', { name: 'Set the password' }).click();
      await q.locator('#reset-password-status', { hasText: 'WEAK_PASSWORD' }).waitFor();
    });
    const fresh = `${password} again`;
    await q.getByLabel('New password').fill(fresh);
    await pageErrors.provoking(async () => {
      await q.getByRole('button', { name: 'Set the password' }).click();
      await q.getByRole('heading', { name: 'Password changed' }).waitFor();
      // Every session of the editor ended: their page still open (a monitor, refreshing) goes to sign-in, saying why.
      await editorPage.locator('#sign-in-message', { hasText: 'sign in again' }).waitFor();
    });
    await q.getByRole('link', { name: 'Sign in' }).click();
    await q.getByLabel('Email').first().fill(people.editor);
    await q.getByLabel('Password').fill(fresh);
    await q.getByRole('button', { name: 'Sign in' }).click();
    await q.getByRole('heading', { name: 'Monitors' }).waitFor();
  });

  it('lets an admin make a key (shown once), use it, and revoke it', async () => {
    const p = await signIn('admin');
    await p.locator('#nav-keys').click();
    await p.locator('form#key-form').waitFor();
    await expectAccessible(p, 'keys');
    const name = uid('deploy');
    await p.getByLabel('Name', { exact: true }).fill(name);
    await p.locator('input[name="key-scope"][value="monitors:read"]').check();
    // The person's own scopes are offered (an admin's).
    expect(
      await Promise.all((await p.locator('input[name="key-scope"]').all()).map((box) => box.getAttribute('value'))),
    ).to.have.members([...ROLE_SCOPES.admin]);
    await p.getByRole('button', { name: 'Create the key' }).click();
    const made = await p.locator('#new-key').inputValue();
    expect(made).to.match(/^ak_/);
    // Every replica learns a new key from the change feed within a second.
    await eventually('the new key accepted', async () =>
      (await api('GET', '/api/monitors?limit=1', undefined, { key: made })).status === 200 ? true : undefined,
    );
    const row = p.locator('#keys tbody tr', { hasText: name });
    await row.waitFor();
    await photograph(p, 'keys');

    p.once('dialog', (d) => void d.accept());
    await row.locator('button.key-revoke').click();
    await p.locator('#keys tbody tr', { hasText: name }).locator('.key-revoked', { hasText: 'revoked' }).waitFor();
    expect(await p.locator('#new-key').count(), 'the key is not shown again').to.equal(0);
    await eventually('the revoked key refused', async () =>
      (await api('GET', '/api/monitors?limit=1', undefined, { key: made })).status === 401 ? true : undefined,
    );
  });

  it('lists the key’s creation on the audit page', async () => {
    const p = page!;
    await p.locator('#nav-audit').click();
    await p.locator('form#audit-filters').waitFor();
    await p.getByLabel('Action').fill('key.create');
    await eventually(
      'key.create in the audit table',
      async () => {
        await p.getByRole('button', { name: 'Show' }).click();
        await p.locator('.view .loading').waitFor({ state: 'detached' });
        return (await p.locator('#audit td.audit-action', { hasText: 'key.create' }).count()) > 0 ? true : undefined;
      },
      60_000,
    );
    expect(await p.locator('#audit tbody tr', { hasText: 'key.create' }).first().innerText()).to.contain(people.admin);
    await expectAccessible(p, 'audit');
    await photograph(p, 'audit');
    expect(pageErrors.errors).to.deep.equal([]);
  });
});
