import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Kafka, logLevel, Partitioners, type IHeaders } from 'kafkajs';
import { MONITOR_LIMITS, type Check } from '@telemetry/contract';
import type { ClickHouseClient } from '@telemetry/platform';
import { createTenant, issueKey } from '@telemetry/store';
import {
  adminClickHouse,
  adminRegistry,
  eventually,
  registerMonitorsIn,
  runConsumer,
  runQuery,
  selectCount,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiCall } from '../support/api.js';
import { encodePng } from '../support/png.js';
import { tenantWithOwner } from '../support/tenants.js';

/**
 * Browser checks' failure screenshots end to end (docs/monitors.md, "Screenshots"): a
 * screenshot message on the run's screenshots topic and its check (screenshot: true) on
 * the checks topic, through a real stream consumer into ClickHouse, served by the query
 * service to the monitor's tenant only; messages that hold no valid PNG of at most 500 KB
 * are dead-lettered and never stored.
 */

const kafka = (): Kafka =>
  new Kafka({ brokers: testStack().kafkaBrokers.split(','), clientId: 'screenshots-test', logLevel: logLevel.NOTHING });

/** Produces `values` keyed `key` (the monitor id, as the runner keys them), acks=all. */
async function produceKeyed(topic: string, key: string, values: object[]): Promise<void> {
  const p = kafka().producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await p.connect();
  try {
    await p.send({ topic, acks: -1, messages: values.map((v) => ({ key, value: JSON.stringify(v) })) });
  } finally {
    await p.disconnect();
  }
}

/** The dead letters keyed `key`, read from the start of the topic until `n` are there. */
async function deadLettersKeyed(key: string, n: number): Promise<{ value: string; headers: IHeaders }[]> {
  const dead: { value: string; headers: IHeaders }[] = [];
  const c = kafka().consumer({ groupId: uid('dlq-reader'), maxBytesPerPartition: 4 * 1024 * 1024 });
  await c.connect();
  await c.subscribe({ topic: testStack().deadLetterTopic, fromBeginning: true });
  await c.run({
    eachMessage: async ({ message }) => {
      if (message.key?.toString() === key)
        dead.push({ value: message.value!.toString(), headers: message.headers ?? {} });
      await Promise.resolve();
    },
  });
  try {
    await eventually(`${n} dead letters keyed ${key}`, () => (dead.length >= n ? true : undefined), 30_000);
  } finally {
    await c.disconnect();
  }
  return dead;
}

