import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { expect } from 'chai';
import type { CheckMessage, Monitor } from '@telemetry/contract';
import { sqlString } from '@telemetry/platform';
import {
  adminClickHouse,
  collectTopic,
  eventually,
  newKey,
  runQuery,
  runRunner,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiRequest } from '../support/api.js';

/** A loopback listener that records every request it gets (path and headers). */
class Listener {
  readonly seen: { path: string; headers: IncomingHttpHeaders }[] = [];
  private server: Server | undefined;
  port = 0;

  constructor(
    private readonly answer: (path: string) => { status: number; location?: string } = () => ({ status: 200 }),
  ) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const path = req.url ?? '/';
      this.seen.push({ path, headers: req.headers });
      const a = this.answer(path);
      res.writeHead(a.status, a.location ? { location: a.location } : {});
      res.end('ok');
      req.resume();
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/**
 * The egress policy on the real pipeline (Kafka, ClickHouse, a check runner),
 * with the default policy plus two allowed loopback targets: every target here is on
 * loopback. A `forbidden` listener must never receive a request, whatever notation,
 * name or redirect a monitor or webhook uses to aim at it; the stack's own ClickHouse
 * runs nothing a monitor sends.
 */
describe('egress policy (real Kafka and ClickHouse, a check runner)', function () {
  this.timeout(180_000);
  const forbidden = new Listener();
  const b = new Listener();
  // A: /ok answers 200, /to-forbidden and /to-b redirect, /fail answers 500.
  const a = new Listener((path) => {
    if (path === '/to-forbidden') return { status: 302, location: `http://127.0.0.1:${forbidden.port}/via-redirect` };
    if (path === '/to-b') return { status: 302, location: `http://127.0.0.1:${b.port}/landing` };
    if (path === '/to-a') return { status: 302, location: '/ok' };
    if (path === '/fail') return { status: 500 };
    return { status: 200 };
  });
  let query: Running;
  let strictQuery: Running;
  let runner: Running;
  let checks: Awaited<ReturnType<typeof collectTopic>>;
  let key: string;
  let chPort: number;

  const api = <T>(q: Running, method: string, path: string, body?: unknown) =>
    apiRequest<T>(q.url, method, path, body, { key });

  const create = (q: Running, m: Record<string, unknown>) =>
    api<Monitor>(q, 'POST', '/api/monitors', { name: uid('egress'), interval_seconds: 5, ...m });

  async function checksOf(id: string, n: number): Promise<CheckMessage[]> {
    return eventually(
      `${n} checks of ${id}`,
      () => {
        const mine = (checks.values as CheckMessage[]).filter((c) => c.monitor_id === id);
        return mine.length >= n ? mine : undefined;
      },
      30_000,
    );
  }

  before(async () => {
    await Promise.all([forbidden.start(), a.start(), b.start()]);
    chPort = Number(new URL(testStack().clickhouseUrl).port);
    // Only A and B are allowed on this machine: the default policy denies the rest.
    const strict = { EGRESS_ALLOW: `127.0.0.1:${a.port},127.0.0.1:${b.port}` };
    [query, strictQuery] = await Promise.all([runQuery(), runQuery(strict)]);
    checks = await collectTopic(testStack().checksTopic);
    key = await newKey({ kind: 'api', name: 'egress', scopes: ['checks:read', 'monitors:read', 'monitors:write'] });
    runner = await runRunner({
      ...strict,
      RUNNER_ID: 'egress',
      RUNNER_GROUP_ID: uid('egress-runners'),
      WEBHOOK_GROUP_ID: uid('egress-webhooks'),
      WEBHOOK_RETRY_BASE_MS: '100',
    });
    await eventually('the key loaded', async () =>
      (await api(strictQuery, 'GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
    );
  });
  after(async () => {
    await Promise.all([runner?.stop(), query?.stop(), strictQuery?.stop(), checks?.stop()]);
    await Promise.all([forbidden.stop(), a.stop(), b.stop()]);
  });

  it('refuses a monitor or webhook aimed at a denied address in every literal notation (400 TARGET_NOT_ALLOWED)', async () => {
    const p = forbidden.port;
    const literals = [
      `http://127.0.0.1:${p}/`,
      `http://2130706433:${p}/`,
      `http://127.1:${p}/`,
      `http://0x7f.1:${p}/`,
      `http://0177.0.0.1:${p}/`,
      `http://[::ffff:127.0.0.1]:${p}/`,
      `http://[::1]:${p}/`,
      `http://169.254.169.254/latest/meta-data/`,
      `http://10.0.0.1/`,
    ];
    // Paused: were a refusal to fail, no check or webhook would be attempted anyway.
    for (const url of literals) {
      const r = await create(strictQuery, { url, paused: true });
      expect([r.status, r.body.code], url).to.deep.equal([400, 'TARGET_NOT_ALLOWED']);
      const w = await create(strictQuery, { url: `http://127.0.0.1:${a.port}/ok`, webhooks: [url], paused: true });
      expect([w.status, w.body.code], `webhook ${url}`).to.deep.equal([400, 'TARGET_NOT_ALLOWED']);
    }
    // And on PATCH.
    const ok = await create(strictQuery, { url: `http://127.0.0.1:${a.port}/ok`, paused: true });
    expect(ok.status).to.equal(201);
    const patched = await api(strictQuery, 'PATCH', `/api/monitors/${ok.body.data.id}`, { url: literals[1] });
    expect([patched.status, patched.body.code]).to.deep.equal([400, 'TARGET_NOT_ALLOWED']);
    // ClickHouse and Kafka are refused even where loopback is allowed (the tests' usual policy).
    for (const url of [`http://127.0.0.1:${chPort}/`, `http://[::ffff:127.0.0.1]:${chPort}/?query=SELECT+1`]) {
      const r = await create(query, { url, method: 'POST', body: 'CREATE TABLE x (x UInt8) ENGINE = Memory' });
      expect([r.status, r.body.code], url).to.deep.equal([400, 'TARGET_NOT_ALLOWED']);
    }
  });

  it('refuses headers only the connection may set', async () => {
    for (const name of ['Host', 'content-length', 'Transfer-Encoding', 'Connection', 'Upgrade']) {
      const r = await create(strictQuery, { url: `http://127.0.0.1:${a.port}/ok`, headers: { [name]: 'x' } });
      expect([r.status, r.body.code], name).to.deep.equal([400, 'VALIDATION_FAILED']);
    }
  });

  it('checks a name that resolves to a denied address as down target_not_allowed, and ClickHouse runs nothing', async () => {
    const table = `pwned_${uid().replace(/-/g, '_')}`;
    const db = testStack().database;
    const viaName = await create(strictQuery, { url: `http://localhost:${forbidden.port}/by-name` });
    const viaRedirect = await create(strictQuery, { url: `http://127.0.0.1:${a.port}/to-forbidden` });
    const clickhouse = await create(strictQuery, {
      url: `http://localhost:${chPort}/`,
      method: 'POST',
      body: `CREATE TABLE ${db}.${table} (x UInt8) ENGINE = Memory`,
    });
    for (const r of [viaName, viaRedirect, clickhouse]) expect(r.status, JSON.stringify(r.body)).to.equal(201);
    for (const m of [viaName, viaRedirect, clickhouse]) {
      const [c] = await checksOf(m.body.data.id, 1);
      expect(c).to.include({ status: 'down', status_code: 0, response_time: 0, error: 'target_not_allowed' });
    }
    expect(a.seen.filter((r) => r.path === '/to-forbidden').length, 'the allowed hop was made').to.be.greaterThan(0);
    expect(forbidden.seen, 'requests that reached the forbidden listener').to.deep.equal([]);
    const ch = adminClickHouse();
    try {
      const rs = await ch.query({
        query: `SELECT count() AS n FROM system.tables WHERE name = ${sqlString(table)}`,
        format: 'JSONEachRow',
      });
      expect((await rs.json<{ n: string }>())[0]!.n).to.equal('0');
    } finally {
      await ch.close();
    }
  });

  it('delivers no webhook to a denied address, named or not', async () => {
    const m = await create(strictQuery, {
      url: `http://127.0.0.1:${a.port}/fail`,
      failure_threshold: 1,
      webhooks: [`http://localhost:${forbidden.port}/hook`],
    });
    expect(m.status).to.equal(201);
    await eventually('the webhook refused by the policy', () =>
      runner.logs.lines.some((l) => l.includes('not allowed by the egress policy')) &&
      runner.logs.lines.some((l) => l.includes(`localhost:${forbidden.port}`))
        ? true
        : undefined,
    );
    expect(forbidden.seen).to.deep.equal([]);
  });

  it('checks an allowed target, and credentials do not follow a redirect to another origin', async () => {
    const headers = { Authorization: 'Bearer s3cret', Cookie: 'session=1', 'X-Api-Key': 'k-123' };
    const up = await create(strictQuery, { url: `http://127.0.0.1:${a.port}/ok` });
    const cross = await create(strictQuery, { url: `http://127.0.0.1:${a.port}/to-b`, headers });
    const same = await create(strictQuery, { url: `http://127.0.0.1:${a.port}/to-a`, headers });
    expect((await checksOf(up.body.data.id, 1))[0]).to.include({ status: 'up', status_code: 200 });
    expect((await checksOf(cross.body.data.id, 1))[0]).to.include({ status: 'up', status_code: 200 });
    expect((await checksOf(same.body.data.id, 1))[0]).to.include({ status: 'up', status_code: 200 });
    const landed = b.seen.filter((r) => r.path === '/landing');
    expect(landed.length).to.be.greaterThan(0);
    for (const r of landed) {
      expect(r.headers).to.not.have.any.keys('authorization', 'cookie', 'x-api-key');
    }
    // The first hop, on the monitor's own origin, had them; so did a same-origin redirect.
    const first = a.seen.find((r) => r.path === '/to-b')!;
    expect(first.headers).to.include({ authorization: 'Bearer s3cret', cookie: 'session=1', 'x-api-key': 'k-123' });
    const sameHop = a.seen.filter((r) => r.path === '/ok' && r.headers['x-monitor-id'] === same.body.data.id);
    expect(sameHop.length).to.be.greaterThan(0);
    expect(sameHop[0]!.headers).to.include({ authorization: 'Bearer s3cret' });
  });
});

/**
 * EGRESS_DENY_PORTS on the real pipeline, with loopback allowed (the tests' usual policy)
 * and the port of a loopback TCP listener denied: a monitor or webhook on that port is
 * refused at once, whatever its host, and a stored one is checked as down
 * target_not_allowed without a connection reaching the listener.
 */
describe('EGRESS_DENY_PORTS (real Kafka and ClickHouse, a check runner)', function () {
  this.timeout(120_000);
  const location = 'deny-ports';
  let connections = 0;
  const listener = createNetServer((socket) => {
    connections++;
    socket.on('error', () => undefined);
    socket.end('220 smtp.test ESMTP\r\n');
  });
  let port = 0;
  let open: Running;
  let denying: Running;
  let runner: Running;
  let checks: Awaited<ReturnType<typeof collectTopic>>;
  let key: string;

  const create = (q: Running, m: Record<string, unknown>) =>
    apiRequest<Monitor>(
      q.url,
      'POST',
      '/api/monitors',
      {
        name: uid('ports'),
        interval_seconds: 5,
        locations: [location],
        ...m,
      },
      { key },
    );

  before(async () => {
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
    port = (listener.address() as { port: number }).port;
    const deny = { EGRESS_DENY_PORTS: `25,${port}` };
    [open, denying] = await Promise.all([runQuery(), runQuery(deny)]);
    checks = await collectTopic(testStack().checksTopic);
    key = await newKey({ kind: 'api', name: 'ports', scopes: ['monitors:read', 'monitors:write'] });
    // Checks only the monitors of its own location: the other runners never see these.
    runner = await runRunner({
      ...deny,
      RUNNER_ID: 'deny-ports',
      RUNNER_LOCATION: location,
      RUNNER_GROUP_ID: uid('ports-runners'),
      WEBHOOK_GROUP_ID: uid('ports-webhooks'),
    });
    await eventually('the key loaded', async () =>
      (await fetch(`${denying.url}/api/monitors?limit=1`, { headers: { authorization: `Bearer ${key}` } })).status ===
      200
        ? true
        : undefined,
    );
  });
  after(async () => {
    await Promise.all([runner?.stop(), open?.stop(), denying?.stop(), checks?.stop()]);
    await new Promise<void>((r) => listener.close(() => r()));
  });

  it('refuses a monitor or webhook on a denied port, named or literal (400 TARGET_NOT_ALLOWED)', async () => {
    const targets: Record<string, unknown>[] = [
      { type: 'tcp', url: `tcp://127.0.0.1:${port}`, tcp_send: 'EHLO x\r\n' },
      { type: 'tcp', url: `tcp://localhost:${port}` },
      { type: 'tls', url: `tls://localhost:${port}` },
      { url: `http://localhost:${port}/` },
      { url: `http://[::1]:${port}/` },
      { url: 'http://127.0.0.1:9/', webhooks: [`http://localhost:${port}/hook`] },
      { type: 'tcp', url: 'tcp://localhost:25' },
    ];
    for (const m of targets) {
      const r = await create(denying, { ...m, paused: true });
      expect([r.status, r.body.code], JSON.stringify(m)).to.deep.equal([400, 'TARGET_NOT_ALLOWED']);
      expect(r.body.error, JSON.stringify(m)).to.match(/EGRESS_DENY_PORTS/);
    }
    // The next port is not denied.
    const next = await create(denying, { type: 'tcp', url: `tcp://localhost:${port + 1}`, paused: true });
    expect(next.status).to.equal(201);
  });

  it('checks a stored monitor on a denied port as down target_not_allowed, and no connection reaches the port', async () => {
    // Stored through a query service without the rule (as a monitor made before it was set).
    const m = await create(open, { type: 'tcp', url: `tcp://localhost:${port}`, tcp_send: 'EHLO x\r\n' });
    expect(m.status, JSON.stringify(m.body)).to.equal(201);
    const [c] = await eventually(
      'a check of the monitor',
      () => {
        const mine = (checks.values as CheckMessage[]).filter((x) => x.monitor_id === m.body.data.id);
        return mine.length > 0 ? mine : undefined;
      },
      30_000,
    );
    expect(c).to.include({ status: 'down', status_code: 0, response_time: 0, error: 'target_not_allowed' });
    expect(connections, 'connections that reached the denied port').to.equal(0);
  });
});
