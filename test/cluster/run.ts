/**
 * `npm run test:cluster`: the pipeline on a cluster, under failure (docs/operations.md,
 * "Clusters"). On the cluster harness (tools/devstack/cluster.ts: three KRaft brokers
 * with replication factor 3 and min.insync.replicas=2, ZooKeeper, two ClickHouse
 * replicas of the cluster `telemetry`, HAProxy):
 *
 *   1. migrates a fresh database ON CLUSTER (CLICKHOUSE_CLUSTER: replicated tables),
 *      creates the topics (replication factor 3), issues a telemetry key;
 *   2. starts two gateways behind HAProxy, two consumers in one group, and HAProxy in
 *      front of the two ClickHouse servers (every service reads and writes through it);
 *   3. per scenario: steady load through the gateways' balancer (harness/event-batches.ts:
 *      unique client ids, nothing retried), the failure, the recovery, more load; then
 *      waits for the consumer group to commit everything, and reads every acknowledged
 *      id back (FINAL): lost must be 0 and duplicates as read 0. It counts the 5xx answers
 *      and the time from the recovery's start to the first acknowledged request after
 *      it that is readable;
 *   4. writes the figures to RELIABILITY.md (between `<!-- cluster -->` markers), prints
 *      them, and ends with one JSON line; exits non-zero when a scenario lost or
 *      duplicated an event or did not recover. Everything it started is stopped.
 *
 * CLUSTER_ONLY=name,name runs only those scenarios; CLUSTER_WRITE=0 leaves RELIABILITY.md
 * alone; `--short` shortens the holds. Only 127.0.0.1 is used.
 */
import { randomBytes } from 'node:crypto';
import { Agent, createServer, request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_TENANT } from '@telemetry/contract';
import {
  createClickHouse,
  createKafka,
  createLogger,
  ensureTopics,
  sqlIdentifier,
  sqlString,
  type ClickHouseClient,
} from '@telemetry/platform';
import { CLUSTER_DDL_TIMEOUT_MS, issueKey, migrate } from '@telemetry/store';
import { CLUSTER_NAME, startCluster, type Balancer, type Cluster } from '../../tools/devstack/cluster.js';
import {
  build,
  Child,
  freePort,
  RUN_HEARTBEAT_KEY,
  RUN_SECRETS_KEYS,
  serviceCommand,
  sleep,
  until,
  type ServiceName,
} from '../../harness/processes.js';
import { procCpu } from '../../harness/sampler.js';
import { RELIABILITY_MD, writeSection } from '../../harness/report.js';
import { pipelineTopics } from '../../harness/run.js';
import { EventBatchLoad } from '../../harness/event-batches.js';
import { judge, Observer } from '../faults/observe.js';
import {
  provisionPostgres,
  startLocalPostgres,
  withRegistry,
  type LocalPostgres,
} from '../../tools/devstack/postgres.js';

/** `--smoke` (what `npm test` runs): one scenario, short, from source, nothing measured or written. */
const SMOKE = process.argv.includes('--smoke');
const SHORT = SMOKE || process.argv.includes('--short') || process.env.CLUSTER_SHORT === '1';
const THROUGHPUT_SECONDS = SHORT ? 3 : 10;
const HOLD_MS = SHORT ? 4000 : 10_000;
const LOAD_AROUND_MS = SHORT ? 2000 : 4000;
const LOAD = { loops: 4, batchSize: 10, intervalMs: 100, requestTimeoutMs: 15_000 };
const RELIABILITY_TITLE = '# Reliability\n\nFigures written by the test suites themselves.\n';

const log = (line: string): void => {
  process.stderr.write(`[cluster ${new Date().toISOString().slice(11, 23)}] ${line}\n`);
};

interface Services {
  gateways: Child[];
  consumers: Child[];
  queries: Child[];
  runners: Child[];
  gatewayLb: Balancer;
  queryLb: Balancer;
}

/** Two against one, as measured by measureThroughput. */
interface Throughput {
  seconds: number;
  gateways: { one: Side; two: Side; ratio: number };
  consumers: { one: Side; two: Side; ratio: number };
}

