import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { expect } from 'chai';
import type { CheckMessage, Monitor } from '@telemetry/contract';
import {
  collectTopic,
  eventually,
  newKey,
  runConsumer,
  runQuery,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiClient } from '../support/api.js';
import { spawnService, type ServiceProcess } from '../support/processes.js';
import { TestDnsServer } from '../support/dns-server.js';

/** A loopback TCP service: to "PING" it answers "PONG" (or "NOPE" when told to), and it counts connections. */
class TcpService {
  reply = 'PONG ready\n';
  connections = 0;
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((s) => {
      this.connections++;
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
      s.on('data', (d: Buffer) => {
        if (d.toString().startsWith('PING')) s.end(this.reply);
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/**
 * Certificates made for the test with openssl: a CA the runner trusts (NODE_EXTRA_CA_CERTS),
 * a leaf it signed for 127.0.0.1 and localhost, valid 30 days, and a self-signed one nobody trusts.
 */
function certificates(dir: string): {
  ca: string;
  leaf: { key: Buffer; cert: Buffer };
  rogue: { key: Buffer; cert: Buffer };
} {
  const run = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  run(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '365',
    '-subj',
    '/CN=Monitor test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=localhost');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  run(
    'x509',
    '-req',
    '-in',
    'leaf.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'leaf.pem',
    '-days',
    '30',
    '-extfile',
    'san.ext',
  );
  run(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'rogue.key',
    '-out',
    'rogue.pem',
    '-days',
    '30',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
  );
  const read = (f: string): Buffer => readFileSync(join(dir, f));
  return {
    ca: join(dir, 'ca.pem'),
    leaf: { key: read('leaf.key'), cert: read('leaf.pem') },
    rogue: { key: read('rogue.key'), cert: read('rogue.pem') },
  };
}

async function listen(server: Server | TlsServer): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

/**
 * Monitor types beyond HTTP on the real pipeline (a check runner process, Kafka,
 * ClickHouse), against loopback services that the runner's egress policy allows by name.
 */
describe('monitor types: tcp, tls and dns (real Kafka and ClickHouse, a check runner process)', function () {
  this.timeout(120_000);
  const service = new TcpService();
  /** A port with nothing listening: allowed, and refused by the kernel. */
  const closed = new TcpService();
  let query: Running;
  /** Writes checks and alerts to ClickHouse (incidents are read from there). */
  let consumer: Running;
  let runner: ServiceProcess;
  let checks: Awaited<ReturnType<typeof collectTopic>>;
  let key: string;
  const dir = mkdtempSync(join(tmpdir(), 'monitor-certs-'));
  let trusted: TlsServer;
  let rogue: TlsServer;
  let trustedPort = 0;
  let roguePort = 0;
  const LOCATION = 'test-east';
  const dns = new TestDnsServer();
  /** Webhook deliveries received: the alert bodies. */
  const hooks: { type: string; incident_id: string }[] = [];
  let hookServer: HttpServer;
  let hookPort = 0;

  const api = apiClient(
    () => query.url,
    () => key,
  );

  const create = (m: Record<string, unknown>) =>
    api<Monitor>('POST', '/api/monitors', {
      name: uid('tcp'),
      type: 'tcp',
      interval_seconds: 1,
      timeout_ms: 800,
      // Checked by the runner of this location only.
      locations: [LOCATION],
      ...m,
    });

  /** Waits for a check of `id` that `match` accepts, among those published after `since`. */
  function checkOf(id: string, match: (c: CheckMessage) => boolean, since = 0): Promise<CheckMessage> {
    return eventually(
      `a matching check of ${id}`,
      () =>
        (checks.values as CheckMessage[]).find(
          (c) => c.monitor_id === id && Date.parse(c.created_at) >= since && match(c),
        ),
      30_000,
    );
  }

  before(async () => {
    await Promise.all([service.start(), closed.start(), dns.start()]);
    dns.records.set('shop.test', { A: ['192.0.2.10', '192.0.2.11'], TXT: ['v=spf1 -all', 'site-verification=AbC9'] });
    await closed.stop();
    const certs = certificates(dir);
    trusted = createTlsServer(certs.leaf, (s) => s.end());
    rogue = createTlsServer(certs.rogue, (s) => s.end());
    hookServer = createHttpServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => {
        hooks.push(JSON.parse(Buffer.concat(parts).toString()) as { type: string; incident_id: string });
        res.writeHead(200).end();
      });
    });
    [trustedPort, roguePort, hookPort] = await Promise.all([listen(trusted), listen(rogue), listen(hookServer)]);
    const egress = {
      EGRESS_ALLOW: [service.port, closed.port, trustedPort, roguePort, dns.port, hookPort]
        .map((p) => `127.0.0.1:${p}`)
        .join(','),
    };
    [query, consumer] = await Promise.all([runQuery(egress), runConsumer()]);
    checks = await collectTopic(testStack().checksTopic);
    key = await newKey({ kind: 'api', name: 'tcp', scopes: ['checks:read', 'monitors:read', 'monitors:write'] });
    runner = await spawnService('check-runner', {
      ...egress,
      RUNNER_ID: uid('tcp-runner'),
      RUNNER_GROUP_ID: uid('tcp-runners'),
      WEBHOOK_GROUP_ID: uid('tcp-webhooks'),
      RUNNER_LOCATION: LOCATION,
      NODE_EXTRA_CA_CERTS: certs.ca,
    });
    await eventually('the key loaded', async () =>
      (await api('GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    await Promise.all([runner?.kill('SIGTERM'), query?.stop(), consumer?.stop(), checks?.stop()]);
    await Promise.all([service.stop(), dns.stop()]);
    hookServer?.closeAllConnections();
    await Promise.all([trusted, rogue, hookServer].map((t) => new Promise((r) => t?.close(r))));
    rmSync(dir, { recursive: true, force: true });
  });

  it('validates a tcp monitor: its URL form, and the fields of the other type', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: `http://127.0.0.1:${service.port}/` }, '/url'],
      [{ url: `tcp://127.0.0.1` }, '/url'],
      [{ url: `tcp://127.0.0.1:${service.port}/path` }, '/url'],
      [{ url: `tcp://127.0.0.1:${service.port}`, keyword: 'x' }, '/keyword'],
      [{ url: `tcp://127.0.0.1:${service.port}`, headers: { 'X-A': 'b' } }, '/headers'],
      [{ url: `tcp://127.0.0.1:${service.port}`, type: 'http' }, '/url'],
      [{ url: `http://127.0.0.1:${service.port}/`, type: 'http', tcp_send: 'PING' }, '/tcp_send'],
      [{ url: `tcp://127.0.0.1:${service.port}`, type: 'ftp' }, '/type'],
    ];
    for (const [body, path] of cases) {
      const r = await create({ paused: true, ...body });
      expect([r.status, r.body.code], JSON.stringify(body)).to.deep.equal([400, 'VALIDATION_FAILED']);
      expect(
        r.body.details?.problems?.map((p) => p.path),
        JSON.stringify(body),
      ).to.include(path);
    }
    // A denied address is refused at once, as for http.
    for (const url of ['tcp://10.0.0.1:22', 'tcp://127.1:22', 'tcp://2130706433:22', 'tcp://0x7f.0.0.1:22']) {
      const denied = await create({ url, paused: true });
      expect([denied.status, denied.body.code], url).to.deep.equal([400, 'TARGET_NOT_ALLOWED']);
    }
    // An http monitor says its type, and has no tcp fields.
    const web = await api<Monitor>('POST', '/api/monitors', {
      name: uid('web'),
      url: `http://127.0.0.1:${service.port}/`,
      paused: true,
    });
    expect(web.body.data).to.include({ type: 'http', tcp_send: null, tcp_expect: null });
    // Another type by PATCH: the old type's fields go, the new type's defaults come.
    const tls = await create({ type: 'tls', url: `tls://127.0.0.1:${service.port}`, paused: true });
    expect(tls.body.data).to.include({ tls_min_days: 14 });
    const changed = await api<Monitor>('PATCH', `/api/monitors/${tls.body.data.id}`, {
      type: 'dns',
      url: 'dns://shop.test',
    });
    expect(changed.status, JSON.stringify(changed.body)).to.equal(200);
    expect(changed.body.data).to.include({ type: 'dns', tls_min_days: null, dns_record_type: 'A' });
  });

  it('is up while the port accepts connections, and down connection_refused when nothing listens', async () => {
    const up = await create({ url: `tcp://127.0.0.1:${service.port}` });
    const refused = await create({ url: `tcp://127.0.0.1:${closed.port}` });
    expect([up.status, refused.status]).to.deep.equal([201, 201]);
    expect(up.body.data).to.include({ type: 'tcp', url: `tcp://127.0.0.1:${service.port}`, tcp_send: null });
    const ok = await checkOf(up.body.data.id, () => true);
    expect(ok).to.include({ status: 'up', status_code: 0, location: LOCATION });
    expect(ok.error).to.equal(undefined);
    const bad = await checkOf(refused.body.data.id, () => true);
    expect(bad).to.include({ status: 'down', status_code: 0, error: 'connection_refused' });
    // Read back through the API as any check is.
    const listed = await eventually('the check in ClickHouse', async () => {
      const r = await api<{ status: string; error: string | null }[]>(
        'GET',
        `/api/monitors/${refused.body.data.id}/checks?limit=1`,
      );
      return r.body.data?.length ? r.body.data : undefined;
    });
    expect(listed[0]).to.include({
      status: 'down',
      error: 'connection_refused',
      location: LOCATION,
      tls_days_left: null,
    });
    // Its alert went through Kafka and the consumer like any other: the incident is open.
    const incidents = await eventually('the incident in ClickHouse', async () => {
      const r = await api<{ status: string; cause: { error: string | null } }[]>(
        'GET',
        `/api/monitors/${refused.body.data.id}/incidents`,
      );
      return r.body.data?.length ? r.body.data : undefined;
    });
    expect(incidents[0]).to.deep.include({ status: 'open', cause: { status_code: 0, error: 'connection_refused' } });
  });

  it('sends tcp_send and is up when the reply holds tcp_expect, down unexpected_reply when it does not', async () => {
    const m = await create({ url: `tcp://127.0.0.1:${service.port}`, tcp_send: 'PING\n', tcp_expect: 'PONG' });
    expect(m.status, JSON.stringify(m.body)).to.equal(201);
    await checkOf(m.body.data.id, (c) => c.status === 'up');
    service.reply = 'NOPE\n';
    const since = Date.now();
    const down = await checkOf(m.body.data.id, (c) => c.status === 'down', since);
    expect(down).to.include({ status_code: 0, error: 'unexpected_reply' });
    service.reply = 'PONG again\n';
    await checkOf(m.body.data.id, (c) => c.status === 'up', Date.now());
  });

  it('checks a tls certificate: up with the days it has left, down when it expires too soon or is not trusted', async () => {
    const bad = await create({ type: 'tls', url: `tls://127.0.0.1:${trustedPort}/x`, paused: true });
    expect(bad.body.details?.problems?.map((p) => p.path)).to.include('/url');
    const misplaced = await api<Monitor>('POST', '/api/monitors', {
      name: uid('web'),
      url: `http://127.0.0.1:${service.port}/`,
      tls_min_days: 3,
      paused: true,
    });
    expect(misplaced.body.details?.problems?.map((p) => p.path)).to.include('/tls_min_days');

    const fine = await create({ type: 'tls', url: `tls://127.0.0.1:${trustedPort}`, tls_min_days: 7 });
    const byName = await create({ type: 'tls', url: `tls://localhost:${trustedPort}` });
    const soon = await create({ type: 'tls', url: `tls://127.0.0.1:${trustedPort}`, tls_min_days: 60 });
    const untrusted = await create({ type: 'tls', url: `tls://127.0.0.1:${roguePort}` });
    for (const m of [fine, byName, soon, untrusted]) expect(m.status, JSON.stringify(m.body)).to.equal(201);
    expect(byName.body.data).to.include({ type: 'tls', tls_min_days: 14 });

    const up = await checkOf(fine.body.data.id, () => true);
    expect(up).to.include({ status: 'up', status_code: 0, location: LOCATION });
    expect(up.tls_days_left).to.be.within(29, 30);
    expect(await checkOf(byName.body.data.id, () => true)).to.include({ status: 'up' });
    const expiring = await checkOf(soon.body.data.id, () => true);
    expect(expiring).to.include({ status: 'down', error: 'certificate_expiring' });
    expect(expiring.tls_days_left).to.be.within(29, 30);
    expect(await checkOf(untrusted.body.data.id, () => true)).to.include({ status: 'down', error: 'tls' });
    const listed = await eventually('the check in ClickHouse', async () => {
      const r = await api<{ status: string; tls_days_left: number | null }[]>(
        'GET',
        `/api/monitors/${soon.body.data.id}/checks?limit=1`,
      );
      return r.body.data?.length ? r.body.data : undefined;
    });
    expect(listed[0]!.tls_days_left).to.be.within(29, 30);
  });

  it('resolves a name: up when the answer holds the expected values, down otherwise, and asks no denied resolver', async () => {
    const resolver = `127.0.0.1:${dns.port}`;
    const invalid: [Record<string, unknown>, string][] = [
      [{ url: 'dns://shop.test:53' }, '/url'],
      [{ url: 'dns://shop.test/a' }, '/url'],
      [{ url: 'dns://shop.test', dns_resolver: 'resolver.example' }, '/dns_resolver'],
      [{ url: 'dns://shop.test', dns_record_type: 'ANY' }, '/dns_record_type'],
      [{ type: 'http', url: `http://127.0.0.1:${service.port}/`, dns_expected: ['x'] }, '/dns_expected'],
    ];
    for (const [body, path] of invalid) {
      const r = await create({ type: 'dns', paused: true, ...body });
      expect(
        r.body.details?.problems?.map((p) => p.path),
        JSON.stringify(body),
      ).to.include(path);
    }
    const before = dns.questions;
    const denied = await create({ type: 'dns', url: 'dns://shop.test', dns_resolver: '10.0.0.1', paused: true });
    expect([denied.status, denied.body.code]).to.deep.equal([400, 'TARGET_NOT_ALLOWED']);

    const a = await create({
      type: 'dns',
      url: 'dns://shop.test',
      dns_resolver: resolver,
      dns_expected: ['192.0.2.11'],
    });
    const txt = await create({
      type: 'dns',
      url: 'dns://SHOP.test',
      dns_resolver: resolver,
      dns_record_type: 'TXT',
      dns_expected: ['v=spf1 -all', 'site-verification=AbC9'],
    });
    const wrong = await create({
      type: 'dns',
      url: 'dns://shop.test',
      dns_resolver: resolver,
      dns_expected: ['192.0.2.99'],
    });
    const unknown = await create({ type: 'dns', url: 'dns://nowhere.test', dns_resolver: resolver });
    for (const m of [a, txt, wrong, unknown]) expect(m.status, JSON.stringify(m.body)).to.equal(201);
    expect(a.body.data).to.include({ type: 'dns', dns_record_type: 'A', dns_resolver: resolver });
    expect(await checkOf(a.body.data.id, () => true)).to.include({ status: 'up', status_code: 0, location: LOCATION });
    expect(await checkOf(txt.body.data.id, () => true)).to.include({ status: 'up' });
    expect(await checkOf(wrong.body.data.id, () => true)).to.include({ status: 'down', error: 'unexpected_answer' });
    expect(await checkOf(unknown.body.data.id, () => true)).to.include({ status: 'down', error: 'dns' });
    // The records change: the monitor follows.
    dns.records.set('shop.test', { A: ['192.0.2.10'] });
    const since = Date.now();
    expect(await checkOf(a.body.data.id, (c) => c.status === 'down', since)).to.include({ error: 'unexpected_answer' });
    expect(dns.questions).to.be.greaterThan(before);
  });

  it('holds alerts in a maintenance window (the incident is marked), and pages when the monitor is still down after it', async () => {
    const invalid = await create({
      url: `tcp://127.0.0.1:${closed.port}`,
      maintenance_windows: [
        { from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' },
        { start: '01:00', duration_minutes: 60, time_zone: 'Nowhere/Land' },
      ],
      paused: true,
    });
    expect(invalid.body.details?.problems?.map((p) => p.path)).to.include.members([
      '/maintenance_windows/0/to',
      '/maintenance_windows/1/time_zone',
    ]);
    const now = Date.now();
    const m = await create({
      url: `tcp://127.0.0.1:${closed.port}`,
      failure_threshold: 1,
      webhooks: [`http://127.0.0.1:${hookPort}/hook`],
      maintenance_windows: [
        { from: new Date(now - 3_600_000).toISOString(), to: new Date(now + 3_600_000).toISOString() },
      ],
    });
    expect(m.status, JSON.stringify(m.body)).to.equal(201);
    const id = m.body.data.id;
    type IncidentBody = { id: string; status: string; maintenance: boolean }[];
    const incidents = (): Promise<IncidentBody> =>
      api<IncidentBody>('GET', `/api/monitors/${id}/incidents`).then((r) => r.body.data ?? []);
    const held = await eventually('the held incident', async () => {
      const list = await incidents();
      return list.length > 0 ? list : undefined;
    });
    expect(held).to.have.length(1);
    expect(held[0]).to.include({ status: 'open', maintenance: true });
    // The window ends (it is taken away): the held incident closes, a new one opens and pages.
    expect((await api('PATCH', `/api/monitors/${id}`, { maintenance_windows: [] })).status).to.equal(200);
    const hook = await eventually('the webhook of the new incident', () =>
      hooks.find((h) => h.type === 'monitor.down'),
    );
    expect(hook.incident_id).to.not.equal(held[0]!.id);
    // Alerts of one monitor are delivered in order: the held ones came first and were not delivered.
    expect(hooks.filter((h) => h.incident_id === held[0]!.id)).to.deep.equal([]);
    const after = await eventually('both incidents', async () => {
      const list = await incidents();
      return list.length === 2 ? list : undefined;
    });
    expect(after.map((i) => [i.id === held[0]!.id, i.status, i.maintenance])).to.have.deep.members([
      [true, 'resolved', true],
      [false, 'open', false],
    ]);
    // The monitor reads as down: the new incident's alert is its last, not the held one's end.
    // (Read once both incidents are in ClickHouse, so the held incident's end is there too.)
    expect((await api<Monitor>('GET', `/api/monitors/${id}`)).body.data.status).to.equal('down');
  });
});
