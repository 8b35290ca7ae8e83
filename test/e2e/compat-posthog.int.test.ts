import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { sqlIdentifier, sqlString, sqlStringList } from '@telemetry/platform';
import { createTenant, issueKey } from '@telemetry/store';
import {
  adminClickHouse,
  adminRegistry,
  eventually,
  runConsumer,
  runGateway,
  selectRows,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';

interface Row {
  tenant_id: string;
  protocol: string;
  category: string;
  source: string;
  client_event_id: string;
  client_ts: string | null;
  sent_at: string | null;
  event_time: string;
  anonymous_id: string;
  user_id: string;
  client_ip: string;
  user_agent: string;
  payload: string;
}

/** ClickHouse's DateTime('UTC') text of an ISO time (whole seconds). */
const chTime = (iso: string): string => iso.slice(0, 19).replace('T', ' ');

/**
 * PostHog's capture API over raw HTTP against the real gateway, consumer and ClickHouse:
 * each route and encoding the pinned SDKs use lands where docs/compat.md says, once;
 * an oversized event gets PostHog's error and stores nothing; a key never crosses tenants.
 */
describe('compat: PostHog capture API (real Kafka and ClickHouse)', function () {
  this.timeout(120_000);
  let gateway: Running;
  let consumer: Running;
  let ch: ReturnType<typeof adminClickHouse>;
  const A = { tenant: '', key: '' };
  const B = { tenant: '', key: '' };

  const rowsOf = async (tenant: string, ids: string[]): Promise<Row[]> =>
    selectRows<Row>(
      ch,
      `SELECT tenant_id, protocol, category, source, client_event_id, client_ts, sent_at, event_time,
              anonymous_id, user_id, client_ip, user_agent, payload
       FROM ${sqlIdentifier(testStack().database)}.events FINAL
       WHERE tenant_id = ${sqlString(tenant)} AND client_event_id IN (${sqlStringList(ids)})
       ORDER BY client_event_id`,
    );
  const stored = (tenant: string, ids: string[], n = ids.length): Promise<Row[]> =>
    eventually(`${n} events of ${tenant} stored`, async () => {
      const rows = await rowsOf(tenant, ids);
      return rows.length === n ? rows : undefined;
    });
  const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${gateway.url}${path}`, { method: 'POST', body, headers });

  /** An event as posthog-js 1.449.2 makes it (identified, so with $anon_distinct_id on $identify). */
  const jsEvent = (key: string, event: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    uuid: randomUUID(),
    event,
    properties: {
      token: key,
      distinct_id: 'user-js-1',
      $device_id: 'device-js-1',
      $anon_distinct_id: 'device-js-1',
      $is_identified: true,
      $lib: 'web',
      $lib_version: '1.449.2',
      $raw_user_agent: 'Mozilla/5.0 (X11; Linux x86_64) Chrome/130',
      $ip: '198.51.100.7',
    },
    timestamp: new Date().toISOString(),
    ...extra,
  });
  /** An event as posthog-node and Python make it. */
  const serverEvent = (event: string, lib: string): Record<string, unknown> => ({
    uuid: randomUUID(),
    event,
    distinct_id: 'user-srv-1',
    properties: { $lib: lib, plan: 'pro' },
    timestamp: new Date().toISOString(),
  });

  before(async () => {
    [gateway, consumer] = await Promise.all([runGateway({ RATE_LIMIT_PER_SECOND: '0' }), runConsumer()]);
    ch = adminClickHouse();
    for (const [t, name] of [
      [A, 'posthog A'],
      [B, 'posthog B'],
    ] as const) {
      t.tenant = (await createTenant(adminRegistry(), `${name} ${uid()}`)).tenant_id;
      t.key = (await issueKey(adminRegistry(), { tenantId: t.tenant, kind: 'telemetry', name })).key;
    }
    await eventually('keys loaded', async () =>
      (await fetch(`${gateway.url}/array/${B.key}/config`)).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    await Promise.all([gateway?.stop(), consumer?.stop()]);
    await ch?.close();
  });

  it('every route and encoding the SDKs use lands in events with every field mapped', async () => {
    const hourAgo = (ms: number): string => new Date(Date.now() - 3_600_000 - ms).toISOString();
    // posthog-js: gzip-js (no header, no parameter), text/plain, {api_key, batch, sent_at}; a clock an hour slow.
    const identify = jsEvent(A.key, '$identify', { timestamp: hourAgo(5_000) });
    let res = await post('/e/', gzipSync(JSON.stringify({ api_key: A.key, batch: [identify], sent_at: hourAgo(0) })), {
      'Content-Type': 'text/plain',
    });
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ status: 1 });
    // posthog-js over sendBeacon: the data= form, base64.
    const beacon = jsEvent(A.key, '$pageleave');
    const b64 = Buffer.from(JSON.stringify({ api_key: A.key, batch: [beacon] })).toString('base64');
    res = await post('/e/?compression=base64', `data=${encodeURIComponent(b64)}`, {
      'Content-Type': 'application/x-www-form-urlencoded',
    });
    expect(res.status).to.equal(200);
    // posthog-node: /batch/, gzip by Content-Encoding.
    const node = serverEvent('order placed', 'posthog-node');
    res = await post(
      '/batch/',
      gzipSync(JSON.stringify({ api_key: A.key, batch: [node], sent_at: new Date().toISOString() })),
      {
        'Content-Type': 'application/json',
        'Content-Encoding': 'gzip',
      },
    );
    expect(res.status).to.equal(200);
    // Python: /batch/ JSON, microseconds and +00:00; a personless event.
    const py: Record<string, unknown> = {
      ...serverEvent('job ran', 'posthog-python'),
      timestamp: '2026-11-26T09:00:00.123456+00:00',
    };
    (py.properties as Record<string, unknown>).$process_person_profile = false;
    res = await post(
      '/batch',
      JSON.stringify({ api_key: A.key, batch: [py], sent_at: '2026-11-26T09:00:01.000000+00:00' }),
      {
        'Content-Type': 'application/json',
      },
    );
    expect(res.status).to.equal(200);
    // The other paths: one event on /capture, an array on /i/v0/e/, /i/v0/ai/batch/; `offset` and `_`.
    const single = jsEvent(A.key, 'single');
    const { timestamp: _t, ...offsetEvent } = jsEvent(A.key, 'offset', { offset: 2_000 });
    const ai = serverEvent('$ai_generation', 'posthog-node');
    const sentMs = Date.now();
    for (const [path, body] of [
      ['/capture/', single],
      [`/i/v0/e/?_=${sentMs}`, [offsetEvent]],
      ['/i/v0/ai/batch/', { api_key: A.key, batch: [ai] }],
    ] as const) {
      res = await post(path, JSON.stringify(body), { 'Content-Type': 'application/json' });
      expect(res.status, path).to.equal(200);
    }

    const all = [identify, beacon, node, py, single, offsetEvent, ai];
    const rows = await stored(
      A.tenant,
      all.map((e) => e.uuid as string),
    );
    const byId = new Map(rows.map((r) => [r.client_event_id, r]));
    const row = (e: Record<string, unknown>): Row => byId.get(e.uuid as string)!;

    const r1 = row(identify);
    expect(r1).to.include({
      tenant_id: A.tenant,
      protocol: 'posthog',
      category: '$identify',
      source: 'web',
      user_id: 'user-js-1',
      anonymous_id: 'device-js-1',
      // $ip, truncated to its /24: the key's ip_storage defaults to truncated (docs/enrichment.md).
      client_ip: '198.51.100.0',
      user_agent: 'Mozilla/5.0 (X11; Linux x86_64) Chrome/130',
      client_ts: chTime(identify.timestamp as string),
    });
    // The hour of skew is corrected: the event happened about 5 s ago.
    const age = Date.now() - Date.parse(`${r1.event_time.replace(' ', 'T')}Z`);
    expect(age).to.be.within(2_000, 60_000);
    const payload = JSON.parse(r1.payload) as { properties: Record<string, unknown> };
    expect(payload.properties).not.to.have.property('token');
    expect(payload.properties.$lib_version).to.equal('1.449.2');

    expect(row(beacon)).to.include({ category: '$pageleave', user_id: 'user-js-1' });
    // posthog-node reports no $ip: the request's (loopback), to its /24.
    expect(row(node)).to.include({
      source: 'posthog-node',
      user_id: 'user-srv-1',
      anonymous_id: '',
      client_ip: '127.0.0.0',
    });
    expect(row(py)).to.include({
      source: 'posthog-python',
      user_id: '',
      anonymous_id: 'user-srv-1',
      client_ts: '2026-11-26 09:00:00',
      sent_at: '2026-11-26 09:00:01',
    });
    expect(row(single)).to.include({ category: 'single', sent_at: null });
    expect(row(offsetEvent)).to.include({
      sent_at: chTime(new Date(sentMs).toISOString()),
      client_ts: chTime(new Date(sentMs - 2_000).toISOString()),
    });
    expect(row(ai)).to.include({ category: '$ai_generation' });
  });

  it('a retry of the same batch is read once', async () => {
    const events = [jsEvent(A.key, 'retried'), jsEvent(A.key, 'retried')];
    const body = gzipSync(JSON.stringify({ api_key: A.key, batch: events, sent_at: new Date().toISOString() }));
    for (let i = 0; i < 2; i++)
      expect((await post('/e/', body, { 'Content-Type': 'text/plain' })).status).to.equal(200);
    const marker = jsEvent(A.key, 'marker');
    expect((await post('/e/', JSON.stringify([marker]))).status).to.equal(200);
    await stored(A.tenant, [marker.uuid as string]);
    const rows = await stored(
      A.tenant,
      events.map((e) => e.uuid as string),
    );
    expect(rows).to.have.length(2);
  });

  it("an oversized event answers PostHog's 413 and stores nothing of its batch", async () => {
    const small = jsEvent(A.key, 'beside the big one');
    const big = jsEvent(A.key, 'too big', {
      properties: { token: A.key, distinct_id: 'user-js-1', blob: 'x'.repeat(200 * 1024) },
    });
    const res = await post('/batch/', JSON.stringify({ api_key: A.key, batch: [small, big] }), {
      'Content-Type': 'application/json',
    });
    expect(res.status).to.equal(413);
    expect(await res.json()).to.deep.include({ type: 'validation_error', code: 'EVENT_TOO_LARGE' });
    const marker = jsEvent(A.key, 'after the big one');
    expect((await post('/e/', JSON.stringify([marker]))).status).to.equal(200);
    await stored(A.tenant, [marker.uuid as string]);
    expect(await rowsOf(A.tenant, [small.uuid as string, big.uuid as string])).to.deep.equal([]);
  });

  it('a key of tenant B lands in B only; a request carrying both keys is refused', async () => {
    const ofB = jsEvent(B.key, 'b event');
    expect((await post('/e/', JSON.stringify({ api_key: B.key, batch: [ofB] }))).status).to.equal(200);
    const [row] = await stored(B.tenant, [ofB.uuid as string]);
    expect(row!.tenant_id).to.equal(B.tenant);
    const mixed = jsEvent(B.key, 'mixed');
    const res = await post('/batch/', JSON.stringify({ api_key: A.key, batch: [mixed] }));
    expect(res.status).to.equal(401);
    expect(await res.json()).to.include({ type: 'authentication_error', code: 'INVALID_CREDENTIALS' });
    const marker = jsEvent(B.key, 'marker B');
    expect((await post('/e/', JSON.stringify([marker]))).status).to.equal(200);
    await stored(B.tenant, [marker.uuid as string]);
    expect(await rowsOf(A.tenant, [ofB.uuid as string, mixed.uuid as string])).to.deep.equal([]);
    expect(await rowsOf(B.tenant, [mixed.uuid as string])).to.deep.equal([]);
  });

  it('flags and the remote config answer for a real key, 401 for an unknown one', async () => {
    let res = await post('/flags/?v=2&config=true', JSON.stringify({ token: A.key, distinct_id: 'd' }));
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.include({ flags: {}, sessionRecording: false });
    res = await fetch(`${gateway.url}/array/${A.key}/config.js`);
    expect(res.status).to.equal(200);
    expect(await res.text()).to.include('_POSTHOG_REMOTE_CONFIG');
    res = await fetch(`${gateway.url}/array/tk_unknown/config`);
    expect(res.status).to.equal(401);
  });
});
