import { expect } from 'chai';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createTenant } from '@telemetry/store';
import {
  eventually,
  newKey,
  runConsumer,
  runGateway,
  runQuery,
  runRunner,
  uid,
  type Running,
  adminRegistry,
} from '../support/fixtures.js';
import { apiClient } from '../support/api.js';
import { TestTarget } from '../support/target.js';
import {
  buildConsole,
  expectAccessible,
  launchChromium,
  PageErrors,
  photograph,
  showPageIfFailed,
} from '../support/browser.js';

/**
 * Records where each chart draws its text (page script: this file has no DOM types). uPlot
 * draws its tick labels on its canvas with fillText, which no DOM box shows, so each call's
 * text box (measured as it is drawn, through the context's transform) is kept on the canvas
 * as `textBoxes` until the canvas is cleared whole.
 */
const RECORD_CANVAS_TEXT = `(() => {
  const proto = CanvasRenderingContext2D.prototype;
  const fillText = proto.fillText;
  const clearRect = proto.clearRect;
  const boxes = (c) => (c.textBoxes ??= []);
  proto.fillText = function (text, x, y, max) {
    const m = this.measureText(text);
    const t = this.getTransform();
    boxes(this.canvas).push({
      text: String(text),
      left: t.a * (x - m.actualBoundingBoxLeft) + t.e,
      right: t.a * (x + m.actualBoundingBoxRight) + t.e,
      top: t.d * (y - m.actualBoundingBoxAscent) + t.f,
      bottom: t.d * (y + m.actualBoundingBoxDescent) + t.f,
    });
    return max === undefined ? fillText.call(this, text, x, y) : fillText.call(this, text, x, y, max);
  };
  proto.clearRect = function (x, y, w, h) {
    if (x <= 0 && y <= 0 && x + w >= this.canvas.width && y + h >= this.canvas.height) boxes(this.canvas).length = 0;
    return clearRect.call(this, x, y, w, h);
  };
})()`;

interface ChartCanvas {
  /** The canvas's pixel size, the right edge of its box and the page's width (CSS px). */
  width: number;
  height: number;
  right: number;
  page: number;
  labels: { text: string; left: number; right: number; top: number; bottom: number }[];
}

/** Every chart canvas of the page (page script), as a ChartCanvas. */
const CHART_CANVASES = `[...document.querySelectorAll('figure.chart canvas')].map((c) => ({
  width: c.width,
  height: c.height,
  right: c.getBoundingClientRect().right,
  page: document.documentElement.clientWidth,
  labels: c.textBoxes ?? [],
}))`;

/**
 * The console and the public status pages in a real Chromium (Debian's), against the real
 * query service, stream consumer, check runner, Kafka and ClickHouse, and a local target.
 * With CONSOLE_SCREENSHOTS=dir (npm run docs:screenshots) every page is also photographed
 * at 1280 and 360 px wide.
 */