interface Side {
  eventsPerSecond: number;
  /** CPU of the gateways (or consumers) per event, all of them together. */
  cpuMicrosPerEvent: number;
}

interface Ctx {
  cluster: Cluster;
  database: string;
  services: Services;
  notes: string[];
  /** The consumers' group (for its members). */
  obs?: Observer;
}

interface Scenario {
  name: string;
  fault: string;
  inject(ctx: Ctx): Promise<void>;
  recover(ctx: Ctx): Promise<void>;
}

interface Figures {
  name: string;
  fault: string;
  acknowledged: number;
  refused: number;
  found: number;
  lost: number;
  duplicatedAsRead: number;
  /** Answers 500-599 (HAProxy's 502/503 included) while the load ran. */
  status5xx: number;
  /**
   * From the restart to the part back in service and caught up: a broker in every
   * partition's ISR, a replica with no replication delay or queue, a gateway ready, both
   * consumers in the group. recover() waits for that.
   */
  recoverySeconds: number | null;
  notes: string[];
  problems: string[];
  ok: boolean;
}

/** After a failed scenario: everything stopped is started again, so the next scenario starts whole. */
async function heal({ cluster, services }: Ctx): Promise<void> {
  await Promise.all(
    [...cluster.zookeeper, ...cluster.brokers, ...cluster.clickhouse].filter((n) => !n.running).map((n) => n.start()),
  );
  await Promise.all(
    [...services.gateways, ...services.consumers].filter((c) => !c.running).map((c) => c.start().ready(60_000)),
  );
}

/** SIGKILLs broker `id` and waits until it leads no partition (fenced: its partitions led by the others). */
async function killBroker(cluster: Cluster, id: number, notes: string[]): Promise<void> {
  const broker = cluster.brokers.find((b) => b.id === id);
  if (!broker) throw new Error(`no broker ${id}`);
  await broker.kill('SIGKILL');
  const t0 = Date.now();
  await until(`broker ${id} fenced`, async () => ((await cluster.leadsNothing(id)) ? true : undefined), 60_000, 250);
  notes.push(`its partitions were led by the others ${Math.round((Date.now() - t0) / 100) / 10} s after the kill`);
}

/** Starts the stopped brokers and waits until every partition has all three replicas in sync again. */
async function restartBrokers({ cluster }: Ctx): Promise<void> {
  await Promise.all(cluster.brokers.filter((b) => !b.running).map((b) => b.start()));
  await until(
    'every partition fully in sync',
    async () => ((await cluster.fullyInSync()) ? true : undefined),
    120_000,
    250,
  );
}

const scenarios: Scenario[] = [
  {
    name: 'broker-killed',
    fault: 'a Kafka broker (not the active controller) killed with SIGKILL, restarted after the hold',
    inject: async ({ cluster, notes }) => {
      const controller = await cluster.activeController();
      const victim = cluster.brokers.find((b) => b.id !== controller)!;
      notes.push(`killed broker ${victim.id} (the active controller is ${controller})`);
      await killBroker(cluster, victim.id, notes);
    },
    recover: restartBrokers,
  },
  {
    name: 'controller-killed',
    fault: 'the active KRaft controller (also a broker) killed with SIGKILL, restarted after the hold',
    inject: async ({ cluster, notes }) => {
      const controller = await cluster.activeController();
      await killBroker(cluster, controller, notes);
      const next = await until(
        'another controller elected',
        async () => {
          const now = await cluster.activeController().catch(() => -1);
          return now > 0 && now !== controller ? now : undefined;
        },
        30_000,
        500,
      );
      notes.push(`killed the active controller ${controller}; broker ${next} took over`);
    },
    recover: restartBrokers,
  },
  {
    name: 'clickhouse-replica-killed',
    fault:
      'a ClickHouse replica killed with SIGKILL (inserts go on through HAProxy to the other), restarted; it catches up',
    inject: async ({ cluster }) => {
      await cluster.clickhouse[1]!.kill('SIGKILL');
    },
    recover: async ({ cluster }) => {
      const replica = cluster.clickhouse[1]!;
      await replica.start();
      // Caught up: no replicated table of it behind or with work queued.
      await until(
        'the restarted replica caught up',
        async () => {
          const r = await fetch(replica.url, {
            method: 'POST',
            body: 'SELECT max(absolute_delay) + sum(queue_size) + sum(inserts_in_queue) FROM system.replicas',
            signal: AbortSignal.timeout(5000),
          }).catch(() => undefined);
          return r?.ok && Number((await r.text()).trim()) === 0 ? true : undefined;
        },
        120_000,
        250,
      );
    },
  },
  {
    name: 'gateway-killed',
    fault: 'one of the two gateways behind HAProxy killed with SIGKILL, restarted after the hold',
    inject: async ({ services }) => {
      await services.gateways[0]!.stop('SIGKILL', 10_000);
    },
    recover: async ({ services }) => {
      await services.gateways[0]!.start().ready(60_000);
    },
  },
  {
    name: 'consumers-2-1-2',
    fault: 'the consumers scaled from 2 to 1 (SIGTERM) and back to 2',
    inject: async ({ services }) => {
      await services.consumers[1]!.stop('SIGTERM', 40_000);
    },
    recover: async ({ services, obs }) => {
      await services.consumers[1]!.start().ready(60_000);
      if (obs)
        await until(
          'both consumers in the group',
          async () => ((await obs.group()).members === 2 ? true : undefined),
          60_000,
          250,
        );
    },
  },
];

