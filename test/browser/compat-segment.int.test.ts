import { expect } from 'chai';
import { eventually } from '../support/fixtures.js';
import { countOf, expectTimes, storedOnce, type CompatRow } from '../support/compat-rows.js';
import { js, sentIds, trackerStack } from '../support/tracker-suite.js';

/**
 * `@segment/analytics-next` 1.84.3 (the pinned devDependency), unchanged, in Debian's
 * Chromium: bundled from node_modules with esbuild and served by the test's own loopback
 * site, pointed at the real gateway (behind a recording proxy), Kafka, stream consumer and
 * ClickHouse. docs/compat.md ("Browser SDKs") says what it is set to and what it calls;
 * these tests are its proof (posthog-js: compat-posthog.int.test.ts).
 */
describe('@segment/analytics-next 1.84.3 in Chromium (real gateway, Kafka and ClickHouse)', function () {
  this.timeout(120_000);
  const s = trackerStack();

  it('(c) confines each visitor to the site and the gateway: any other request is refused, and seen', async () => {
    // A loopback port of nobody (not an "unsafe" one, which Chromium refuses itself), and
    // hosts shaped like the SDKs' own CDNs under the reserved .test domain: no test aims a
    // request at a public host, even one the proxy would refuse.
    const other = 'http://127.0.0.1:8089/';
    const { ctx, page } = await s.visit('confined', 'segment', '');
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
        ['https://cdn.segment.test/v1/projects/k/settings', 'https://us-assets.posthog.test/static/array.js', other],
      );
      expect(results).to.deep.equal(['failed', 'failed', 'failed']);
      expect([...s.refuser.seen].sort()).to.deep.equal(
        ['CONNECT cdn.segment.test:443', 'CONNECT us-assets.posthog.test:443', `GET ${other}`].sort(),
      );
      expect(s.traffic[0]!.requests.map((r) => r.url)).to.include.members([other]);
      // Seen and refused as it should be: nothing for afterEach to find.
      s.refuser.seen.length = 0;
      s.traffic = [];
      s.pageErrors.length = 0;
    } finally {
      await ctx.close();
    }
  });

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
      const analytics = AnalyticsBrowser.load({ writeKey: ${js(writeKey)}, cdnURL: ${js(s.front.url)} });
      const page = await analytics.page();
      const track = await analytics.track('Order Completed', { revenue: 42.5, currency: 'EUR' });
      const identify = await analytics.identify('user-42', { plan: 'pro' });
      window.ids = [page, track, identify].map((c) => c.event.messageId);
    })();`;
  }

  /** The messages the SDK sent and the gateway accepted (200), from the proxy's record. */
  function sent(): SegmentMessage[] {
    return s.front.seen
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
      // analytics.js reports no context.ip: the request's (loopback), to its /24.
      client_ip: '127.0.0.0',
    });
    const payload = JSON.parse(row.payload) as Record<string, unknown>;
    const { writeKey: _writeKey, ...rest } = m;
    expect(payload).to.deep.equal(rest);
    expect(row.payload, 'the write key is not stored').to.not.include(s.key);
    expect(Math.abs(row.sent_at! - Date.parse(m.sentAt)), 'sent_at').to.be.below(1_000);
  }

  it('sends page, track and identify with its defaults: each lands once, mapped as docs/compat.md says', async () => {
    const { ctx, page } = await s.visit('segment-basic', 'segment', segmentPage(s.key));
    try {
      const ids = await sentIds(page);
      const rows = await storedOnce(s.tenantId, ids);
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
      expect(s.endpoints()).to.deep.equal([
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
    s.front.failNext = /^POST \/(?:v1\/)?t$/;
    s.expectingFailedLoads = true;
    const { ctx, page } = await s.visit('segment-retry', 'segment', segmentPage(s.key));
    try {
      const ids = await sentIds(page);
      const trackId = ids[1]!;
      const tracks = await eventually('the track sent again after the 503', () => {
        const t = s.front.seen.filter((x) => x.method === 'POST' && /^\/(?:v1\/)?t$/.test(x.path));
        return t.length >= 2 && t.some((x) => x.status === 200) ? t : undefined;
      });
      expect(tracks[0]!.status, 'the page saw').to.equal(503);
      expect(tracks[0]!.gatewayStatus, 'the gateway answered').to.equal(200);
      for (const t of tracks) expect((JSON.parse(t.body) as SegmentMessage).messageId).to.equal(trackId);
      // Its own retry, which says so (X-Retry-Count), after its backoff.
      expect(tracks.map((t) => t.headers['x-retry-count'])).to.deep.equal([undefined, '1']);
      const rows = await storedOnce(s.tenantId, ids);
      expect(rows.get(trackId)!.n).to.equal(1);
    } finally {
      await ctx.close();
    }
  });

  it('(b) a page clock an hour behind lands at the right time', async () => {
    const skew = 3_600_000;
    const { ctx, page } = await s.visit('segment-clock', 'segment', segmentPage(s.key), Date.now() - skew);
    try {
      const ids = await sentIds(page);
      const rows = await storedOnce(s.tenantId, ids);
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
    s.expectingFailedLoads = true;
    // analytics-next logs the refusal's body itself (console.error) when its load fails.
    s.expectedConsole = /ORIGIN_NOT_ALLOWED/;
    const { ctx, page } = await s.visit(
      'segment-elsewhere',
      'segment',
      `const analytics = AnalyticsBrowser.load({ writeKey: ${js(s.elsewhereKey)}, cdnURL: ${js(s.front.url)} });
      analytics.catch((e) => { window.loadError = String(e && e.message); });
      analytics.track('Order Completed', { revenue: 1 });`,
    );
    try {
      // The settings document is the first request and refused: analytics-next's load
      // fails, so it sends nothing (and falls back to no other host: afterEach).
      const loadError = await page.waitForFunction(() => (globalThis as unknown as { loadError?: string }).loadError);
      const settings = s.front.seen.find((x) => x.path.startsWith('/v1/projects/'))!;
      expect(settings.status).to.equal(403);
      await eventually('the answer recorded', () => (settings.answer === '' ? undefined : true));
      expect(JSON.parse(settings.answer)).to.deep.include({ success: false, code: 'ORIGIN_NOT_ALLOWED' });
      expect(JSON.parse(String(await loadError.jsonValue()))).to.deep.include({ code: 'ORIGIN_NOT_ALLOWED' });
      expect(s.endpoints()).to.deep.equal(['GET /v1/projects/KEY/settings 403']);
      expect(await countOf(s.elsewhereTenant)).to.equal(0);
    } finally {
      await ctx.close();
    }
  });
});
