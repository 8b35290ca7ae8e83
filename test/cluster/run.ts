/**
 * `npm run test:cluster`: the pipeline on a cluster, under failure (docs/operations.md,
 * "Clusters"). On the cluster harness (tools/devstack/cluster.ts: three KRaft brokers
 * with replication factor 3 and min.insync.replicas=2, a ZooKeeper ensemble of three,
 * two shards of two ClickHouse replicas of the cluster `telemetry`, HAProxy):
 *
 *   1. migrates a fresh database ON CLUSTER (CLICKHOUSE_CLUSTER: replicated tables and
 *      their Distributed `_all` tables), creates the topics (replication factor 3),
 *      issues a telemetry key;
 *   2. starts two gateways behind HAProxy, two consumers in one group, two query services
 *      and two runners, all in cluster mode (CLICKHOUSE_CLUSTER: they read and write the
 *      `_all` tables), and one HAProxy in front of all four ClickHouse servers (any server
 *      routes a Distributed insert or read to every shard, so one balancer serves them all);
 *      creates monitors until both shards hold checks;
 *   3. per scenario: steady load through the gateways' balancer (harness/event-batches.ts:
 *      unique client ids, nothing retried), the failure, the recovery, more load; then
 *      waits for the consumer group to commit everything, and reads every acknowledged
 *      id back through `events_all` FINAL with exact settings: lost must be 0 and
 *      duplicates as read 0. Then the two replicas of each shard agree, and both shards
 *      hold events and checks with every event id on one shard and every monitor's checks
 *      on one shard. It counts the 5xx answers and the time to recover;
 *   4. (not in --smoke) the throughput: two gateways against one, two consumers against
 *      one, and the ceiling: paced load ramped through the gateways' balancer until the
 *      pipeline stops keeping up, with the CPU per event of every tier;
 *   5. writes the figures to RELIABILITY.md (between `<!-- cluster -->` markers), prints
 *      them, and ends with one JSON line; exits non-zero when a scenario lost or
 *      duplicated an event or did not recover. Everything it started is stopped.
 *
 * CLUSTER_ONLY=name,name runs only those scenarios; CLUSTER_WRITE=0 leaves RELIABILITY.md
 * alone; `--short` shortens the holds. Only 127.0.0.1 is used.
 */
import { randomBytes } from 'node:crypto';
import { Agent, createServer, request } from 'node:http';
import { createConnection } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
import {
  CLUSTER_NAME,
  startCluster,
  waitForClusterUsers,
  type Balancer,
  type ClickHouseNode,
  type Cluster,
} from '../../tools/devstack/cluster.js';
import { storeEnv } from '../../tools/devstack/users.js';
import { checkServiceUsers } from './users-check.js';
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
import { machineBusySeconds, procCpu } from '../../harness/sampler.js';
import { HttpClient, paced, type Outcome } from '../../harness/load.js';
import { quantiles } from '../../harness/report.js';
import { RELIABILITY_MD, writeSection } from '../../harness/report.js';
import { pipelineTopics } from '../../harness/run.js';
import { EventBatchLoad } from '../../harness/event-batches.js';
import { EXACT_DISTRIBUTED_READS, judge, Observer } from '../faults/observe.js';
import { renderToCluster, toClusterScenario, type ToClusterFigures } from './to-cluster.js';
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
/** The ceiling's ramp (measureCeiling): seconds per step, and requests waiting at most. */
const CEILING_STEP_SECONDS = SHORT ? 6 : 15;
const CEILING_IN_FLIGHT = 64;
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
  /** HAProxy over the four ClickHouse servers (checked with /replicas_status). */
  clickhouseLb: Balancer;
}

/** Two against one, as measured by measureThroughput. */
interface Throughput {
  seconds: number;
  gateways: { one: Side; two: Side; ratio: number };
  consumers: { one: Side; two: Side; ratio: number };
  /** The highest load the whole pipeline sustains on this machine (measureCeiling). */
  ceiling: Ceiling;
}

/** The processes of the cluster whose CPU the ceiling counts, tier by tier. */
const TIERS = [
  'gateways',
  'consumers',
  'ClickHouse servers',
  'Kafka brokers',
  'ZooKeeper',
  'HAProxy',
  'query services and runners',
  'load generator',
] as const;
type Tier = (typeof TIERS)[number];