async function main(): Promise<number> {
  const started = Date.now();
  const run = randomBytes(3).toString('hex');
  const logDir = mkdtempSync(join(tmpdir(), `cluster-${run}-`));
  log(`run ${run}; logs in ${logDir}`);
  let cluster: Cluster | undefined;
  let ch: ClickHouseClient | undefined;
  let postgres: LocalPostgres | undefined;
  const children: Child[] = [];
  let ok = false;
  let target: Awaited<ReturnType<typeof loopbackTarget>> | undefined;
  const cleanup = async (): Promise<void> => {
    await Promise.all(children.map((c) => c.stop('SIGTERM', 20_000).catch(() => undefined)));
    await ch?.close().catch(() => undefined);
    await target?.close();
    target = undefined;
    await cluster?.stop().catch((err: unknown) => log(`stopping the cluster failed: ${String(err)}`));
    await postgres?.stop().catch(() => undefined);
    if (ok) rmSync(join(logDir, 'cluster'), { recursive: true, force: true });
  };
  // A signal (Ctrl-C, or a test's timeout) stops everything too: the cluster's processes
  // must not outlive the run.
  const onSignal = (signal: NodeJS.Signals): void => {
    log(`${signal}: stopping everything`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    cluster = await startCluster({ dataDir: join(logDir, 'cluster'), keepData: true, log });
    // /replicas_status answers 200 only while the server's replicas are not behind: a
    // restarted replica gets no reads or first-seen look-ups until it has caught up.
    const chLb = await cluster.balancer(
      'clickhouse',
      cluster.clickhouse.map((c) => Number(new URL(c.url).port)),
      '/replicas_status',
    );
    const database = `cluster_${run}`;
    const topics = pipelineTopics(`cluster.${run}`);
    const group = `cluster-${run}`;
    // Migrations ON CLUSTER, from one server; every replica gets every table.
    const admin = createClickHouse({
      url: cluster.clickhouse[0]!.url,
      username: 'default',
      password: '',
      database: 'default',
      requestTimeoutMs: CLUSTER_DDL_TIMEOUT_MS,
    });
    const migrated = Date.now();
    try {
      await migrate(admin, database, createLogger({ service: 'cluster', level: 'warn' }), CLUSTER_NAME);
    } finally {
      await admin.close();
    }
    log(`migrated ${database} on cluster ${CLUSTER_NAME} in ${Date.now() - migrated} ms`);
    const kafka = createKafka({
      brokers: cluster.kafkaBrokers.split(','),
      clientId: 'cluster-provision',
      logger: createLogger({ service: 'cluster', level: 'silent' }),
    });
    await ensureTopics(
      kafka,
      topics.list.map((topic) => ({ topic, numPartitions: 4 })),
    );
    ch = createClickHouse({ url: chLb.url, username: 'default', password: '', database });
    // The registry: one PostgreSQL (its high availability is the operator's: docs/operations.md).
    postgres = await startLocalPostgres(join(logDir, 'cluster', 'postgres'), log);
    const registryUrl = (await provisionPostgres(postgres.adminUrl, database)).owner;
    const key = (
      await withRegistry(registryUrl, (db) =>
        issueKey(db, { tenantId: DEFAULT_TENANT, kind: 'telemetry', name: 'cluster' }),
      )
    ).key;

    const common: Record<string, string> = {
      KAFKA_BROKERS: cluster.kafkaBrokers,
      CLICKHOUSE_URL: chLb.url,
      CLICKHOUSE_DATABASE: database,
      ...topics.env,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      MIGRATE_ON_START: 'false',
      DATABASE_URL: registryUrl,
      SECRETS_KEYS: RUN_SECRETS_KEYS,
      HEARTBEAT_KEY: RUN_HEARTBEAT_KEY,
    };
    // Measured figures come from the compiled build; the smoke runs from source.
    if (!SMOKE) await build(log);
    target = await loopbackTarget();
    const svc = async (label: string, name: ServiceName, env: Record<string, string>) => {
      const port = await freePort();
      const child = new Child({
        name: label,
        command: serviceCommand(name, !SMOKE),
        env: { ...process.env, ...common, ...env, PORT: String(port) },
        url: `http://127.0.0.1:${port}`,
        logFile: join(logDir, `${label}.log`),
      });
      children.push(child);
      return child;
    };
    const gateways = [
      await svc('gateway-1', 'ingest-gateway', { KAFKA_ACK_TIMEOUT_MS: '5000' }),
      await svc('gateway-2', 'ingest-gateway', { KAFKA_ACK_TIMEOUT_MS: '5000' }),
    ];
    const consumerEnv = { CONSUMER_GROUP_ID: group, CONSUMER_SESSION_TIMEOUT_MS: '10000' };
    const consumers = [
      await svc('consumer-1', 'stream-consumer', consumerEnv),
      await svc('consumer-2', 'stream-consumer', consumerEnv),
    ];
    // The query services refuse monitors aimed where the runners may not go: the same policy.
    const egress = { EGRESS_ALLOW: `127.0.0.1:${target.port}`, MIN_INTERVAL_SECONDS: '1' };
    const queries = [await svc('query-1', 'query-service', egress), await svc('query-2', 'query-service', egress)];
    const runnerEnv = {
      ...egress,
      RUNNER_GROUP_ID: `runners-${run}`,
    };
    const runners = [
      await svc('runner-1', 'check-runner', { ...runnerEnv, RUNNER_ID: 'runner-1' }),
      await svc('runner-2', 'check-runner', { ...runnerEnv, RUNNER_ID: 'runner-2' }),
    ];
    await Promise.all([...gateways, ...consumers, ...queries, ...runners].map((c) => c.start().ready(90_000)));
    const gatewayLb = await cluster.balancer(
      'gateways',
      gateways.map((g) => g.port),
      '/readyz',
    );
    const queryLb = await cluster.balancer(
      'queries',
      queries.map((q) => q.port),
      '/readyz',
    );
    log(
      `services ready: gateways behind ${gatewayLb.url}, query services behind ${queryLb.url}, ClickHouse behind ${chLb.url}`,
    );
    const services: Services = { gateways, consumers, queries, runners, gatewayLb, queryLb };
    const apiKey = (
      await withRegistry(registryUrl, (db) =>
        issueKey(db, {
          tenantId: DEFAULT_TENANT,
          kind: 'api',
          name: 'cluster',
          scopes: ['checks:read', 'monitors:read', 'monitors:write'],
        }),
      )
    ).key;
    const monitorChecked = await checkedThroughCluster(queryLb.url, apiKey, target.url);
    log(monitorChecked);
    const obs = new Observer(ch, database, cluster.kafkaBrokers, topics.topics.events, group);

    const only = SMOKE ? ['broker-killed'] : (process.env.CLUSTER_ONLY ?? '').split(',').filter(Boolean);
    const chosen = only.length > 0 ? scenarios.filter((s) => only.includes(s.name)) : scenarios;
    const results: Figures[] = [];
    for (const scenario of chosen) {
      const r = await runScenario(scenario, { cluster, database, services, notes: [], obs }, obs, key, run);
      results.push(r);
      log(
        `${r.name}: ${r.ok ? 'pass' : 'FAIL'}; acknowledged ${r.acknowledged}, lost ${r.lost}, duplicated ${r.duplicatedAsRead}, ` +
          `5xx ${r.status5xx}, recovery ${r.recoverySeconds ?? '-'} s${r.problems.length > 0 ? `; ${r.problems.join('; ')}` : ''}`,
      );
    }
    const throughput = SMOKE
      ? undefined
      : await measureThroughput({ cluster, database, services, notes: [], obs }, key, run, topics.topics.events);
    ok = results.length > 0 && results.every((r) => r.ok);
    const figures = {
      command: `npm run test:cluster${SHORT ? ' -- --short' : ''}`,
      date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      machine: { nproc: cpus().length },
      durationSeconds: Math.round((Date.now() - started) / 1000),
      ok,
      monitorChecked,
      scenarios: results,
      throughput,
    };
    const section = render(figures);
    if (process.env.CLUSTER_WRITE !== '0' && !SMOKE)
      writeSection(RELIABILITY_MD, 'cluster', section, RELIABILITY_TITLE);
    process.stdout.write(`${section}\n`);
    await cleanup();
    cluster = undefined;
    children.length = 0;
    ch = undefined;
    figures.durationSeconds = Math.round((Date.now() - started) / 1000);
    process.stdout.write(`${JSON.stringify(figures)}\n`);
    return ok ? 0 : 1;
  } catch (err) {
    log(`run failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    log(`logs and the servers' data are kept in ${logDir}`);
    return 1;
  } finally {
    await cleanup();
  }
}

async function runScenario(scenario: Scenario, ctx: Ctx, obs: Observer, key: string, run: string): Promise<Figures> {
  const source = `cluster.${scenario.name}.${run}`;
  const load = new EventBatchLoad({
    port: ctx.services.gatewayLb.port,
    key,
    source,
    idPrefix: `${scenario.name}-${run}`,
    ...LOAD,
  });
  const fig: Figures = {
    name: scenario.name,
    fault: scenario.fault,
    acknowledged: 0,
    refused: 0,
    found: 0,
    lost: 0,
    duplicatedAsRead: 0,
    status5xx: 0,
    recoverySeconds: null,
    notes: ctx.notes,
    problems: [],
    ok: false,
  };
  log(`${scenario.name}: ${scenario.fault}`);
  let liftAt = 0;
  try {
    load.start();
    await sleep(LOAD_AROUND_MS);
    await scenario.inject(ctx);
    await sleep(HOLD_MS);
    liftAt = Date.now();
    await scenario.recover(ctx);
    fig.recoverySeconds = Math.round((Date.now() - liftAt) / 100) / 10;
    await until('a request acknowledged after the recovery began', () => load.firstAckedSince(liftAt), 90_000);
    await sleep(LOAD_AROUND_MS);
  } catch (err) {
    fig.problems.push(`scenario error: ${err instanceof Error ? err.message : String(err)}`);
    await heal(ctx).catch((e: unknown) => fig.problems.push(`could not heal: ${String(e)}`));
  } finally {
    await load.stop();
  }
  const acked = new Set<string>();
  const refused = new Set<string>();
  for (const o of load.outcomes) {
    for (const id of o.ids) (o.ok ? acked : refused).add(id);
    if (/^5\d\d/.test(o.kind)) fig.status5xx++;
  }
  fig.acknowledged = acked.size;
  fig.refused = refused.size;
  try {
    let prevEnd = -1;
    await until(
      'the consumer group to commit every message',
      async () => {
        const p = await obs.progress();
        const done = p.uncommitted === 0 && p.end === prevEnd;
        prevEnd = p.end;
        return done ? p : undefined;
      },
      180_000,
      1000,
    );
    let verdict = judge(await obs.counts(source), acked, refused);
    const deadline = Date.now() + 15_000;
    while (verdict.lost > 0 && Date.now() < deadline) {
      await sleep(1000);
      verdict = judge(await obs.counts(source), acked, refused);
    }
    fig.found = verdict.found;
    fig.lost = verdict.lost;
    fig.duplicatedAsRead = verdict.duplicatedAsRead;
    if (verdict.lost > 0)
      fig.problems.push(`${verdict.lost} acknowledged events not found, e.g. ${verdict.lostSample.join(', ')}`);
    if (verdict.duplicatedAsRead > 0) fig.problems.push(`${verdict.duplicatedAsRead} ids read twice`);
    await replicasAgree(ctx, source, fig);
  } catch (err) {
    fig.problems.push(err instanceof Error ? err.message : String(err));
  }
  fig.ok = fig.problems.length === 0;
  return fig;
}

/** The replicas of each shard hold the same events of the scenario (a restarted one caught up). */
async function replicasAgree(ctx: Ctx, source: string, fig: Figures): Promise<void> {
  const t0 = Date.now();
  const perShard = await until(
    'the replicas of each shard to hold the same events',
    async () => {
      const n = await Promise.all(
        ctx.cluster.shards.map((s) => Promise.all(s.map((c) => replicaCount(c.url, ctx.database, source)))),
      );
      const agree = n.every((s) => s.every((x) => x >= 0 && x === s[0]));
      return agree && n.reduce((sum, s) => sum + s[0]!, 0) >= fig.found ? n.map((s) => s[0]!) : undefined;
    },
    120_000,
    500,
  ).catch(() => undefined);
  if (!perShard) {
    fig.problems.push('the replicas of a shard did not agree within 120 s');
    return;
  }
  const total = perShard.reduce((a, b) => a + b, 0);
  fig.notes.push(
    `the replicas of each shard agree (${perShard.join(' + ')} events; ${Math.round((Date.now() - t0) / 100) / 10} s after the check began)`,
  );
  // The Distributed table over the cluster reads the same events.
  const viaAll = await replicaCount(ctx.cluster.clickhouse[0]!.url, ctx.database, source, 'events_all');
  if (viaAll !== total) fig.problems.push(`events_all reads ${viaAll} events, the shards ${total}`);
}

/** Distinct events of `source` on one replica (asked directly, not through HAProxy). */
async function replicaCount(url: string, database: string, source: string, table = 'events'): Promise<number> {
  const sql = `SELECT uniqExact(event_id) FROM ${sqlIdentifier(database)}.${sqlIdentifier(table)} WHERE source = ${sqlString(source)}`;
  const r = await fetch(url, { method: 'POST', body: sql, signal: AbortSignal.timeout(5000) });
  return r.ok ? Number((await r.text()).trim()) : -1;
}

function render(f: {
  command: string;
  date: string;
  durationSeconds: number;
  ok: boolean;
  monitorChecked: string;
  scenarios: Figures[];
  throughput: Throughput | undefined;
}): string {
  const t = f.throughput;
  const side = (s: Side): string =>
    `${Math.round(s.eventsPerSecond)} events/s, ${Math.round(s.cpuMicrosPerEvent)} µs CPU per event`;
  const tp = t
    ? `

Throughput, two against one (${t.seconds} s each for the gateways, 100-event batches, 8 requests in flight; the compiled build):

| tier | one | two | two / one |
|---|---|---|---|
| gateways behind HAProxy | ${side(t.gateways.one)} | ${side(t.gateways.two)} | ${t.gateways.ratio.toFixed(2)}x |
| consumers (a fresh group draining the events topic; from their start, joining the group included) | ${side(t.consumers.one)} | ${side(t.consumers.two)} | ${t.consumers.ratio.toFixed(2)}x |

Everything (three brokers, two ClickHouse servers, ZooKeeper, HAProxy, eight services and the load) shares this machine's ${cpus().length} cores: a second gateway or consumer adds capacity only where one did not already have a core to itself, so these ratios say little of real clusters; the CPU per event is the figure that carries over.`
    : '';
  const rows = f.scenarios
    .map(
      (s) =>
        `| ${s.name} | ${s.acknowledged} | ${s.refused} | ${s.lost} | ${s.duplicatedAsRead} | ${s.status5xx} | ${s.recoverySeconds ?? '-'} | ${s.ok ? 'yes' : '**no**'} |`,
    )
    .join('\n');
  const notes = f.scenarios
    .flatMap((s) => [...s.notes.map((n) => `- ${s.name}: ${n}`), ...s.problems.map((p) => `- ${s.name}: **${p}**`)])
    .join('\n');
  return `## On a cluster (\`${f.command}\`)

Written by \`test/cluster/run.ts\` on ${f.date.slice(0, 10)}: three Kafka brokers (KRaft, replication factor 3, min.insync.replicas=2), two ClickHouse 18.16 replicas through ZooKeeper behind HAProxy, two gateways behind HAProxy, two consumers; steady load of about 400 events/s through the gateways' balancer. ${f.ok ? 'Every scenario passed' : 'Not every scenario passed'} (${f.durationSeconds} s).

| scenario | acknowledged | refused | lost | duplicates as read | 5xx answers | back in service (s) | ok |
|---|---|---|---|---|---|---|---|
${rows}

"Back in service": from the restart to the part back and caught up (a broker in every partition's ISR, a ClickHouse replica with no replication delay or queue, a gateway ready, both consumers in the group); the rest of the cluster kept answering meanwhile.

${notes}
- Two query services behind HAProxy and two check runners ran throughout: ${f.monitorChecked}.${tp}`;
}

/** A loopback HTTP target that answers 200: what the cluster's runners check. */
async function loopbackTarget(): Promise<{ port: number; url: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => res.writeHead(200).end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: `http://127.0.0.1:${port}/`,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

/** Creates a monitor through the query services' balancer and waits for its first checks there. */
async function checkedThroughCluster(queryUrl: string, apiKey: string, targetUrl: string): Promise<string> {
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  // Round robin: four answers in a row are both query services' (the key loaded by both).
  await until(
    'the API key loaded by both query services',
    async () => {
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push((await fetch(`${queryUrl}/api/monitors?limit=1`, { headers })).ok);
      return answers.every(Boolean) ? true : undefined;
    },
    30_000,
  );
  const made = await fetch(`${queryUrl}/api/monitors`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'cluster target', url: targetUrl, interval_seconds: 1, timeout_ms: 500 }),
  });
  if (made.status !== 201) throw new Error(`creating a monitor answered ${made.status}: ${await made.text()}`);
  const id = ((await made.json()) as { data: { id: string } }).data.id;
  const checks = await until(
    'the monitor checked and its checks readable through the balancer',
    async () => {
      const r = await fetch(`${queryUrl}/api/monitors/${id}/checks?limit=5`, { headers });
      const data = r.ok ? ((await r.json()) as { data: { status: string }[] }).data : [];
      return data.length >= 3 ? data : undefined;
    },
    60_000,
    500,
  );
  return `monitor ${id} had ${checks.length} checks readable within a minute (${checks.map((c) => c.status).join(', ')})`;
}

