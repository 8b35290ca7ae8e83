import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import type { ClickHouseClient } from '@telemetry/platform';
import { createTenant } from '@telemetry/store';
import {
  adminClickHouse,
  adminRegistry,
  eventually,
  newKey,
  runConsumer,
  runGateway,
  selectCount,
  selectRows,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';

interface Row {
  tenant_id: string;
  key_id: string;
  protocol: string;
  client_event_id: string;
  category: string;
  source: string;
  payload: string;
  client_ts: string | null;
  sent_at: string | null;
  event_time: string;
  received_at: string;
  anonymous_id: string;
  user_id: string;
  client_ip: string;
  user_agent: string;
}

const basic = (user: string): string => `Basic ${Buffer.from(`${user}:`).toString('base64')}`;

/**
 * Segment's HTTP Tracking API over raw HTTP against the real gateway, consumer and
 * ClickHouse: every field of docs/compat.md's table lands where it says, and what Segment
 * refuses stores nothing. (The real SDKs run in the clients' and browser owners' tests.)
 */
describe('Segment HTTP Tracking API (real Kafka and ClickHouse)', function () {
  this.timeout(120_000);
  let gateway: Running;
  let consumer: Running;
  let ch: ClickHouseClient;
  let db: string;
  let key: string;

  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
    });
    return { status: r.status, headers: r.headers, json: (await r.json()) as Record<string, unknown> };
  };
  const rowsOf = (ids: string[]): Promise<Row[]> =>
    selectRows<Row>(
      ch,
      `SELECT tenant_id, key_id, protocol, client_event_id, category, source, payload,
         toString(client_ts) AS client_ts, toString(sent_at) AS sent_at, toString(event_time) AS event_time,
         toString(received_at) AS received_at, anonymous_id, user_id, client_ip, user_agent
       FROM ${db}.events FINAL WHERE client_event_id IN (${ids.map((i) => `'${i}'`).join(',')})
       ORDER BY client_event_id`,
    );
  const landed = (ids: string[]): Promise<Row[]> =>
    eventually(`${ids.length} rows`, async () => {
      const rows = await rowsOf(ids);
      return rows.length === ids.length ? rows : undefined;
    });
  /** Nothing of `marker` is stored: checked after a later request of the same key has landed. */
  const noneWith = async (marker: string): Promise<void> => {
    const fence = uid('fence');
    expect(
      (await post('/v1/track', { event: 'fence', userId: 'u', messageId: fence }, { Authorization: basic(key) }))
        .status,
    ).to.equal(200);
    await landed([fence]);
    expect(
      await selectCount(ch, `SELECT count() AS n FROM ${db}.events WHERE position(payload, '${marker}') > 0`),
    ).to.equal(0);
  };

  before(async () => {
    db = testStack().database;
    [gateway, consumer] = await Promise.all([runGateway({ RATE_LIMIT_PER_SECOND: '0' }), runConsumer()]);
    ch = adminClickHouse();
    key = await newKey({ kind: 'telemetry', name: 'segment tests' });
    await eventually('key loaded', async () =>
      (await post('/v1/identify', { userId: 'warmup' }, { Authorization: basic(key) })).status === 200
        ? true
        : undefined,
    );
  });

  after(async () => {
    await Promise.all([gateway?.stop(), consumer?.stop()]);
    await ch?.close();
  });

  it('stores every field of the mapping table (a batch, the Basic key)', async () => {
    const [t, i, a] = [uid('trk'), uid('idf'), uid('als')];
    const context = {
      ip: '203.0.113.7',
      userAgent: 'Mozilla/5.0 (X11) Segment-test',
      library: { name: 'analytics-node-next', version: '3.1.0' },
    };
    const r = await post(
      '/v1/batch',
      {
        batch: [
          {
            type: 'track',
            event: 'Order Completed',
            messageId: t,
            userId: 'user-1',
            anonymousId: 'anon-1',
            originalTimestamp: '2026-01-02T03:04:05.000Z',
            timestamp: '2026-01-02T09:00:00.000Z',
            sentAt: '2026-01-02T03:04:06.000Z',
            properties: { total: 42 },
            context,
          },
          {
            type: 'identify',
            messageId: i,
            anonymousId: 'anon-2',
            timestamp: '2026-01-02T03:04:05.500Z',
            traits: { plan: 'pro' },
          },
          { type: 'alias', messageId: a, previousId: 'anon-1', userId: 'user-1' },
        ],
        sentAt: '2026-01-02T03:04:07.000Z',
        context: { library: { name: 'batch-library' } },
      },
      { Authorization: basic(key) },
    );
    expect(r.status, JSON.stringify(r.json)).to.equal(200);
    expect(r.json).to.deep.equal({ success: true, data: null });
    const [alias, identify, track] = await landed([a, i, t]);

    expect(track).to.deep.include({
      protocol: 'segment',
      client_event_id: t,
      category: 'Order Completed',
      source: 'analytics-node-next',
      anonymous_id: 'anon-1',
      user_id: 'user-1',
      // context.ip, truncated to its /24: the key's ip_storage defaults to truncated (docs/enrichment.md).
      client_ip: '203.0.113.0',
      user_agent: 'Mozilla/5.0 (X11) Segment-test',
    });
    // The columns keep seconds or milliseconds, as the ClickHouse version allows (docs/clickhouse.md).
    expect(track!.client_ts).to.match(/^2026-01-02 03:04:05(\.000)?$/);
    expect(track!.sent_at).to.match(/^2026-01-02 03:04:06(\.000)?$/);
    const payload = JSON.parse(track!.payload) as Record<string, unknown>;
    expect(payload).to.deep.include({ type: 'track', event: 'Order Completed', properties: { total: 42 } });
    // Corrected by the client clock's offset: received_at - sent_at after client_ts.
    const ms = (s: string) => Date.parse(`${s.replace(' ', 'T')}Z`);
    expect(ms(track!.event_time) - ms(track!.received_at)).to.be.within(-2000, 0);

    // identify: the type as category, `timestamp` without originalTimestamp, the batch's
    // sentAt and its context merged (the library is the source).
    expect(identify).to.deep.include({
      category: 'identify',
      source: 'batch-library',
      anonymous_id: 'anon-2',
      user_id: '',
    });
    expect(identify!.client_ts).to.match(/^2026-01-02 03:04:05(\.500)?$/);
    expect(identify!.sent_at).to.match(/^2026-01-02 03:04:07(\.000)?$/);
    expect(alias).to.deep.include({ category: 'alias', user_id: 'user-1' });
  });

  it('takes the key in the body, reads gzip and analytics.js short paths, and stores no write key', async () => {
    const [b, s] = [uid('body'), uid('short')];
    const gz = gzipSync(
      JSON.stringify({
        writeKey: key,
        batch: [{ type: 'page', name: 'Home', anonymousId: 'a', messageId: b, writeKey: key }],
      }),
    );
    expect((await post('/v1/batch', gz, { 'Content-Encoding': 'gzip' })).status).to.equal(200);
    const short = await post(
      '/v1/s',
      { type: 'screen', name: 'Main', userId: 'u', messageId: s, writeKey: key },
      { 'Content-Type': 'text/plain', Authorization: basic(key) },
    );
    expect(short.status).to.equal(200);
    const rows = await landed([b, s]);
    expect(rows.map((r) => r.category)).to.deep.equal(['page', 'screen']);
    for (const r of rows) expect(r.payload).to.not.include(key);
  });

  it('refuses two different keys (401) and an unknown key (401), storing nothing', async () => {
    const other = await newKey({ kind: 'telemetry', name: 'another' });
    const marker = uid('twokeys');
    const body = { batch: [{ type: 'track', event: marker, userId: 'u' }], writeKey: other };
    const both = await post('/v1/batch', body, { Authorization: basic(key) });
    expect([both.status, both.json.code]).to.deep.equal([401, 'INVALID_CREDENTIALS']);
    const unknown = await post('/v1/batch', { ...body, writeKey: 'tk_not_a_key' });
    expect(unknown.status).to.equal(401);
    await noneWith(marker);
  });

  it("answers 400 to a message over 32 KB and a request over 500 KB (Segment's limits), storing nothing", async () => {
    const marker = uid('oversize');
    const big = { type: 'track', event: marker, userId: 'u', properties: { x: 'x'.repeat(32 * 1024) } };
    const one = await post(
      '/v1/batch',
      { batch: [{ type: 'track', event: 'small', userId: 'u' }, big] },
      { Authorization: basic(key) },
    );
    expect([one.status, one.json.code]).to.deep.equal([400, 'EVENT_TOO_LARGE']);
    expect(one.json.details).to.deep.include({ invalid_events: [1], max: 32 * 1024 });
    const single = await post('/v1/track', big, { Authorization: basic(key) });
    expect([single.status, single.json.code]).to.deep.equal([400, 'EVENT_TOO_LARGE']);
    const each = { type: 'track', event: marker, userId: 'u', properties: { x: 'y'.repeat(30 * 1024) } };
    const batch = await post(
      '/v1/batch',
      { batch: Array.from({ length: 17 }, () => each) },
      { Authorization: basic(key) },
    );
    expect([batch.status, batch.json.code]).to.deep.equal([400, 'PAYLOAD_TOO_LARGE']);
    const invalid = await post(
      '/v1/batch',
      { batch: [{ type: 'track', userId: 'u', properties: { marker } }] },
      { Authorization: basic(key) },
    );
    expect([invalid.status, invalid.json.code]).to.deep.equal([400, 'VALIDATION_FAILED']);
    await noneWith(marker);
  });

  it("keeps tenants apart: tenant B's key lands in B only", async () => {
    const tenant = (await createTenant(adminRegistry(), `segment B ${uid()}`)).tenant_id;
    const keyB = await newKey({ tenantId: tenant, kind: 'telemetry', name: 'B' });
    const id = uid('tenantb');
    await eventually('B key loaded', async () =>
      (await post('/v1/track', { event: 'B', userId: 'u', messageId: id }, { Authorization: basic(keyB) })).status ===
      200
        ? true
        : undefined,
    );
    const [row] = await landed([id]);
    expect(row!.tenant_id).to.equal(tenant);
    expect(
      await selectCount(
        ch,
        `SELECT count() AS n FROM ${db}.events FINAL WHERE client_event_id = '${id}' AND tenant_id != '${tenant}'`,
      ),
    ).to.equal(0);
  });

  it('applies a key restricted to an origin to events and to the settings document', async () => {
    const shop = 'https://shop.example';
    const restricted = await newKey({ kind: 'telemetry', name: 'shop', allowedOrigins: [shop] });
    const [ok, marker] = [uid('origin'), uid('elsewhere')];
    await eventually('restricted key loaded', async () =>
      (
        await post(
          '/v1/t',
          { event: 'ok', userId: 'u', messageId: ok },
          { Authorization: basic(restricted), Origin: shop },
        )
      ).status === 200
        ? true
        : undefined,
    );
    await landed([ok]);
    const other = await post(
      '/v1/t',
      { event: marker, userId: 'u' },
      { Authorization: basic(restricted), Origin: 'https://evil.example' },
    );
    expect([other.status, other.json.code]).to.deep.equal([403, 'ORIGIN_NOT_ALLOWED']);
    const settings = (origin: string) =>
      fetch(`${gateway.url}/v1/projects/${restricted}/settings`, { headers: { Origin: origin } });
    const allowed = await settings(shop);
    expect(allowed.status).to.equal(200);
    expect(allowed.headers.get('access-control-allow-origin')).to.equal(shop);
    expect((await settings('https://evil.example')).status).to.equal(403);
    await noneWith(marker);
  });

  it("serves analytics.js's settings document pointing at this gateway; 401 for an unknown key", async () => {
    const r = await fetch(`${gateway.url}/v1/projects/${key}/settings`);
    expect(r.status).to.equal(200);
    const doc = (await r.json()) as {
      integrations: Record<string, Record<string, unknown>>;
      metrics: Record<string, unknown>;
    };
    expect(Object.keys(doc.integrations)).to.deep.equal(['Segment.io']);
    expect(doc.integrations['Segment.io']).to.deep.include({
      apiKey: key,
      apiHost: `${new URL(gateway.url).host}/v1`,
      protocol: 'http',
    });
    expect(doc.metrics.sampleRate).to.equal(0);
    // Where analytics.js then posts: {protocol}://{apiHost}/t
    const id = uid('via-settings');
    const api = doc.integrations['Segment.io']!;
    const sent = await fetch(`${String(api.protocol)}://${String(api.apiHost)}/t`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain', Authorization: basic(key) },
      body: JSON.stringify({ type: 'track', event: 'from settings', anonymousId: 'a', messageId: id, writeKey: key }),
    });
    expect(sent.status).to.equal(200);
    await landed([id]);
    expect((await fetch(`${gateway.url}/v1/projects/tk_unknown/settings`)).status).to.equal(401);
  });
});