/** One step of the ceiling's ramp: paced 100-event batches at `offered` events/s for CEILING_STEP_SECONDS. */
interface Step {
  offered: number;
  /** Acknowledged (200) events per second, from the first send to the last answer (so a little under `offered`). */
  acknowledged: number;
  /** Of each request, from its scheduled send time (so queueing behind the schedule counts). */
  p99Ms: number;
  /** Batches not sent (CEILING_IN_FLIGHT already waiting), refused or failed. */
  notAcknowledged: number;
  /** Messages of the events topic past the pipeline group's commits, at the step's start and end. */
  lagStart: number;
  lagEnd: number;
  sustained: boolean;
  /** Which of the conditions failed. */
  why: string[];
  /** CPU µs per acknowledged event, per tier. */
  cpuMicrosPerEvent: Record<Tier, number>;
  /** Cores the whole machine kept busy during the step (of its nproc). */
  machineCores: number;
  /** CPU µs per acknowledged event of everything else on the machine (not the cluster's processes): noise. */
  otherMicrosPerEvent: number;
}

interface Ceiling {
  stepSeconds: number;
  steps: Step[];
  /** The highest sustained step, if any. */
  best?: Step;
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
  /** The scenario's events' source (set by runScenario). */
  source?: string;
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
  /** Distinct events of the scenario on each shard (its local tables, one replica asked). */
  eventsPerShard: number[];
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

/** Events of a scenario's source on the surviving replica when the hold began. */
const holdStart = new Map<string, number>();

/**
 * Starts a killed ClickHouse server again. A server killed in the middle of an insert may
 * hold a part that never reached ZooKeeper; on a small table that part is most of its rows,
 * and ClickHouse refuses to start ("The local set of parts of table … doesn't look like the
 * set of parts in ZooKeeper"). The operator's step (docs/operations.md, "Clusters") is the
 * flag file flags/force_restore_data: the server then moves such parts to `detached` and
 * fetches what it lacks from the other replica. The suite takes that step only when the
 * server refused, and says so in the notes.
 */
async function startClickHouse(cluster: Cluster, replica: ClickHouseNode, notes: string[]): Promise<void> {
  try {
    await replica.start();
  } catch (err) {
    const dir = join(cluster.dir, replica.name);
    const errors = readFileSync(join(dir, 'error.log'), 'utf8').slice(-200_000);
    if (!errors.includes("doesn't look like the set of parts in ZooKeeper")) throw err;
    writeFileSync(join(dir, 'data', 'flags', 'force_restore_data'), '');
    notes.push(
      `${replica.name} refused to start (a part written before the kill was not in ZooKeeper); started again with flags/force_restore_data`,
    );
    await replica.start();
  }
}

/** Starts `replica` again and waits until it has caught up: no replicated table of it behind or with work queued. */
async function restartReplica(cluster: Cluster, replica: ClickHouseNode, notes: string[]): Promise<void> {
  await startClickHouse(cluster, replica, notes);
  await until(
    `${replica.name} caught up`,
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
}

/** A ZooKeeper member's mode as `srvr` names it (leader, follower, standalone), or undefined. */
function zookeeperMode(port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write('srvr'));
    let text = '';
    socket.setTimeout(1000, () => socket.destroy());
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('close', () => resolve(/^Mode: (\w+)$/m.exec(text)?.[1]));
    socket.on('error', () => resolve(undefined));
  });
}

/**
 * With one ZooKeeper member down: a replicated table created ON CLUSTER (every server
 * answers through the distributed DDL queue), a row inserted on shard 1's first replica
 * and fetched by its second (replication through ZooKeeper), the table dropped ON CLUSTER.
 */
async function replicatedDdlProbe(cluster: Cluster, database: string, since: number): Promise<string> {
  const table = `${sqlIdentifier(database)}.zk_probe`;
  const on = `ON CLUSTER ${sqlIdentifier(CLUSTER_NAME)}`;
  const path = sqlString(`/clickhouse/tables/{shard}/${database}.zk_probe`);
  const [first, second] = cluster.shards[0]!;
  // Errors are retried: the servers whose ZooKeeper session was on the killed member reconnect first.
  await until(
    'a table created ON CLUSTER with two ZooKeeper members',
    () =>
      chQuery(
        first!.url,
        `CREATE TABLE IF NOT EXISTS ${table} ${on} (n UInt32) ENGINE = ReplicatedMergeTree(${path}, '{replica}') ORDER BY n`,
        {},
        CLUSTER_DDL_TIMEOUT_MS,
      ),
    120_000,
    1000,
  );
  await until('a row inserted into it', () => chQuery(first!.url, `INSERT INTO ${table} VALUES (1)`), 60_000, 1000);
  await until(
    'the row replicated',
    async () => ((await chQuery(second!.url, `SELECT count() FROM ${table}`)) === '1' ? true : undefined),
    60_000,
    250,
  );
  const created = seconds(since);
  await until(
    'the table dropped ON CLUSTER',
    () => chQuery(first!.url, `DROP TABLE IF EXISTS ${table} ${on}`, {}, CLUSTER_DDL_TIMEOUT_MS),
    120_000,
    1000,
  );
  return `with two members: a replicated table created ON CLUSTER on all four servers and a row replicated from ${first!.name} to ${second!.name} ${created} s after the kill, the table dropped ON CLUSTER ${seconds(since)} s after it`;
}