describe('console and status pages in Chromium (real Kafka, ClickHouse and runner)', function () {
  this.timeout(120_000);
  const target = new TestTarget();
  let query: Running;
  let consumer: Running;
  let gateway: Running;
  let runner: Running;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let key: string;
  let monitorId = '';
  const name = `Shop API ${uid('m')}`;
  const slug = uid('shop').toLowerCase();
  const secretHeader = 'X-Secret-Token';
  const secretValue = `s3cr3t-${uid('v')}`;
  /** Console errors and page errors, by page URL; a step that provokes an HTTP error on purpose pauses this. */
  const pageErrors = new PageErrors();

  /**
   * At 1280 and 360 px wide, every chart of the page has drawn its tick labels, each wholly
   * inside its canvas (a y-axis too narrow for "3.5 ms" cut it to ".5 ms"), and no canvas is
   * wider than the page.
   */
  async function chartsFit(p: Page, what: string): Promise<void> {
    for (const width of [1280, 360]) {
      await p.setViewportSize({ width, height: 900 });
      let last = '';
      // Charts redraw to their new width: read them once two looks agree.
      const drawn = await eventually(`${what}: charts drawn at ${width} px`, async () => {
        const now = await p.evaluate<ChartCanvas[]>(CHART_CANVASES);
        const json = JSON.stringify(now);
        const stable = json === last && now.length > 0 && now.every((c) => c.labels.length > 0);
        last = json;
        return stable ? now : undefined;
      });
      for (const [i, c] of drawn.entries()) {
        const out = c.labels.filter((l) => l.left < 0 || l.top < 0 || l.right > c.width || l.bottom > c.height);
        expect(
          out.map((l) => `"${l.text}" at ${l.left.toFixed(1)}..${l.right.toFixed(1)} of 0..${c.width}`),
          `${what}, chart ${i + 1} at ${width} px: tick labels outside the canvas`,
        ).to.deep.equal([]);
        expect(c.right, `${what}, chart ${i + 1} at ${width} px: wider than the page`).to.be.at.most(c.page);
      }
    }
    await p.setViewportSize({ width: 1280, height: 900 });
  }

  const api = apiClient(
    () => query.url,
    () => key,
  );

  before(async () => {
    await buildConsole();
    await target.start();
    [query, consumer, gateway] = await Promise.all([runQuery(), runConsumer(), runGateway()]);
    runner = await runRunner({ RUNNER_ID: uid('runner') });
    // A tenant of its own: what the pages show is this test's alone, whatever else the run wrote.
    const tenantId = (await createTenant(adminRegistry(), uid('console'))).tenant_id;
    key = await newKey({
      tenantId,
      kind: 'api',
      name: 'console',
      scopes: ['checks:read', 'monitors:read', 'monitors:write', 'events:read'],
    });
    const telemetry = await newKey({ tenantId, kind: 'telemetry', name: 'console events' });
    await eventually('keys loaded', async () =>
      (await api('GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
    );
    // Events for the overview: two sources, three categories.
    await eventually('events accepted', async () => {
      const r = await fetch(`${gateway.url}/api/telemetry/events`, {
        method: 'POST',
        headers: { 'x-access-key': telemetry, 'content-type': 'application/json' },
        body: JSON.stringify({
          events: [
            ...Array.from({ length: 12 }, (_, i) => ({
              source: 'shop-web',
              category: i % 3 ? 'page_view' : 'add_to_cart',
              payload: { i },
            })),
            ...Array.from({ length: 5 }, (_, i) => ({ source: 'checkout', category: 'purchase', payload: { i } })),
          ],
        }),
      });
      return r.status === 202 || r.status === 200 ? true : undefined;
    });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addInitScript(RECORD_CANVAS_TEXT);
    page = await context.newPage();
    pageErrors.watch(page);
  });

  afterEach(async function () {
    await showPageIfFailed(this.currentTest, page);
  });

  after(async () => {
    await browser?.close();
    await runner?.stop();
    await Promise.all([query?.stop(), consumer?.stop(), gateway?.stop()]);
    await target.stop();
  });

  it('signs in (a wrong key is refused with a message), creates a monitor with the API’s validation next to the field, and sees its first checks in the chart', async () => {
    await page.goto(`${query.url}/`);
    // A person signs in with email and password by default; the API key is one click away.
    await page.getByRole('link', { name: 'Use an API key instead' }).click();
    await page.getByLabel('API key').waitFor();
    await expectAccessible(page, 'sign-in');
    await photograph(page, 'sign-in');
    pageErrors.expectingHttpErrors = true;
    await page.getByLabel('API key').fill('ak_0000000000000000_' + '0'.repeat(64));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#key-error', { hasText: 'not accepted' }).waitFor();
    pageErrors.expectingHttpErrors = false;
    expect(await page.evaluate(() => sessionStorage.length)).to.equal(0);

    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Monitors' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('telemetry.apiKey'))).to.equal(key);

    await page.getByRole('link', { name: 'New monitor' }).click();
    await page.getByLabel('Name (required)').fill(name);
    await page.getByLabel('URL', { exact: true }).fill('ftp://example.invalid/');
    await page.getByLabel('Interval (seconds)').fill('1');
    await page.getByLabel('Failing checks before down').fill('2');
    await page.getByLabel('Request headers').fill(`${secretHeader}: ${secretValue}`);
    pageErrors.expectingHttpErrors = true;
    await page.getByRole('button', { name: 'Create monitor' }).click();
    const urlError = page.locator('#e-url');
    await urlError.filter({ hasText: /\S/ }).waitFor();
    pageErrors.expectingHttpErrors = false;
    expect(await page.getByLabel('URL', { exact: true }).getAttribute('aria-invalid')).to.not.equal(null);
    await expectAccessible(page, 'new monitor form with an error');
    await photograph(page, 'monitor-form');

    await page.getByLabel('URL', { exact: true }).fill(target.url('/site'));
    await page.getByRole('button', { name: 'Create monitor' }).click();
    await page.waitForURL(/#\/monitors\/mon_[0-9a-f]{16}$/);
    monitorId = /mon_[0-9a-f]{16}/.exec(page.url())![0];
    await page.getByRole('heading', { name: new RegExp(name) }).waitFor();
    // The first checks reach the chart (p50 and p95 per minute) and the table of checks.
    await eventually(
      'checks in the chart',
      async () =>
        Number(
          await page
            .locator('figure.chart')
            .first()
            .getAttribute('data-points')
            .catch(() => '0'),
        ) > 0
          ? true
          : undefined,
      60_000,
    );
    expect(await page.locator('figure.chart canvas').count()).to.be.greaterThan(0);
    await page.locator('#checks tbody tr').first().waitFor();
    expect(await page.locator('#checks tbody tr').first().innerText()).to.contain('up');
  });

  it('shows the incident opening on the timeline when the target fails, and resolved when it recovers', async () => {
    target.set('/site', 'error');
    await page.locator('.timeline li.open').waitFor({ timeout: 60_000 });
    expect(await page.locator('.timeline li.open').innerText()).to.contain('HTTP 500');
    await page.locator('h1 .badge', { hasText: 'down' }).waitFor({ timeout: 30_000 });
    await expectAccessible(page, 'monitor page, down');
    await photograph(page, 'monitor-down');
    target.set('/site', 'ok');
    await page.locator('.timeline li.resolved').waitFor({ timeout: 60_000 });
    expect(await page.locator('.timeline li.open').count()).to.equal(0);
    await page.locator('h1 .badge', { hasText: 'up' }).waitFor();
    await chartsFit(page, 'monitor page');
    await photograph(page, 'monitor');
  });

  it('lists monitors with uptime, sortable and filterable, and shows events per minute', async () => {
    await page.getByRole('link', { name: 'Monitors', exact: true }).click();
    const row = page.locator(`tr[data-monitor="${monitorId}"]`);
    await row.waitFor();
    await eventually('uptime shown', async () => ((await row.innerText()).includes('%') ? true : undefined));
    await page.getByLabel('Filter by name').fill('no monitor has this name');
    expect(await row.count()).to.equal(0);
    await page.getByLabel('Filter by name').fill(name.slice(-8));
    await row.waitFor();
    await page.getByRole('button', { name: 'Name' }).click();
    expect(await page.locator('th[aria-sort="descending"]').count()).to.equal(1);
    await expectAccessible(page, 'monitor list');
    await page.getByLabel('Filter by name').fill('');
    await photograph(page, 'monitors');

    await page.getByRole('link', { name: 'Events' }).click();
    await eventually(
      'events in the overview',
      async () => {
        // Choosing the range fetches again; read the page once that answer is drawn, not the
        // "Loading" placeholder in between.
        await page.getByLabel('Range').selectOption('1h');
        await page.locator('main .loading').waitFor({ state: 'detached', timeout: 15_000 });
        const text = await page.locator('main').innerText();
        return text.includes('shop-web') && text.includes('purchase') ? true : undefined;
      },
      30_000,
    );
    expect(Number(await page.locator('figure.chart').getAttribute('data-points'))).to.be.greaterThan(0);
    await expectAccessible(page, 'events');
    await chartsFit(page, 'events');
    await photograph(page, 'events');
  });

  it('publishes a status page that anyone can open without a key, showing no URL or header of the monitor', async () => {
    await page.getByRole('link', { name: 'Status pages' }).click();
    await page.getByLabel('Slug (the page is /status/slug)').fill(slug);
    await page.getByLabel('Title').fill('Shop status');
    await page.getByLabel(name).check();
    await expectAccessible(page, 'status pages');
    await page.getByRole('button', { name: 'Publish page' }).click();
    await page.locator(`li[data-slug="${slug}"]`).waitFor();
    await photograph(page, 'status-pages');

    // A new context: no sessionStorage, no key.
    const visitor = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const p = await visitor.newPage();
      pageErrors.watch(p);
      await p.goto(`${query.url}/status/${slug}`);
      await p.getByRole('heading', { name: 'Shop status' }).waitFor();
      await p.getByRole('heading', { name: new RegExp(name) }).waitFor();
      expect(await p.locator('.bars.days li').count()).to.equal(90);
      const html = await p.content();
      const host = new URL(target.url('/')).host;
      // A page's monitor ids are public (its badges' paths and per-monitor subscriptions name
      // them, docs/console.md); nothing else of a monitor is.
      for (const secret of [host, '/site', secretHeader, secretValue, 'HTTP 500']) {
        expect(html, `the public page shows ${secret}`).to.not.contain(secret);
      }
      const json = await (await fetch(`${query.url}/api/status/${slug}`)).text();
      expect(json).to.contain(monitorId);
      for (const secret of [host, '/site', secretHeader, secretValue]) {
        expect(json, `the public JSON shows ${secret}`).to.not.contain(secret);
      }
      await expectAccessible(p, 'public status page');
      await photograph(p, 'status-page');
    } finally {
      await visitor.close();
    }
  });

  it('says which stored secrets a save dropped when the URL moves to another host, and keeps them on the same host', async () => {
    const edit = async (): Promise<void> => {
      await page.goto(`${query.url}/#/monitors/${monitorId}/edit`);
      await page.getByRole('heading', { name: 'Edit monitor' }).waitFor();
      await page.getByLabel('URL', { exact: true }).waitFor();
    };
    // Another path on the same host: the stored header stays.
    await edit();
    expect(await page.getByLabel('Request headers').inputValue()).to.equal(`${secretHeader}: ****`);
    await page.getByLabel('URL', { exact: true }).fill(target.url('/site?v=1'));
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(/#\/monitors\/mon_[0-9a-f]{16}$/);
    expect((await api('GET', `/api/monitors/${monitorId}`)).body.data).to.deep.include({
      headers: { [secretHeader]: '****' },
    });
    // Another host (localhost for 127.0.0.1): the form stays, names what was dropped, shows no header.
    await edit();
    await page.getByLabel('URL', { exact: true }).fill(target.url('/site').replace('127.0.0.1', 'localhost'));
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('#form-error', { hasText: `headers.${secretHeader}` }).waitFor();
    expect(await page.getByLabel('Request headers').inputValue()).to.equal('');
    expect((await api('GET', `/api/monitors/${monitorId}`)).body.data).to.deep.include({ headers: {} });
    await expectAccessible(page, 'monitor form after dropped secrets');
    await page.getByLabel('URL', { exact: true }).fill(target.url('/site'));
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(/#\/monitors\/mon_[0-9a-f]{16}$/);
  });

  it('pauses, resumes and deletes the monitor', async () => {
    await page.goto(`${query.url}/#/monitors/${monitorId}`);
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.locator('h1 .badge', { hasText: 'paused' }).waitFor();
    expect((await api<{ paused: boolean }>('GET', `/api/monitors/${monitorId}`)).body.data.paused).to.equal(true);
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    expect((await api<{ paused: boolean }>('GET', `/api/monitors/${monitorId}`)).body.data.paused).to.equal(false);
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { name: 'Monitors' }).waitFor();
    await eventually('monitor gone from the list', async () =>
      (await page.locator(`tr[data-monitor="${monitorId}"]`).count()) === 0 ? true : undefined,
    );
    expect((await api('GET', `/api/monitors/${monitorId}`)).status).to.equal(404);
  });

  it('signs out, and no page logged an error to the console', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('telemetry.apiKey'))).to.equal(null);
    expect(pageErrors.errors).to.deep.equal([]);
  });
});
