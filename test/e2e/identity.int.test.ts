import { expect } from 'chai';
import { LIMITS } from '@telemetry/contract';
import { sqlString, type ClickHouseClient } from '@telemetry/platform';
import {
  adminClickHouse,
  eventually,
  newKey,
  runConsumer,
  runGateway,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';

/**
 * Our own endpoint's identity fields (docs/api.md): `anonymous_id` and `user_id` of an
 * event, posted or sent by the pixel, land in the `events` columns of the same names, and
 * every event of our endpoint has `protocol` `telemetry` (docs/compat.md, "One mapping").
 * Real gateway, Kafka, consumer and ClickHouse.
 */
describe("our endpoint's identity fields (real Kafka and ClickHouse)", function () {
  this.timeout(60_000);
  let gateway: Running;
  let consumer: Running;
  let ch: ClickHouseClient;
  let key: string;

  before(async () => {
    [gateway, consumer] = await Promise.all([runGateway(), runConsumer()]);
    ch = adminClickHouse();
    key = await newKey({ kind: 'telemetry', name: 'e2e identity' });
    await eventually('key loaded', async () => {
      const r = await post({});
      return r.status === 400 ? true : undefined;
    });
  });

  after(async () => {
    await Promise.all([gateway?.stop(), consumer?.stop()]);
    await ch?.close();
  });

  function post(body: unknown): Promise<Response> {
    return fetch(`${gateway.url}/api/telemetry/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-key': key },
      body: JSON.stringify(body),
    });
  }

  type Row = {
    id: string;
    protocol: string;
    anonymous_id: string;
    user_id: string;
    client_ip: string;
    user_agent: string;
  };
  async function rowsOf(source: string, n: number): Promise<Row[]> {
    return eventually(`${n} rows of ${source}`, async () => {
      const r = await ch.query({
        query: `SELECT client_event_id AS id, protocol, anonymous_id, user_id, client_ip, user_agent
                FROM ${testStack().database}.events FINAL WHERE source = ${sqlString(source)} ORDER BY id`,
        format: 'JSONEachRow',
      });
      const rows = await r.json<Row>();
      return rows.length >= n ? rows : undefined;
    });
  }

  it('stores anonymous_id and user_id of posted events in their columns, with protocol telemetry', async () => {
    const source = uid('identity');
    const long = 'ü'.repeat(LIMITS.maxIdentityLength);
    const res = await post({
      events: [
        { source, category: 'page_view', payload: {}, id: 'a-anonymous', anonymous_id: 'anon-1' },
        { source, category: 'login', payload: {}, id: 'b-known', anonymous_id: 'anon-1', user_id: 'user@example.com' },
        { source, category: 'order', payload: {}, id: 'c-user-only', user_id: 'Kunde 42 ✓' },
        { source, category: 'page_view', payload: {}, id: 'd-none' },
        // The longest allowed: 256 characters (code points), 512 bytes.
        { source, category: 'page_view', payload: {}, id: 'e-longest', anonymous_id: long, user_id: long },
      ],
    });
    expect(res.status, await res.clone().text()).to.equal(200);
    const rows = await rowsOf(source, 5);
    // The request's address (loopback, kept to its /24 by the key's default ip_storage) and
    // Node's fetch's User-Agent: no protocol reports them here (docs/enrichment.md).
    const blank = { protocol: 'telemetry', client_ip: '127.0.0.0', user_agent: 'node' };
    expect(rows).to.deep.equal([
      { id: 'a-anonymous', ...blank, anonymous_id: 'anon-1', user_id: '' },
      { id: 'b-known', ...blank, anonymous_id: 'anon-1', user_id: 'user@example.com' },
      { id: 'c-user-only', ...blank, anonymous_id: '', user_id: 'Kunde 42 ✓' },
      { id: 'd-none', ...blank, anonymous_id: '', user_id: '' },
      { id: 'e-longest', ...blank, anonymous_id: long, user_id: long },
    ]);
  });

  it('takes anonymous_id and user_id as pixel parameters too', async () => {
    const source = uid('pixel-identity');
    const q = new URLSearchParams({ key, source, category: 'open', id: 'p-1', anonymous_id: 'anon 7', user_id: 'u/7' });
    const res = await fetch(`${gateway.url}/api/telemetry/pixel.gif?${q.toString()}`);
    expect(res.status, res.headers.get('x-error-code') ?? '').to.equal(200);
    expect(await rowsOf(source, 1)).to.deep.equal([
      {
        id: 'p-1',
        protocol: 'telemetry',
        anonymous_id: 'anon 7',
        user_id: 'u/7',
        client_ip: '127.0.0.0',
        user_agent: 'node',
      },
    ]);
  });

  it('refuses an over-long, empty or control-character identity with the path of the field', async () => {
    const source = uid('bad-identity');
    const ok = { source, category: 'c', payload: {} };
    const res = await post({
      events: [
        ok,
        { ...ok, anonymous_id: 'x'.repeat(LIMITS.maxIdentityLength + 1) },
        { ...ok, user_id: 'line\nbreak' },
        { ...ok, user_id: '' },
        { ...ok, anonymous_id: 42 },
      ],
    });
    expect(res.status).to.equal(400);
    const body = (await res.json()) as {
      code: string;
      details: { problems: { path: string }[]; invalid_events: number[] };
    };
    expect(body.code).to.equal('VALIDATION_FAILED');
    expect(body.details.invalid_events).to.deep.equal([1, 2, 3, 4]);
    expect([...new Set(body.details.problems.map((p) => p.path))]).to.deep.equal([
      '/events/1/anonymous_id',
      '/events/2/user_id',
      '/events/3/user_id',
      '/events/4/anonymous_id',
    ]);
    const px = await fetch(
      `${gateway.url}/api/telemetry/pixel.gif?key=${key}&source=${source}&category=c&user_id=${'u'.repeat(257)}`,
    );
    expect([px.status, px.headers.get('x-error-code')]).to.deep.equal([400, 'VALIDATION_FAILED']);
    // Nothing of the refused request was stored.
    const r = await ch.query({
      query: `SELECT count() AS n FROM ${testStack().database}.events WHERE source = ${sqlString(source)}`,
      format: 'JSONEachRow',
    });
    expect(await r.json()).to.deep.equal([{ n: '0' }]);
  });
});
