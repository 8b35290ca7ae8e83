import { expect } from 'chai';
import { type ClickHouseClient } from '@telemetry/platform';
import { revokeKey } from '@telemetry/store';
import {
  adminClickHouse,
  eventually,
  newKey,
  produce,
  runConsumer,
  runGateway,
  runQuery,
  testStack,
  uid,
  type Running,
  registerMonitors,
  adminRegistry,
} from '../support/fixtures.js';

/** End to end on real Kafka and ClickHouse: HTTP -> gateway -> Kafka -> consumer -> ClickHouse -> query service. */
describe('pipeline (real Kafka and ClickHouse)', () => {
  let gateway: Running;
  let consumer: Running;
  let query: Running;
  let ch: ClickHouseClient;
  let accessKey: string;
  let apiKey: string;
  const db = (): string => testStack().database;

  before(async () => {
    [gateway, consumer, query] = await Promise.all([runGateway(), runConsumer(), runQuery()]);
    ch = adminClickHouse();
    accessKey = await newKey({ kind: 'telemetry', name: 'e2e pixel' });
    apiKey = await newKey({ kind: 'api', name: 'e2e reader', scopes: ['checks:read'] });
    // The services reload keys every 200 ms in tests.
    await eventually('keys loaded', async () => {
      const r = await fetch(`${gateway.url}/api/telemetry/events`, {
        method: 'POST',
        headers: { 'x-access-key': accessKey, 'content-type': 'application/json' },
        body: '{}',
      });
      return r.status === 400 ? true : undefined;
    });
  });

  after(async () => {
    await Promise.all([gateway?.stop(), consumer?.stop(), query?.stop()]);
    await ch?.close();
  });

  async function rowsOfSource(source: string): Promise<Record<string, unknown>[]> {
    const rs = await ch.query({
      query: `SELECT event_id, key_id, source, category, payload, client_event_id, toUnixTimestamp(event_time) AS event_time,
                toUnixTimestamp(received_at) AS received_at
              FROM ${db()}.events WHERE source = '${source}' ORDER BY received_at LIMIT 1 BY event_id`,
      format: 'JSONEachRow',
    });
    return rs.json<Record<string, unknown>>();
  }

  it('stores every event posted over HTTP as a row in ClickHouse, exactly once as read', async () => {
    const source = uid('shop');
    const events = Array.from({ length: 25 }, (_, i) => ({
      source,
      category: 'page_view',
      payload: { n: i, url: `/p/${i}` },
    }));
    const res = await fetch(`${gateway.url}/api/telemetry/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-key': accessKey },
      body: JSON.stringify({ events }),
    });
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ success: true, data: null });

    const rows = await eventually('25 rows', async () => {
      const r = await rowsOfSource(source);
      return r.length >= 25 ? r : undefined;
    });
    expect(rows).to.have.length(25);
    const ns = rows.map((r) => (JSON.parse(r.payload as string) as { n: number }).n).sort((a, b) => a - b);
    expect(ns).to.deep.equal(Array.from({ length: 25 }, (_, i) => i));
    expect(rows[0]!.category).to.equal('page_view');
    // inserted_at is the insert time (ClickHouse 18.16 would store 1970 if it were left to the DEFAULT)
    const ins = await ch.query({
      query: `SELECT min(toUnixTimestamp(inserted_at)) AS t FROM ${db()}.events WHERE source = '${source}'`,
      format: 'JSONEachRow',
    });
    expect(Math.abs(Number((await ins.json<{ t: string }>())[0]!.t) - Date.now() / 1000)).to.be.lessThan(120);
    expect(rows[0]!.key_id).to.match(/^[0-9a-f]{16}$/);
    expect(accessKey).to.contain(String(rows[0]!.key_id));
  });

  it('accepts the key in the query string and a text/plain (sendBeacon) body', async () => {
    const source = uid('beacon');
    const res = await fetch(`${gateway.url}/api/telemetry/events?key=${accessKey}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8' },
      body: JSON.stringify({ events: [{ source, category: 'click', payload: {} }] }),
    });
    expect(res.status).to.equal(200);
    await eventually('beacon row', async () => ((await rowsOfSource(source)).length === 1 ? true : undefined));
    // The key given in the query string is in no log line.
    const secret = accessKey.split('_')[2]!;
    expect(gateway.logs.lines.join('\n')).not.to.contain(secret);
    expect(gateway.logs.lines.some((l) => l.includes('"path":"/api/telemetry/events"'))).to.equal(true);
  });

  it('stores a retried event with a client id once, and corrects the client clock', async () => {
    const source = uid('retry');
    const body = JSON.stringify({
      sent_at: '2030-01-01T00:00:10Z', // the client clock is far ahead
      events: [
        { source, category: 'order', id: 'order-42', timestamp: '2030-01-01T00:00:00Z', payload: { total: 10 } },
      ],
    });
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${gateway.url}/api/telemetry/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-key': accessKey },
        body,
      });
      expect(r.status).to.equal(200);
    }
    const rows = await eventually('retried row', async () => {
      const all = await ch.query({
        query: `SELECT count() AS n FROM ${db()}.events WHERE source = '${source}'`,
        format: 'JSONEachRow',
      });
      const n = Number((await all.json<{ n: string }>())[0]!.n);
      return n >= 3 ? rowsOfSource(source) : undefined;
    });
    expect(rows).to.have.length(1); // three rows stored, one as read
    expect(rows[0]!.client_event_id).to.equal('order-42');
    // event happened 10 s before the client sent it: event_time = received_at - 10
    expect(Number(rows[0]!.received_at) - Number(rows[0]!.event_time)).to.equal(10);
  });

  it('answers bad keys with 401 and bad bodies with 400 in the envelope, and accepts nothing', async () => {
    const source = uid('bad');
    const post = (headers: Record<string, string>, body: string): Promise<Response> =>
      fetch(`${gateway.url}/api/telemetry/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
    const good = JSON.stringify({ events: [{ source, category: 'c', payload: {} }] });
    const cases: [Record<string, string>, string, number, string][] = [
      [{}, good, 401, 'MISSING_CREDENTIALS'],
      [{ 'x-access-key': 'nope' }, good, 401, 'INVALID_CREDENTIALS'],
      [
        { 'x-access-key': accessKey.slice(0, -1) + (accessKey.endsWith('0') ? '1' : '0') },
        good,
        401,
        'INVALID_CREDENTIALS',
      ],
      [{ 'x-access-key': apiKey }, good, 401, 'INVALID_CREDENTIALS'],
      [{ 'x-access-key': accessKey }, '{"events":[', 400, 'INVALID_JSON'],
      [
        { 'x-access-key': accessKey },
        JSON.stringify({
          events: [
            { source, category: 'c', payload: {} },
            { source, payload: 1 },
          ],
        }),
        400,
        'VALIDATION_FAILED',
      ],
      [{ 'x-access-key': accessKey, 'content-type': 'application/xml' }, good, 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ];
    for (const [headers, body, status, code] of cases) {
      const r = await post(headers, body);
      const json = (await r.json()) as { success: boolean; code: string; error: string };
      expect([r.status, json.code], JSON.stringify(headers)).to.deep.equal([status, code]);
      expect(json.success).to.equal(false);
      expect(json.error).to.be.a('string').and.not.empty;
    }
    const r = await post(
      { 'x-access-key': accessKey },
      JSON.stringify({
        events: [
          { source, category: 'c', payload: {} },
          { source, payload: 1 },
        ],
      }),
    );
    const json = (await r.json()) as { details: { invalid_events: number[] } };
    expect(json.details.invalid_events).to.deep.equal([1]);
    // Only the valid-key, valid-body events count: none were sent here.
    const rs = await ch.query({
      query: `SELECT count() AS n FROM ${db()}.events WHERE source = '${source}'`,
      format: 'JSONEachRow',
    });
    expect(Number((await rs.json<{ n: string }>())[0]!.n)).to.equal(0);
  });

  it('serves check results produced to the check-results topic, newest first, duplicates hidden', async () => {
    const monitor = uid('mon');
    await registerMonitors(monitor);
    const checks = [0, 1, 2].map((i) => ({
      id: `${monitor}-c${i}`,
      monitor_id: monitor,
      status: i === 1 ? 'down' : 'up',
      response_time: 100 + i + 0.5,
      status_code: i === 1 ? 500 : 200,
      created_at: `2026-11-2${i}T10:00:0${i}.250Z`,
    }));
    // Each check twice: Kafka delivers at least once.
    await produce(testStack().checksTopic, [...checks, ...checks]);
    const url = `${query.url}/api/monitors/${monitor}/checks`;
    const body = await eventually('3 checks', async () => {
      const r = await fetch(url, { headers: { authorization: `Bearer ${apiKey}` } });
      const j = (await r.json()) as { success: boolean; data: unknown[] };
      return r.status === 200 && j.data.length === 3 ? j : undefined;
    });
    expect(body.data).to.deep.equal(
      [...checks].reverse().map((c) => ({
        ...c,
        error: null,
        location: null,
        tls_days_left: null,
        detail: null,
        timings: null,
        screenshot: null,
        created_at: c.created_at.replace('.250Z', 'Z'),
      })),
    );
    // Both copies were delivered; stored rows hold each id (a background merge may
    // already have collapsed a copy), and the read pattern above showed each once. The
    // service may have shown them before ClickHouse had them (the hot tail reads Kafka).
    const stored = await eventually('3 ids in ClickHouse', async () => {
      const rs = await ch.query({
        query: `SELECT count() AS n, uniqExact(id) AS ids FROM ${db()}.checks WHERE monitor_id = '${monitor}'`,
        format: 'JSONEachRow',
      });
      const row = (await rs.json<{ n: string; ids: string }>())[0]!;
      return Number(row.ids) === 3 ? row : undefined;
    });
    expect(Number(stored.ids)).to.equal(3);
    expect(Number(stored.n)).to.be.within(3, 6);
  });

  it('guards the check history with API keys and scopes', async () => {
    await registerMonitors('m-1');
    const url = `${query.url}/api/monitors/m-1/checks`;
    const noScope = await newKey({ kind: 'api', name: 'no scope', scopes: ['monitors:read'] });
    const otherMonitor = await newKey({
      kind: 'api',
      name: 'other monitor',
      scopes: ['checks:read'],
      monitorIds: ['m-2'],
    });
    await eventually('new keys loaded', async () => {
      const r = await fetch(url, { headers: { authorization: `Bearer ${otherMonitor}` } });
      return r.status === 403 ? true : undefined;
    });
    const cases: [Record<string, string>, number, string][] = [
      [{}, 401, 'MISSING_CREDENTIALS'],
      [{ authorization: 'Basic abc' }, 401, 'INVALID_CREDENTIALS'],
      [{ authorization: `Bearer ${accessKey}` }, 401, 'INVALID_CREDENTIALS'],
      [{ authorization: `Bearer ${noScope}` }, 403, 'INSUFFICIENT_SCOPE'],
      [{ authorization: `Bearer ${otherMonitor}` }, 403, 'MONITOR_NOT_ALLOWED'],
    ];
    for (const [headers, status, code] of cases) {
      const r = await fetch(url, { headers });
      const j = (await r.json()) as { code: string; success: boolean };
      expect([r.status, j.code, j.success]).to.deep.equal([status, code, false]);
    }
    expect(
      (
        await fetch(url, { headers: { authorization: `Bearer ${apiKey}`, origin: 'https://evil.example' } })
      ).headers.get('access-control-allow-origin'),
    ).to.equal(null);
  });

  it('stops accepting a revoked key without a restart', async () => {
    const key = await newKey({ kind: 'telemetry', name: 'to revoke' });
    const post = (): Promise<Response> =>
      fetch(`${gateway.url}/api/telemetry/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-key': key },
        body: JSON.stringify({ events: [{ source: 's', category: 'c', payload: {} }] }),
      });
    await eventually('key accepted', async () => ((await post()).status === 200 ? true : undefined));
    expect(await revokeKey(adminRegistry(), key.split('_')[1]!)).to.equal(true);
    await eventually('key refused', async () => ((await post()).status === 401 ? true : undefined));
  });

  it('reports health, readiness and Prometheus metrics on every service', async () => {
    for (const svc of [gateway, consumer, query]) {
      expect((await fetch(`${svc.url}/healthz`)).status).to.equal(200);
      const ready = await fetch(`${svc.url}/readyz`);
      expect(ready.status, svc.url).to.equal(200);
      const metrics = await (await fetch(`${svc.url}/metrics`)).text();
      expect(metrics).to.contain('process_resident_memory_bytes');
    }
    expect(await (await fetch(`${gateway.url}/metrics`)).text()).to.match(
      /ingest_events_accepted_total\{[^}]*\} [1-9]/,
    );
    expect(await (await fetch(`${consumer.url}/metrics`)).text()).to.match(
      /consumer_rows_written_total\{table="events"[^}]*\} [1-9]/,
    );
  });
});
