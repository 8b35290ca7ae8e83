import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import type { Check, CheckMessage, Monitor } from '@telemetry/contract';
import {
  adminRegistry,
  collectTopic,
  eventually,
  newKey,
  runConsumer,
  runQuery,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { MonitorStore } from '@telemetry/store';
import { runSecretBox } from '../../harness/processes.js';
import { apiClient } from '../support/api.js';
import { spawnService, type ServiceProcess } from '../support/processes.js';

/**
 * A small API to sign in to, on loopback: POST /login with {"user", "password"} answers
 * {"token"} (a fresh one each time) for the right password; GET /me needs
 * `Authorization: Bearer <a token it gave>` and answers 200, or 401 once told to refuse
 * tokens. Every request is recorded.
 */
class LoginApi {
  readonly password = `pw-${randomBytes(8).toString('hex')}`;
  readonly tokens = new Set<string>();
  readonly seen: { path: string; authorization?: string; body: string }[] = [];
  refuse = false;
  private server: Server | undefined;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const path = (req.url ?? '/').split('?')[0]!;
        this.seen.push({ path, authorization: req.headers.authorization, body });
        const json = (code: number, v: unknown) =>
          res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(v));
        if (path === '/login' && req.method === 'POST') {
          let sent: { user?: string; password?: string } = {};
          try {
            sent = JSON.parse(body) as typeof sent;
          } catch {
            return json(400, { error: 'not json' });
          }
          if (sent.user !== 'probe' || sent.password !== this.password) return json(403, { error: 'wrong password' });
          const token = `tok_${randomBytes(12).toString('hex')}`;
          this.tokens.add(token);
          return json(200, { token });
        }
        if (path === '/me' && req.method === 'GET') {
          const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
          if (this.refuse || token === undefined || !this.tokens.has(token)) return json(401, { error: 'bad token' });
          return json(200, { user: 'probe' });
        }
        json(404, { error: 'not found' });
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/**
 * Multi-step API checks (issue 45, item 2) on the real pipeline: a check runner process,
 * Kafka, ClickHouse and PostgreSQL. The flow signs in with a sealed password, carries the
 * token it extracts to the next request, and fails (naming the step) when the token is refused.
 */
describe('api_flow monitors: a two-step sign-in flow (real Kafka, ClickHouse, PostgreSQL, a check runner process)', function () {
  this.timeout(120_000);
  const site = new LoginApi();
  let query: Running;
  let consumer: Running;
  let runner: ServiceProcess;
  let checks: Awaited<ReturnType<typeof collectTopic>>;
  let key: string;
  const LOCATION = 'flow-east';

  const api = apiClient(
    () => query.url,
    () => key,
  );

  const signIn = () => ({
    name: uid('sign-in flow'),
    type: 'api_flow',
    url: site.url('/'),
    interval_seconds: 1,
    timeout_ms: 900,
    locations: [LOCATION],
    variables: { password: site.password },
    api_steps: [
      {
        name: 'login',
        method: 'POST',
        url: '/login',
        body: '{"user":"probe","password":"{{password}}"}',
        extract: { token: '$.token' },
        assertions: ['$.token != ""'],
      },
      { name: 'profile', url: '/me', headers: { Authorization: 'Bearer {{token}}' } },
    ],
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
    await site.start();
    const egress = { EGRESS_ALLOW: `127.0.0.1:${site.port}` };
    [query, consumer] = await Promise.all([runQuery(egress), runConsumer()]);
    checks = await collectTopic(testStack().checksTopic);
    key = await newKey({ kind: 'api', name: 'flow', scopes: ['checks:read', 'monitors:read', 'monitors:write'] });
    runner = await spawnService('check-runner', {
      ...egress,
      RUNNER_ID: uid('flow-runner'),
      RUNNER_GROUP_ID: uid('flow-runners'),
      WEBHOOK_GROUP_ID: uid('flow-webhooks'),
      RUNNER_LOCATION: LOCATION,
      LOG_LEVEL: 'debug',
    });
    await eventually('the key loaded', async () =>
      (await api('GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    await Promise.all([runner?.kill('SIGTERM'), query?.stop(), consumer?.stop(), checks?.stop()]);
    await site.stop();
  });

  it('refuses at creation a step using a variable never set, a placeholder in a host, and a denied step URL, with the field’s path', async () => {
    const base = signIn();
    const never = await api<Monitor>('POST', '/api/monitors', {
      ...base,
      paused: true,
      api_steps: [base.api_steps[0], { url: '/me', headers: { Authorization: 'Bearer {{never_set}}' } }],
    });
    expect([never.status, never.code], never.text).to.deep.equal([400, 'VALIDATION_FAILED']);
    expect(never.body.details?.problems).to.deep.include({
      path: '/api_steps/1/headers/Authorization',
      message: 'uses {{never_set}}, which no earlier step extracts and variables does not set',
    });
    const host = await api<Monitor>('POST', '/api/monitors', {
      ...base,
      paused: true,
      api_steps: [{ url: 'http://{{password}}/x' }],
    });
    expect([host.status, host.code], host.text).to.deep.equal([400, 'VALIDATION_FAILED']);
    expect(host.body.details?.problems?.map((p) => p.path)).to.deep.equal(['/api_steps/0/url']);
    const eleven = await api<Monitor>('POST', '/api/monitors', {
      ...base,
      paused: true,
      api_steps: Array.from({ length: 11 }, () => ({ url: '/me' })),
    });
    expect([eleven.status, eleven.code], eleven.text).to.deep.equal([400, 'VALIDATION_FAILED']);
    const denied = await api<Monitor>('POST', '/api/monitors', {
      ...base,
      paused: true,
      api_steps: [...base.api_steps, { url: 'http://10.1.2.3:8080/internal' }],
    });
    expect([denied.status, denied.code], denied.text).to.deep.equal([400, 'TARGET_NOT_ALLOWED']);
    expect(denied.body.details?.problems?.map((p) => p.path)).to.deep.equal(['/api_steps/2/url']);
  });

  it('signs in, carries the token to the next step, keeps the password sealed, and goes down naming the step when the token is refused', async () => {
    site.refuse = false;
    const created = await api<Monitor>('POST', '/api/monitors', signIn());
    expect(created.status, created.text).to.equal(201);
    const id = created.body.data.id;
    expect(created.body.data.variables).to.deep.equal({ password: '****' });

    // Up: both steps passed, each timed.
    const up = await checkOf(id, (c) => c.status === 'up');
    expect(up).to.include({ status_code: 200, location: LOCATION });
    expect(up.timings?.steps?.map((s) => [s.name, s.ok, s.status_code])).to.deep.equal([
      ['login', true, 200],
      ['profile', true, 200],
    ]);
    expect(up.response_time).to.be.at.least(up.timings!.steps![0]!.duration_ms);
    // The runner sent the sealed password, and the token the first step got to the second.
    const login = site.seen.find((r) => r.path === '/login')!;
    expect(JSON.parse(login.body)).to.deep.equal({ user: 'probe', password: site.password });
    const me = site.seen.find((r) => r.path === '/me' && r.authorization !== undefined)!;
    expect(site.tokens.has(me.authorization!.replace('Bearer ', ''))).to.equal(true);

    // Sealed: the registry's row holds no value of a variable; answers show ****.
    const { rows } = await adminRegistry().query<{ spec: string; sealed: string }>(
      'SELECT spec, sealed FROM monitors WHERE id = $1',
      [id],
    );
    expect(rows).to.have.length(1);
    expect(rows[0]!.spec).to.not.include(site.password);
    expect(rows[0]!.sealed).to.not.include(site.password);
    expect((JSON.parse(rows[0]!.spec) as Monitor).variables).to.deep.equal({ password: '****' });
    const shown = await api<Monitor>('GET', `/api/monitors/${id}`);
    expect(shown.body.data.variables).to.deep.equal({ password: '****' });
    expect(shown.text).to.not.include(site.password);

    // A PATCH sending **** back keeps the stored value: the flow still signs in after it.
    const patched = await api<Monitor & { dropped_secrets: string[] }>('PATCH', `/api/monitors/${id}`, {
      variables: { password: '****' },
      name: 'sign-in flow (renamed)',
    });
    expect(patched.status, patched.text).to.equal(200);
    expect(patched.body.data.variables).to.deep.equal({ password: '****' });
    expect(patched.body.data.dropped_secrets).to.deep.equal([]);
    const opened = await new MonitorStore(adminRegistry(), runSecretBox()).get(id);
    expect(opened?.variables).to.deep.equal({ password: site.password });
    const afterPatch = Date.now();
    await checkOf(id, (c) => c.status === 'up', afterPatch + 1000);
    const lastLogin = site.seen.filter((r) => r.path === '/login').at(-1)!;
    expect(JSON.parse(lastLogin.body)).to.deep.include({ password: site.password });

    // The token is refused: down, unexpected_status of step 2, and the monitor goes down.
    site.refuse = true;
    const since = Date.now();
    const down = await checkOf(id, (c) => c.status === 'down', since);
    expect(down).to.include({ status_code: 401, error: 'unexpected_status' });
    expect(down.detail).to.equal('step 2 "profile": status 401, expected 2xx');
    expect(down.timings?.steps?.map((s) => [s.name, s.ok, s.status_code])).to.deep.equal([
      ['login', true, 200],
      ['profile', false, 401],
    ]);
    await eventually(
      'the monitor down',
      async () => ((await api<Monitor>('GET', `/api/monitors/${id}`)).body.data.status === 'down' ? true : undefined),
      30_000,
    );
    // Read back through the API from ClickHouse: the detail and the step timings.
    const stored = await eventually('the down check in ClickHouse', async () => {
      const r = await api<Check[]>('GET', `/api/monitors/${id}/checks?limit=50`);
      return r.body.data?.find((c) => c.status === 'down');
    });
    expect(stored).to.include({ error: 'unexpected_status', detail: 'step 2 "profile": status 401, expected 2xx' });
    expect(stored.timings?.steps).to.have.length(2);

    // No value of a variable (the password, a token) in a check, or in the runner's log.
    const published = JSON.stringify((checks.values as CheckMessage[]).filter((c) => c.monitor_id === id));
    const output = runner.output();
    for (const secret of [site.password, ...site.tokens]) {
      expect(published.includes(secret), 'a check holds a secret').to.equal(false);
      expect(output.includes(secret), 'the runner logged a secret').to.equal(false);
    }
    await api('PATCH', `/api/monitors/${id}`, { paused: true });
    site.refuse = false;
  });
});
