import { createServer, type Server } from 'node:http';
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

/**
 * Assertions on checks (docs/assertions.md) on the real pipeline: a check runner process,
 * Kafka, ClickHouse and PostgreSQL, against a loopback JSON API whose answer the test changes.
 */
describe('assertions on checks (real Kafka, ClickHouse and PostgreSQL, a check runner process)', function () {
  this.timeout(120_000);
  /** What the loopback API answers: its JSON body (a string: as it is). */
  let answer: unknown = { status: 'ok', data: { items: [1, 2] } };
  let site: Server;
  let port = 0;
  const dns = new TestDnsServer();
  let query: Running;
  let consumer: Running;
  let runner: ServiceProcess;
  let checks: Awaited<ReturnType<typeof collectTopic>>;
  let key: string;
  const LOCATION = 'assert-east';

  const api = apiClient(
    () => query.url,
    () => key,
  );

  const create = (m: Record<string, unknown>) =>
    api<Monitor>('POST', '/api/monitors', {
      name: uid('assert'),
      url: `http://127.0.0.1:${port}/health`,
      interval_seconds: 1,
      timeout_ms: 800,
      locations: [LOCATION],
      ...m,
    });

  /** Waits for a check of `id` that `match` accepts, among those made at or after `since`. */
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
    site = createServer((_req, res) => {
      res
        .writeHead(200, { 'Content-Type': 'application/json', 'X-Version': '7' })
        .end(typeof answer === 'string' ? answer : JSON.stringify(answer));
    });
    await Promise.all([new Promise<void>((r) => site.listen(0, '127.0.0.1', r)), dns.start()]);
    port = (site.address() as { port: number }).port;
    dns.records.set('shop.test', { A: ['192.0.2.10', '192.0.2.11'] });
    const egress = { EGRESS_ALLOW: [port, dns.port].map((p) => `127.0.0.1:${p}`).join(',') };
    [query, consumer] = await Promise.all([runQuery(egress), runConsumer()]);
    checks = await collectTopic(testStack().checksTopic);
    key = await newKey({ kind: 'api', name: 'assert', scopes: ['checks:read', 'monitors:read', 'monitors:write'] });
    runner = await spawnService('check-runner', {
      ...egress,
      RUNNER_ID: uid('assert-runner'),
      RUNNER_GROUP_ID: uid('assert-runners'),
      WEBHOOK_GROUP_ID: uid('assert-webhooks'),
      RUNNER_LOCATION: LOCATION,
    });
    await eventually('the key loaded', async () =>
      (await api('GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    await Promise.all([runner?.kill('SIGTERM'), query?.stop(), consumer?.stop(), checks?.stop(), dns.stop()]);
    site?.closeAllConnections();
    await new Promise((r) => site?.close(r));
  });

  it('refuses invalid assertions at creation with VALIDATION_FAILED and the path of each', async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ assertions: ['$.status = "ok"'] }, '/assertions/0', /operator/],
      [{ assertions: ['status == 200', 'status < "fast"'] }, '/assertions/1', /compares numbers/],
      [{ assertions: ['colour == "red"'] }, '/assertions/0', /unknown subject/],
      [{ assertions: ['$.items[x] == 1'] }, '/assertions/0', /path step/],
      // A backreference: V8's linear-time engine cannot run it.
      [{ assertions: ['body matches "(a)\\\\1"'] }, '/assertions/0', /linear time/],
      [{ assertions: ['body matches "a(?=b)"'] }, '/assertions/0', /linear time/],
      [{ type: 'tls', url: `tls://127.0.0.1:${port}`, assertions: ['status == 200'] }, '/assertions/0', /tls/],
      [{ type: 'dns', url: 'dns://shop.test', assertions: ['dns.answers > 1'] }, '/assertions/0', /list/],
    ];
    for (const [body, path, message] of cases) {
      const r = await create({ paused: true, ...body });
      expect([r.status, r.body.code], JSON.stringify(body)).to.deep.equal([400, 'VALIDATION_FAILED']);
      const problem = r.body.details?.problems?.find((p) => p.path === path);
      expect(problem?.message, JSON.stringify(r.body)).to.match(message);
    }
    // More than 20 is the schema's refusal, at the same field.
    const many = await create({ paused: true, assertions: Array.from({ length: 21 }, () => 'status == 200') });
    expect([many.status, many.body.code]).to.deep.equal([400, 'VALIDATION_FAILED']);
    expect(many.body.details?.problems?.map((p) => p.path)).to.include('/assertions');
    // A valid list is stored as written.
    const fine = await create({ paused: true, assertions: ['$.data.items.length > 0', 'body matches "^\\\\{"'] });
    expect(fine.status, JSON.stringify(fine.body)).to.equal(201);
    expect(fine.body.data.assertions).to.deep.equal(['$.data.items.length > 0', 'body matches "^\\\\{"']);
  });

  it('is up while the JSON body holds, then down assertion_failed naming the assertion and the value seen, with an incident', async () => {
    const m = await create({
      assertions: [
        'status == 200',
        'response_time < 5000',
        'header.content-type contains "json"',
        'header.x-version >= 7',
        '$.data.items.length > 0',
        '$.status == "ok"',
      ],
    });
    expect(m.status, JSON.stringify(m.body)).to.equal(201);
    const id = m.body.data.id;
    const up = await checkOf(id, () => true);
    expect(up, JSON.stringify(up)).to.include({ status: 'up', status_code: 200 });
    expect(up.detail).to.equal(undefined);

    answer = { status: 'degraded', data: { items: [1, 2] } };
    const since = Date.now();
    const down = await checkOf(id, (c) => c.status === 'down', since);
    expect(down).to.include({
      status_code: 200,
      error: 'assertion_failed',
      detail: 'assertion $.status == "ok" failed: saw "degraded"',
    });
    // Read back through the API, as any check is.
    const listed = await eventually('the failed check in ClickHouse', async () => {
      const r = await api<{ status: string; error: string | null; detail: string | null }[]>(
        'GET',
        `/api/monitors/${id}/checks?limit=5`,
      );
      return r.body.data?.find((c) => c.error === 'assertion_failed');
    });
    expect(listed).to.include({ status: 'down', detail: 'assertion $.status == "ok" failed: saw "degraded"' });
    // The monitor went down: an incident opened, caused by the assertion.
    const incident = await eventually('the incident', async () => {
      const r = await api<{ status: string; cause: { error: string | null } }[]>(
        'GET',
        `/api/monitors/${id}/incidents`,
      );
      return r.body.data?.[0];
    });
    expect(incident).to.deep.include({ status: 'open', cause: { status_code: 200, error: 'assertion_failed' } });

    // A path that finds nothing, and a body that is not JSON, say so.
    answer = { state: 'ok' };
    const missing = await checkOf(id, (c) => /saw nothing/.test(c.detail ?? ''), Date.now());
    expect(missing.detail).to.equal('assertion $.data.items.length > 0 failed: saw nothing');
    answer = 'plain text';
    const notJson = await checkOf(id, (c) => /not JSON/.test(c.detail ?? ''), Date.now());
    expect(notJson.detail).to.equal('assertion $.data.items.length > 0 failed: the body is not JSON');

    answer = { status: 'ok', data: { items: [3] } };
    await checkOf(id, (c) => c.status === 'up', Date.now());
  });

  it('judges the expected status before the assertions', async () => {
    const m = await create({ expected_status_codes: [204], assertions: ['$.status == "nope"'] });
    expect(m.status, JSON.stringify(m.body)).to.equal(201);
    const c = await checkOf(m.body.data.id, () => true);
    expect(c).to.include({ status: 'down', error: 'unexpected_status', status_code: 200 });
    expect(c.detail).to.equal(undefined);
  });

  it('judges a dns check on its answers', async () => {
    const resolver = `127.0.0.1:${dns.port}`;
    const base = { type: 'dns', url: 'dns://shop.test', dns_resolver: resolver };
    const holds = await create({
      ...base,
      assertions: ['dns.answers contains "192.0.2.11"', 'dns.answers.length == 2'],
    });
    const fails = await create({ ...base, assertions: ['dns.answers contains "192.0.2.99"'] });
    expect([holds.status, fails.status], JSON.stringify([holds.body, fails.body])).to.deep.equal([201, 201]);
    expect(await checkOf(holds.body.data.id, () => true)).to.include({ status: 'up' });
    expect(await checkOf(fails.body.data.id, () => true)).to.include({
      status: 'down',
      error: 'assertion_failed',
      detail: 'assertion dns.answers contains "192.0.2.99" failed: saw ["192.0.2.10","192.0.2.11"]',
    });
  });
});
