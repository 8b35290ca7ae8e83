import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTenant } from '@telemetry/store';
import { adminRegistry, eventually, newKey, runConsumer, runGateway, uid, type Running } from '../support/fixtures.js';
import { launchChromium } from '../support/browser.js';
import { RecordingProxy, type Exchange } from '../support/recording-proxy.js';
import {
  bundleTrackers,
  confinedContext,
  Refuser,
  SCRIPT_PATHS,
  TrackerSite,
  type Traffic,
} from '../support/tracker-pages.js';
import { countOf, expectTimes, storedOnce, type CompatRow } from '../support/compat-rows.js';

/**
 * The trackers' own browser SDKs, unchanged, in Debian's Chromium: `@segment/analytics-next`
 * and `posthog-js` (the pinned devDependencies), bundled from node_modules with esbuild and
 * served by the test's own loopback site, pointed at the real gateway (behind a recording
 * proxy), Kafka, stream consumer and ClickHouse. docs/compat.md ("Browser SDKs") says what
 * each is set to and what it calls; these tests are its proof.
 */
describe("the trackers' browser SDKs in Chromium (real gateway, Kafka and ClickHouse)", function () {
  this.timeout(120_000);
  let gateway: Running;
  let consumer: Running;
  /**
   * What the browser sends to the gateway, recorded on the way (test/support/recording-proxy.ts):
   * one per test, so that a closed page's late beacon never counts in the next test.
   */
  let front: RecordingProxy;
  let site: TrackerSite;
  /** Where the browser's requests outside the site and the gateway end, refused. */
  let refuser: Refuser;
  let browser: Browser;
  /** A visitor's Chrome: headless Chromium's own user agent says HeadlessChrome, which posthog-js drops as a bot. */
  let userAgent = '';
  let tenantId = '';
  let key = '';
  /** A key that only https://shop.example may use, of a tenant of its own (which must stay empty). */
  let elsewhereKey = '';
  let elsewhereTenant = '';
  /** Each test's browser traffic, for afterEach to check. */
  let traffic: Traffic[] = [];
  const pageErrors: string[] = [];
  /** Console errors a test provokes on purpose (a refused key, a lost answer): the browser's own "Failed to load resource". */
  let expectingFailedLoads = false;
  /** Other console errors a test provokes on purpose. */
  let expectedConsole: RegExp | undefined;
  /** A script of the gateway's that one test shows a page loads (posthog-js's remote config). */
  let gatewayScript: string | undefined;

  before(async () => {
    const [bundles] = await Promise.all([
      bundleTrackers(),
      (async () => {
        tenantId = (await createTenant(adminRegistry(), uid('compat-browser'))).tenant_id;
        key = await newKey({ tenantId, kind: 'telemetry', name: 'browser trackers' });
        elsewhereTenant = (await createTenant(adminRegistry(), uid('compat-elsewhere'))).tenant_id;
        elsewhereKey = await newKey({
          tenantId: elsewhereTenant,
          kind: 'telemetry',
          name: 'another site',
          allowedOrigins: ['https://shop.example'],
        });
      })(),
    ]);
    [gateway, consumer] = await Promise.all([runGateway(), runConsumer()]);
    site = new TrackerSite(bundles);
    refuser = new Refuser();
    await Promise.all([site.start(), refuser.start()]);
    // NOTE: without this flag navigator.webdriver is true, and posthog-js drops every event as a bot's.
    browser = await launchChromium(['--disable-blink-features=AutomationControlled']);
    userAgent = `Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${browser.version()} Safari/537.36`;
  });

  beforeEach(async () => {
    front = new RecordingProxy(gateway.url);
    await front.start();
    refuser.seen.length = 0;
    traffic = [];
  });

  afterEach(async function () {
    await front.stop();
    // (c) Whatever the test did, the browser asked nothing of any origin but the site and the
    // gateway, and loaded no script but the site's bundles.
    for (const t of traffic) {
      expect(t.refused, 'requests outside the site and the gateway').to.deep.equal([]);
      expect(
        [...new Set(t.requests.map((r) => r.origin))].filter((o) => o !== site.url && o !== front.url),
      ).to.deep.equal([]);
      const ours = Object.values<string>(SCRIPT_PATHS).map((p) => `${site.url}${p}`);
      const scripts = t.requests.filter((r) => r.resourceType === 'script').map((r) => r.url);
      expect(
        scripts.filter((u) => !ours.includes(u) && u !== gatewayScript),
        'scripts',
      ).to.deep.equal([]);
    }
    expect(pageErrors.splice(0), 'errors in the pages').to.deep.equal([]);
    expectingFailedLoads = false;
    expectedConsole = undefined;
    gatewayScript = undefined;
    if (this.currentTest?.state === 'failed') {
      process.stderr.write(`gateway saw:\n${front.seen.map((x) => `${x.method} ${x.path} ${x.status}`).join('\n')}\n`);
    }
  });

  after(async () => {
    await browser?.close();
    await Promise.all([site?.stop(), refuser?.stop()]);
    await Promise.all([gateway?.stop(), consumer?.stop()]);
  });

  /** A new visitor (a context of its own) opens page `name` of `sdk` running `script`; the page clock as given. */
  async function visit(
    name: string,
    sdk: 'segment' | 'posthog',
    script: string,
    clock?: number,
  ): Promise<{ ctx: BrowserContext; page: Page; traffic: Traffic }> {
    const { ctx, traffic: t } = await confinedContext(browser, [site.url, front.url], refuser, { userAgent });
    traffic.push(t);
    const page = await ctx.newPage();
    page.on('pageerror', (e) => pageErrors.push(`${page.url()}: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      if (expectingFailedLoads && m.text().startsWith('Failed to load resource:')) return;
      if (expectedConsole?.test(m.text())) return;
      pageErrors.push(`${page.url()}: ${m.text()}`);
    });
    // The page's own clock, from before its first script runs; it keeps ticking from there.
    if (clock !== undefined) await page.clock.install({ time: clock });
    await page.goto(site.page(name, sdk, script));
    return { ctx, page, traffic: t };
  }

  /** The ids the page's script put in `window.ids` once its SDK calls resolved. */
  async function sentIds(page: Page): Promise<string[]> {
    const ids = await page.waitForFunction(() => (globalThis as unknown as { ids?: string[] }).ids, null, {
      timeout: 30_000,
    });
    return (await ids.jsonValue())!;
  }

  /** The distinct `METHOD path status` the gateway saw, query and key left out, sorted. */
  function endpoints(): string[] {
    const shown = front.seen.map(
      (x) => `${x.method} ${x.path.split('?')[0]!.replace(/tk_[0-9a-f_]+/, 'KEY')} ${x.status}`,
    );
    return [...new Set(shown)].sort();
  }

  /** The JSON of `value` for a page script. */
  const js = (value: unknown): string => JSON.stringify(value);

  it('(c) confines each visitor to the site and the gateway: any other request is refused, and seen', async () => {
    // A loopback port of nobody (not an "unsafe" one, which Chromium refuses itself).
    const other = 'http://127.0.0.1:8089/';
    const { ctx, page } = await visit('confined', 'segment', '');
    try {
      const results = await page.evaluate(
        (urls) =>
          Promise.all(
            urls.map((u) =>
              fetch(u).then(
                () => 'answered',
                () => 'failed',
              ),
            ),
          ),
        ['https://cdn.segment.com/v1/projects/k/settings', 'https://us-assets.i.posthog.com/static/array.js', other],
      );
      expect(results).to.deep.equal(['failed', 'failed', 'failed']);
      expect([...refuser.seen].sort()).to.deep.equal(
        ['CONNECT cdn.segment.com:443', 'CONNECT us-assets.i.posthog.com:443', `GET ${other}`].sort(),
      );
      expect(traffic[0]!.requests.map((r) => r.url)).to.include.members([other]);
      // Seen and refused as it should be: nothing for afterEach to find.
      refuser.seen.length = 0;
      traffic = [];
      pageErrors.length = 0;
    } finally {
      await ctx.close();
    }
  });

  describe('@segment/analytics-next 1.84.3', () => {
    interface SegmentMessage {
      type: string;
      event?: string;
      messageId: string;
      anonymousId: string;
      userId?: string | null;
      timestamp: string;
      originalTimestamp?: string;
      sentAt: string;
      context: { userAgent?: string; library: { name: string; version: string } };
      [k: string]: unknown;
    }

    /** analytics.js's one-letter paths under the settings' apiHost: t(rack), i(dentify), p(age)... */
    const SEND = /^\/(?:v1\/)?[tipsga]$/;

    /** A page that loads analytics-next with nothing but the write key and the gateway as cdnURL, then sends page, track, identify. */
    function segmentPage(writeKey: string): string {
      return `(async () => {
        const analytics = AnalyticsBrowser.load({ writeKey: ${js(writeKey)}, cdnURL: ${js(front.url)} });
        const page = await analytics.page();
        const track = await analytics.track('Order Completed', { revenue: 42.5, currency: 'EUR' });
        const identify = await analytics.identify('user-42', { plan: 'pro' });
        window.ids = [page, track, identify].map((c) => c.event.messageId);
      })();`;
    }

    /** The messages the SDK sent and the gateway accepted (200), from the proxy's record. */
    function sent(): SegmentMessage[] {
      return front.seen
        .filter((x) => x.method === 'POST' && SEND.test(x.path) && x.status === 200)
        .map((x) => JSON.parse(x.body) as SegmentMessage);
    }

    function expectSegmentRow(row: CompatRow, m: SegmentMessage): void {
      expect(row).to.include({
        protocol: 'segment',
        category: m.type === 'track' ? m.event : m.type,
        // No source fixed by the key: the library's name.
        source: m.context.library.name,
        client_event_id: m.messageId,
        anonymous_id: m.anonymousId,
        user_id: m.userId ?? '',
        user_agent: m.context.userAgent ?? '',
        client_ip: '',
      });
      const payload = JSON.parse(row.payload) as Record<string, unknown>;
      const { writeKey: _writeKey, ...rest } = m;
      expect(payload).to.deep.equal(rest);
      expect(row.payload, 'the write key is not stored').to.not.include(key);
      expect(Math.abs(row.sent_at! - Date.parse(m.sentAt)), 'sent_at').to.be.below(1_000);
    }

    it('sends page, track and identify with its defaults: each lands once, mapped as docs/compat.md says', async () => {
      const { ctx, page } = await visit('segment-basic', 'segment', segmentPage(key));
      try {
        const ids = await sentIds(page);
        const rows = await storedOnce(tenantId, ids);
        const messages = sent();
        expect(messages.map((m) => m.messageId).sort()).to.deep.equal([...ids].sort());
        for (const m of messages) {
          expectSegmentRow(rows.get(m.messageId)!, m);
          expectTimes(rows.get(m.messageId)!, Date.parse(m.originalTimestamp ?? m.timestamp), Date.parse(m.timestamp));
        }
        const [pageRow, trackRow, identifyRow] = ids.map((id) => rows.get(id)!);
        expect([pageRow!.category, trackRow!.category, identifyRow!.category]).to.deep.equal([
          'page',
          'Order Completed',
          'identify',
        ]);
        expect(identifyRow!.user_id).to.equal('user-42');
        expect(trackRow!.user_id).to.equal('');
        expect(new Set([pageRow!.anonymous_id, trackRow!.anonymous_id, identifyRow!.anonymous_id]).size).to.equal(1);
        // What it asked the gateway for, in all: its settings, then one request per event.
        // CORS preflights (its Authorization header) answered by the gateway itself.
        expect(endpoints()).to.deep.equal([
          'GET /v1/projects/KEY/settings 200',
          'OPTIONS /v1/i 204',
          'OPTIONS /v1/p 204',
          'OPTIONS /v1/t 204',
          'POST /v1/i 200',
          'POST /v1/p 200',
          'POST /v1/t 200',
        ]);
      } finally {
        await ctx.close();
      }
    });

    it('(a) retries a send whose answer was lost (503 after the gateway accepted it): read once', async () => {
      front.failNext = /^POST \/(?:v1\/)?t$/;
      expectingFailedLoads = true;
      const { ctx, page } = await visit('segment-retry', 'segment', segmentPage(key));
      try {
        const ids = await sentIds(page);
        const trackId = ids[1]!;
        const tracks = await eventually('the track sent again after the 503', () => {
          const t = front.seen.filter((x) => x.method === 'POST' && /^\/(?:v1\/)?t$/.test(x.path));
          return t.length >= 2 && t.some((x) => x.status === 200) ? t : undefined;
        });
        expect(tracks[0]!.status, 'the page saw').to.equal(503);
        expect(tracks[0]!.gatewayStatus, 'the gateway answered').to.equal(200);
        for (const t of tracks) expect((JSON.parse(t.body) as SegmentMessage).messageId).to.equal(trackId);
        // Its own retry, which says so (X-Retry-Count), after its backoff.
        expect(tracks.map((t) => t.headers['x-retry-count'])).to.deep.equal([undefined, '1']);
        const rows = await storedOnce(tenantId, ids);
        expect(rows.get(trackId)!.n).to.equal(1);
      } finally {
        await ctx.close();
      }
    });

    it('(b) a page clock an hour behind lands at the right time', async () => {
      const skew = 3_600_000;
      const { ctx, page } = await visit('segment-clock', 'segment', segmentPage(key), Date.now() - skew);
      try {
        const ids = await sentIds(page);
        const rows = await storedOnce(tenantId, ids);
        for (const m of sent()) {
          const row = rows.get(m.messageId)!;
          // The client's times are an hour behind; the row's event_time is the real one.
          expect(Date.now() - Date.parse(m.timestamp)).to.be.within(skew - 60_000, skew + 60_000);
          expectTimes(row, Date.parse(m.timestamp), Date.parse(m.timestamp) + skew, 10_000);
          expect(Math.abs(row.event_time - row.received_at), 'event_time near received_at').to.be.below(10_000);
        }
      } finally {
        await ctx.close();
      }
    });

    it('(d) a key restricted to another origin is refused with the protocol\u2019s error, and nothing is stored', async () => {
      expectingFailedLoads = true;
      // analytics-next logs the refusal's body itself (console.error) when its load fails.
      expectedConsole = /ORIGIN_NOT_ALLOWED/;
      const { ctx, page } = await visit(
        'segment-elsewhere',
        'segment',
        `const analytics = AnalyticsBrowser.load({ writeKey: ${js(elsewhereKey)}, cdnURL: ${js(front.url)} });
        analytics.catch((e) => { window.loadError = String(e && e.message); });
        analytics.track('Order Completed', { revenue: 1 });`,
      );
      try {
        // The settings document is the first request and refused: analytics-next's load
        // fails, so it sends nothing (and falls back to no other host: afterEach).
        const loadError = await page.waitForFunction(() => (globalThis as unknown as { loadError?: string }).loadError);
        const settings = front.seen.find((x) => x.path.startsWith('/v1/projects/'))!;
        expect(settings.status).to.equal(403);
        expect(JSON.parse(settings.answer)).to.deep.include({ success: false, code: 'ORIGIN_NOT_ALLOWED' });
        expect(JSON.parse(String(await loadError.jsonValue()))).to.deep.include({ code: 'ORIGIN_NOT_ALLOWED' });
        expect(endpoints()).to.deep.equal(['GET /v1/projects/KEY/settings 403']);
        expect(await countOf(elsewhereTenant)).to.equal(0);
      } finally {
        await ctx.close();
      }
    });
  });

  describe('posthog-js 1.449.2', () => {
    interface PosthogEvent {
      uuid: string;
      event: string;
      timestamp: string;
      offset?: number;
      properties: Record<string, unknown> & { distinct_id: string; $lib: string };
    }

    /** posthog-js's capture path: /e/ (or /i/v0/e/), with a `_` time and its compression in the query. */
    const SEND = /^\/(?:e|i\/v0\/e|batch|capture)\/?(?:\?|$)/;

    /** A page that inits posthog-js with the gateway and the fewest options, then captures and identifies. */
    function posthogPage(token: string): string {
      return `posthog.init(${js(token)}, { api_host: ${js(front.url)}, disable_external_dependency_loading: true });
        posthog.capture('order completed', { revenue: 42.5, currency: 'EUR' });
        posthog.identify('user-42', { plan: 'pro' });`;
    }

    /** The events of one /e/ request as sent (gzip, base64 `data=` form or JSON; an array, a batch or one event), and its `sent_at`. */
    function eventsOf(x: Exchange): { events: PosthogEvent[]; sentAt?: string } {
      let raw = x.raw;
      if (raw[0] === 0x1f && raw[1] === 0x8b) raw = gunzipSync(raw);
      let text = raw.toString();
      if (text.startsWith('data=')) text = Buffer.from(decodeURIComponent(text.slice(5)), 'base64').toString();
      const body = JSON.parse(text) as PosthogEvent | PosthogEvent[] | { batch: PosthogEvent[]; sent_at?: string };
      if (Array.isArray(body)) return { events: body };
      return 'batch' in body ? { events: body.batch, sentAt: body.sent_at } : { events: [body] };
    }

    /** Every event the gateway accepted (200), with its request's `sent_at`. */
    function sent(): { e: PosthogEvent; sentAt?: string }[] {
      return front.seen
        .filter((x) => x.method === 'POST' && SEND.test(x.path) && x.status === 200)
        .flatMap((x) => {
          const { events, sentAt } = eventsOf(x);
          return events.map((e) => ({ e, sentAt }));
        });
    }

    /** The events of `names`, the first of each, as sent. */
    async function sentNamed(...names: string[]): Promise<PosthogEvent[]> {
      return eventually(`${names.join(', ')} sent`, () => {
        const events = sent().map((s) => s.e);
        const found = names.flatMap((n) => events.filter((e) => e.event === n).slice(0, 1));
        return found.length === names.length ? found : undefined;
      });
    }

    /** docs/compat.md's table and its "Identity" rule for posthog-js (which sends `$is_identified`). */
    function expectPosthogRow(row: CompatRow, e: PosthogEvent, sentAt: string | undefined): void {
      const p = e.properties;
      const identified = p.$is_identified === true;
      const anonymous = identified ? ((p.$anon_distinct_id ?? p.$device_id) as string) : p.distinct_id;
      expect(row).to.include({
        protocol: 'posthog',
        category: e.event,
        // No source fixed by the key: the library's name.
        source: p.$lib,
        client_event_id: e.uuid,
        anonymous_id: anonymous === p.distinct_id && identified ? '' : anonymous,
        user_id: identified ? p.distinct_id : '',
        user_agent: (p.$raw_user_agent as string | undefined) ?? '',
        client_ip: (p.$ip as string | undefined) ?? '',
      });
      // The event as sent, without its project token (our access key).
      const { token: _token, ...props } = p;
      expect(JSON.parse(row.payload)).to.deep.equal({ ...e, properties: props });
      expect(row.payload, 'the token is not stored').to.not.include(key);
      expect(sentAt, 'posthog-js sends sent_at').to.be.a('string');
      expect(Math.abs(row.sent_at! - Date.parse(sentAt!)), 'sent_at').to.be.below(1_000);
    }

    it('captures $pageview, an event and $identify with its defaults: each lands once, mapped as docs/compat.md says', async () => {
      const { ctx } = await visit('posthog-basic', 'posthog', posthogPage(key));
      try {
        const [pageview, order, identify] = await sentNamed('$pageview', 'order completed', '$identify');
        const all = sent();
        const rows = await storedOnce(
          tenantId,
          all.map((s) => s.e.uuid),
        );
        for (const { e, sentAt } of all) {
          expectPosthogRow(rows.get(e.uuid)!, e, sentAt);
          expectTimes(rows.get(e.uuid)!, Date.parse(e.timestamp), Date.parse(e.timestamp));
        }
        // Captured before identify: the browser's anonymous id only. $identify: the user, and
        // the anonymous id it merges. The $pageview posthog-js sends once loaded comes after.
        const orderRow = rows.get(order!.uuid)!;
        expect(orderRow.user_id).to.equal('');
        expect(orderRow.anonymous_id).to.equal(order!.properties.distinct_id);
        expect(rows.get(identify!.uuid)).to.include({ user_id: 'user-42', anonymous_id: orderRow.anonymous_id });
        expect(rows.get(pageview!.uuid)!.category).to.equal('$pageview');
        expect(rows.get(pageview!.uuid)!.anonymous_id).to.equal(orderRow.anonymous_id);
        // Every endpoint it called (docs/compat.md lists them), and the gateway's answers.
        expect(endpoints()).to.deep.equal(['GET /array/KEY/config 200', 'POST /e/ 200', 'POST /flags/ 200']);
        expect(
          traffic
            .flatMap((t) => t.requests.map((r) => r.origin))
            .filter((o, i, a) => a.indexOf(o) === i)
            .sort(),
        ).to.deep.equal([site.url, front.url].sort());
      } finally {
        await ctx.close();
      }
    });

    it('without disable_external_dependency_loading, it also loads the gateway\u2019s remote config as a script, and nothing else', async () => {
      gatewayScript = `${front.url}/array/${key}/config.js`;
      const { ctx } = await visit(
        'posthog-scripts',
        'posthog',
        `posthog.init(${js(key)}, { api_host: ${js(front.url)} });
        posthog.capture('order completed', { revenue: 1 });`,
      );
      try {
        const [order] = await sentNamed('order completed');
        await storedOnce(tenantId, [order!.uuid]);
        const scripts = traffic[0]!.requests.filter((r) => r.resourceType === 'script').map((r) => r.url);
        expect(scripts.sort()).to.deep.equal([gatewayScript, `${site.url}${SCRIPT_PATHS.posthog}`].sort());
        // The script is the remote config (every extension off), so it needs no JSON config.
        expect(endpoints()).to.deep.equal(['GET /array/KEY/config.js 200', 'POST /e/ 200']);
      } finally {
        await ctx.close();
      }
    });

    it('(a) retries a batch whose answer was lost (503 after the gateway accepted it): read once', async () => {
      front.failNext = /^POST \/(?:e|i\/v0\/e|batch)\/?(?:\?|$)/;
      expectingFailedLoads = true;
      const { ctx } = await visit('posthog-retry', 'posthog', posthogPage(key));
      try {
        const lost = await eventually('the lost answer', () => front.seen.find((x) => x.status === 503));
        expect(lost.gatewayStatus, 'the gateway answered').to.equal(200);
        const lostIds = eventsOf(lost).events.map((e) => e.uuid);
        const retry = await eventually('the lost batch sent again', () =>
          front.seen.find(
            (x) => x.status === 200 && SEND.test(x.path) && eventsOf(x).events.some((e) => e.uuid === lostIds[0]),
          ),
        );
        // Its own retry (retry_count=1 in the query), the same events.
        expect(new URL(retry.path, front.url).searchParams.get('retry_count')).to.equal('1');
        expect(eventsOf(retry).events.map((e) => e.uuid)).to.deep.equal(lostIds);
        const rows = await storedOnce(tenantId, lostIds);
        for (const id of lostIds) expect(rows.get(id)!.n).to.equal(1);
      } finally {
        await ctx.close();
      }
    });

    it('(b) a page clock an hour behind lands at the right time', async () => {
      const skew = 3_600_000;
      const { ctx } = await visit('posthog-clock', 'posthog', posthogPage(key), Date.now() - skew);
      try {
        const events = await sentNamed('$pageview', 'order completed', '$identify');
        const rows = await storedOnce(
          tenantId,
          events.map((e) => e.uuid),
        );
        for (const e of events) {
          const row = rows.get(e.uuid)!;
          expect(Date.now() - Date.parse(e.timestamp)).to.be.within(skew - 60_000, skew + 60_000);
          expectTimes(row, Date.parse(e.timestamp), Date.parse(e.timestamp) + skew, 10_000);
        }
      } finally {
        await ctx.close();
      }
    });

    it('(d) a key restricted to another origin is refused with the protocol\u2019s error, and nothing is stored', async () => {
      expectingFailedLoads = true;
      const { ctx } = await visit('posthog-elsewhere', 'posthog', posthogPage(elsewhereKey));
      try {
        const refused = await eventually('a capture refused', () =>
          front.seen.find((x) => x.method === 'POST' && SEND.test(x.path)),
        );
        expect(refused.status).to.equal(403);
        await eventually('the answer read', () => (refused.answer === '' ? undefined : true));
        expect(JSON.parse(refused.answer)).to.deep.include({
          type: 'authentication_error',
          code: 'ORIGIN_NOT_ALLOWED',
        });
        // Every capture refused so; none stored.
        const captures = front.seen.filter((x) => x.method === 'POST' && SEND.test(x.path));
        expect(captures.map((x) => x.status)).to.deep.equal(captures.map(() => 403));
        expect(await countOf(elsewhereTenant)).to.equal(0);
      } finally {
        await ctx.close();
      }
    });
  });
});