/** After a failed scenario: everything stopped is started again, so the next scenario starts whole. */
async function heal({ cluster, services, notes }: Ctx): Promise<void> {
  await Promise.all([
    ...[...cluster.zookeeper, ...cluster.brokers].filter((n) => !n.running).map((n) => n.start()),
    ...cluster.clickhouse.filter((n) => !n.running).map((n) => startClickHouse(cluster, n, notes)),
  ]);
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
      "shard 1's second ClickHouse replica killed with SIGKILL (HAProxy sends to the other three), restarted; it catches up",
    inject: async ({ cluster }) => {
      await cluster.shards[0]![1]!.kill('SIGKILL');
    },
    recover: async ({ cluster, notes }) => {
      await restartReplica(cluster, cluster.shards[0]![1]!, notes);
    },
  },
  {
    name: 'shard-replica-killed',
    fault:
      "shard 2's first ClickHouse replica killed with SIGKILL: the shard's other replica takes its inserts and reads, then it restarts and catches up",
    inject: async ({ cluster, database, source, notes }) => {
      const [victim, other] = cluster.shards[1]!;
      await victim!.kill('SIGKILL');
      holdStart.set(source!, await replicaCount(other!.url, database, source!));
      notes.push(`killed ${victim!.name}; ${other!.name} held ${holdStart.get(source!)} events of the scenario`);
    },
    recover: async ({ cluster, database, source, notes }) => {
      // Before the restart: the shard's other replica took the inserts meanwhile, and a
      // read through events_all (every shard required) answered.
      const other = cluster.shards[1]![1]!;
      const now = await replicaCount(other.url, database, source!);
      const before = holdStart.get(source!) ?? 0;
      if (now <= before) throw new Error(`${other.name} took no events while the shard's other replica was down`);
      const viaAll = await chQuery(
        cluster.shards[0]![0]!.url,
        `SELECT uniqExact(event_id) FROM ${sqlIdentifier(database)}.events_all WHERE source = ${sqlString(source!)}`,
        EXACT_DISTRIBUTED_READS,
      );
      notes.push(
        `while it was down ${other.name} took ${now - before} events and events_all read ${viaAll} of the scenario with every shard required`,
      );
      await restartReplica(cluster, cluster.shards[1]![0]!, notes);
    },
  },
  {
    name: 'zookeeper-node-killed',
    fault:
      "the ZooKeeper ensemble's leader killed with SIGKILL: the other two elect one and keep replicated inserts and DDL going; restarted, it rejoins",
    inject: async ({ cluster, database, notes }) => {
      const modes = await Promise.all(cluster.zookeeper.map((z) => zookeeperMode(z.port)));
      const victim = cluster.zookeeper[Math.max(0, modes.indexOf('leader'))]!;
      await victim.kill('SIGKILL');
      const t0 = Date.now();
      const leader = await until(
        'another ZooKeeper leader',
        async () => {
          for (const z of cluster.zookeeper)
            if (z !== victim && (await zookeeperMode(z.port)) === 'leader') return z.name;
          return undefined;
        },
        60_000,
        250,
      );
      notes.push(
        `killed ${victim.name} (${modes[cluster.zookeeper.indexOf(victim)] ?? '?'}); ${leader} led ${seconds(t0)} s later`,
      );
      notes.push(await replicatedDdlProbe(cluster, database, t0));
    },
    recover: async ({ cluster }) => {
      // start() returns once srvr names a mode: the member is back in the quorum.
      await Promise.all(cluster.zookeeper.filter((z) => !z.running).map((z) => z.start()));
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
    // Every service as its own ClickHouse user, on every server (users.d); the migrations
    // as the migrator, ON CLUSTER from one server: every replica gets every table.
    const users = await cluster.serviceUsers(database);
    const admin = createClickHouse({
      url: cluster.clickhouse[0]!.url,
      username: users.migrator.user,
      password: users.migrator.password,
      database: 'default',
      requestTimeoutMs: CLUSTER_DDL_TIMEOUT_MS,
    });
    const migrated = Date.now();
    try {
      await migrate(admin, database, createLogger({ service: 'cluster', level: 'warn' }), CLUSTER_NAME);
    } finally {
      await admin.close();
    }
    log(`migrated ${database} on cluster ${CLUSTER_NAME} in ${Date.now() - migrated} ms as ${users.migrator.user}`);
    await waitForClusterUsers(cluster, database, users);
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
      // Cluster mode: every service reads and writes the Distributed `_all` tables.
      CLICKHOUSE_CLUSTER: CLUSTER_NAME,
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
        env: { ...process.env, ...common, ...storeEnv(users, name), ...env, PORT: String(port) },
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
    const services: Services = { gateways, consumers, queries, runners, gatewayLb, queryLb, clickhouseLb: chLb };
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
    const monitorChecked = [
      await checkedThroughCluster(queryLb.url, apiKey, target.url),
      await monitorsOnBothShards(cluster, database, queryLb.url, apiKey, target.url),
    ].join('; ');
    log(monitorChecked);
    const obs = new Observer(ch, database, cluster.kafkaBrokers, topics.topics.events, group, { sharded: true });

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
    const usersVerdict = await checkServiceUsers(
      cluster.shards,
      database,
      users,
      cluster.interserver,
      results.length > 0,
    );
    log(
      `users: ${usersVerdict.ok ? 'pass' : 'FAIL'}; ${usersVerdict.summary}${usersVerdict.problems.length > 0 ? `; ${usersVerdict.problems.join('; ')}` : ''}`,
    );
    // The move of a single server's database to the cluster (test/cluster/to-cluster.ts).
    const toCluster =
      SMOKE || (only.length > 0 && !only.includes('to-cluster'))
        ? undefined
        : await toClusterScenario({
            ...{ cluster, clusterName: CLUSTER_NAME, database, clickhouseUrl: chLb.url, apiKey, log },
            monitorUrl: target.url,
            startQuery: async (label, env) => {
              const q = await svc(label, 'query-service', { ...egress, ...env });
              return { url: (await q.start().ready(90_000)).url, port: q.port };
            },
          });
    const throughput = SMOKE
      ? undefined
      : await measureThroughput({ cluster, database, services, notes: [], obs }, key, run, topics.topics.events);
    ok =
      (results.length > 0 || toCluster !== undefined) &&
      results.every((r) => r.ok) &&
      toCluster?.ok !== false &&
      usersVerdict.ok;
    const figures = {
      command: `npm run test:cluster${SHORT ? ' -- --short' : ''}`,
      date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      machine: { nproc: cpus().length },
      durationSeconds: Math.round((Date.now() - started) / 1000),
      ok,
      monitorChecked,
      users: usersVerdict,
      scenarios: results,
      throughput,
      toCluster,
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
  ctx = { ...ctx, source };
  const fig: Figures = {
    name: scenario.name,
    fault: scenario.fault,
    acknowledged: 0,
    refused: 0,
    found: 0,
    lost: 0,
    duplicatedAsRead: 0,
    status5xx: 0,
    eventsPerShard: [],
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
    await bothShardsHold(ctx, source, fig);
  } catch (err) {
    fig.problems.push(err instanceof Error ? err.message : String(err));
  }
  fig.ok = fig.problems.length === 0;
  return fig;
}

/** The two replicas of each shard hold the same events of the scenario (a restarted one caught up). */
async function replicasAgree(ctx: Ctx, source: string, fig: Figures): Promise<void> {
  const t0 = Date.now();
  let last: number[][] = [];
  const perShard = await until(
    'the replicas of each shard to hold the same events',
    async () => {
      last = await Promise.all(
        ctx.cluster.shards.map((replicas) =>
          Promise.all(replicas.map((r) => replicaCount(r.url, ctx.database, source))),
        ),
      );
      const agree = last.every((n) => n[0]! >= 0 && n.every((x) => x === n[0]));
      return agree && sum(last.map((n) => n[0]!)) >= fig.found ? last : undefined;
    },
    120_000,
    500,
  ).catch(() => undefined);
  if (!perShard) {
    fig.problems.push(
      `the replicas of a shard did not agree within 120 s (${last.map((n, i) => `shard ${i + 1}: ${n.join(' / ')}`).join('; ')})`,
    );
    return;
  }
  fig.eventsPerShard = perShard.map((n) => n[0]!);
  fig.notes.push(
    `the replicas of each shard agree (${perShard.map((n, i) => `shard ${i + 1}: ${n[0]} events`).join(', ')}; ${seconds(t0)} s after the check began)`,
  );
}

/**
 * Both shards hold events of the scenario and checks (counted on each shard's local
 * tables); every event id is on one shard (the shards' distinct ids add up to what
 * `events_all` reads) and every monitor's checks are on one shard.
 */
async function bothShardsHold(ctx: Ctx, source: string, fig: Figures): Promise<void> {
  const { shards } = ctx.cluster;
  const per = fig.eventsPerShard;
  if (per.length !== shards.length) return; // replicasAgree already said why
  if (per.some((n) => n <= 0)) fig.problems.push(`not every shard holds events of the scenario (${per.join(' / ')})`);
  const db = sqlIdentifier(ctx.database);
  const viaAll = Number(
    await chQuery(
      servingReplica(shards[0]!).url,
      `SELECT uniqExact(event_id) FROM ${db}.events_all WHERE source = ${sqlString(source)}`,
      EXACT_DISTRIBUTED_READS,
    ),
  );
  if (sum(per) !== viaAll)
    fig.problems.push(
      `the shards hold ${per.join(' + ')} distinct events, events_all reads ${viaAll}: ${sum(per) - viaAll} on more than one shard`,
    );
  const monitors = await Promise.all(
    shards.map(async (replicas) => {
      const text = await chQuery(
        servingReplica(replicas).url,
        `SELECT monitor_id, count() FROM ${db}.checks GROUP BY monitor_id FORMAT TabSeparated`,
      );
      return new Map(
        text
          .split('\n')
          .filter(Boolean)
          .map((line) => line.split('\t') as [string, string])
          .map(([m, n]) => [m, Number(n)]),
      );
    }),
  );
  monitors.forEach((m, i) => {
    if (m.size === 0) fig.problems.push(`shard ${i + 1} holds no checks`);
  });
  const onTwo = [...monitors[0]!.keys()].filter((m) => monitors.slice(1).some((other) => other.has(m)));
  if (onTwo.length > 0)
    fig.problems.push(`the checks of ${onTwo.length} monitor(s) on two shards: ${onTwo.join(', ')}`);
  fig.notes.push(
    `checks: ${monitors.map((m, i) => `shard ${i + 1} ${sum([...m.values()])} of ${m.size} monitor(s)`).join(', ')}; events_all reads ${viaAll} distinct events`,
  );
}

/** The first running replica of a shard (all are running after a scenario, unless it failed). */
function servingReplica(replicas: ClickHouseNode[]): ClickHouseNode {
  return replicas.find((r) => r.running) ?? replicas[0]!;
}

/** Distinct events of `source` on one replica (asked directly, not through HAProxy). */
async function replicaCount(url: string, database: string, source: string, table = 'events'): Promise<number> {
  const sql = `SELECT uniqExact(event_id) FROM ${sqlIdentifier(database)}.${sqlIdentifier(table)} WHERE source = ${sqlString(source)}`;
  const r = await fetch(url, { method: 'POST', body: sql, signal: AbortSignal.timeout(5000) }).catch(() => undefined);
  return r?.ok ? Number((await r.text()).trim()) : -1;
}

/** One statement on one server over HTTP as `default` (settings as URL parameters); its answer's text. */
async function chQuery(
  url: string,
  sql: string,
  settings: Record<string, number | string> = {},
  timeoutMs = 30_000,
): Promise<string> {
  const u = new URL(url);
  for (const [k, v] of Object.entries(settings)) u.searchParams.set(k, String(v));
  const r = await fetch(u, { method: 'POST', body: sql, signal: AbortSignal.timeout(timeoutMs) });
  const text = await r.text();
  if (!r.ok) throw new Error(`ClickHouse at ${url} answered ${r.status}: ${text.slice(0, 300)}`);
  return text.trim();
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
const seconds = (since: number): number => Math.round((Date.now() - since) / 100) / 10;

function render(f: {
  command: string;
  date: string;
  durationSeconds: number;
  ok: boolean;
  monitorChecked: string;
  users: { ok: boolean; summary: string; problems: string[] };
  scenarios: Figures[];
  throughput: Throughput | undefined;
  toCluster?: ToClusterFigures;
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

Everything (three brokers, four ClickHouse servers, three ZooKeeper members, HAProxy, eight services and the load) shares this machine's ${cpus().length} cores: a second gateway or consumer adds capacity only where one did not already have a core to itself, so these ratios say little of real clusters; the CPU per event is the figure that carries over.${renderCeiling(t.ceiling)}`
    : '';
  const rows = f.scenarios
    .map(
      (s) =>
        `| ${s.name} | ${s.acknowledged} | ${s.refused} | ${s.lost} | ${s.duplicatedAsRead} | ${s.eventsPerShard.join(' / ') || '-'} | ${s.status5xx} | ${s.recoverySeconds ?? '-'} | ${s.ok ? 'yes' : '**no**'} |`,
    )
    .join('\n');
  const notes = f.scenarios
    .flatMap((s) => [...s.notes.map((n) => `- ${s.name}: ${n}`), ...s.problems.map((p) => `- ${s.name}: **${p}**`)])
    .join('\n');
  return `## On a cluster (\`${f.command}\`)

Written by \`test/cluster/run.ts\` on ${f.date.slice(0, 10)}: three Kafka brokers (KRaft, replication factor 3, min.insync.replicas=2), two shards of two ClickHouse 18.16 replicas (four servers) through a ZooKeeper ensemble of three, all four behind one HAProxy, two gateways behind HAProxy, two consumers, every service in cluster mode (\`CLICKHOUSE_CLUSTER\`: it reads and writes the \`_all\` tables); steady load of about 400 events/s through the gateways' balancer. Lost and duplicates are read through \`events_all\` FINAL with every shard required; after each scenario the two replicas of each shard agree, both shards hold events and checks, every event id is on one shard and every monitor's checks on one shard. ${f.ok ? 'Every scenario passed' : 'Not every scenario passed'} (${f.durationSeconds} s).

| scenario | acknowledged | refused | lost | duplicates as read | events on shard 1 / 2 | 5xx answers | back in service (s) | ok |
|---|---|---|---|---|---|---|---|---|
${rows}

"Back in service": from the restart to the part back and caught up (a broker in every partition's ISR, a ClickHouse replica with no replication delay or queue, a gateway ready, both consumers in the group); the rest of the cluster kept answering meanwhile.

${notes}
- Two query services behind HAProxy and two check runners ran throughout: ${f.monitorChecked}.
- Users: ${f.users.summary}${f.users.problems.map((p) => `; **${p}**`).join('')}.${f.toCluster ? `\n${renderToCluster(f.toCluster)}` : ''}${tp}`;
}

/** The ceiling's steps, and the CPU per event of every tier at the highest sustained one. */
function renderCeiling(c: Ceiling): string {
  const rows = c.steps
    .map(
      (s) =>
        `| ${s.offered} | ${Math.round(s.acknowledged)} | ${Math.round(s.p99Ms)} | ${s.lagStart} → ${s.lagEnd} | ${s.machineCores.toFixed(2)} | ${s.sustained ? 'yes' : `no: ${s.why.join(', ')}`} |`,
    )
    .join('\n');
  const b = c.best;
  const tiers = b
    ? `

CPU per acknowledged event at ${Math.round(b.acknowledged)} events/s (µs of user + system CPU of each tier's processes over the step, divided by the events acknowledged in it):

| tier | µs CPU per event |
|---|---|
${TIERS.map((t) => `| ${t} | ${Math.round(b.cpuMicrosPerEvent[t])} |`).join('\n')}
| all of them | ${Math.round(sum(TIERS.map((t) => b.cpuMicrosPerEvent[t])))} |
| the rest of the machine (not this run: other work sharing the cores) | ${Math.round(b.otherMicrosPerEvent)} |`
    : '';
  return `

The ceiling: paced load (open loop, 100-event batches, at most ${CEILING_IN_FLIGHT} requests waiting) through the gateways' balancer for ${c.stepSeconds} s a step, from 500 events/s up by 30 % a step while the pipeline keeps up, then one step between the last sustained and the first that was not. A step is sustained when at least 97 % of the offered batches are acknowledged (none dropped for too many waiting, refused or timed out beyond that), p99 latency (from each request's scheduled send, so queueing counts) is at most 1 s, and the consumer group's lag grew by at most 3 s of the offered load. **Highest sustained: ${b ? `${Math.round(b.acknowledged)} events/s` : 'none (not even the first step)'}** with everything on this machine's ${cpus().length} cores.

| offered (events/s) | acknowledged (events/s) | p99 (ms) | consumer lag (messages) | cores busy | sustained |
|---|---|---|---|---|---|
${rows}${tiers}`;
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
  const id = await createMonitor(queryUrl, apiKey, targetUrl, 'cluster target');
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

/** A monitor of `targetUrl` checked every second, made through the query services' balancer; its id. */
async function createMonitor(queryUrl: string, apiKey: string, targetUrl: string, name: string): Promise<string> {
  const made = await fetch(`${queryUrl}/api/monitors`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, url: targetUrl, interval_seconds: 1, timeout_ms: 500 }),
  });
  if (made.status !== 201) throw new Error(`creating a monitor answered ${made.status}: ${await made.text()}`);
  return ((await made.json()) as { data: { id: string } }).data.id;
}

/**
 * Creates monitors (ten at most) until both shards hold checks: a monitor's checks all
 * live on the shard of its id's hash, so one monitor fills one shard. Each new monitor
 * is made once every monitor so far has checks stored.
 */
async function monitorsOnBothShards(
  cluster: Cluster,
  database: string,
  queryUrl: string,
  apiKey: string,
  targetUrl: string,
): Promise<string> {
  const db = sqlIdentifier(database);
  for (let made = 1; ; made++) {
    const perShard = await until(
      `the checks of ${made} monitor(s) stored`,
      async () => {
        const n = await Promise.all(
          cluster.shards.map(async (replicas) =>
            Number(await chQuery(servingReplica(replicas).url, `SELECT uniqExact(monitor_id) FROM ${db}.checks`)),
          ),
        );
        return sum(n) >= made ? n : undefined;
      },
      60_000,
      500,
    );
    if (perShard.every((n) => n > 0))
      return `${made} monitors checked every second; their checks on the shards: ${perShard.join(' / ')} monitor(s)`;
    if (made >= 10) throw new Error(`ten monitors, and their checks on one shard only (${perShard.join(' / ')})`);
    await createMonitor(queryUrl, apiKey, targetUrl, `cluster target ${made + 1}`);
  }
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
    // Last, so the consumers' figures above find the topic as before.
    const ceiling = await measureCeiling(ctx, key, run);
    return {
      seconds: THROUGHPUT_SECONDS,
      gateways: { one: gOne, two: gTwo, ratio: gTwo.eventsPerSecond / gOne.eventsPerSecond },
      consumers: { one: cOne, two: cTwo, ratio: cTwo.eventsPerSecond / cOne.eventsPerSecond },
      ceiling,
    };
  } finally {
    await admin.close();
  }
}

/** Each tier's pids (the load generator is this process). */
function tierPids({ cluster, services }: Ctx): Record<Tier, number[]> {
  const pids = (xs: { running: boolean; pid: number }[]): number[] => xs.filter((x) => x.running).map((x) => x.pid);
  return {
    gateways: pids(services.gateways),
    consumers: pids(services.consumers),
    'ClickHouse servers': pids(cluster.clickhouse),
    'Kafka brokers': pids(cluster.brokers),
    ZooKeeper: pids(cluster.zookeeper),
    HAProxy: [services.gatewayLb.pid, services.queryLb.pid, services.clickhouseLb.pid],
    'query services and runners': pids([...services.queries, ...services.runners]),
    'load generator': [process.pid],
  };
}

/** CPU seconds (user + system) of each tier now. */
function tierCpu(pids: Record<Tier, number[]>): Record<Tier, number> {
  const of = (ps: number[]): number =>
    ps.reduce((n, pid) => {
      const t = procCpu(pid);
      return n + (t ? t.user + t.system : 0);
    }, 0);
  return Object.fromEntries(TIERS.map((t) => [t, of(pids[t])])) as Record<Tier, number>;
}

/**
 * The ceiling: paced load (open loop, 100-event batches, at most CEILING_IN_FLIGHT
 * requests waiting) through the gateways' balancer, CEILING_STEP_SECONDS per step, from
 * 500 events/s up by 30 % a step, while the pipeline keeps up. A step is sustained when
 * all three hold:
 *
 * - at least 97 % of the offered batches are acknowledged (the rest dropped because
 *   CEILING_IN_FLIGHT were waiting, refused or timed out);
 * - p99 latency (from each request's scheduled send) is at most 1 s;
 * - the consumers keep pace: the group's lag grew by at most 3 s of the offered load
 *   during the step (a pipeline that falls behind grows it without bound).
 *
 * After the first step that fails, one more between it and the last sustained one. The
 * highest sustained step is the ceiling, with the CPU per event of every tier in it.
 */
async function measureCeiling(ctx: Ctx, key: string, run: string): Promise<Ceiling> {
  const { services, obs } = ctx;
  if (!obs) throw new Error('the ceiling needs the pipeline group');
  const client = new HttpClient(services.gatewayLb.url, CEILING_IN_FLIGHT);
  const source = `cluster.ceiling.${run}`;
  const headers = { 'content-type': 'application/json', 'x-access-key': key };
  let seq = 0;
  const op = async (): Promise<Outcome> => {
    const events = Array.from({ length: 100 }, () => ({
      id: `${source}.${seq++}`,
      source,
      category: 'ceiling',
      payload: { n: seq },
    }));
    const reply = await client.request('POST', '/api/telemetry/events', headers, JSON.stringify({ events }), 10_000);
    return { status: reply.status, ok: reply.status === 200 };
  };
  const step = async (offered: number): Promise<Step> => {
    const pids = tierPids(ctx);
    const lagStart = (await obs.progress()).uncommitted;
    const cpu0 = tierCpu(pids);
    const busy0 = machineBusySeconds();
    const t0 = performance.now();
    const r = await paced(op, offered / 100, CEILING_STEP_SECONDS, CEILING_IN_FLIGHT);
    const wall = (performance.now() - t0) / 1000;
    const cpu1 = tierCpu(pids);
    const busy = machineBusySeconds() - busy0;
    const machineCores = busy / wall;
    const lagEnd = (await obs.progress()).uncommitted;
    const acked = r.ok * 100;
    const acknowledged = acked / r.seconds;
    const p99Ms = quantiles(r.latencies).p99;
    const why: string[] = [];
    const share = r.ok / (r.requests + r.dropped);
    if (share < 0.97) why.push(`${Math.round(100 * share)} % of the offered batches acknowledged`);
    if (!(p99Ms <= 1000)) why.push(`p99 ${Math.round(p99Ms)} ms`);
    if (lagEnd - lagStart > 3 * offered) why.push(`lag grew by ${lagEnd - lagStart}`);
    const cpuMicrosPerEvent = Object.fromEntries(
      TIERS.map((t) => [t, ((cpu1[t] - cpu0[t]) * 1e6) / Math.max(1, acked)]),
    ) as Record<Tier, number>;
    const s: Step = {
      offered,
      acknowledged,
      p99Ms,
      notAcknowledged: (r.requests - r.ok + r.dropped) * 100,
      lagStart,
      lagEnd,
      sustained: why.length === 0,
      why,
      cpuMicrosPerEvent,
      machineCores,
      otherMicrosPerEvent: ((busy - sum(TIERS.map((t) => cpu1[t] - cpu0[t]))) * 1e6) / Math.max(1, acked),
    };
    log(
      `ceiling: offered ${offered} events/s, acknowledged ${Math.round(acknowledged)}, p99 ${Math.round(p99Ms)} ms, lag ${lagStart} -> ${lagEnd}: ${s.sustained ? 'sustained' : `not sustained (${why.join(', ')})`}`,
    );
    return s;
  };
  const steps: Step[] = [];
  try {
    let offered = 500;
    let best: Step | undefined;
    for (let i = 0; i < 16; i++) {
      const s = await step(offered);
      steps.push(s);
      if (!s.sustained) break;
      best = s;
      offered = Math.round((offered * 1.3) / 100) * 100;
    }
    const failed = steps.at(-1);
    if (best && failed && !failed.sustained) {
      const between = Math.round(Math.sqrt(best.offered * failed.offered) / 100) * 100;
      if (between > best.offered && between < failed.offered) {
        // A step after a failed one starts with its lag: let the consumers catch up first.
        await until(
          'the consumers caught up after the failed step',
          async () => ((await obs.progress()).uncommitted <= best!.offered ? true : undefined),
          300_000,
          500,
        );
        const s = await step(between);
        steps.push(s);
        if (s.sustained) best = s;
      }
    }
    return { stepSeconds: CEILING_STEP_SECONDS, steps, ...(best ? { best } : {}) };
  } finally {
    client.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(String(err));
    process.exit(1);
  },
);
