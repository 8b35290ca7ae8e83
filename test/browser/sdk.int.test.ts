import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import { createTenant } from '@telemetry/store';
import {
  adminClickHouse,
  eventually,
  newKey,
  runConsumer,
  runGateway,
  testStack,
  uid,
  type Running,
  adminRegistry,
} from '../support/fixtures.js';
import { buildSdk, launchChromium } from '../support/browser.js';
import { RecordingProxy, type Exchange } from '../support/recording-proxy.js';
import { sqlString, sqlStringList } from '@telemetry/platform';

/**
 * The browser SDK (sdk/browser, docs/sdk.md) in a real Chromium (Debian's), loaded by the
 * documented snippet from a shop page on another origin, against the real gateway,
 * Kafka, stream consumer and ClickHouse. Every test gets a browser context of its own:
 * its own localStorage, as a new visitor has.
 */
describe('browser SDK in Chromium (real gateway, Kafka and ClickHouse)', function () {
  this.timeout(120_000);
  let gateway: Running;
  let limited: Running;
  /** What the browser sends to each gateway, recorded on the way (test/support/recording-proxy.ts). */
  let front: RecordingProxy;
  let limitedFront: RecordingProxy;
  /** A gateway that takes 2 events per request, and its proxy. */
  let small: Running;
  let smallFront: RecordingProxy;
  let consumer: Running;
  let browser: Browser;
  let site: Server;
  let siteUrl = '';
  let key = '';
  let tenantId = '';
  const SNIPPET = /\(function \(w, d, src\) \{[\s\S]*?\}\)\(window, document, '[^']*'\);/.exec(
    readFileSync('sdk/browser/snippet.html', 'utf8'),
  )![0];

  /** A shop page that loads the SDK from `gateway` with the documented snippet, then calls init with `options`. */
  function shopPage(gatewayUrl: string, options: Record<string, unknown>): string {
    const loader = SNIPPET.replace(/'[^']*'\);$/, `'${gatewayUrl}/sdk/v1.js');`);
    return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title><script>${loader}
      window.refused = [];
      Telemetry.init(Object.assign(${JSON.stringify({ endpoint: gatewayUrl, key, source: 'shop-sdk-test', ...options })},
        { onError: function (e) { window.refused.push(e); } }));
    </script></head><body><h1>Shop</h1><a href="/away">away</a></body></html>`;
  }

  const pageErrors: string[] = [];

  /** Serves /shop/<name> from `pages`, and /away (a page of the same site without the SDK). */
  const pages = new Map<string, string>();

  async function open(ctx: BrowserContext, name: string): Promise<Page> {
    const page = await ctx.newPage();
    page.on('pageerror', (e) => pageErrors.push(`${page.url()}: ${e.message}`));
    page.on('console', (m) => {
      // The browser logs every failed request itself (the refused ones and the 401 are provoked
      // on purpose); anything else the page logs as an error fails the test.
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource:'))
        pageErrors.push(`${page.url()}: ${m.text()}`);
    });
    await page.goto(`${siteUrl}/shop/${name}`);
    await page.waitForFunction(
      () => typeof (globalThis as unknown as { Telemetry: { stats?: unknown } }).Telemetry.stats === 'function',
    );
    return page;
  }

  /** The gateway unreachable for `ctx` (its events requests fail as on a lost network), and back. */
  function outage(ctx: BrowserContext): { refused: number; start(): Promise<void>; end(): Promise<void> } {
    const refuse = (route: Route): Promise<void> => {
      net.refused++;
      return route.abort('internetdisconnected');
    };
    const net = {
      refused: 0,
      start: async () => void (await ctx.route('**/api/telemetry/events*', refuse)),
      end: () => ctx.unroute('**/api/telemetry/events*', refuse),
    };
    return net;
  }

  /** Pages of `ctx` as in a browser without the Web Locks API (or a page on plain http:). */
  async function withoutWebLocks(ctx: BrowserContext): Promise<void> {
    // As text: a function would carry what the test's compiler adds to it (tsx's __name).
    await ctx.addInitScript({
      content: "Object.defineProperty(Navigator.prototype, 'locks', { get: () => undefined });",
    });
  }

  function idsIn(x: Exchange): string[] {
    const body = JSON.parse(x.body || '{}') as { events?: { id: string }[] };
    return (body.events ?? []).map((e) => e.id);
  }

  async function track(page: Page, category: string, n: number): Promise<string[]> {
    return page.evaluate(
      ({ category, n }) => {
        const t = (globalThis as unknown as { Telemetry: { track(c: string, p: object): string } }).Telemetry;
        return Array.from({ length: n }, (_, i) => t.track(category, { i }));
      },
      { category, n },
    );
  }

  function stats(page: Page): Promise<{ queued: number; dropped: number }> {
    return page.evaluate(() =>
      (globalThis as unknown as { Telemetry: { stats(): { queued: number; dropped: number } } }).Telemetry.stats(),
    );
  }

  /** Waits until ClickHouse holds every id, then shows each is read once (FINAL, as docs/clickhouse.md says). */
  async function storedOnce(ids: string[]): Promise<void> {
    const ch = adminClickHouse();
    try {
      const list = sqlStringList(ids);
      const rows = await eventually(
        () => `all ${ids.length} events in ClickHouse`,
        async () => {
          const r = await ch.query({
            query: `SELECT client_event_id AS id, count() AS n FROM ${testStack().database}.events FINAL
                    WHERE tenant_id = ${sqlString(tenantId)} AND client_event_id IN (${list}) GROUP BY client_event_id`,
            format: 'JSONEachRow',
          });
          const got = await r.json<{ id: string; n: string }>();
          return got.length === ids.length ? got : undefined;
        },
        60_000,
      );
      expect(rows.filter((r) => Number(r.n) !== 1)).to.deep.equal([]);
      const uniq = await ch.query({
        query: `SELECT uniqExact(event_id) AS u, uniqExact(client_event_id) AS c FROM ${testStack().database}.events
                WHERE tenant_id = ${sqlString(tenantId)} AND client_event_id IN (${list})`,
        format: 'JSONEachRow',
      });
      expect((await uniq.json<{ u: string; c: string }>())[0]).to.deep.equal({
        u: String(ids.length),
        c: String(ids.length),
      });
    } finally {
      await ch.close();
    }
  }

  before(async () => {
    await buildSdk();
    tenantId = (await createTenant(adminRegistry(), uid('sdk'))).tenant_id;
    key = await newKey({ tenantId, kind: 'telemetry', name: 'browser sdk' });
    // One gateway as deployed, one whose key may send one request a second (for the 429).
    [gateway, limited, small, consumer] = await Promise.all([
      runGateway(),
      runGateway({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '1' }),
      runGateway({ MAX_EVENTS_PER_REQUEST: '2' }),
      runConsumer(),
    ]);
    front = new RecordingProxy(gateway.url);
    limitedFront = new RecordingProxy(limited.url);
    smallFront = new RecordingProxy(small.url);
    await Promise.all([front.start(), limitedFront.start(), smallFront.start()]);
    site = createServer((req, res) => {
      if (req.url === '/favicon.ico') return void res.writeHead(204).end();
      const name = /^\/shop\/([\w-]+)/.exec(req.url ?? '')?.[1];
      const html =
        name !== undefined
          ? pages.get(name)
          : req.url === '/away'
            ? '<!doctype html><title>Away</title><h1>Away</h1>'
            : undefined;
      res.writeHead(html ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' }).end(html ?? 'not found');
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as { port: number }).port}`;
    browser = await launchChromium();
  });

  beforeEach(() => {
    front.seen.length = 0;
    limitedFront.seen.length = 0;
    smallFront.seen.length = 0;
  });

  afterEach(() => {
    expect(pageErrors.splice(0), 'errors in the pages').to.deep.equal([]);
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => site?.close(resolve));
    await Promise.all([front?.stop(), limitedFront?.stop(), smallFront?.stop()]);
    await Promise.all([gateway?.stop(), limited?.stop(), small?.stop(), consumer?.stop()]);
  });

  it('serves /sdk/v1.js from the gateway: JavaScript, cached, at most 6 KB gzipped', async () => {
    const url = new URL(`${gateway.url}/sdk/v1.js`);
    const get = (headers: Record<string, string>) =>
      new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
        httpRequest(url, { headers }, (res) => {
          const parts: Buffer[] = [];
          res.on('data', (d: Buffer) => parts.push(d));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts) }));
        })
          .on('error', reject)
          .end();
      });
    const plain = await get({});
    const gz = await get({ 'accept-encoding': 'gzip, deflate, br' });
    expect(gz.status).to.equal(200);
    expect(gz.headers['content-type']).to.equal('text/javascript; charset=utf-8');
    expect(gz.headers['content-encoding']).to.equal('gzip');
    expect(gz.headers['cache-control']).to.equal('public, max-age=86400');
    expect(gz.headers['access-control-allow-origin']).to.equal('*');
    // What a browser downloads: the gzipped bytes on the wire.
    expect(gz.body.length, 'gzipped size of /sdk/v1.js').to.be.at.most(6 * 1024);
    expect(gunzipSync(gz.body).equals(plain.body)).to.equal(true);
    expect(plain.body.equals(readFileSync('sdk/browser/dist/v1.js'))).to.equal(true);
    const again = await get({ 'accept-encoding': 'gzip', 'if-none-match': String(gz.headers.etag) });
    expect(again.status).to.equal(304);
    expect(plain.headers.etag).to.not.equal(gz.headers.etag);
    expect((await get({ 'accept-encoding': 'gzip;q=0' })).headers['content-encoding']).to.equal(undefined);
  });

  it('delivers events tracked just before the page navigates away, with no CORS preflight', async () => {
    pages.set('leave', shopPage(front.url, { flushIntervalMs: 60_000, batchSize: 1000 }));
    const ctx = await browser.newContext();
    try {
      const page = await open(ctx, 'leave');
      // The SDK's timer waits a minute: only the page's leaving can send them.
      const ids = await track(page, 'add_to_cart', 5);
      await page.getByRole('link', { name: 'away' }).click();
      await page.waitForURL(`${siteUrl}/away`);
      await storedOnce(ids);
      const seen = front.events();
      expect(seen.map((x) => x.method)).to.not.include('OPTIONS');
      for (const x of seen) expect(x.headers['content-type']).to.match(/^text\/plain/);
      expect(seen.flatMap(idsIn)).to.include.members(ids);
    } finally {
      await ctx.close();
    }
  });

  for (const locks of [true, false]) {
    it(`keeps events tracked while the gateway is unreachable, and delivers them after a reload${locks ? '' : ' (a browser without Web Locks)'}`, async () => {
      pages.set('offline', shopPage(front.url, { flushIntervalMs: 100, retryMinMs: 100, retryMaxMs: 500 }));
      const ctx = await browser.newContext();
      if (!locks) await withoutWebLocks(ctx);
      const net = outage(ctx);
      try {
        const page = await open(ctx, 'offline');
        expect(
          await page.evaluate(() => (globalThis as unknown as { navigator: { locks?: unknown } }).navigator.locks),
          'navigator.locks',
        ).to.satisfy((l: unknown) => (l === undefined) !== locks);
        await net.start();
        const ids = await track(page, 'page_view', 6);
        await eventually('two refused attempts', () => (net.refused >= 2 ? true : undefined));
        expect(await stats(page)).to.deep.equal({ queued: 6, dropped: 0 });
        // The gateway is still unreachable while the page reloads: the new page finds them.
        await page.reload();
        await page.waitForFunction(
          () => typeof (globalThis as unknown as { Telemetry: { stats?: unknown } }).Telemetry.stats === 'function',
        );
        expect(await stats(page)).to.deep.equal({ queued: 6, dropped: 0 });
        const before = net.refused;
        await eventually('the new page retries', () => (net.refused > before ? true : undefined));
        await net.end();
        await storedOnce(ids);
        await eventually('the queue empties', async () => ((await stats(page)).queued === 0 ? true : undefined));
      } finally {
        await ctx.close();
      }
    });
  }

  it('never sends one event from two tabs of the same site', async () => {
    pages.set('tabs', shopPage(front.url, { flushIntervalMs: 50, batchSize: 4 }));
    const ctx = await browser.newContext();
    try {
      const a = await open(ctx, 'tabs');
      const b = await open(ctx, 'tabs');
      // Both tabs track at once into the one localStorage of the site, in small steps.
      const tracked: string[] = [];
      for (let round = 0; round < 10; round++) {
        const [x, y] = await Promise.all([track(a, 'page_view', 3), track(b, 'add_to_cart', 3)]);
        tracked.push(...x, ...y);
      }
      await storedOnce(tracked);
      await eventually('both queues empty', async () =>
        (await stats(a)).queued + (await stats(b)).queued === 0 ? true : undefined,
      );
      const sent = front.events().flatMap(idsIn);
      expect(sent.length, 'events sent, counting every copy').to.equal(tracked.length);
      expect(new Set(sent)).to.deep.equal(new Set(tracked));
    } finally {
      await ctx.close();
    }
  });

  it("leaves a live tab's events to that tab, and takes over the events of a tab that closed", async () => {
    pages.set('locks', shopPage(front.url, { flushIntervalMs: 50, retryMinMs: 200, retryMaxMs: 400 }));
    const ctx = await browser.newContext();
    const net = outage(ctx);
    try {
      const a = await open(ctx, 'locks');
      await net.start();
      const first = await track(a, 'page_view', 5);
      await eventually('a refused attempt', () => (net.refused >= 1 ? true : undefined));
      // B starts with A's five unsent events in the storage they share; A is alive, so they stay A's.
      const b = await open(ctx, 'locks');
      expect(await stats(b)).to.deep.equal({ queued: 5, dropped: 0 });
      await net.end();
      await storedOnce(first);
      const sent = front.events().flatMap(idsIn);
      expect(sent.filter((id) => first.includes(id)).length, 'copies sent of the first five').to.equal(5);

      // A closes with events it could not send; B takes them over and delivers them.
      await net.start();
      const before = net.refused;
      const orphans = await track(a, 'add_to_cart', 3);
      await eventually('a refused attempt', () => (net.refused > before ? true : undefined));
      await a.close();
      await net.end();
      await storedOnce(orphans);
      await eventually('B has nothing left', async () => ((await stats(b)).queued === 0 ? true : undefined));
    } finally {
      await ctx.close();
    }
  });

  it('honours a 429: no request before its Retry-After, then delivers everything', async () => {
    pages.set(
      'limited',
      shopPage(limitedFront.url, { flushIntervalMs: 10, batchSize: 1, retryMinMs: 20, retryMaxMs: 50 }),
    );
    const ctx = await browser.newContext();
    try {
      const page = await open(ctx, 'limited');
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push(...(await track(page, 'checkout', 1)));
      await storedOnce(ids);
      const seen = limitedFront.events();
      const refusals = seen.filter((x) => x.status === 429);
      expect(refusals.length, '429 answers').to.be.greaterThan(0);
      for (const r of refusals) {
        expect(r.answerHeaders['retry-after']).to.equal('1');
        const next = seen.find((x) => x.at >= r.answeredAt && x !== r);
        // Both times are the proxy's: the next request came at least Retry-After after the answer.
        expect(next, 'a request after the 429').to.not.equal(undefined);
        expect(next!.at - r.answeredAt, 'ms from a 429 to the next request').to.be.at.least(950);
      }
    } finally {
      await ctx.close();
    }
  });

  it('waits while the browser is offline and sends when it is online again', async () => {
    pages.set('navigator-offline', shopPage(front.url, { flushIntervalMs: 20, retryMinMs: 60_000 }));
    const ctx = await browser.newContext();
    try {
      const page = await open(ctx, 'navigator-offline');
      await ctx.setOffline(true);
      const ids = await track(page, 'page_view', 3);
      // Offline, flush sends nothing and keeps everything; a minute of backoff would follow a failed attempt.
      await page.evaluate(() => (globalThis as unknown as { Telemetry: { flush(): Promise<void> } }).Telemetry.flush());
      expect(await stats(page)).to.deep.equal({ queued: 3, dropped: 0 });
      expect(front.events().length).to.equal(0);
      await ctx.setOffline(false);
      await storedOnce(ids);
      expect(front.events().length, 'requests').to.equal(1);
    } finally {
      await ctx.close();
    }
  });

  it('sends fewer events per request when the gateway refuses a batch as too large (413), losing none', async () => {
    pages.set('small', shopPage(smallFront.url, { flushIntervalMs: 20, batchSize: 7 }));
    const ctx = await browser.newContext();
    try {
      const page = await open(ctx, 'small');
      const ids = await track(page, 'add_to_cart', 7);
      await storedOnce(ids);
      const seen = smallFront.events();
      expect(seen[0]!.status, 'the first request, 7 events').to.equal(413);
      expect(seen.filter((x) => x.status === 200).every((x) => idsIn(x).length <= 2)).to.equal(true);
      expect(await page.evaluate(() => (globalThis as unknown as { refused: unknown[] }).refused)).to.deep.equal([]);
    } finally {
      await ctx.close();
    }
  });

  it('drops what the gateway refuses for good (a 4xx) without retrying, and tells the page', async () => {
    const ctx = await browser.newContext();
    try {
      pages.set('badkey', shopPage(front.url, { key: 'tk_not_a_key', flushIntervalMs: 20 }));
      const page = await open(ctx, 'badkey');
      const ids = await track(page, 'page_view', 3);
      const refused = await eventually('the refusal reported', () =>
        page.evaluate(() => {
          const r = (globalThis as unknown as { refused: { status: number; code: string; events: { id: string }[] }[] })
            .refused;
          return r.length > 0 ? r : undefined;
        }),
      );
      expect(refused[0]!.status).to.equal(401);
      expect(refused[0]!.code).to.equal('INVALID_CREDENTIALS');
      expect(refused.flatMap((r) => r.events.map((e) => e.id))).to.deep.equal(ids);
      expect((await stats(page)).queued).to.equal(0);
      // An invalid event never leaves the page.
      const invalid = await page.evaluate(() => {
        const t = (globalThis as unknown as { Telemetry: { track(c: string, p: object): string | undefined } })
          .Telemetry;
        return t.track('not a category!', {});
      });
      expect(invalid).to.equal(undefined);
      // Nothing is left to retry: flush sends nothing more.
      await page.evaluate(() => (globalThis as unknown as { Telemetry: { flush(): Promise<void> } }).Telemetry.flush());
      expect(front.events().length, 'requests').to.equal(1);
      const codes = await page.evaluate(() =>
        (globalThis as unknown as { refused: { code: string }[] }).refused.map((r) => r.code),
      );
      expect(codes).to.deep.equal(['INVALID_CREDENTIALS', 'INVALID_EVENT']);
    } finally {
      await ctx.close();
    }
  });

  /** The identity columns of the events `ids` in ClickHouse, by client id (once each: storedOnce first). */
  async function identityOf(
    ids: string[],
  ): Promise<Map<string, { protocol: string; anonymous: string; user: string }>> {
    await storedOnce(ids);
    const ch = adminClickHouse();
    try {
      const r = await ch.query({
        query: `SELECT client_event_id AS id, protocol, anonymous_id AS anonymous, user_id AS user
                FROM ${testStack().database}.events FINAL
                WHERE tenant_id = ${sqlString(tenantId)} AND client_event_id IN (${sqlStringList(ids)})`,
        format: 'JSONEachRow',
      });
      const rows = await r.json<{ id: string; protocol: string; anonymous: string; user: string }>();
      return new Map(rows.map(({ id, ...rest }) => [id, rest]));
    } finally {
      await ch.close();
    }
  }

  function callSdk(page: Page, call: 'identify' | 'reset', arg?: string): Promise<void> {
    return page.evaluate(
      ({ call, arg }) => {
        const t = (globalThis as unknown as { Telemetry: Record<string, (a?: string) => void> }).Telemetry;
        t[call]!(arg);
      },
      { call, arg },
    );
  }

  it('fills anonymous_id (kept across visits) and user_id (identify, until reset), as Segment and PostHog do', async () => {
    // identify() before the SDK arrived: the snippet queues it, in order with the tracks.
    pages.set(
      'identity',
      shopPage(front.url, { flushIntervalMs: 20 }).replace(
        '</script></head>',
        "Telemetry.identify('early-user');</script></head>",
      ),
    );
    pages.set('identity-next', shopPage(front.url, { flushIntervalMs: 20 }));
    const ctx = await browser.newContext();
    try {
      let page = await open(ctx, 'identity');
      const early = await track(page, 'page_view', 2);
      await callSdk(page, 'reset');
      const anonymous = await track(page, 'page_view', 2);
      await callSdk(page, 'identify', 'user-42');
      const known = await track(page, 'add_to_cart', 2);
      // The next visit (a new page of the site) is the same visitor, still known.
      await eventually('all sent', async () => ((await stats(page)).queued === 0 ? true : undefined));
      await page.close();
      page = await open(ctx, 'identity-next');
      const again = await track(page, 'checkout', 1);
      // A control character is refused: the user id stays, onError is told.
      await callSdk(page, 'identify', 'bad\nuser');
      const still = await track(page, 'checkout', 1);
      await callSdk(page, 'reset');
      const fresh = await track(page, 'page_view', 1);
      const all = [...early, ...anonymous, ...known, ...again, ...still, ...fresh];
      const got = await identityOf(all);
      const of = (ids: string[]) => ids.map((id) => got.get(id));
      expect(new Set(all.map((id) => got.get(id)?.protocol))).to.deep.equal(new Set(['telemetry']));
      const first = got.get(early[0]!)!.anonymous;
      expect(first).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(of(early)).to.deep.equal(
        early.map(() => ({ protocol: 'telemetry', anonymous: first, user: 'early-user' })),
      );
      // reset(): a new visitor, not known.
      const second = got.get(anonymous[0]!)!.anonymous;
      expect(second).to.not.equal(first);
      expect(of(anonymous)).to.deep.equal(
        anonymous.map(() => ({ protocol: 'telemetry', anonymous: second, user: '' })),
      );
      const user42 = { protocol: 'telemetry', anonymous: second, user: 'user-42' };
      expect(of([...known, ...again, ...still])).to.deep.equal([...known, ...again, ...still].map(() => user42));
      const third = got.get(fresh[0]!)!;
      expect(third.user).to.equal('');
      expect([first, second]).to.not.include(third.anonymous);
      expect(
        await page.evaluate(() =>
          (globalThis as unknown as { refused: { code: string }[] }).refused.map((r) => r.code),
        ),
      ).to.deep.equal(['INVALID_USER_ID']);
      // Kept in localStorage only: no cookie.
      expect(await ctx.cookies()).to.deep.equal([]);
      const stored = await page.evaluate(() =>
        Object.keys(localStorage).filter((k) => /^tlm1\.[0-9a-f]{8}\.[au]$/.test(k)),
      );
      expect(stored.map((k) => k.slice(-1))).to.deep.equal(['a']);
    } finally {
      await ctx.close();
    }
  });

  it("keeps no visitor id with persistence: 'memory': a new anonymous id each page load", async () => {
    pages.set('memory', shopPage(front.url, { flushIntervalMs: 20, persistence: 'memory' }));
    const ctx = await browser.newContext();
    try {
      const page = await open(ctx, 'memory');
      const a = await track(page, 'page_view', 2);
      await page.reload();
      await page.waitForFunction(
        () => typeof (globalThis as unknown as { Telemetry: { stats?: unknown } }).Telemetry.stats === 'function',
      );
      const b = await track(page, 'page_view', 1);
      const got = await identityOf([...a, ...b]);
      expect(got.get(a[0]!)!.anonymous).to.equal(got.get(a[1]!)!.anonymous);
      expect(got.get(a[0]!)!.anonymous).to.match(/^[0-9a-f-]{36}$/);
      expect(got.get(b[0]!)!.anonymous).to.match(/^[0-9a-f-]{36}$/);
      expect(got.get(b[0]!)!.anonymous).to.not.equal(got.get(a[0]!)!.anonymous);
      expect(
        await page.evaluate(() => Object.keys(localStorage).filter((k) => /^tlm1\.[0-9a-f]{8}\.[au]$/.test(k))),
      ).to.deep.equal([]);
    } finally {
      await ctx.close();
    }
  });

  it('keeps at most maxQueuedEvents, dropping the oldest and counting them', async () => {
    pages.set('bounded', shopPage(front.url, { flushIntervalMs: 20, retryMinMs: 50, maxQueuedEvents: 5 }));
    const ctx = await browser.newContext();
    const net = outage(ctx);
    try {
      const page = await open(ctx, 'bounded');
      await net.start();
      const ids = await track(page, 'page_view', 8);
      expect(await stats(page)).to.deep.equal({ queued: 5, dropped: 3 });
      await net.end();
      await storedOnce(ids.slice(3));
      const ch = adminClickHouse();
      try {
        const r = await ch.query({
          query: `SELECT count() AS n FROM ${testStack().database}.events WHERE tenant_id = ${sqlString(tenantId)}
                  AND client_event_id IN (${sqlStringList(ids.slice(0, 3))})`,
          format: 'JSONEachRow',
        });
        expect(await r.json()).to.deep.equal([{ n: '0' }]);
      } finally {
        await ch.close();
      }
    } finally {
      await ctx.close();
    }
  });
});