/** Closed-loop load: 8 loops POST 100-event batches to `port` for `seconds`; acknowledged events per second. */
async function saturate(
  port: number,
  key: string,
  source: string,
  seconds: number,
): Promise<{ eventsPerSecond: number; acked: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const end = Date.now() + seconds * 1000;
  let acked = 0;
  let seq = 0;
  const one = (): Promise<boolean> =>
    new Promise((resolve) => {
      const events = Array.from({ length: 100 }, () => ({
        id: `${source}.${seq++}`,
        source,
        category: 'throughput',
        payload: { n: seq },
      }));
      const body = JSON.stringify({ events });
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/api/telemetry/events',
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'x-access-key': key,
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 200));
        },
      );
      req.on('error', () => resolve(false));
      req.end(body);
    });
  const started = Date.now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (Date.now() < end) if (await one()) acked += 100;
    }),
  );
  agent.destroy();
  return { eventsPerSecond: acked / ((Date.now() - started) / 1000), acked };
}

/** CPU seconds (user + system) of `children` together. */
function cpuOf(children: Child[]): number {
  return children.reduce((n, c) => {
    const t = c.running ? procCpu(c.pid) : undefined;
    return n + (t ? t.user + t.system : 0);
  }, 0);
}

/**
 * Two against one: the gateways (HAProxy over one, then over both; closed-loop load) and
 * the consumers (a fresh group of one, then of two, draining the events topic from the
 * start). Events per second, and CPU per event of the tier.
 */
