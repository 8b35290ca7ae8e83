import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import type { AlertMessage, Check, Monitor } from '@telemetry/contract';
import { createKafka, createLogger, kafkajsAdmin } from '@telemetry/platform';
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
import { spawnService, type ServiceProcess } from '../support/processes.js';
import { apiClient } from '../support/api.js';

interface Incident {
  id: string;
  status: string;
}

/**
 * No single decider (docs/monitors.md, "Who decides"): a monitor of three locations is
 * decided by the owner of its partition in the decide group, whatever its location. The
 * test makes sure that owner is a runner of the monitor's first location (loc-a: two
 * runner processes), SIGKILLs every runner of loc-a, and sees the incident open and
 * resolve, decided by a runner of loc-b or loc-c (in this process), once. Real Kafka,
 * ClickHouse and PostgreSQL; a loopback target the test makes fail.
 */
describe('the decision of a monitor of several locations outlives its first location (real Kafka, ClickHouse, PostgreSQL)', function () {
  this.timeout(240_000);
  let query: Running;
  let consumer: Running;
  const locA: ServiceProcess[] = [];
  const others: Running[] = [];
  let alerts: Awaited<ReturnType<typeof collectTopic>>;
  let key: string;
  let target: Server;
  let targetPort = 0;
  let failing = false;
  const created: string[] = [];

  const api = apiClient(
    () => query.url,
    () => key,
  );

  const incidents = async (id: string): Promise<Incident[]> =>
    (await api<Incident[]>('GET', `/api/monitors/${id}/incidents`)).body.data;

  /** A gauge of a runner's /metrics (0 when absent). */
  const gauge = async (url: string, name: string): Promise<number> => {
    const text = await (await fetch(`${url}/metrics`)).text();
    return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  };

  before(async () => {
    target = createServer((_req, res) => res.writeHead(failing ? 500 : 200).end('ok'));
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    targetPort = (target.address() as { port: number }).port;
    const egress = { EGRESS_ALLOW: `127.0.0.1:${targetPort}` };
    [query, consumer, alerts] = await Promise.all([
      runQuery(egress),
      runConsumer(),
      collectTopic(testStack().alertsTopic),
    ]);
    key = await newKey({ kind: 'api', name: 'decider', scopes: ['checks:read', 'monitors:read', 'monitors:write'] });
    const common = {
      ...egress,
      RUNNER_GROUP_ID: uid('dec-runners'),
      WEBHOOK_GROUP_ID: uid('dec-webhooks'),
      RUNNER_STATE_SETTLE_MS: '300',
      // The smallest allowed: a killed runner's partitions move after 6 s.
      RUNNER_SESSION_TIMEOUT_MS: '6000',
    };
    // loc-a's runners are processes (to be SIGKILLed); loc-b's and loc-c's run here.
    const spawned = await Promise.all(
      ['a1', 'a2'].map((id) =>
        spawnService('check-runner', { ...common, RUNNER_ID: uid(id), RUNNER_LOCATION: 'loc-a' }),
      ),
    );
    locA.push(...spawned);
    for (const location of ['loc-b', 'loc-c']) {
      others.push(await runRunner({ ...common, RUNNER_ID: uid(location), RUNNER_LOCATION: location }));
    }
    await eventually('the key loaded', async () =>
      (await api('GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    for (const id of created) await api('DELETE', `/api/monitors/${id}`).catch(() => undefined);
    await Promise.all([
      ...locA.map((p) => (p.child.exitCode === null && p.child.signalCode === null ? p.kill('SIGTERM') : undefined)),
      ...others.map((r) => r.stop()),
      query?.stop(),
      consumer?.stop(),
      alerts?.stop(),
    ]);
    target?.closeAllConnections();
    await new Promise((r) => target?.close(r));
  });

  it('opens and resolves an incident, once, after every runner of the first location is SIGKILLed', async () => {
    const startedAt = Date.now();
    const urls = [...locA.map((p) => p.url), ...others.map((r) => r.url)];
    const partitions = await kafkajsAdmin(
      createKafka({
        brokers: testStack().kafkaBrokers.split(','),
        clientId: 'decider-test',
        logger: createLogger({ service: 'test', level: 'silent' }),
      }),
    ).countPartitions(testStack().monitorChangesTopic);
    expect(partitions, 'monitor-changes partitions').to.be.at.least(4);
    // Every runner, whatever its location, is in the decide group: the topic's partitions
    // spread over the 4 runners.
    let owned: number[] = [];
    await eventually(
      () => `the decide group settled over every runner (owned: ${owned.join(', ')})`,
      async () => {
        owned = await Promise.all(urls.map((u) => gauge(u, 'runner_owned_decide_partitions')));
        return owned.every((n) => n >= 1) && owned.reduce((a, b) => a + b, 0) === partitions ? true : undefined;
      },
      60_000,
    );

    // The registry is the whole run's: other files' monitors of several locations are
    // decided by this group too. Count against what each runner decides before.
    const decidedNow = (): Promise<number[]> => Promise.all(urls.map((u) => gauge(u, 'runner_monitors_decided')));
    const sum = (n: number[]): number => n.reduce((a, b) => a + b, 0);
    let base: number[] = [];
    await eventually('the decided counts steady', async () => {
      const first = await decidedNow();
      await new Promise((r) => setTimeout(r, 500));
      const again = await decidedNow();
      base = again;
      return first.every((n, i) => n === again[i]) ? true : undefined;
    });
    const total = sum(base);

    // A monitor whose decider is a loc-a runner (a monitor's partition is its id's hash:
    // make monitors until one lands on loc-a's share; each try has about one chance in two).
    let m: Monitor | undefined;
    for (let attempt = 0; attempt < 16 && !m; attempt++) {
      const made = await api<Monitor>('POST', '/api/monitors', {
        name: uid('decided'),
        url: `http://127.0.0.1:${targetPort}/`,
        interval_seconds: 1,
        timeout_ms: 500,
        failure_threshold: 1,
        recovery_threshold: 1,
        locations: ['loc-a', 'loc-b', 'loc-c'],
      });
      expect(made.status).to.equal(201);
      created.push(made.body.data.id);
      // A busy machine (CI's whole suite) can take a while to deliver the change to the group.
      const deltas = await eventually(
        () => `one runner deciding the new monitor (before: ${base.join(', ')})`,
        async () => {
          const n = await decidedNow();
          return sum(n) === total + 1 ? n.map((x, i) => x - base[i]!) : undefined;
        },
        60_000,
      );
      if (deltas[0]! + deltas[1]! === 1) m = made.body.data;
      else {
        expect((await api('DELETE', `/api/monitors/${made.body.data.id}`)).status).to.equal(200);
        await eventually(
          'the monitor no longer decided',
          async () => (sum(await decidedNow()) === total ? true : undefined),
          60_000,
        );
      }
    }
    expect(m, 'a monitor decided by a loc-a runner').to.not.equal(undefined);
    const id = m!.id;
    // Every location checks it; the target passes, so nothing opens.
    await eventually(
      'a check from each location',
      async () => {
        const checks = (await api<Check[]>('GET', `/api/monitors/${id}/checks?limit=50`)).body.data;
        const seen = new Set(checks.map((c) => c.location));
        return ['loc-a', 'loc-b', 'loc-c'].every((l) => seen.has(l)) ? true : undefined;
      },
      30_000,
    );
    expect(await incidents(id)).to.deep.equal([]);

    // Every runner of the first location (the decider among them) dies at once.
    await Promise.all(locA.map((p) => p.kill('SIGKILL')));
    const killedAt = Date.now();
    failing = true;
    // loc-b and loc-c fail each slot (2 of 3, the majority); loc-a's checks are missing.
    // A runner of loc-b or loc-c takes the decision over once the group drops the dead
    // members (RUNNER_SESSION_TIMEOUT_MS), and opens the incident.
    const opened = await eventually(
      'the incident open',
      async () => (await incidents(id)).find((i) => i.status === 'open'),
      60_000,
    );
    const openedAt = Date.now();
    // loc-b's and loc-c's runners now decide every monitor of several locations: the new
    // one and the others loc-a's runners held.
    const survivors = await Promise.all(others.map((r) => gauge(r.url, 'runner_monitors_decided')));
    expect(sum(survivors), 'decided by loc-b or loc-c').to.equal(total + 1);
    const checks = (await api<Check[]>('GET', `/api/monitors/${id}/checks?limit=100`)).body.data;
    expect(checks.find((c) => c.id === opened.id)).to.include({ status: 'down' });
    expect(['loc-b', 'loc-c']).to.include(checks.find((c) => c.id === opened.id)!.location);

    failing = false;
    await eventually(
      'the incident resolved',
      async () => (await incidents(id)).find((i) => i.id === opened.id && i.status === 'resolved'),
      30_000,
    );
    const resolvedAt = Date.now();
    // Opened once, resolved once: one incident, one down and one up alert.
    expect((await incidents(id)).map((i) => [i.id, i.status])).to.deep.equal([[opened.id, 'resolved']]);
    const mine = await eventually('both alerts on the topic', () => {
      const a = (alerts.values as AlertMessage[]).filter((x) => x.monitor_id === id);
      return a.length >= 2 ? a : undefined;
    });
    expect(mine.map((a) => [a.type, a.incident_id])).to.deep.equal([
      ['monitor.down', opened.id],
      ['monitor.up', opened.id],
    ]);
    process.stderr.write(
      `[decider] incident open ${openedAt - killedAt} ms after loc-a was killed, resolved ${resolvedAt - openedAt} ms later; test ${Date.now() - startedAt} ms\n`,
    );
  });
});
