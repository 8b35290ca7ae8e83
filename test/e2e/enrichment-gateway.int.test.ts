import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { AuditEntry, EventMessage, KeyView } from '@telemetry/contract';
import { createKafka, createLogger } from '@telemetry/platform';
import { createTenant, issueKey, loadKeyRecords } from '@telemetry/store';
import {
  adminRegistry,
  collectTopic,
  eventually,
  registryOwnerUrl,
  runGateway,
  runQuery,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiCall, type ApiAnswer } from '../support/api.js';

/**
 * The gateway's side of enrichment (docs/enrichment.md): every ingest route puts the
 * request's address (the peer, or X-Forwarded-For's client when the peer is in
 * TRUSTED_PROXIES) and User-Agent on each event message, and the key's ip_storage when it is
 * not truncated; the query service's client address (audit, sign-in throttling) is the same
 * answer. Messages are read back from the real Kafka events topic. The public addresses
 * below are header and body VALUES only: every connection goes to 127.0.0.1.
 */
describe('enrichment at the gateway: TRUSTED_PROXIES, request_ip, request_user_agent, ip_storage (real Kafka, PostgreSQL)', function () {
  this.timeout(120_000);
  const CHROME =
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
  const XFF = '203.0.113.7, 81.2.69.142';
  let trusted: Running;
  let untrusted: Running;
  let queryTrusted: Running;
  let queryUntrusted: Running;
  let events: { values: unknown[]; stop(): Promise<void> };
  let audit: { values: unknown[]; stop(): Promise<void> };
  let tenantId = '';
  const keys = { plain: '', full: '', none: '', changing: '', changingId: '', admin: '' };

  /** The events topic's message of each client event id, once all are there. */
  const messagesOf = (ids: string[]): Promise<EventMessage[]> =>
    eventually(`messages ${ids.join(', ')}`, () => {
      const found = ids.map((id) =>
        (events.values as EventMessage[]).find((m) => m.client_event_id === id || m.event_id === id),
      );
      return found.every((m): m is EventMessage => m !== undefined) ? found : undefined;
    });

  const send = async (
    base: string,
    key: string,
    headers: Record<string, string> = {},
    id = uid('ev'),
  ): Promise<{ status: number; id: string }> => {
    const r = await fetch(`${base}/api/telemetry/events`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Access-Key': key, ...headers },
      body: JSON.stringify({ events: [{ id, source: 'web', category: 'page_view', payload: { path: '/' } }] }),
    });
    await r.arrayBuffer();
    return { status: r.status, id };
  };

  before(async () => {
    tenantId = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const make = async (ipStorage?: 'full' | 'none' | 'truncated') =>
      issueKey(adminRegistry(), { tenantId, kind: 'telemetry', name: `ip ${ipStorage ?? 'default'}`, ipStorage });
    keys.plain = (await make()).key;
    keys.full = (await make('full')).key;
    keys.none = (await make('none')).key;
    const changing = await make();
    keys.changing = changing.key;
    keys.changingId = changing.record.key_id;
    keys.admin = (
      await issueKey(adminRegistry(), { tenantId, kind: 'api', name: 'admin', scopes: ['keys:read', 'keys:write'] })
    ).key;
    // Topics of this file's own: the run's shared ones hold every earlier file's messages,
    // which a collector reading from the beginning would wade through first.
    const topics = {
      events: `${testStack().eventsTopic}.${uid('enrich')}`,
      audit: `${testStack().auditTopic}.${uid('enrich')}`,
    };
    const kafka = createKafka({
      brokers: testStack().kafkaBrokers.split(','),
      clientId: 'enrichment-gateway-test',
      logger: createLogger({ service: 'test', level: 'silent' }),
    });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [
        { topic: topics.events, numPartitions: 2 },
        { topic: topics.audit, numPartitions: 1 },
      ],
      waitForLeaders: true,
    });
    await admin.disconnect();
    events = await collectTopic(topics.events);
    audit = await collectTopic(topics.audit);
    [trusted, untrusted, queryTrusted, queryUntrusted] = await Promise.all([
      runGateway({ TRUSTED_PROXIES: '127.0.0.1/8', RATE_LIMIT_PER_SECOND: '0', EVENTS_TOPIC: topics.events }),
      runGateway({ RATE_LIMIT_PER_SECOND: '0', EVENTS_TOPIC: topics.events }),
      runQuery({ TRUSTED_PROXIES: '127.0.0.1/8', AUDIT_TOPIC: topics.audit }),
      runQuery({ AUDIT_TOPIC: topics.audit }),
    ]);
    // Each gateway has the keys once it answers one of them.
    for (const g of [trusted, untrusted]) {
      await eventually('keys loaded', async () => ((await send(g.url, keys.plain)).status === 200 ? true : undefined));
    }
  });

  after(async () => {
    await Promise.all([trusted?.stop(), untrusted?.stop(), queryTrusted?.stop(), queryUntrusted?.stop()]);
    await Promise.all([events?.stop(), audit?.stop()]);
  });

  it("takes X-Forwarded-For's client through a trusted peer and the peer otherwise, with the user agent", async () => {
    const viaTrusted = await send(trusted.url, keys.plain, { 'X-Forwarded-For': XFF, 'User-Agent': CHROME });
    const viaUntrusted = await send(untrusted.url, keys.plain, { 'X-Forwarded-For': XFF, 'User-Agent': CHROME });
    const noHeader = await send(trusted.url, keys.plain, { 'User-Agent': CHROME });
    expect([viaTrusted.status, viaUntrusted.status, noHeader.status]).to.deep.equal([200, 200, 200]);
    const [a, b, c] = await messagesOf([viaTrusted.id, viaUntrusted.id, noHeader.id]);
    expect(a!.request_ip).to.equal('81.2.69.142');
    expect(b!.request_ip).to.equal('127.0.0.1');
    expect(c!.request_ip).to.equal('127.0.0.1');
    for (const m of [a!, b!, c!]) {
      expect(m.request_user_agent).to.equal(CHROME);
      // The default (truncated) is the field's absence.
      expect(m).not.to.have.property('ip_storage');
      expect(m).not.to.have.property('client_ip');
    }
  });

  it('ignores a malformed X-Forwarded-For (the peer), and leaves out an over-long or binary user agent', async () => {
    const garbage = await send(trusted.url, keys.plain, {
      'X-Forwarded-For': '81.2.69.142:4711',
      'User-Agent': `${CHROME} ${'x'.repeat(600)}`,
    });
    const spoofed = await send(untrusted.url, keys.plain, { 'X-Forwarded-For': 'unknown, 10.0.0.1' });
    const [g, s] = await messagesOf([garbage.id, spoofed.id]);
    expect(g!.request_ip).to.equal('127.0.0.1');
    expect(g).not.to.have.property('request_user_agent');
    expect(s!.request_ip).to.equal('127.0.0.1');
  });

  it('stamps the pixel, Segment and PostHog events too; a body-reported address keeps its client_ip beside request_ip', async () => {
    const pixelId = uid('px');
    const pixel = await fetch(
      `${trusted.url}/api/telemetry/pixel.gif?key=${keys.plain}&source=web&category=open&id=${pixelId}`,
      { headers: { 'X-Forwarded-For': XFF, 'User-Agent': CHROME } },
    );
    await pixel.arrayBuffer();
    expect(pixel.status).to.equal(200);

    const segmentId = uid('seg');
    const segment = await fetch(`${trusted.url}/v1/track`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Basic ${Buffer.from(`${keys.plain}:`).toString('base64')}`,
        'X-Forwarded-For': XFF,
        'User-Agent': 'analytics-node/2.0',
      },
      body: JSON.stringify({
        event: 'Order Completed',
        userId: 'u-1',
        messageId: segmentId,
        context: { ip: '198.51.100.23', userAgent: CHROME },
      }),
    });
    await segment.arrayBuffer();
    expect(segment.status).to.equal(200);

    const posthogId = randomUUID();
    const posthog = await fetch(`${trusted.url}/capture/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': XFF, 'User-Agent': 'posthog-python/3.0' },
      body: JSON.stringify({
        api_key: keys.full,
        event: 'signed_up',
        distinct_id: 'd-1',
        uuid: posthogId,
        properties: { $ip: '2001:db8::23' },
      }),
    });
    await posthog.arrayBuffer();
    expect(posthog.status).to.equal(200);

    const [p, s, h] = await messagesOf([pixelId, segmentId, posthogId]);
    expect(p).to.include({ request_ip: '81.2.69.142', request_user_agent: CHROME });
    expect(s).to.include({
      protocol: 'segment',
      client_ip: '198.51.100.23',
      user_agent: CHROME,
      request_ip: '81.2.69.142',
      request_user_agent: 'analytics-node/2.0',
    });
    expect(s).not.to.have.property('ip_storage');
    expect(h).to.include({
      protocol: 'posthog',
      client_ip: '2001:db8::23',
      request_ip: '81.2.69.142',
      request_user_agent: 'posthog-python/3.0',
      ip_storage: 'full',
    });
  });

  it("carries the key's ip_storage (full, none; absent for truncated), and follows a change made with PATCH /api/keys", async () => {
    const full = await send(untrusted.url, keys.full);
    const none = await send(untrusted.url, keys.none);
    const [f, n] = await messagesOf([full.id, none.id]);
    expect(f!.ip_storage).to.equal('full');
    expect(n!.ip_storage).to.equal('none');

    const listed = await apiCall<KeyView[]>(queryUntrusted.url, keys.admin, 'GET', '/api/keys');
    expect(listed.status, listed.text).to.equal(200);
    const byName = Object.fromEntries(listed.body.data.map((k) => [k.name, k.ip_storage]));
    expect(byName).to.include({ 'ip full': 'full', 'ip none': 'none', 'ip default': 'truncated' });

    const patched = await apiCall<KeyView>(queryUntrusted.url, keys.admin, 'PATCH', `/api/keys/${keys.changingId}`, {
      ip_storage: 'none',
    });
    expect(patched.status, patched.text).to.equal(200);
    expect(patched.body.data).to.include({ id: keys.changingId, ip_storage: 'none' });
    // Every gateway follows the change feed within moments.
    await eventually('the gateway keeps no address for the key', async () => {
      const r = await send(trusted.url, keys.changing);
      const [m] = await messagesOf([r.id]);
      return m!.ip_storage === 'none' ? true : undefined;
    });
  });

  it('makes keys with ip_storage and refuses what does not fit', async () => {
    const made = await apiCall<KeyView & { key: string }>(queryUntrusted.url, keys.admin, 'POST', '/api/keys', {
      kind: 'telemetry',
      name: 'made full',
      ip_storage: 'full',
    });
    expect(made.status, made.text).to.equal(201);
    expect(made.body.data.ip_storage).to.equal('full');
    const refused: [string, string, unknown, number, string][] = [
      ['POST', '/api/keys', { kind: 'api', name: 'x', ip_storage: 'full' }, 400, 'VALIDATION_FAILED'],
      ['POST', '/api/keys', { kind: 'telemetry', name: 'x', ip_storage: 'partial' }, 400, 'VALIDATION_FAILED'],
      ['PATCH', `/api/keys/${keys.changingId}`, { ip_storage: 'half' }, 400, 'VALIDATION_FAILED'],
      ['PATCH', `/api/keys/${keys.changingId}`, { ip_storage: 'full', name: 'renamed' }, 400, 'VALIDATION_FAILED'],
      ['PATCH', '/api/keys/0123456789abcdef', { ip_storage: 'full' }, 404, 'KEY_NOT_FOUND'],
    ];
    for (const [method, path, body, status, code] of refused) {
      const r: ApiAnswer<unknown> = await apiCall(queryUntrusted.url, keys.admin, method, path, body);
      expect([r.status, r.code], `${method} ${path} ${JSON.stringify(body)}`).to.deep.equal([status, code]);
    }
  });

  it("records the client's address in the audit log as TRUSTED_PROXIES makes it", async () => {
    const patch = (base: string, to: 'full' | 'truncated') =>
      apiCall<KeyView>(
        base,
        keys.admin,
        'PATCH',
        `/api/keys/${keys.changingId}`,
        { ip_storage: to },
        {
          'X-Forwarded-For': XFF,
        },
      );
    // A known start, whatever the tests before left.
    const start = await apiCall(queryUntrusted.url, keys.admin, 'PATCH', `/api/keys/${keys.changingId}`, {
      ip_storage: 'none',
    });
    expect(start.status, start.text).to.equal(200);
    const viaTrusted = await patch(queryTrusted.url, 'full');
    const viaUntrusted = await patch(queryUntrusted.url, 'truncated');
    expect([viaTrusted.status, viaUntrusted.status]).to.deep.equal([200, 200]);
    const entries = await eventually('two key.update entries', () => {
      const found = (audit.values as AuditEntry[]).filter(
        (e) =>
          e.action === 'key.update' &&
          e.target.id === keys.changingId &&
          (e.request_id === viaTrusted.headers.get('x-request-id') ||
            e.request_id === viaUntrusted.headers.get('x-request-id')),
      );
      return found.length === 2 ? found : undefined;
    });
    const byRequest = Object.fromEntries(entries.map((e) => [e.request_id, e]));
    const t = byRequest[viaTrusted.headers.get('x-request-id')!]!;
    const u = byRequest[viaUntrusted.headers.get('x-request-id')!]!;
    expect(t.ip).to.equal('81.2.69.142');
    expect(t.changes).to.deep.equal({ ip_storage: { before: 'none', after: 'full' } });
    expect(u.ip).to.equal('127.0.0.1');
    expect(u.changes).to.deep.equal({ ip_storage: { before: 'full', after: 'truncated' } });
  });

  it('npm run keys makes a key with --ip-storage, changes it with ip-storage and lists it', async () => {
    const keysCli = async (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
      try {
        const { stdout, stderr } = await promisify(execFile)(
          'npx',
          ['tsx', '--conditions=source', 'tools/devstack/keys-cli.ts', ...args],
          { env: { ...process.env, DATABASE_URL: registryOwnerUrl() }, timeout: 30_000 },
        );
        return { code: 0, stdout, stderr };
      } catch (err) {
        const e = err as { code: number; stdout: string; stderr: string };
        return { code: e.code, stdout: e.stdout, stderr: e.stderr };
      }
    };
    const made = await keysCli(
      'create',
      '--tenant',
      tenantId,
      '--kind',
      'telemetry',
      '--name',
      'cli',
      '--ip-storage',
      'none',
    );
    expect(made.code, made.stderr).to.equal(0);
    const keyId = /^key_id: ([0-9a-f]{16})$/m.exec(made.stdout)![1]!;
    expect((await loadKeyRecords(adminRegistry(), [keyId]))[0]!.ip_storage).to.equal('none');

    const changed = await keysCli('ip-storage', keyId, 'full');
    expect(changed.code, changed.stderr).to.equal(0);
    expect(changed.stdout).to.contain(`${keyId} ip_storage: none -> full`);
    const listed = await keysCli('list', '--tenant', tenantId);
    expect(listed.stdout.split('\n').find((l) => l.startsWith(keyId))).to.match(/\tip_storage=full$/);

    const refused = await Promise.all([
      keysCli('ip-storage', keyId, 'half'),
      keysCli('create', '--tenant', tenantId, '--kind', 'api', '--name', 'x', '--ip-storage', 'full'),
      keysCli('ip-storage', '0123456789abcdef', 'full'),
    ]);
    expect(refused.map((r) => r.code)).to.deep.equal([1, 1, 1]);
    expect(refused[0].stderr).to.contain('full|truncated|none');
    expect((await loadKeyRecords(adminRegistry(), [keyId]))[0]!.ip_storage).to.equal('full');
  });
});
