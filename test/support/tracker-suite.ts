import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTenant } from '@telemetry/store';
import { adminRegistry, newKey, runConsumer, runGateway, uid, type Running } from './fixtures.js';
import { launchChromium } from './browser.js';
import { RecordingProxy } from './recording-proxy.js';
import { bundleTrackers, confinedContext, Refuser, SCRIPT_PATHS, TrackerSite, type Traffic } from './tracker-pages.js';

/**
 * What a file of the trackers' browser tests shares (test/browser/compat-*.int.test.ts): one
 * Chromium, one gateway and one consumer, the site serving the bundled SDKs, a tenant and
 * its key, and a key only another origin may use (of a tenant of its own, which must stay
 * empty). Each test gets a recording proxy of its own in front of the gateway (a closed
 * page's late beacon never counts in the next test); after each, no request left the site
 * and the gateway, no script but the site's bundles was loaded, and no page logged an error.
 */
export class TrackerStack {
  gateway!: Running;
  consumer!: Running;
  /** What the browser sends to the gateway, recorded on the way (test/support/recording-proxy.ts): this test's. */
  front!: RecordingProxy;
  site!: TrackerSite;
  /** Where the browser's requests outside the site and the gateway end, refused. */
  refuser!: Refuser;
  browser!: Browser;
  /** A visitor's Chrome: headless Chromium's own user agent says HeadlessChrome, which posthog-js drops as a bot. */
  userAgent = '';
  tenantId = '';
  key = '';
  /** A key that only https://shop.example may use, of a tenant of its own. */
  elsewhereKey = '';
  elsewhereTenant = '';
  /** This test's browser traffic, one entry per visit. */
  traffic: Traffic[] = [];
  readonly pageErrors: string[] = [];
  /** Console errors a test provokes on purpose (a refused key, a lost answer): the browser's own "Failed to load resource". */
  expectingFailedLoads = false;
  /** Other console errors a test provokes on purpose. */
  expectedConsole: RegExp | undefined;
  /** A script of the gateway's that one test shows a page loads (posthog-js's remote config). */
  gatewayScript: string | undefined;

  async start(): Promise<void> {
    const [bundles] = await Promise.all([
      bundleTrackers(),
      (async () => {
        this.tenantId = (await createTenant(adminRegistry(), uid('compat-browser'))).tenant_id;
        this.key = await newKey({ tenantId: this.tenantId, kind: 'telemetry', name: 'browser trackers' });
        this.elsewhereTenant = (await createTenant(adminRegistry(), uid('compat-elsewhere'))).tenant_id;
        this.elsewhereKey = await newKey({
          tenantId: this.elsewhereTenant,
          kind: 'telemetry',
          name: 'another site',
          allowedOrigins: ['https://shop.example'],
        });
      })(),
    ]);
    [this.gateway, this.consumer] = await Promise.all([runGateway(), runConsumer()]);
    this.site = new TrackerSite(bundles);
    this.refuser = new Refuser();
    await Promise.all([this.site.start(), this.refuser.start()]);
    // NOTE: without this flag navigator.webdriver is true, and posthog-js drops every event as a bot's.
    this.browser = await launchChromium(['--disable-blink-features=AutomationControlled']);
    this.userAgent = `Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${this.browser.version()} Safari/537.36`;
  }

  async beginTest(): Promise<void> {
    this.front = new RecordingProxy(this.gateway.url);
    await this.front.start();
    this.refuser.seen.length = 0;
    this.traffic = [];
  }

  /** (c) Whatever the test did, the browser asked nothing of any origin but the site and the gateway. */
  async endTest(failed: boolean): Promise<void> {
    await this.front.stop();
    if (failed) {
      const seen = this.front.seen.map((x) => `${x.method} ${x.path} ${x.status}`);
      process.stderr.write(`gateway saw:\n${seen.join('\n')}\n`);
    }
    const ours = Object.values<string>(SCRIPT_PATHS).map((p) => `${this.site.url}${p}`);
    for (const t of this.traffic) {
      expect(t.refused, 'requests outside the site and the gateway').to.deep.equal([]);
      const origins = new Set(t.requests.map((r) => r.origin));
      expect(
        [...origins].filter((o) => o !== this.site.url && o !== this.front.url),
        'origins',
      ).to.deep.equal([]);
      const scripts = t.requests.filter((r) => r.resourceType === 'script').map((r) => r.url);
      expect(
        scripts.filter((u) => !ours.includes(u) && u !== this.gatewayScript),
        'scripts',
      ).to.deep.equal([]);
    }
    expect(this.pageErrors.splice(0), 'errors in the pages').to.deep.equal([]);
    this.expectingFailedLoads = false;
    this.expectedConsole = undefined;
    this.gatewayScript = undefined;
  }

  async stop(): Promise<void> {
    await this.browser?.close();
    await Promise.all([this.site?.stop(), this.refuser?.stop()]);
    await Promise.all([this.gateway?.stop(), this.consumer?.stop()]);
  }

  /** A new visitor (a context of its own) opens page `name` of `sdk` running `script`; the page clock as given. */
  async visit(
    name: string,
    sdk: 'segment' | 'posthog',
    script: string,
    clock?: number,
  ): Promise<{ ctx: BrowserContext; page: Page; traffic: Traffic }> {
    const allowed = [this.site.url, this.front.url];
    const { ctx, traffic } = await confinedContext(this.browser, allowed, this.refuser, { userAgent: this.userAgent });
    this.traffic.push(traffic);
    const page = await ctx.newPage();
    page.on('pageerror', (e) => this.pageErrors.push(`${page.url()}: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      if (this.expectingFailedLoads && m.text().startsWith('Failed to load resource:')) return;
      if (this.expectedConsole?.test(m.text())) return;
      this.pageErrors.push(`${page.url()}: ${m.text()}`);
    });
    // The page's own clock, from before its first script runs; it keeps ticking from there.
    if (clock !== undefined) await page.clock.install({ time: clock });
    await page.goto(this.site.page(name, sdk, script));
    return { ctx, page, traffic };
  }

  /** The distinct `METHOD path status` the gateway saw in this test, query and key left out, sorted. */
  endpoints(): string[] {
    const shown = this.front.seen.map(
      (x) => `${x.method} ${x.path.split('?')[0]!.replace(/tk_[0-9a-f_]+/, 'KEY')} ${x.status}`,
    );
    return [...new Set(shown)].sort();
  }
}

/** A TrackerStack for the calling describe(), started in before() and checked after each test. */
export function trackerStack(): TrackerStack {
  const s = new TrackerStack();
  before(() => s.start());
  beforeEach(() => s.beginTest());
  afterEach(function () {
    return s.endTest(this.currentTest?.state === 'failed');
  });
  after(() => s.stop());
  return s;
}

/** The ids the page's script put in `window.ids` once its SDK calls resolved. */
export async function sentIds(page: Page): Promise<string[]> {
  const ids = await page.waitForFunction(() => (globalThis as unknown as { ids?: string[] }).ids, null, {
    timeout: 30_000,
  });
  return (await ids.jsonValue())!;
}

/** The JSON of `value` for a page script. */
export const js = (value: unknown): string => JSON.stringify(value);
