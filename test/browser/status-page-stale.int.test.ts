import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { eventually, newKey, ownUser, runQuery, testStack, uid, type Running } from '../support/fixtures.js';
import { buildConsole, launchChromium } from '../support/browser.js';
import { TcpGate } from '../support/tcp-gate.js';

/**
 * The public status page in a real Chromium while its query service cannot read ClickHouse
 * (its connections cut by a loopback gate; ClickHouse itself untouched): the last good page,
 * with a visible note of its age.
 */
describe('a stale public status page in Chromium (real ClickHouse)', function () {
  this.timeout(120_000);
  let gate: TcpGate;
  let query: Running;
  let browser: Browser;

  before(async () => {
    await buildConsole();
    gate = TcpGate.for(testStack().clickhouseUrl);
    await gate.start();
    query = await runQuery({
      ...ownUser('query-service'),
      CLICKHOUSE_URL: gate.rewrite(testStack().clickhouseUrl),
      STATUS_PAGE_CACHE_SECONDS: '1',
    });
    browser = await launchChromium();
  });

  after(async () => {
    gate?.reopen();
    await browser?.close();
    await query?.stop();
    await gate?.stop();
  });

  it('shows the last good statuses and says how old they are', async () => {
    const key = await newKey({ kind: 'api', name: 'stale page', scopes: ['monitors:read', 'monitors:write'] });
    const call = async (method: string, path: string, body: unknown): Promise<{ data: { id: string } }> => {
      const r = await fetch(`${query.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(r.status, `${method} ${path}`).to.equal(201);
      return (await r.json()) as { data: { id: string } };
    };
    await eventually('key loaded', async () =>
      (await fetch(`${query.url}/api/monitors`, { headers: { authorization: `Bearer ${key}` } })).status === 200
        ? true
        : undefined,
    );
    const monitor = await call('POST', '/api/monitors', {
      name: 'Checkout',
      url: 'https://shop.example.com/health',
      paused: true,
    });
    const slug = uid('stale').toLowerCase();
    await call('POST', '/api/status-pages', { slug, title: 'Shop status', monitor_ids: [monitor.data.id] });
    expect((await fetch(`${query.url}/api/status/${slug}`)).status).to.equal(200);

    gate.shut();
    await eventually('a stale answer', async () =>
      (await fetch(`${query.url}/api/status/${slug}`)).headers.get('x-status-page-stale') === '1' ? true : undefined,
    );
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${query.url}/status/${slug}`);
    await page.getByRole('heading', { name: 'Shop status' }).waitFor();
    const note = page.getByRole('alert');
    await note.waitFor();
    expect(await note.isVisible()).to.equal(true);
    expect(await note.innerText()).to.match(
      /^These statuses are from .+: the current ones cannot be read right now\.$/,
    );
    await page.getByRole('heading', { name: /Checkout/ }).waitFor();
  });
});
