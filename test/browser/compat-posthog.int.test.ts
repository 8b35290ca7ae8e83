import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import { eventually } from '../support/fixtures.js';
import type { Exchange } from '../support/recording-proxy.js';
import { SCRIPT_PATHS } from '../support/tracker-pages.js';
import { countOf, expectTimes, storedOnce, type CompatRow } from '../support/compat-rows.js';
import { js, trackerStack } from '../support/tracker-suite.js';

/**
 * `posthog-js` 1.449.2 (the pinned devDependency), unchanged, in Debian's Chromium: bundled
 * from node_modules with esbuild and served by the test's own loopback site, pointed at the
 * real gateway (behind a recording proxy), Kafka, stream consumer and ClickHouse.
 * docs/compat.md ("Browser SDKs") says what it is set to and what it calls; these tests are
 * its proof (analytics-next and the confinement itself: compat-segment.int.test.ts).
 */
describe('posthog-js 1.449.2 in Chromium (real gateway, Kafka and ClickHouse)', function () {
  this.timeout(120_000);
  const s = trackerStack();

  interface PosthogEvent {
    uuid: string;
    event: string;
    timestamp: string;
    offset?: number;
    properties: Record<string, unknown> & { distinct_id: string; $lib: string };
  }

  /** posthog-js's capture path: /e/ (or /i/v0/e/), with a `_` time and its compression in the query. */
  const SEND = /^\/(?:e|i\/v0\/e|batch|capture)\/?(?:\?|$)/;

  /** What a page sets to load no script at all beyond its own (docs/compat.md). */
  const STRICT = { disable_external_dependency_loading: true };

  /** A page that inits posthog-js with the gateway (and `options`), then captures and identifies. */
  function posthogPage(token: string, options: Record<string, unknown> = STRICT): string {
    return `posthog.init(${js(token)}, ${js({ api_host: s.front.url, ...options })});
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
    return s.front.seen
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
      // posthog-js reports $raw_user_agent and no $ip: the request's address (loopback), to its /24.
      user_agent: p.$raw_user_agent as string,
      client_ip: '127.0.0.0',
    });
    expect(p.$ip, 'posthog-js reports no address').to.equal(undefined);
    // The event as sent, without its project token (our access key).
    const { token: _token, ...props } = p;
    expect(JSON.parse(row.payload)).to.deep.equal({ ...e, properties: props });
    expect(row.payload, 'the token is not stored').to.not.include(s.key);
    expect(sentAt, 'posthog-js sends sent_at').to.be.a('string');
    expect(Math.abs(row.sent_at! - Date.parse(sentAt!)), 'sent_at').to.be.below(1_000);
  }

  /**
   * Waits for the $pageview, the capture and the $identify of posthogPage, then checks that
   * every event the SDK sent is in `events FINAL` once, mapped as docs/compat.md says.
   */
  async function expectDeliveredOnce(): Promise<void> {
    const [pageview, order, identify] = await sentNamed('$pageview', 'order completed', '$identify');
    const all = sent();
    const rows = await storedOnce(
      s.tenantId,
      all.map((x) => x.e.uuid),
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
    expect(
      s.traffic
        .flatMap((t) => t.requests.map((r) => r.origin))
        .filter((o, i, a) => a.indexOf(o) === i)
        .sort(),
    ).to.deep.equal([s.site.url, s.front.url].sort());
  }

  it('captures $pageview, an event and $identify with its defaults: each lands once, mapped as docs/compat.md says', async () => {
    const { ctx } = await s.visit('posthog-basic', 'posthog', posthogPage(s.key));
    try {
      await expectDeliveredOnce();
      // Every endpoint it called (docs/compat.md lists them), and the gateway's answers.
      expect(s.endpoints()).to.deep.equal(['GET /array/KEY/config 200', 'POST /e/ 200', 'POST /flags/ 200']);
    } finally {
      await ctx.close();
    }
  });

  it('with api_host only, also loads the gateway\u2019s remote config as a script, and nothing else', async () => {
    s.gatewayScript = `${s.front.url}/array/${s.key}/config.js`;
    const { ctx } = await s.visit('posthog-minimal', 'posthog', posthogPage(s.key, {}));
    try {
      await expectDeliveredOnce();
      const scripts = s.traffic[0]!.requests.filter((r) => r.resourceType === 'script').map((r) => r.url);
      expect(scripts.sort()).to.deep.equal([s.gatewayScript, `${s.site.url}${SCRIPT_PATHS.posthog}`].sort());
      // The script is the remote config (every extension off), so it needs no JSON config.
      expect(s.endpoints()).to.deep.equal(['GET /array/KEY/config.js 200', 'POST /e/ 200', 'POST /flags/ 200']);
    } finally {
      await ctx.close();
    }
  });

  it('(a) retries a batch whose answer was lost (503 after the gateway accepted it): read once', async () => {
    s.front.failNext = /^POST \/(?:e|i\/v0\/e|batch)\/?(?:\?|$)/;
    s.expectingFailedLoads = true;
    const { ctx } = await s.visit('posthog-retry', 'posthog', posthogPage(s.key));
    try {
      const lost = await eventually('the lost answer', () => s.front.seen.find((x) => x.status === 503));
      expect(lost.gatewayStatus, 'the gateway answered').to.equal(200);
      const lostIds = eventsOf(lost).events.map((e) => e.uuid);
      const retry = await eventually('the lost batch sent again', () =>
        s.front.seen.find(
          (x) => x.status === 200 && SEND.test(x.path) && eventsOf(x).events.some((e) => e.uuid === lostIds[0]),
        ),
      );
      // Its own retry (retry_count=1 in the query), the same events.
      expect(new URL(retry.path, s.front.url).searchParams.get('retry_count')).to.equal('1');
      expect(eventsOf(retry).events.map((e) => e.uuid)).to.deep.equal(lostIds);
      const rows = await storedOnce(s.tenantId, lostIds);
      for (const id of lostIds) expect(rows.get(id)!.n).to.equal(1);
    } finally {
      await ctx.close();
    }
  });

  it('(b) a page clock an hour behind lands at the right time', async () => {
    const skew = 3_600_000;
    const { ctx } = await s.visit('posthog-clock', 'posthog', posthogPage(s.key), Date.now() - skew);
    try {
      const events = await sentNamed('$pageview', 'order completed', '$identify');
      const rows = await storedOnce(
        s.tenantId,
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
    s.expectingFailedLoads = true;
    const { ctx } = await s.visit('posthog-elsewhere', 'posthog', posthogPage(s.elsewhereKey));
    try {
      const refused = await eventually('a capture refused', () =>
        s.front.seen.find((x) => x.method === 'POST' && SEND.test(x.path)),
      );
      expect(refused.status).to.equal(403);
      await eventually('the answer read', () => (refused.answer === '' ? undefined : true));
      expect(JSON.parse(refused.answer)).to.deep.include({
        type: 'authentication_error',
        code: 'ORIGIN_NOT_ALLOWED',
      });
      // Every capture refused so; none stored.
      const captures = s.front.seen.filter((x) => x.method === 'POST' && SEND.test(x.path));
      expect(captures.map((x) => x.status)).to.deep.equal(captures.map(() => 403));
      expect(await countOf(s.elsewhereTenant)).to.equal(0);
    } finally {
      await ctx.close();
    }
  });
});
