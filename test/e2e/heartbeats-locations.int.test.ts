import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import type { AlertMessage, Check, CheckMessage, Monitor } from '@telemetry/contract';
import {
  collectTopic,
  eventually,
  newKey,
  runConsumer,
  runGateway,
  runQuery,
  runRunner,
  testStack,
  uid,
  type Running,
  type Envelope,
} from '../support/fixtures.js';
import { apiClient } from '../support/api.js';

interface Incident {
  id: string;
  status: string;
}

/**
 * Heartbeat monitors and checks from several locations on the real pipeline: a gateway,
 * a query service and a consumer in this process, two check runner processes in two
 * locations (`loc-a`, `loc-b`), Kafka and ClickHouse, and a loopback target that fails
 * the checks of the locations it is told to (it reads the location in the User-Agent).
 */
describe('heartbeat monitors and locations with a quorum (real Kafka and ClickHouse, two runners)', function () {
  this.timeout(180_000);
  let gateway: Running;
  let query: Running;
  let consumer: Running;
  const runners: Running[] = [];
  let checks: Awaited<ReturnType<typeof collectTopic>>;
  let alerts: Awaited<ReturnType<typeof collectTopic>>;
  let key: string;
  let target: Server;
  let targetPort = 0;
  /** Locations whose checks the target fails. */
  const failing = new Set<string>();

  const api = apiClient(
    () => query.url,
    () => key,
  );

  const beat = (token: string, method = 'POST'): Promise<Response> =>
    fetch(`${gateway.url}/api/heartbeats/${token}`, { method });

  const incidents = async (id: string): Promise<Incident[]> =>
    (await api<Incident[]>('GET', `/api/monitors/${id}/incidents`)).body.data;

  const alertsOf = (id: string): AlertMessage[] => (alerts.values as AlertMessage[]).filter((a) => a.monitor_id === id);

  const checksOf = (id: string): CheckMessage[] => (checks.values as CheckMessage[]).filter((c) => c.monitor_id === id);

  before(async () => {
    target = createServer((req, res) => {
      const location = /location=([a-z0-9-]+)/.exec(req.headers['user-agent'] ?? '')?.[1] ?? '';
      res.writeHead(failing.has(location) ? 500 : 200).end('ok');
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    targetPort = (target.address() as { port: number }).port;
    const egress = { EGRESS_ALLOW: `127.0.0.1:${targetPort}` };
    [gateway, query, consumer] = await Promise.all([runGateway(), runQuery(egress), runConsumer()]);
    [checks, alerts] = await Promise.all([
      collectTopic(testStack().checksTopic),
      collectTopic(testStack().alertsTopic),
    ]);
    key = await newKey({ kind: 'api', name: 'beats', scopes: ['checks:read', 'monitors:read', 'monitors:write'] });
    const group = uid('loc-runners');
    const webhooks = uid('loc-webhooks');
    for (const location of ['loc-a', 'loc-b']) {
      runners.push(
        await runRunner({
          ...egress,
          RUNNER_ID: uid(location),
          RUNNER_LOCATION: location,
          RUNNER_GROUP_ID: group,
          WEBHOOK_GROUP_ID: webhooks,
          RUNNER_STATE_SETTLE_MS: '200',
        }),
      );
    }
    await eventually('the key loaded', async () =>
      (await api('GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    await Promise.all([
      ...runners.map((r) => r.stop()),
      gateway?.stop(),
      query?.stop(),
      consumer?.stop(),
      checks?.stop(),
      alerts?.stop(),
    ]);
    target?.closeAllConnections();
    await new Promise((r) => target?.close(r));
  });

  it('validates heartbeat monitors and their calls: no url, one location, a token that names the monitor', async () => {
    const refused: [Record<string, unknown>, string][] = [
      [{ url: `http://127.0.0.1:${targetPort}/` }, '/url'],
      [{ locations: ['loc-a', 'loc-b'] }, '/locations'],
      [{ confirm_delay_ms: 100 }, '/confirm_delay_ms'],
      [{ keyword: 'x' }, '/keyword'],
      [{ heartbeat_grace_seconds: -1 }, '/heartbeat_grace_seconds'],
    ];
    for (const [body, path] of refused) {
      const r = await api('POST', '/api/monitors', { name: uid('hb'), type: 'heartbeat', paused: true, ...body });
      expect([r.status, r.body.code], JSON.stringify(body)).to.deep.equal([400, 'VALIDATION_FAILED']);
      expect(
        r.body.details?.problems?.map((p) => p.path),
        JSON.stringify(body),
      ).to.include(path);
    }
    // Other types: heartbeat_grace_seconds is theirs only, url is required, quorum fits the locations.
    const others: [Record<string, unknown>, string][] = [
      [{ url: `http://127.0.0.1:${targetPort}/`, heartbeat_grace_seconds: 5 }, '/heartbeat_grace_seconds'],
      [{}, '/url'],
      [{ url: 'heartbeat://mon_0123456789abcdef' }, '/url'],
      [{ url: `http://127.0.0.1:${targetPort}/`, locations: ['loc-a'], quorum: 2 }, '/quorum'],
      [{ url: `http://127.0.0.1:${targetPort}/`, locations: ['Loc A'] }, '/locations/0'],
      [{ url: `http://127.0.0.1:${targetPort}/`, locations: [] }, '/locations'],
      [{ url: `http://127.0.0.1:${targetPort}/`, locations: ['loc-a', 'loc-a'] }, '/locations'],
    ];
    for (const [body, path] of others) {
      const r = await api('POST', '/api/monitors', { name: uid('web'), paused: true, ...body });
      expect([r.status, r.body.code], JSON.stringify(body)).to.deep.equal([400, 'VALIDATION_FAILED']);
      expect(
        r.body.details?.problems?.map((p) => p.path),
        JSON.stringify(body),
      ).to.include(path);
    }
    const made = await api<Monitor>('POST', '/api/monitors', { name: uid('hb'), type: 'heartbeat', paused: true });
    expect(made.status).to.equal(201);
    const m = made.body.data;
    expect(m).to.include({ type: 'heartbeat', url: `heartbeat://${m.id}`, heartbeat_grace_seconds: 60, quorum: null });
    expect(m.locations).to.deep.equal(['default']);
    expect(m.heartbeat_token).to.match(/^hb_[0-9a-z]+_[0-9a-f]{16}_[0-9a-f]{32}$/);
    // The token is shown on every read; a GET sent back as a PATCH changes nothing of it.
    const read = await api<Monitor>('GET', `/api/monitors/${m.id}`);
    expect(read.body.data.heartbeat_token).to.equal(m.heartbeat_token);
    const renamed = await api<Monitor>('PATCH', `/api/monitors/${m.id}`, { name: 'renamed', url: m.url });
    expect([renamed.status, renamed.body.data.url, renamed.body.data.heartbeat_token]).to.deep.equal([
      200,
      m.url,
      m.heartbeat_token,
    ]);
    // To http and back: the url is required going out, and the server's again coming back.
    const toHttp = await api<Monitor>('PATCH', `/api/monitors/${m.id}`, { type: 'http' });
    expect(toHttp.body.details?.problems?.map((p) => p.path)).to.include('/url');
    const web = await api<Monitor>('PATCH', `/api/monitors/${m.id}`, {
      type: 'http',
      url: `http://127.0.0.1:${targetPort}/`,
    });
    expect([web.status, web.body.data.heartbeat_token, web.body.data.heartbeat_grace_seconds]).to.deep.equal([
      200,
      undefined,
      null,
    ]);
    // The token went with the type (its nonce is gone): coming back gives a new one.
    const back = await api<Monitor>('PATCH', `/api/monitors/${m.id}`, { type: 'heartbeat' });
    expect([back.status, back.body.data.url]).to.deep.equal([200, m.url]);
    const token = back.body.data.heartbeat_token!;
    expect(token).to.match(/^hb_[0-9a-z]+_[0-9a-f]{16}_[0-9a-f]{32}$/);
    expect(token).to.not.equal(m.heartbeat_token);
    // The gateway takes it once the change feed brought it the new nonce (after the old one went).
    await eventually('the gateway takes the new token', async () =>
      (await beat(token)).status === 200 ? true : undefined,
    );
    // Calls with a wrong, malformed, another monitor's or the left type's token are refused;
    // GET is not the method.
    const forged = `${token.slice(0, -1)}${token.endsWith('0') ? '1' : '0'}`;
    const otherMonitor = token.replace(/_[0-9a-f]{16}_/, '_0123456789abcdef_');
    for (const bad of [forged, otherMonitor, m.heartbeat_token!, 'hb_x', 'nothing', `${token}0`]) {
      const r = await beat(bad);
      expect([r.status, ((await r.json()) as Envelope<null>).code], bad).to.deep.equal([404, 'HEARTBEAT_NOT_FOUND']);
    }
    const wrongMethod = await beat(token, 'GET');
    expect([wrongMethod.status, wrongMethod.headers.get('allow')]).to.deep.equal([405, 'POST']);
    // A read-only key does not see the token (whoever holds it can say the job ran).
    const reader = await newKey({ kind: 'api', name: 'reader', scopes: ['monitors:read'] });
    const asReader = await eventually('the read-only key loaded', async () => {
      const r = await fetch(`${query.url}/api/monitors/${m.id}`, { headers: { authorization: `Bearer ${reader}` } });
      return r.status === 200 ? r : undefined;
    });
    const readerView = ((await asReader.json()) as Envelope<Monitor>).data;
    expect([asReader.status, readerView.type, readerView.heartbeat_token]).to.deep.equal([200, 'heartbeat', undefined]);
    const ok = await beat(token);
    expect([ok.status, await ok.json()]).to.deep.equal([200, { success: true, data: null }]);
    const stored = await eventually('the call stored as an up check', () =>
      checksOf(m.id).find((c) => c.status === 'up'),
    );
    expect(stored).to.include({ tenant_id: 'ten_default', response_time: 0, status_code: 0 });
    // The gateway logs the route of a call, never its token.
    expect(gateway.logs.lines.some((l) => l.includes('/api/heartbeats/:token'))).to.equal(true);
    expect(gateway.logs.lines.filter((l) => l.includes(token.slice(-32)))).to.deep.equal([]);
  });

  it('is pending until its first call is due, up while its job calls, down when the calls stop, and up again', async () => {
    const made = await api<Monitor>('POST', '/api/monitors', {
      name: uid('hb'),
      type: 'heartbeat',
      interval_seconds: 2,
      heartbeat_grace_seconds: 1,
      failure_threshold: 1,
      locations: ['loc-b'],
    });
    expect(made.status).to.equal(201);
    const m = made.body.data;
    const token = m.heartbeat_token!;
    // The gateway takes the token once the change feed brought it the monitor's nonce.
    await eventually('the gateway takes the token', async () =>
      (await beat(token)).status === 200 ? true : undefined,
    );
    // The job calls every second for a while: the monitor stays up, and no down is stored.
    const until = Date.now() + 5000;
    while (Date.now() < until) {
      expect((await beat(token)).status).to.equal(200);
      await new Promise((r) => setTimeout(r, 700));
    }
    expect(checksOf(m.id).filter((c) => c.status === 'down')).to.deep.equal([]);
    expect((await api<Monitor>('GET', `/api/monitors/${m.id}`)).body.data.status).to.equal('up');
    // The calls stop: after interval + grace the runner stores a down and opens an incident.
    const down = await eventually(
      'a heartbeat_missing check',
      () => checksOf(m.id).find((c) => c.status === 'down'),
      30_000,
    );
    expect(down).to.include({ error: 'heartbeat_missing', location: 'loc-b' });
    const opened = await eventually(
      'the incident open',
      async () => (await incidents(m.id)).find((i) => i.status === 'open'),
      30_000,
    );
    expect(opened.id).to.equal(down.id);
    expect((await api<Monitor>('GET', `/api/monitors/${m.id}`)).body.data.status).to.equal('down');
    // The job calls again: the incident closes.
    expect((await beat(token)).status).to.equal(200);
    const closed = await eventually(
      'the incident resolved',
      async () => (await incidents(m.id)).find((i) => i.id === opened.id && i.status === 'resolved'),
      30_000,
    );
    expect(closed).to.exist;
    expect(alertsOf(m.id).map((a) => a.type)).to.deep.equal(['monitor.down', 'monitor.up']);
  });

  it('checks from every location it lists; one failing location opens no incident, two do', async () => {
    const made = await api<Monitor>('POST', '/api/monitors', {
      name: uid('quorum'),
      url: `http://127.0.0.1:${targetPort}/`,
      interval_seconds: 2,
      timeout_ms: 500,
      failure_threshold: 1,
      locations: ['loc-a', 'loc-b'],
    });
    expect(made.status).to.equal(201);
    const m = made.body.data;
    expect(m).to.include({ quorum: null });
    // Both locations check each slot, each with its own check id.
    await eventually('a check from each location', () => {
      const seen = new Set(checksOf(m.id).map((c) => c.location));
      return seen.has('loc-a') && seen.has('loc-b') ? true : undefined;
    });
    // loc-a's network goes bad: its checks fail, loc-b's pass.
    failing.add('loc-a');
    const since = Date.now();
    const downsA = await eventually(
      'three failing slots from loc-a and a later check (those slots decided)',
      () => {
        const mine = checksOf(m.id).filter((c) => Date.parse(c.created_at) >= since + 1000);
        const downs = mine.filter((c) => c.location === 'loc-a' && c.status === 'down');
        const later =
          downs.length >= 3 && mine.some((c) => c.location === 'loc-a' && c.created_at > downs[2]!.created_at);
        return later ? downs : undefined;
      },
      40_000,
    );
    // Every slot loc-a failed, loc-b passed: the quorum (2 of 2) never failed.
    const slotsOfB = checksOf(m.id).filter((c) => c.location === 'loc-b' && c.status === 'up');
    expect(slotsOfB.length).to.be.greaterThan(2);
    expect(new Set(downsA.map((c) => c.id)).size).to.equal(downsA.length);
    expect(downsA.map((c) => c.id)).to.not.include.members(slotsOfB.map((c) => c.id));
    expect(alertsOf(m.id)).to.deep.equal([]);
    expect(await incidents(m.id)).to.deep.equal([]);
    // The checks API shows where each ran.
    const listed = (await api<Check[]>('GET', `/api/monitors/${m.id}/checks?limit=50`)).body.data;
    expect(new Set(listed.map((c) => c.location))).to.deep.equal(new Set(['loc-a', 'loc-b']));
    // Both fail: the incident opens, named after loc-a's failing check (the first location).
    failing.add('loc-b');
    const opened = await eventually(
      'the incident open',
      async () => (await incidents(m.id)).find((i) => i.status === 'open'),
      30_000,
    );
    const failed = checksOf(m.id).find((c) => c.id === opened.id);
    expect(failed).to.include({ location: 'loc-a', status: 'down' });
    expect(alertsOf(m.id).map((a) => a.type)).to.deep.equal(['monitor.down']);
    // loc-b recovers: one failing location is below the quorum again, so the incident closes.
    failing.delete('loc-b');
    await eventually(
      'the incident resolved',
      async () => (await incidents(m.id)).find((i) => i.id === opened.id && i.status === 'resolved'),
      30_000,
    );
    expect(alertsOf(m.id).map((a) => a.type)).to.deep.equal(['monitor.down', 'monitor.up']);
    failing.clear();
  });

  it('opens an incident from one failing location when the quorum is 1', async () => {
    failing.add('loc-b');
    try {
      const made = await api<Monitor>('POST', '/api/monitors', {
        name: uid('quorum-1'),
        url: `http://127.0.0.1:${targetPort}/`,
        interval_seconds: 2,
        timeout_ms: 500,
        failure_threshold: 1,
        locations: ['loc-a', 'loc-b'],
        quorum: 1,
      });
      expect([made.status, made.body.data.quorum]).to.deep.equal([201, 1]);
      const opened = await eventually(
        'the incident open',
        async () => (await incidents(made.body.data.id)).find((i) => i.status === 'open'),
        30_000,
      );
      // Decided by loc-a's runner on loc-b's failing check.
      expect(checksOf(made.body.data.id).find((c) => c.id === opened.id)).to.include({ location: 'loc-b' });
    } finally {
      failing.clear();
    }
  });
});
