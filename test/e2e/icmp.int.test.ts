import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Check, CheckMessage, Monitor } from '@telemetry/contract';
import { findPing } from '../../services/check-runner/src/probes/ping.js';
import { apiRequest } from '../support/api.js';
import {
  collectTopic,
  eventually,
  newKey,
  runConsumer,
  runQuery,
  runRunner,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';

/**
 * Ping monitors on the real pipeline (Kafka, ClickHouse, PostgreSQL, check runners in this
 * process): only loopback is ever pinged. Each runner's RUNNER_PING_PATH is a wrapper that
 * writes its arguments to a file of its own before it runs the system ping, so the test
 * sees every ping a runner started, and that a denied address got none.
 */
describe('icmp monitors (real Kafka, ClickHouse and PostgreSQL, check runners, the system ping)', function () {
  this.timeout(120_000);
  const dir = mkdtempSync(join(tmpdir(), 'icmp-'));
  /** The default policy: loopback denied. */
  let strictQuery: Running;
  /** EGRESS_ALLOW=127.0.0.1/32. */
  let openQuery: Running;
  let consumer: Running;
  let strictRunner: Running;
  let openRunner: Running;
  let pinglessRunner: Running;
  let checks: Awaited<ReturnType<typeof collectTopic>>;
  let key: string;
  const STRICT = 'icmp-strict';
  const OPEN = 'icmp-open';
  const PINGLESS = 'icmp-pingless';

  /** A RUNNER_PING_PATH that logs every run to `<dir>/<name>.log`, then runs the real ping. */
  function wrapper(name: string, ping: string): string {
    const path = join(dir, `${name}-ping`);
    writeFileSync(path, `#!/bin/sh\necho "$*" >> '${join(dir, `${name}.log`)}'\nexec '${ping}' "$@"\n`);
    chmodSync(path, 0o755);
    return path;
  }
  const pingsBy = (name: string): string[] => {
    const log = join(dir, `${name}.log`);
    return existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
  };

  const create = (q: Running, m: Record<string, unknown>) =>
    apiRequest<Monitor>(
      q.url,
      'POST',
      '/api/monitors',
      { name: uid('ping'), type: 'icmp', interval_seconds: 2, timeout_ms: 1500, ...m },
      { key },
    );

  function checkOf(id: string, match: (c: CheckMessage) => boolean = () => true): Promise<CheckMessage> {
    return eventually(
      `a matching check of ${id}`,
      () => (checks.values as CheckMessage[]).find((c) => c.monitor_id === id && match(c)),
      30_000,
    );
  }

  before(async () => {
    const ping = await findPing('ping');
    if (!ping) throw new Error('no ping in PATH: install iputils-ping (.ci/run does)');
    [strictQuery, openQuery, consumer] = await Promise.all([
      runQuery({ EGRESS_ALLOW: '' }),
      runQuery({ EGRESS_ALLOW: '127.0.0.1/32' }),
      runConsumer(),
    ]);
    checks = await collectTopic(testStack().checksTopic);
    key = await newKey({ kind: 'api', name: 'icmp', scopes: ['checks:read', 'monitors:read', 'monitors:write'] });
    const runner = (location: string, env: Record<string, string>) =>
      runRunner({
        RUNNER_ID: uid(location),
        RUNNER_GROUP_ID: uid(`${location}-runners`),
        WEBHOOK_GROUP_ID: uid(`${location}-webhooks`),
        RUNNER_LOCATION: location,
        ...env,
      });
    [strictRunner, openRunner, pinglessRunner] = await Promise.all([
      runner(STRICT, { EGRESS_ALLOW: '', RUNNER_PING_PATH: wrapper(STRICT, ping) }),
      runner(OPEN, { EGRESS_ALLOW: '127.0.0.1/32', RUNNER_PING_PATH: wrapper(OPEN, ping) }),
      runner(PINGLESS, { EGRESS_ALLOW: '127.0.0.1/32', RUNNER_PING_PATH: join(dir, 'no-such-ping') }),
    ]);
    await eventually('the key loaded', async () =>
      (await apiRequest(strictQuery.url, 'GET', '/api/monitors?limit=1', undefined, { key })).status === 200
        ? true
        : undefined,
    );
  });

  after(async () => {
    await Promise.all([
      strictRunner?.stop(),
      openRunner?.stop(),
      pinglessRunner?.stop(),
      strictQuery?.stop(),
      openQuery?.stop(),
      consumer?.stop(),
      checks?.stop(),
    ]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a ping of 127.0.0.1 under the default policy at creation (400 TARGET_NOT_ALLOWED), in every notation', async () => {
    for (const url of [
      'icmp://127.0.0.1',
      'icmp://127.1',
      'icmp://2130706433',
      'icmp://[::1]',
      'icmp://[::ffff:127.0.0.1]',
    ]) {
      const r = await create(strictQuery, { url, locations: [STRICT], paused: true });
      expect([r.status, r.body.code], url).to.deep.equal([400, 'TARGET_NOT_ALLOWED']);
      expect(
        r.body.details?.problems?.map((p) => p.path),
        url,
      ).to.deep.equal(['/url']);
    }
    // Bad input: a port or a path, more packets than allowed or than the timeout fits, a field of another type.
    const cases: [Record<string, unknown>, string][] = [
      [{ url: 'icmp://127.0.0.1:80' }, '/url'],
      [{ url: 'icmp://localhost/x' }, '/url'],
      [{ url: 'icmp://localhost', icmp_count: 21 }, '/icmp_count'],
      [{ url: 'icmp://localhost', icmp_count: 0 }, '/icmp_count'],
      [{ url: 'icmp://localhost', icmp_count: 20, timeout_ms: 1000 }, '/icmp_count'],
      [{ url: 'icmp://localhost', keyword: 'x' }, '/keyword'],
      [{ url: 'http://127.0.0.1:9/', type: 'http', icmp_count: 3 }, '/icmp_count'],
    ];
    for (const [body, path] of cases) {
      const r = await create(openQuery, { paused: true, ...body });
      expect([r.status, r.body.code], JSON.stringify(body)).to.deep.equal([400, 'VALIDATION_FAILED']);
      expect(
        r.body.details?.problems?.map((p) => p.path),
        JSON.stringify(body),
      ).to.include(path);
    }
  });

  it('checks a name that resolves to loopback down with target_not_allowed under the default policy, and pings nothing', async () => {
    // A name is judged when the check resolves it: created, then refused by the runner.
    const m = await create(strictQuery, { url: 'icmp://localhost', locations: [STRICT] });
    expect(m.status, JSON.stringify(m.body)).to.equal(201);
    expect(m.body.data).to.include({ type: 'icmp', icmp_count: 3 });
    const first = await checkOf(m.body.data.id);
    expect(first).to.include({ status: 'down', error: 'target_not_allowed', response_time: 0, location: STRICT });
    expect(first.timings).to.equal(undefined);
    // Three checks later, still no ping was started by that runner.
    await eventually('three checks', () =>
      (checks.values as CheckMessage[]).filter((c) => c.monitor_id === m.body.data.id).length >= 3 ? true : undefined,
    );
    expect(pingsBy(STRICT)).to.deep.equal([]);
  });

  it('pings 127.0.0.1 when EGRESS_ALLOW allows it: up, every packet back, the round trips recorded and served', async () => {
    const m = await create(openQuery, { url: 'icmp://127.0.0.1', icmp_count: 4, locations: [OPEN] });
    expect(m.status, JSON.stringify(m.body)).to.equal(201);
    const c = await checkOf(m.body.data.id);
    expect(c).to.include({ status: 'up', status_code: 0, location: OPEN });
    expect(c.error).to.equal(undefined);
    const packets = c.timings?.packets;
    expect(packets).to.include({ sent: 4, received: 4, loss_percent: 0 });
    expect(packets!.rtt_avg_ms).to.be.greaterThan(0);
    expect(packets!.rtt_min_ms).to.be.at.most(packets!.rtt_avg_ms!);
    expect(packets!.rtt_max_ms).to.be.at.least(packets!.rtt_avg_ms!);
    expect(c.response_time).to.equal(packets!.rtt_avg_ms);
    // The runner ran ping with the address, never a name, and the monitor's count.
    expect(pingsBy(OPEN)[0]).to.match(/^-n -4 -c 4 -W \d+\.\d{3} -i 0\.200 -- 127\.0\.0\.1$/);
    // Stored in ClickHouse and served by the API as any check, with its timings.
    const stored = await eventually('the check in ClickHouse', async () => {
      const r = await apiRequest<Check[]>(
        openQuery.url,
        'GET',
        `/api/monitors/${m.body.data.id}/checks?limit=1`,
        undefined,
        {
          key,
        },
      );
      return r.body.data?.length ? r.body.data[0] : undefined;
    });
    expect(stored).to.deep.include({ status: 'up', error: null });
    expect(stored.timings?.packets).to.include({ sent: 4, received: 4, loss_percent: 0 });
  });

  it('a runner without a ping program checks down with network, says why in the check and once in its log', async () => {
    const m = await create(openQuery, { url: 'icmp://127.0.0.1', locations: [PINGLESS] });
    expect(m.status, JSON.stringify(m.body)).to.equal(201);
    const c = await checkOf(m.body.data.id);
    expect(c).to.include({ status: 'down', error: 'network' });
    expect(c.detail).to.match(/no ping program .*RUNNER_PING_PATH/);
    expect(pinglessRunner.logs.lines.filter((l) => l.includes('no ping program'))).to.have.length(1);
  });
});
