import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { AuditEntry } from '@telemetry/contract';
import { personByEmail } from '@telemetry/store';
import { freePort } from '../../tools/devstack/ports.js';
import { apiClient } from '../support/api.js';
import { buildConsole, launchChromium, PageErrors, showPageIfFailed, signInWithPassword } from '../support/browser.js';
import {
  adminRegistry,
  eventually,
  newKey,
  runConsumer,
  runQuery,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { mailedInvitationLink } from '../support/mailpit.js';
import { tenantWithOwner } from '../support/tenants.js';
import { startOidcProvider, type OidcAccount, type TestOidcProvider } from '../support/oidc-provider.js';

/**
 * Issue 42's "Done when", in a real Chromium against the query service on the run's
 * PostgreSQL, Kafka and ClickHouse (the audit log through the stream consumer), Mailpit and a
 * real OpenID provider (oidc-provider on loopback): an owner invites a colleague as viewer;
 * the mail arrives; the colleague follows its link and signs in through the provider, sees
 * the monitors and cannot change them (disabled in the console, 403 from the API); the
 * owner makes them editor, and their change to a monitor shows in the audit log with before
 * and after; removing them ends their session on the next request. Repeated wrong passwords
 * are slowed without locking the account out, and a POST from a page on another port of
 * 127.0.0.1 is refused.
 */
describe('people in the console: invitation, single sign-on, roles, audit and removal (Chromium, oidc-provider, Mailpit)', function () {
  this.timeout(180_000);
  let query: Running;
  let consumer: Running;
  let op: TestOidcProvider;
  let browser: Browser;
  let owner: Page;
  let colleague: Page;
  let page: Page | undefined;
  let tenantId = '';
  let key = '';
  let monitorId = '';
  let colleagueId = '';
  const contexts: BrowserContext[] = [];
  const pageErrors = new PageErrors();
  const password = `correct horse ${uid('pw')}`;
  const ownerEmail = `owner-${uid('p')}@corp.example`;
  const colleagueEmail = `colleague-${uid('p')}@corp.example`;
  const accounts = new Map<string, OidcAccount>([
    ['colleague', { email: colleagueEmail, email_verified: true, name: 'The Colleague' }],
  ]);
  const monitorName = uid('Checkout');
  const renamed = `${monitorName} (renamed)`;

  const api = apiClient(
    () => query.url,
    () => key,
  );

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    page = await context.newPage();
    pageErrors.watch(page);
    return page;
  }

  /** The members page drawn anew (a hash the page is on already would not draw it again). */
  async function openMembers(p: Page): Promise<void> {
    await p.goto(`${query.url}/console/#/`);
    await p.getByRole('heading', { name: 'Monitors' }).waitFor();
    await p.locator('#nav-members').click();
    await p.locator('table#members').waitFor();
  }

  /** A request from the page (its cookie), with the session's CSRF token on a write. */
  async function fromPage(
    p: Page,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; code?: string }> {
    return p.evaluate(
      async ([m, url, b]) => {
        const s = (await (await fetch('/api/session')).json()) as { data?: { csrf_token: string } };
        const res = await fetch(url, {
          method: m,
          headers: { 'content-type': 'application/json', 'x-csrf-token': s.data?.csrf_token ?? '' },
          body: b === undefined ? undefined : JSON.stringify(b),
        });
        const env = (await res.json()) as { code?: string };
        return { status: res.status, code: env.code };
      },
      [method, path, body] as const,
    );
  }

  before(async () => {
    await buildConsole();
    tenantId = await tenantWithOwner('corp', ownerEmail, password);
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    op = await startOidcProvider({
      clients: [
        {
          clientId: 'console',
          clientSecret: 'a-client-secret-for-tests',
          redirectUris: [`${publicUrl}/auth/oidc/callback`],
        },
      ],
      accounts,
    });
    [query, consumer] = await Promise.all([
      runQuery({
        PORT: String(port),
        PUBLIC_URL: publicUrl,
        OIDC_ISSUER: op.issuer,
        OIDC_CLIENT_ID: 'console',
        OIDC_CLIENT_SECRET: 'a-client-secret-for-tests',
        OIDC_DISPLAY_NAME: 'Corp SSO',
        // The query service's own PostgreSQL role, as in production.
        DATABASE_URL: testStack().users.postgres!.query,
      }),
      runConsumer(),
    ]);
    key = await newKey({ tenantId, kind: 'api', name: 'people test', scopes: ['monitors:read', 'monitors:write'] });
    monitorId = (
      await eventually('key loaded', async () => {
        const r = await api<{ id: string }>('POST', '/api/monitors', {
          name: monitorName,
          type: 'http',
          url: 'http://127.0.0.1:9/',
          paused: true,
        });
        return r.status === 201 ? r.body.data : undefined;
      })
    ).id;
    browser = await launchChromium();
  });

  afterEach(async function () {
    await showPageIfFailed(this.currentTest, page);
  });

  after(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await Promise.all([query?.stop(), consumer?.stop(), op?.stop()]);
  });

  it('an owner invites a colleague as viewer, and the email arrives in Mailpit with the link', async () => {
    owner = await newPage();
    await signInWithPassword(owner, query.url, ownerEmail, password);
    await owner.locator('#nav-members').click();
    await owner.locator('form#invite-form').waitFor();
    await owner.locator('#invite-email').fill(colleagueEmail);
    await owner.locator('#invite-role').selectOption('viewer');
    await owner.getByRole('button', { name: 'Send the invitation' }).click();
    await owner.locator('#invitations tbody tr', { hasText: colleagueEmail }).waitFor();

    // Mailed: the page says so, and shows no link (only the invitee's mailbox has it).
    await owner
      .locator('#invitation-link-box', { hasText: `An invitation is on its way to ${colleagueEmail}` })
      .waitFor();
    expect(await owner.locator('#invitation-link').count()).to.equal(0);
    const link = await mailedInvitationLink(colleagueEmail);
    expect(link.startsWith(`${query.url}/console/#/invite/`)).to.equal(true);

    colleague = await newPage();
    await colleague.goto(link);
    await colleague.locator('#invitation', { hasText: colleagueEmail }).waitFor();
    expect(await colleague.locator('#invitation').innerText()).to.contain('viewer');
  });

  it('the colleague signs in through the OpenID provider and sees the monitors, but cannot change them', async () => {
    page = colleague;
    await colleague.locator('#sso-accept', { hasText: 'Corp SSO' }).click();
    // oidc-provider's login form (test/support/oidc-provider.ts), then its consent page.
    await colleague.locator('input[name="login"]').fill('colleague');
    await colleague.locator('input[name="password"]').fill('anything: the test provider does not check it');
    await colleague.locator('button[type="submit"]').click();
    await colleague.locator('input[name="prompt"][value="consent"]').waitFor({ state: 'attached' });
    await colleague.locator('button[type="submit"]').click();
    await colleague.getByRole('heading', { name: 'Monitors' }).waitFor();
    expect(colleague.url().startsWith(`${query.url}/console/`)).to.equal(true);
    await colleague.getByText(monitorName).first().waitFor();
    colleagueId = (await personByEmail(adminRegistry(), colleagueEmail))!.id;

    // Disabled in the console, with why.
    expect(await colleague.locator('#new-monitor').isDisabled()).to.equal(true);
    await colleague.goto(`${query.url}/console/#/monitors/${monitorId}`);
    await colleague.locator('#edit-monitor').waitFor();
    expect(await colleague.locator('#edit-monitor').isDisabled()).to.equal(true);
    expect(await colleague.locator('#edit-monitor').getAttribute('title')).to.equal(
      'Your role (viewer) cannot change monitors',
    );
    // And refused by the API, even with the session's CSRF token.
    const refused = await pageErrors.provoking(() =>
      fromPage(colleague, 'PATCH', `/api/monitors/${monitorId}`, { name: 'a viewer was here' }),
    );
    expect(refused).to.deep.equal({ status: 403, code: 'INSUFFICIENT_SCOPE' });
    expect((await api<{ name: string }>('GET', `/api/monitors/${monitorId}`)).body.data.name).to.equal(monitorName);
  });

  it('the owner makes them editor; their change to the monitor shows in the audit log with before and after', async () => {
    page = owner;
    await openMembers(owner);
    const row = owner.locator(`tr[data-member="${colleagueId}"]`);
    await row.waitFor();
    await row.locator('select.member-role').selectOption('editor');
    await eventually('the role change stored', async () => {
      const { rows } = await adminRegistry().query<{ role: string }>(
        'SELECT role FROM memberships WHERE tenant_id = $1 AND person_id = $2',
        [tenantId, colleagueId],
      );
      return rows[0]?.role === 'editor' ? true : undefined;
    });

    // The colleague's next request has the new role: no new sign-in.
    page = colleague;
    await colleague.goto(`${query.url}/console/#/`);
    await colleague.goto(`${query.url}/console/#/monitors/${monitorId}`);
    await colleague.locator('#edit-monitor:not([disabled])').waitFor();
    await colleague.locator('#edit-monitor').click();
    await colleague.locator('#f-name').fill(renamed);
    await colleague.getByRole('button', { name: 'Save' }).click();
    await eventually('the rename stored', async () =>
      (await api<{ name: string }>('GET', `/api/monitors/${monitorId}`)).body.data.name === renamed ? true : undefined,
    );

    // The owner finds it on the audit page: the colleague, the action, before and after.
    page = owner;
    await owner.goto(`${query.url}/console/#/audit`);
    await owner.locator('form#audit-filters').waitFor();
    const entry = owner.locator('#audit tbody tr', { hasText: 'monitor.update' }).filter({ hasText: colleagueEmail });
    await eventually(
      'the rename on the audit page',
      async () => {
        if ((await entry.count()) > 0) return true;
        await owner.reload();
        await owner.locator('form#audit-filters').waitFor();
        return undefined;
      },
      60_000,
    );
    const text = await entry.first().innerText();
    expect(text).to.contain(monitorName);
    expect(text).to.contain(renamed);
    // The same entry through the API: the fields, not just the text (a new key works within a second).
    const reader = await newKey({ tenantId, kind: 'api', name: 'audit reader', scopes: ['audit:read'] });
    const path = `/api/audit?action=monitor.update&target_id=${monitorId}`;
    const body = await eventually('the audit reader key loaded', async () => {
      const r = await api<AuditEntry[]>('GET', path, undefined, { key: reader });
      return r.status === 200 ? r.body : undefined;
    });
    const found = body.data.find((e) => e.actor.email === colleagueEmail);
    expect(found, JSON.stringify(body)).to.not.equal(undefined);
    expect(found!.actor).to.deep.include({ type: 'person', id: colleagueId });
    expect(found!.changes.name).to.deep.equal({ before: monitorName, after: renamed });
  });

  it('removing them ends their session on the next request', async () => {
    page = owner;
    await openMembers(owner);
    const row = owner.locator(`tr[data-member="${colleagueId}"]`);
    await row.waitFor();
    owner.once('dialog', (d) => void d.accept());
    await row.locator('button.member-remove').click();
    await row.waitFor({ state: 'detached' });

    page = colleague;
    const next = await pageErrors.provoking(() => fromPage(colleague, 'GET', '/api/monitors'));
    expect(next).to.deep.equal({ status: 401, code: 'SESSION_EXPIRED' });
    await pageErrors.provoking(async () => {
      await colleague.goto(`${query.url}/console/#/`);
      await colleague.locator('form#password-sign-in').waitFor();
    });
  });

  it('slows repeated wrong passwords without locking the account out', async () => {
    const p = await newPage();
    await p.goto(`${query.url}/console/`);
    await p.locator('form#password-sign-in').waitFor();
    await p.locator('#sign-in-email').fill(ownerEmail);
    // Wrong passwords until the wait shows (the pair of account and address allows 3).
    let throttled = '';
    await pageErrors.provoking(async () => {
      for (let i = 0; i < 8 && throttled === ''; i++) {
        await p.locator('#sign-in-password').fill(`wrong password ${i}`);
        await p.getByRole('button', { name: 'Sign in' }).click();
        const status = p.locator('#sign-in-status');
        await status.filter({ hasText: /wrong|Too many/ }).waitFor();
        const text = await status.innerText();
        if (text.includes('Too many failed sign-ins')) throttled = text;
        else await p.evaluate("document.getElementById('sign-in-status').textContent = ''");
      }
    });
    expect(throttled).to.match(/Too many failed sign-ins: try again in \d+ seconds?\./);
    // Not a lockout: once the wait is over, the right password signs in.
    await p.locator('#sign-in-password').fill(password);
    await eventually(
      'signed in after the wait',
      async () => {
        await pageErrors.provoking(async () => {
          await p.getByRole('button', { name: 'Sign in' }).click();
          await Promise.race([
            p.getByRole('heading', { name: 'Monitors' }).waitFor(),
            p.locator('#sign-in-status', { hasText: 'Too many' }).waitFor(),
          ]);
        });
        return (await p.getByRole('heading', { name: 'Monitors' }).count()) > 0 ? true : undefined;
      },
      30_000,
    );
  });

  it('refuses a POST from a page on another port of 127.0.0.1 (same site, another origin)', async () => {
    const target = new URL(query.url);
    const evilName = uid('forged');
    // A form the browser posts without a preflight, with the owner's SameSite=Lax cookie.
    const html = `<!doctype html><title>elsewhere</title>
      <form id="f" method="POST" action="${query.url}/api/monitors" enctype="text/plain">
        <input name='{"name":"${evilName}","type":"http","url":"http://127.0.0.1:9/","x":"' value='"}'>
      </form><script>document.getElementById('f').submit()</script>`;
    const server: Server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const elsewhere = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      expect(new URL(elsewhere).port).to.not.equal(target.port);
      page = owner;
      const answered = owner.waitForResponse(
        (r) => r.url() === `${query.url}/api/monitors` && r.request().method() === 'POST',
      );
      await pageErrors.provoking(async () => {
        await owner.goto(elsewhere);
        const res = await answered;
        // 403 CSRF_FAILED, not 401: the cookie was sent (same site) and still refused.
        expect(res.status()).to.equal(403);
        expect(((await res.json()) as { code: string }).code).to.equal('CSRF_FAILED');
      });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    const list = await api<{ name: string }[]>('GET', '/api/monitors?limit=100');
    expect(list.body.data.map((m) => m.name)).to.not.include(evilName);
    // No page threw, and no page asked for anything but loopback (a 4xx the browser logs,
    // like the favicon of the refused answer's page, is not an error of ours).
    expect(pageErrors.errors.filter((e) => !/the server responded with a status of 4\d\d/.test(e))).to.deep.equal([]);
  });
});
