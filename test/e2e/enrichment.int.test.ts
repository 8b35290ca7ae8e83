import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { DEFAULT_TENANT } from '@telemetry/contract';
import { sqlString, type ClickHouseClient } from '@telemetry/platform';
import { LOCAL_LAYOUT, createTenant, eventsPerMinuteSql, issueKey, type EventRow } from '@telemetry/store';
import {
  adminClickHouse,
  adminRegistry,
  apiCall,
  eventually,
  newKey,
  produce,
  runGateway,
  runConsumer,
  runQuery,
  selectRows,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { UA } from '../support/user-agents.js';

/**
 * Enrichment in the stream consumer (docs/enrichment.md), on real Kafka and ClickHouse:
 * event messages as the gateway writes them (request_ip, request_user_agent, ip_storage)
 * are produced to the events topic, and the rows land with their place, browser, OS,
 * device and is_bot, the address kept as the key says, and the rollup counting bots
 * apart from humans. The public addresses below are values in messages only: nothing is
 * ever sent to them.
 */
describe('event enrichment in the consumer (real Kafka and ClickHouse)', function () {
  this.timeout(60_000);
  let consumer: Running;
  let ch: ClickHouseClient;
  const db = (): string => testStack().database;

  before(async () => {
    consumer = await runConsumer();
    ch = adminClickHouse();
  });

  after(async () => {
    await consumer?.stop();
    await ch?.close();
  });

  /** A message as the gateway publishes it, received a moment ago. */
  const message = (s: string, c: string, extra: Record<string, unknown>): Record<string, unknown> =>
    messageOf(s, c, extra);
  function messageOf(source: string, category: string, extra: Record<string, unknown>): Record<string, unknown> {
    return {
      v: 1,
      event_id: randomUUID(),
      key_id: 'k-enrich',
      tenant_id: DEFAULT_TENANT,
      source,
      category,
      payload: {},
      received_at: new Date().toISOString(),
      ...extra,
    };
  }

  /** The columns these tests read (the row type the consumer inserts). */
  type Row = Pick<
    EventRow,
    | 'category'
    | 'client_ip'
    | 'user_agent'
    | 'geo_country'
    | 'geo_region'
    | 'geo_city'
    | 'browser'
    | 'browser_version'
    | 'os'
    | 'os_version'
    | 'device_type'
    | 'is_bot'
  >;

  function rowsOf(source: string, n: number): Promise<Row[]> {
    return eventually(`${n} rows of ${source}`, async () => {
      const rows = await selectRows<Row>(
        ch,
        `SELECT category, client_ip, user_agent, geo_country, geo_region, geo_city, browser, browser_version,
                os, os_version, device_type, is_bot
         FROM ${db()}.events FINAL WHERE source = ${sqlString(source)} ORDER BY category`,
      );
      return rows.length >= n ? rows : undefined;
    });
  }

  it('lands a Chrome visit from a public address with its country, browser and OS, the address truncated; none keeps no address', async () => {
    const source = uid('enrich');
    await produce(testStack().eventsTopic, [
      message(source, 'a-view', { request_ip: '8.8.8.8', request_user_agent: UA.chromeDesktop }),
      message(source, 'b-none', { request_ip: '8.8.8.8', request_user_agent: UA.chromeDesktop, ip_storage: 'none' }),
      message(source, 'c-full-v6', {
        request_ip: '2001:4860:4860::8888',
        request_user_agent: UA.mobileSafari,
        ip_storage: 'full',
      }),
      // The protocol's own address and user agent over the request's (a server-side call for a browser).
      message(source, 'd-protocol', {
        client_ip: '8.8.4.4',
        user_agent: UA.mobileSafari,
        request_ip: '127.0.0.1',
        request_user_agent: 'node',
      }),
      message(source, 'e-loopback', { request_ip: '127.0.0.1' }),
    ]);
    const rows = await rowsOf(source, 5);
    const by = new Map(rows.map((r) => [r.category, r]));
    expect(by.get('a-view')).to.deep.include({
      client_ip: '8.8.8.0',
      user_agent: UA.chromeDesktop,
      geo_country: 'US',
      browser: 'Chrome',
      browser_version: '120.0.0.0',
      os: 'Windows',
      device_type: 'desktop',
      is_bot: 0,
    });
    expect(by.get('a-view')!.geo_region).to.not.equal('');
    // ip_storage none: no address at all, but its place was looked up before it was dropped.
    expect(by.get('b-none')).to.deep.include({ client_ip: '', geo_country: 'US', browser: 'Chrome' });
    const v6 = by.get('c-full-v6')!;
    expect(v6).to.deep.include({
      client_ip: '2001:4860:4860::8888',
      browser: 'Safari',
      os: 'iOS',
      device_type: 'mobile',
    });
    expect(v6.geo_country).to.match(/^[A-Z]{2}$/);
    expect(by.get('d-protocol')).to.deep.include({
      client_ip: '8.8.4.0',
      user_agent: UA.mobileSafari,
      geo_country: 'US',
      os: 'iOS',
    });
    // A loopback address is nowhere, and an event without a user agent has no device.
    expect(by.get('e-loopback')).to.deep.include({
      client_ip: '127.0.0.0',
      geo_country: '',
      user_agent: '',
      device_type: '',
      is_bot: 0,
    });
  });

  it("through the gateway: a trusted proxy's X-Forwarded-For lands with its country, browser and OS, truncated; an untrusted peer's is ignored", async () => {
    // Two gateways: one behind a trusted proxy (loopback, as a load balancer would be), one
    // trusting nobody. 8.8.8.8 is a header value only: nothing is sent to it.
    const key = await newKey({ kind: 'telemetry', name: uid('enrich-key') });
    const [trusted, untrusted] = await Promise.all([
      runGateway({ TRUSTED_PROXIES: '127.0.0.1/8' }),
      runGateway({ TRUSTED_PROXIES: '' }),
    ]);
    try {
      const source = uid('through');
      const send = async (url: string, category: string, ua: string): Promise<void> => {
        const res = await fetch(`${url}/api/telemetry/events`, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            'X-Access-Key': key,
            'X-Forwarded-For': '8.8.8.8',
            'User-Agent': ua,
          },
          body: JSON.stringify({ events: [{ source, category, payload: {} }] }),
        });
        expect(res.status, await res.text()).to.equal(200);
      };
      await send(trusted.url, 'a-trusted', UA.chromeDesktop);
      await send(untrusted.url, 'b-untrusted', UA.chromeDesktop);
      await send(trusted.url, 'c-crawler', UA.googlebot);
      const by = new Map((await rowsOf(source, 3)).map((r) => [r.category, r]));
      expect(by.get('a-trusted')).to.deep.include({
        client_ip: '8.8.8.0',
        geo_country: 'US',
        browser: 'Chrome',
        os: 'Windows',
        device_type: 'desktop',
        is_bot: 0,
      });
      // The header from a peer nobody trusts is ignored: the connection's address (loopback: nowhere).
      expect(by.get('b-untrusted')).to.deep.include({
        client_ip: '127.0.0.0',
        geo_country: '',
        browser: 'Chrome',
        is_bot: 0,
      });
      expect(by.get('c-crawler')).to.deep.include({ client_ip: '8.8.8.0', device_type: 'bot', is_bot: 1 });
    } finally {
      await Promise.all([trusted.stop(), untrusted.stop()]);
    }
  });

  it("flags a crawler's event is_bot, and the rollup counts it apart from humans", async () => {
    const source = uid('bots');
    const tenant = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const message = (s: string, c: string, extra: Record<string, unknown>): Record<string, unknown> =>
      messageOf(s, c, { tenant_id: tenant, ...extra });
    /** The consumer's consumer_events_enriched_total by is_bot (the dashboard's bot panels). */
    const enriched = async (): Promise<[number, number]> => {
      const m = await (await fetch(`${consumer.url}/metrics`)).text();
      const of = (bot: string): number =>
        Number(new RegExp(`^consumer_events_enriched_total\\{is_bot="${bot}"[^}]*\\} (\\d+)`, 'm').exec(m)?.[1] ?? 0);
      return [of('0'), of('1')];
    };
    const before = await enriched();
    await produce(testStack().eventsTopic, [
      message(source, 'page_view', { request_ip: '66.249.66.1', request_user_agent: UA.googlebot }),
      message(source, 'page_view', { request_ip: '203.0.113.5', request_user_agent: UA.curl }),
      message(source, 'page_view', { request_ip: '8.8.8.8', request_user_agent: UA.chromeDesktop }),
      message(source, 'page_view', { request_ip: '8.8.8.8', request_user_agent: UA.mobileSafari }),
      message(source, 'page_view', { request_ip: '8.8.8.8', request_user_agent: UA.mobileSafari }),
    ]);
    const rows = await rowsOf(source, 5);
    expect(rows.filter((r) => r.is_bot === 1).map((r) => r.device_type)).to.deep.equal(['bot', 'bot']);
    expect(rows.find((r) => r.user_agent === UA.googlebot)).to.include({ browser: 'Googlebot', is_bot: 1 });
    const counted = await eventually('the events counted by is_bot', async () => {
      const [humans, bots] = await enriched();
      return humans - before[0] >= 3 && bots - before[1] >= 2 ? [humans - before[0], bots - before[1]] : undefined;
    });
    expect(counted).to.deep.equal([3, 2]);

    // Humans counted from the rollup, without a raw scan (docs/enrichment.md, "Counting humans").
    const counts = await eventually('the rollup', async () => {
      const got = await selectRows<{ is_bot: number; n: string }>(
        ch,
        `SELECT is_bot, uniqExactMerge(events) AS n FROM ${db()}.events_per_minute
         WHERE tenant_id = ${sqlString(tenant)} AND source = ${sqlString(source)}
         GROUP BY is_bot ORDER BY is_bot`,
      );
      return got.reduce((s, r) => s + Number(r.n), 0) === 5 ? got : undefined;
    });
    expect(counts.map((r) => [r.is_bot, Number(r.n)])).to.deep.equal([
      [0, 3],
      [1, 2],
    ]);
    // The query service's read of the rollup (GET /api/events/per-minute) merges both:
    // one row per minute, source and category, each event once.
    const now = Math.floor(Date.now() / 1000);
    const total = await selectRows<{ source: string; n: string }>(
      ch,
      eventsPerMinuteSql(db(), LOCAL_LAYOUT, tenant, now - 3600, now + 3600, 1000),
    );
    const ours = total.filter((r) => r.source === source);
    expect(ours.reduce((s, r) => s + Number(r.n), 0)).to.equal(5);
    expect(new Set(ours.map((r) => JSON.stringify(r))).size).to.equal(ours.length);

    // The same through the query service, with its bots filter.
    const key = (await issueKey(adminRegistry(), { tenantId: tenant, kind: 'api', name: 'a', scopes: ['events:read'] }))
      .key;
    const query = await runQuery();
    try {
      const count = async (bots?: string): Promise<{ status: number; n: number; text: string }> => {
        const r = await apiCall<{ minutes: { events: number }[] }>(
          query.url,
          key,
          'GET',
          `/api/events/per-minute${bots === undefined ? '' : `?bots=${bots}`}`,
        );
        const n = r.body.success ? r.body.data.minutes.reduce((s, m) => s + m.events, 0) : 0;
        return { status: r.status, n, text: r.text };
      };
      await eventually('key loaded', async () => ((await count()).status === 200 ? true : undefined));
      expect((await count()).n).to.equal(5);
      expect((await count('include')).n).to.equal(5);
      expect((await count('exclude')).n).to.equal(3);
      expect((await count('only')).n).to.equal(2);
      const bad = await count('humans');
      expect(bad.status).to.equal(400);
      expect(bad.text).to.contain('INVALID_PARAMETER').and.to.contain('bots');
    } finally {
      await query.stop();
    }
  });

  it('refuses to start with a GEOIP_DATABASE it cannot read, naming it', async () => {
    let failure: unknown;
    try {
      const c = await runConsumer({ GEOIP_DATABASE: '/nonexistent/GeoLite2-City.mmdb' });
      await c.stop();
    } catch (err) {
      failure = err;
    }
    expect(String(failure)).to.match(/GEOIP_DATABASE: cannot read \/nonexistent\/GeoLite2-City\.mmdb/);
  });
});