async function measureThroughput(ctx: Ctx, key: string, run: string, eventsTopic: string): Promise<Throughput> {
  const { cluster, services } = ctx;
  const oneLb = await cluster.balancer('one-gateway', [services.gateways[0]!.port], '/readyz');
  const gatewaySide = async (port: number, label: string): Promise<Side> => {
    const cpu0 = cpuOf(services.gateways);
    const { eventsPerSecond, acked } = await saturate(
      port,
      key,
      `cluster.throughput.${label}.${run}`,
      THROUGHPUT_SECONDS,
    );
    const cpu = cpuOf(services.gateways) - cpu0;
    return { eventsPerSecond, cpuMicrosPerEvent: (cpu * 1e6) / Math.max(1, acked) };
  };
  const gOne = await gatewaySide(oneLb.port, 'one');
  const gTwo = await gatewaySide(services.gatewayLb.port, 'two');
  await oneLb.stop();
  log(`gateways: one ${Math.round(gOne.eventsPerSecond)} events/s, two ${Math.round(gTwo.eventsPerSecond)} events/s`);

  // Consumers: fresh groups read the whole events topic again (stored once: the table dedups),
  // once the pipeline's own group has written all of it: both sides then find the same
  // tables and first-seen times, and a machine with nothing else to do.
  if (ctx.obs) {
    await until(
      'the consumers caught up before measuring',
      async () => ((await ctx.obs!.progress()).uncommitted === 0 ? true : undefined),
      600_000,
      500,
    );
  }
  const admin = createClickHouse({
    url: cluster.clickhouse[0]!.url,
    username: 'default',
    password: '',
    database: ctx.database,
  });
  const consumerSide = async (count: number): Promise<Side> => {
    const group = `throughput-${count}-${run}`;
    const members: Child[] = [];
    for (let i = 0; i < count; i++) {
      const port = await freePort();
      const base = services.consumers[0]!.o;
      members.push(
        new Child({
          name: `throughput-consumer-${count}-${i}`,
          command: base.command,
          env: { ...base.env, CONSUMER_GROUP_ID: group, PORT: String(port) },
          url: `http://127.0.0.1:${port}`,
          logFile: base.logFile,
        }),
      );
    }
    const obs = new Observer(admin, ctx.database, cluster.kafkaBrokers, eventsTopic, group);
    const started = Date.now();
    await Promise.all(members.map((m) => m.start().ready(60_000)));
    // Fresh processes: their CPU from their start (the start-up is counted too).
    const cpu0 = 0;
    const total = (await obs.progress()).end;
    await until(
      `a group of ${count} consumer(s) through the topic`,
      async () => ((await obs.progress()).uncommitted === 0 ? true : undefined),
      600_000,
      200,
    );
    const seconds = (Date.now() - started) / 1000;
    const cpu = cpuOf(members) - cpu0;
    await Promise.all(members.map((m) => m.stop('SIGTERM', 40_000)));
    return { eventsPerSecond: total / seconds, cpuMicrosPerEvent: (cpu * 1e6) / Math.max(1, total) };
  };
  try {
    const cOne = await consumerSide(1);
    const cTwo = await consumerSide(2);
    log(
      `consumers: one ${Math.round(cOne.eventsPerSecond)} events/s, two ${Math.round(cTwo.eventsPerSecond)} events/s`,
    );
    return {
      seconds: THROUGHPUT_SECONDS,
      gateways: { one: gOne, two: gTwo, ratio: gTwo.eventsPerSecond / gOne.eventsPerSecond },
      consumers: { one: cOne, two: cTwo, ratio: cTwo.eventsPerSecond / cOne.eventsPerSecond },
    };
  } finally {
    await admin.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(String(err));
    process.exit(1);
  },
);
