import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import type { Check, Monitor } from '@telemetry/contract';
import { sqlString, type ClickHouseClient } from '@telemetry/platform';
import { buildConsole, CHROMIUM, launchChromium, PageErrors, showPageIfFailed } from '../support/browser.js';
import {
  adminClickHouse,
  eventually,
  newKey,
  runConsumer,
  runQuery,
  runRunner,
  selectCount,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiClient } from '../support/api.js';
import { SIGN_IN_PASSWORD, SIGN_IN_STEPS, SignInSite } from '../support/sign-in-site.js';
import { tenantWithOwner } from '../support/tenants.js';

/**
 * Issue 45's "a browser check signs in to a small test page and asserts text, fails with a
 * screenshot the console shows when the page breaks", through the whole chain with real
 * parts: a check runner with Chromium checks a browser monitor against a loopback site, the
 * stream consumer stores the checks and the failure's PNG (check_screenshots) from Kafka in
 * ClickHouse, the query service serves them, and the console, in a second Chromium, signed
 * in as a person of the monitor's tenant, shows the failing check in the monitor's check
 * history with what failed and a thumbnail that loads the PNG.
 */
describe("a browser check's failure and its screenshot in the console (runner with Chromium, consumer, query service)", function () {
  this.timeout(180_000);
  const site = new SignInSite();
  const LOCATION = 'chain-east';
  const email = `${uid('chain')}@example.test`;
  const password = `correct horse ${uid('pw')}`;
  let query: Running;
  let consumer: Running;
  let runner: Running;
  let ch: ClickHouseClient;
  let browser: Browser | undefined;
  let page: Page | undefined;
  let key: string;
  let monitor: Monitor;
  const pageErrors = new PageErrors();

  const api = apiClient(
    () => query.url,
    () => key,
  );

  before(async () => {
    await site.start();
    // The runner and the query service may reach the site, and nothing else.
    const egress = { EGRESS_ALLOW: `127.0.0.1:${site.port}` };
    [query, consumer] = await Promise.all([runQuery(egress), runConsumer(), buildConsole()]);
    runner = await runRunner({
      ...egress,
      RUNNER_ID: uid('chain-runner'),
      RUNNER_GROUP_ID: uid('chain-runners'),
      WEBHOOK_GROUP_ID: uid('chain-webhooks'),
      RUNNER_LOCATION: LOCATION,
      RUNNER_CHROMIUM_PATH: CHROMIUM,
      RUNNER_BROWSER_CONCURRENCY: '1',
    });
    ch = adminClickHouse();
    const tenantId = await tenantWithOwner('chain', email, password);
    key = await newKey({
      tenantId,
      kind: 'api',
      name: 'chain',
      scopes: ['checks:read', 'monitors:read', 'monitors:write'],
    });
    monitor = await eventually('the key loaded and the monitor made', async () => {
      const r = await api<Monitor>('POST', '/api/monitors', {
        name: uid('Shop sign-in'),
        type: 'browser',
        url: `http://127.0.0.1:${site.port}/`,
        interval_seconds: 5,
        timeout_ms: 4900,
        failure_threshold: 1,
        locations: [LOCATION],
        variables: { password: SIGN_IN_PASSWORD },
        browser_steps: SIGN_IN_STEPS,
      });
      if (r.status === 401) return undefined;
      expect(r.status, JSON.stringify(r.body)).to.equal(201);
      return r.body.data;
    });
  });

  afterEach(async function () {
    await showPageIfFailed(this.currentTest, page);
  });

  after(async () => {
    await browser?.close();
    await Promise.all([runner?.stop(), consumer?.stop(), query?.stop()]);
    await ch?.close();
    await site.stop();
  });

  it('signs in and sees the welcome; when the page breaks, the console shows the failed check, what failed and its screenshot', async () => {
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    pageErrors.watch(page);
    // Signed in with the form, as console-access.int.test.ts does: a session cookie, no key.
    await page.goto(`${query.url}/`);
    await page.getByLabel('Email').first().fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Monitors' }).waitFor();
    await page.goto(`${query.url}/#/monitors/${monitor.id}`);

    // The runner's Chromium signed in: an up check, through Kafka, ClickHouse and the query service.
    const rows = page.locator('#checks tbody tr');
    await rows
      .filter({ has: page.locator('.badge.up') })
      .first()
      .waitFor({ timeout: 60_000 });
    expect(site.hits).to.include.members(['GET /', 'POST /login', 'GET /welcome']);

    site.broken = true;
    const since = Date.now();
    // The failed check as the API gives it (one after the break: under load, a slow welcome
    // can fail a check before it).
    const failed = await eventually(
      'a failed check with a screenshot',
      async () => {
        const r = await api<Check[]>('GET', `/api/monitors/${monitor.id}/checks?limit=20`);
        return r.body.data?.find(
          (c) => c.error === 'assertion_failed' && c.screenshot && Date.parse(c.created_at) >= since,
        );
      },
      60_000,
    );
    const shotPath = `/api/monitors/${monitor.id}/checks/${failed.id}/screenshot`;
    expect(failed).to.include({ status: 'down', screenshot: shotPath });
    expect(failed.detail).to.match(/^step 4 assert_text "Welcome, alice": "Welcome, alice" not found/);

    // The page refreshes itself: the failed check appears without a reload, and, with
    // failure_threshold 1, the monitor is down at once.
    const row = rows.filter({ has: page.locator(`img[src="${shotPath}"]`) });
    await row.waitFor({ timeout: 30_000 });
    await page.locator('h1 .badge', { hasText: 'down' }).waitFor({ timeout: 30_000 });
    // No more checks: the row stays among the last 20.
    expect((await api('PATCH', `/api/monitors/${monitor.id}`, { paused: true })).status).to.equal(200);
    expect(await row.locator('.badge.down').count()).to.equal(1);
    const detail = await row.locator('td.detail').innerText();
    expect(detail).to.equal(failed.detail);
    expect(detail).to.contain('Something went wrong');
    expect(detail).to.not.contain(SIGN_IN_PASSWORD);
    expect(await row.locator('a.screenshot').getAttribute('href')).to.equal(shotPath);

    // The thumbnail loaded (the session's cookie reached the route, the CSP allowed it).
    const img = row.locator('a.screenshot img');
    const size = await eventually('the screenshot shown', async () => {
      await img.scrollIntoViewIfNeeded();
      const s = await img.evaluate((i) => {
        const drawn = i as unknown as { complete: boolean; naturalWidth: number; naturalHeight: number };
        return drawn.complete ? { width: drawn.naturalWidth, height: drawn.naturalHeight } : undefined;
      });
      return s && s.width > 0 ? s : undefined;
    });

    // What it loaded is the PNG stored for the check: its bytes, as the session gets them.
    const stored = await selectCount(
      ch,
      `SELECT count() AS n FROM ${testStack().database}.check_screenshots WHERE check_id = ${sqlString(failed.id)}`,
    );
    expect(stored).to.equal(1);
    const res = await context.request.get(`${query.url}${shotPath}`);
    expect(res.status()).to.equal(200);
    expect(res.headers()['content-type']).to.equal('image/png');
    const png = await res.body();
    expect(png.subarray(0, 8).toString('hex')).to.equal('89504e470d0a1a0a');
    // IHDR: the width and height the page decoded.
    expect({ width: png.readUInt32BE(16), height: png.readUInt32BE(20) }).to.deep.equal(size);
    expect(pageErrors.errors).to.deep.equal([]);
  });
});
