import { readFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { AlertMessage, CheckMessage, Monitor } from '@telemetry/contract';
import { createTenant, DEFAULT_MONITOR, MonitorStore, placeholderMonitor, type StoredMonitor } from '@telemetry/store';
import { runSecretBox } from '../../harness/processes.js';
import {
  adminClickHouse,
  collectTopic,
  eventually,
  newKey,
  produce,
  runQuery,
  testStack,
  uid,
  adminRegistry,
} from '../support/fixtures.js';
import { spawnService, type ServiceProcess } from '../support/processes.js';

const MONITORS = 500;
/** The runner's RUNNER_LOCATION, and the only location of the monitors it must check. */
const LOCATION = 'isolation';
const BODY_BYTES = 3 * 1024 * 1024;
const KEYWORD = 'all-systems-go';
/** The check runner's memory limit (deploy/helm/telemetry/values.yaml, checkRunner.resources). */
const RUNNER_LIMIT_BYTES = 1024 * 1024 * 1024;

async function listen(handler: (path: string, res: ServerResponse) => void): Promise<{ server: Server; base: string }> {
  const server = createServer((req, res) => {
    req.resume();
    handler(req.url ?? '/', res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function close(server: Server | undefined): Promise<void> {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
}

function alertFor(monitorId: string, id: string): AlertMessage {
  return {
    id,
    type: 'monitor.down',
    monitor_id: monitorId,
    incident_id: `chk_${id}`,
    created_at: new Date().toISOString(),
    check: {
      id: `chk_${id}`,
      status: 'down',
      response_time: 3,
      status_code: 0,
      error: 'connection_refused',
      created_at: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    },
    monitor: { name: monitorId, url: 'http://127.0.0.1:9/' },
  };
}

/** Peak resident memory of a process (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

/**
 * A check runner process on the real pipeline, isolated from what others do: webhooks to a
 * dead endpoint delay nobody else's, and large responses are searched as they stream.
 */
describe('runner isolation (real Kafka and ClickHouse, a check runner process)', function () {
  this.timeout(240_000);
  let runner: ServiceProcess;
  let servers: Server[] = [];
  const live: { id: string; at: number }[] = [];
  let liveBase = '';
  let deadBase = '';
  let bigBase = '';
  let inFlight = 0;
  let peakInFlight = 0;
  const body = Buffer.alloc(BODY_BYTES - KEYWORD.length, 'x');

  before(async () => {
    const liveServer = await listen((_path, res) => res.end('ok'));
    liveServer.server.on('request', (req) => {
      const id = req.headers['x-telemetry-delivery'];
      if (typeof id === 'string') live.push({ id, at: Date.now() });
    });
    // Accepts, never answers: a dead endpoint.
    const dead = await listen(() => undefined);
    // 3 MiB, the keyword in its last bytes, which come 8 s after the rest: every check holds
    // its response open while the others arrive.
    const big = await listen((_path, res) => {
      inFlight++;
      peakInFlight = Math.max(peakInFlight, inFlight);
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(BODY_BYTES) });
      res.write(body);
      const t = setTimeout(() => res.end(KEYWORD), 8000);
      res.on('close', () => {
        clearTimeout(t);
        inFlight--;
      });
    });
    servers = [liveServer.server, dead.server, big.server];
    [liveBase, deadBase, bigBase] = [liveServer.base, dead.base, big.base];
    runner = await spawnService('check-runner', {
      RUNNER_ID: 'isolation',
      // A location of its own: it checks only the monitors this file makes for it, whatever
      // monitors of other tenants earlier files left (fair slots would share with them).
      RUNNER_LOCATION: LOCATION,
      RUNNER_GROUP_ID: uid('isolation-runners'),
      WEBHOOK_GROUP_ID: uid('isolation-webhooks'),
      WEBHOOK_TIMEOUT_MS: '15000',
      CHECK_MAX_BODY_BYTES: String(4 * 1024 * 1024),
    });
  });
  after(async () => {
    await runner?.kill('SIGTERM');
    for (const s of servers) await close(s);
  });

  it('delivers another monitor’s webhook within a second while a dead endpoint hangs', async () => {
    const ch = adminClickHouse();
    const deadMonitor = uid('mon_dead');
    const liveMonitor = uid('mon_live');
    try {
      const store = new MonitorStore(adminRegistry(), runSecretBox());
      await store.saveMany([
        { ...placeholderMonitor(deadMonitor), webhooks: [`${deadBase}/hook`] },
        { ...placeholderMonitor(liveMonitor), webhooks: [`${liveBase}/hook`] },
      ]);
    } finally {
      await ch.close();
    }
    const topic = testStack().alertsTopic;
    // The webhook group starts at the end of the topic: wait until it reads.
    let n = 0;
    await eventually(
      'the webhook consumer reading',
      async () => {
        const id = `alr_warm_${n++}`;
        await produce(topic, [alertFor(liveMonitor, id)], 0);
        return (await eventually(
          'warm-up delivery',
          () => (live.some((d) => d.id === id) ? true : undefined),
          3000,
        ).catch(() => undefined))
          ? true
          : undefined;
      },
      60_000,
    );
    // The dead endpoint's alert first, the live one right behind it, on the same partition.
    const liveId = uid('alr_live');
    await produce(topic, [alertFor(deadMonitor, uid('alr_dead')), alertFor(liveMonitor, liveId)], 0);
    const sentAt = Date.now();
    const delivered = await eventually('the live delivery', () => live.find((d) => d.id === liveId), 20_000);
    expect(delivered.at - sentAt).to.be.below(1000);
  });

  it(`stays under its memory limit with ${MONITORS} monitors answering 3 MiB bodies`, async () => {
    const ch = adminClickHouse();
    const tenant = (await createTenant(adminRegistry(), uid('big bodies'))).tenant_id;
    const ids = Array.from({ length: MONITORS }, (_, i) => `mon_big_${i}_${uid('m')}`);
    const checks = await collectTopic(testStack().checksTopic);
    const store = new MonitorStore(adminRegistry(), runSecretBox());
    let versions: number[] = [];
    let monitors: Omit<StoredMonitor, 'version'>[] = [];
    try {
      monitors = ids.map((id) => ({
        ...placeholderMonitor(id, id, tenant),
        ...DEFAULT_MONITOR,
        url: `${bigBase}/${id}`,
        keyword: KEYWORD,
        interval_seconds: 10,
        timeout_ms: 9500,
        locations: [LOCATION],
        paused: false,
      }));
      versions = await store.saveMany(monitors);
      const wanted = new Set(ids);
      const seen = await eventually(
        `a check of each of the ${MONITORS} monitors`,
        () => {
          const mine = new Map<string, CheckMessage>();
          for (const c of checks.values as CheckMessage[]) if (wanted.has(c.monitor_id)) mine.set(c.monitor_id, c);
          return mine.size === MONITORS ? [...mine.values()] : undefined;
        },
        120_000,
      );
      // Each found the keyword in the last bytes: every body was read whole.
      expect(seen.filter((c) => c.status !== 'up').map((c) => c.error)).to.deep.equal([]);
      const peak = peakRss(runner.child.pid!);
      // Holding the open responses would take peakInFlight × 3 MiB.
      expect(peakInFlight * BODY_BYTES).to.be.above(RUNNER_LIMIT_BYTES);
      expect(peak, `peak RSS with ${peakInFlight} responses open`).to.be.below(RUNNER_LIMIT_BYTES / 2);
    } finally {
      // Deleted again, so that the rest of the suite does not check them.
      if (versions.length > 0) await store.saveMany(monitors, true);
      await checks.stop();
      await ch.close();
    }
  });
});

describe('monitor quotas and the minimum interval (real ClickHouse)', () => {
  it('refuses a monitor beyond the tenant’s quota (403 QUOTA_EXCEEDED) and an interval below the minimum', async () => {
    const ch = adminClickHouse();
    const tenant = (await createTenant(adminRegistry(), uid('quota'))).tenant_id;
    await ch.close();
    const query = await runQuery({ MONITOR_QUOTAS: `${tenant}=2`, MIN_INTERVAL_SECONDS: '30' });
    try {
      const key = await newKey({ kind: 'api', name: 'quota', tenantId: tenant, scopes: ['monitors:write'] });
      const create = async (interval: number) => {
        const r = await fetch(`${query.url}/api/monitors`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            name: uid('q'),
            url: 'http://127.0.0.1:9/',
            interval_seconds: interval,
            paused: true,
          }),
        });
        const b = (await r.json()) as { code?: string; data?: Monitor; details?: { problems?: { path: string }[] } };
        return { status: r.status, body: b };
      };
      await eventually('key loaded', async () => ((await create(29)).status === 400 ? true : undefined));
      const short = await create(29);
      expect([short.body.code, short.body.details?.problems?.[0]?.path]).to.deep.equal([
        'VALIDATION_FAILED',
        '/interval_seconds',
      ]);
      expect((await create(30)).status).to.equal(201);
      expect((await create(60)).status).to.equal(201);
      const third = await create(60);
      expect([third.status, third.body.code]).to.deep.equal([403, 'QUOTA_EXCEEDED']);
    } finally {
      await query.stop();
    }
  });
});