describe('check screenshots (real Kafka, ClickHouse and PostgreSQL)', function () {
  this.timeout(90_000);
  let consumer: Running;
  let query: Running;
  let ch: ClickHouseClient;
  const A = { tenant: '', key: '', monitor: '' };
  const B = { tenant: '', key: '', monitor: '' };
  const db = (): string => testStack().database;
  const createdAt = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000).toISOString().replace('.000Z', 'Z');
  // A real PNG: 64 x 48, a gradient.
  const png = encodePng(64, 48, (x, y) => [x * 4, y * 5, 128]);

  const check = (id: string, monitor: typeof A, screenshot: boolean) => ({
    id,
    monitor_id: monitor.monitor,
    tenant_id: monitor.tenant,
    status: 'down',
    response_time: 1234,
    status_code: 0,
    error: 'step_failed',
    detail: 'step 2 (click #sign-in) failed: timeout',
    created_at: createdAt,
    ...(screenshot ? { screenshot: true } : {}),
  });
  const shot = (checkId: string, monitor: typeof A, bytes: Buffer) => ({
    check_id: checkId,
    monitor_id: monitor.monitor,
    tenant_id: monitor.tenant,
    created_at: createdAt,
    png_base64: bytes.toString('base64'),
  });
  const path = (monitor: string, checkId: string) => `/api/monitors/${monitor}/checks/${checkId}/screenshot`;
  const getImage = (key: string, p: string, headers: Record<string, string> = {}) =>
    fetch(`${query.url}${p}`, { headers: { authorization: `Bearer ${key}`, ...headers } });

  before(async () => {
    ch = adminClickHouse();
    for (const [t, name] of [
      [A, 'shots A'],
      [B, 'shots B'],
    ] as const) {
      t.tenant = (await createTenant(adminRegistry(), `${name} ${uid()}`)).tenant_id;
      t.key = (await issueKey(adminRegistry(), { tenantId: t.tenant, kind: 'api', name, scopes: ['checks:read'] })).key;
      t.monitor = uid('mon-shot');
      await registerMonitorsIn(t.tenant, t.monitor);
    }
    [consumer, query] = await Promise.all([runConsumer(), runQuery()]);
  });
  after(async () => {
    await Promise.all([consumer?.stop(), query?.stop()]);
    await ch?.close();
  });

  it("stores a failed check's PNG and serves it, byte for byte, to the monitor's tenant only", async () => {
    const failed = uid('chk-shot');
    const plain = uid('chk-plain');
    const s = testStack();
    // The runner's order: the check, then its screenshot.
    await produceKeyed(s.checksTopic, A.monitor, [check(failed, A, true), check(plain, A, false)]);
    await produceKeyed(s.screenshotsTopic, A.monitor, [shot(failed, A, png)]);

    // The check list gives the path of the screenshot, and none for the check without one.
    const checks = await eventually('both checks listed', async () => {
      const r = await apiCall<Check[]>(query.url, A.key, 'GET', `/api/monitors/${A.monitor}/checks`);
      return r.body.data?.length === 2 ? r.body.data : undefined;
    });
    const byId = new Map(checks.map((c) => [c.id, c]));
    expect(byId.get(failed)!.screenshot).to.equal(path(A.monitor, failed));
    expect(byId.get(plain)!.screenshot).to.equal(null);

    const res = await eventually('the screenshot served', async () => {
      const r = await getImage(A.key, byId.get(failed)!.screenshot!);
      return r.status === 200 ? r : undefined;
    });
    expect(res.headers.get('content-type')).to.equal('image/png');
    expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(res.headers.get('cache-control')).to.match(/^private, max-age=\d+$/);
    expect(res.headers.get('content-security-policy')).to.contain("default-src 'none'");
    expect(Buffer.from(await res.arrayBuffer()).equals(png)).to.equal(true);
    // Revalidation: the same image, no body.
    const again = await getImage(A.key, path(A.monitor, failed), { 'if-none-match': res.headers.get('etag')! });
    expect(again.status).to.equal(304);

    // A check without a screenshot, and one that does not exist: 404 SCREENSHOT_NOT_FOUND in the envelope.
    for (const id of [plain, uid('chk-none')]) {
      const r = await apiCall(query.url, A.key, 'GET', path(A.monitor, id));
      expect([r.status, r.code, r.body.success], id).to.deep.equal([404, 'SCREENSHOT_NOT_FOUND', false]);
    }
    // Another tenant's key: A's monitor does not exist for it; its own monitor has no such check.
    const foreign = await apiCall(query.url, B.key, 'GET', path(A.monitor, failed));
    expect([foreign.status, foreign.code]).to.deep.equal([404, 'MONITOR_NOT_FOUND']);
    const own = await apiCall(query.url, B.key, 'GET', path(B.monitor, failed));
    expect([own.status, own.code]).to.deep.equal([404, 'SCREENSHOT_NOT_FOUND']);
    // A check id that is no id: 400, not a query.
    const bad = await apiCall(query.url, A.key, 'GET', path(A.monitor, '%20drop'));
    expect([bad.status, bad.code]).to.deep.equal([400, 'INVALID_PARAMETER']);
  });

  it("serves it to a console session of the monitor's tenant (the check history's <img>)", async () => {
    const email = `${uid('shots')}@example.com`;
    const password = 'correct horse battery staple 45';
    const tenant = await tenantWithOwner('shots-console', email, password);
    const monitor = { tenant, key: '', monitor: uid('mon-console') };
    await registerMonitorsIn(tenant, monitor.monitor);
    const id = uid('chk-console');
    await produceKeyed(testStack().checksTopic, monitor.monitor, [check(id, monitor, true)]);
    await produceKeyed(testStack().screenshotsTopic, monitor.monitor, [shot(id, monitor, png)]);
    const signIn = await fetch(`${query.url}/api/session/password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    expect(signIn.status, await signIn.clone().text()).to.equal(200);
    const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
    const res = await eventually('the screenshot served to the session', async () => {
      const r = await fetch(`${query.url}${path(monitor.monitor, id)}`, { headers: { cookie } });
      return r.status === 200 ? r : undefined;
    });
    expect(Buffer.from(await res.arrayBuffer()).equals(png)).to.equal(true);
    // Without the session: no credentials.
    const anonymous = await fetch(`${query.url}${path(monitor.monitor, id)}`);
    expect(anonymous.status).to.equal(401);
  });

  it('dead-letters a screenshot over 500 KB, one that is no PNG and one whose base64 is not canonical, and stores none', async () => {
    const s = testStack();
    // Random pixels do not compress: a real PNG past the limit.
    const noise = randomBytes(420 * 420 * 3);
    const big = encodePng(420, 420, (x, y) => [...noise.subarray((y * 420 + x) * 3, (y * 420 + x) * 3 + 3)]);
    expect(big.length).to.be.greaterThan(MONITOR_LIMITS.maxScreenshotBytes);
    const gif = Buffer.concat([Buffer.from('GIF89a'), randomBytes(64)]);
    const ids = { big: uid('chk-big'), gif: uid('chk-gif'), loose: uid('chk-loose'), good: uid('chk-good') };
    const loose = shot(ids.loose, A, png);
    // Valid characters, but a stray "A" before the padding: Buffer would decode it silently.
    loose.png_base64 = `${png.toString('base64').replace(/=+$/, '')}A`;
    await produceKeyed(s.screenshotsTopic, A.monitor, [
      shot(ids.big, A, big),
      shot(ids.gif, A, gif),
      loose,
      // The partition keeps flowing past them.
      shot(ids.good, A, png),
    ]);
    const dead = await deadLettersKeyed(A.monitor, 3);
    const reasons = dead.map((d) => String(d.headers['x-dead-letter-reason']));
    expect(dead.map((d) => String(d.headers['x-source-topic']))).to.deep.equal([
      s.screenshotsTopic,
      s.screenshotsTopic,
      s.screenshotsTopic,
    ]);
    expect(reasons[0]).to.match(/too large|png_base64 must NOT have more than/);
    expect(reasons[1]).to.match(/not a PNG/);
    expect(reasons[2]).to.match(/not canonical base64/);
    await eventually('the good one stored', async () =>
      (await getImage(A.key, path(A.monitor, ids.good))).status === 200 ? true : undefined,
    );
    const stored = await selectCount(
      ch,
      `SELECT count() AS n FROM ${db()}.check_screenshots
        WHERE check_id IN ('${ids.big}', '${ids.gif}', '${ids.loose}', '${ids.good}')`,
    );
    expect(stored).to.equal(1);
    const r = await apiCall(query.url, A.key, 'GET', path(A.monitor, ids.gif));
    expect([r.status, r.code]).to.deep.equal([404, 'SCREENSHOT_NOT_FOUND']);
  });
});
