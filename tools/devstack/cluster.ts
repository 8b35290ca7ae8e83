/**
 * The cluster harness (`npm run test:cluster`, docs/operations.md "Clusters"): the same
 * local processes as stack.ts, several of each, on free loopback ports under one data
 * directory:
 *
 * - three Kafka brokers in KRaft mode, each also a controller (a quorum of three), with
 *   replication factor 3 and min.insync.replicas=2 for every topic;
 * - an Apache ZooKeeper ensemble of three (its jars from Maven Central, cached like
 *   Kafka's): losing one keeps a quorum;
 * - four ClickHouse servers: two shards of two replicas each, the cluster `telemetry`
 *   (remote_servers, macros, distributed DDL through ZooKeeper); `shards: 1` makes it one
 *   shard of two;
 * - HAProxy (Debian's) in front of whatever the caller starts: balancer();
 * - on every ClickHouse server, the services' users of each database the caller asks
 *   for (serviceUsers(): users.d, as on one server, plus the migrator) and the
 *   interserver user the servers send the shards' part of a distributed query as.
 *
 * Every process can be killed (SIGKILL) and started again on its ports and data.
 * `kafka: false` starts the ZooKeeper and ClickHouse part only (for work on the tables).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ensureClickHouse,
  ensureHaproxy,
  ensureKafkaJars,
  ensureKafkaTools,
  ensureZookeeperJars,
  run,
} from './installers.js';
import { freePort } from './ports.js';
import { httpOk, kafkaAnswers, withBrokerAdmin, zookeeperServes } from './probes.js';
import { ManagedProcess } from './process.js';
import {
  clickhouseClusterXml,
  clickhouseConfig,
  CLUSTER_NAME,
  formatKafkaStorage,
  haproxyConfig,
  javaArgs,
  kafkaClusterId,
  kafkaProperties,
  zookeeperConfig,
} from './server-config.js';
import {
  clusterUsersXml,
  interserverUsersXml,
  newClusterUsers,
  waitForUsers,
  type ClusterUsers,
  type Credentials,
} from './users.js';

export { CLUSTER_NAME };
/** One server process of the cluster. */
export interface Node {
  name: string;
  /** Starts it and waits until it answers. */
  start(): Promise<void>;
  /** Kills it (SIGKILL unless told) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  readonly running: boolean;
  /** Its process id (throws when it is not running). */
  readonly pid: number;
}

export interface Broker extends Node {
  id: number;
  port: number;
}

export interface ZooKeeperNode extends Node {
  /** Its client port on 127.0.0.1. */
  port: number;
}

export interface ClickHouseNode extends Node {
  url: string;
  tcpPort: number;
  /** Its shard (1-based) and its replica within the shard (1-based). */
  shard: number;
  replica: number;
  /** Its directory (config.xml, users.d). */
  dir: string;
}

export interface Balancer {
  port: number;
  url: string;
  /** HAProxy's process id. */
  readonly pid: number;
  stop(): Promise<void>;
}

export interface Cluster {
  /** All three brokers, comma-separated. */
  kafkaBrokers: string;
  /** Leads no partition any more (fenced after broker.session.timeout.ms). */
  leadsNothing(brokerId: number): Promise<boolean>;
  /** Every partition of every topic has all three replicas in sync. */
  fullyInSync(): Promise<boolean>;
  brokers: Broker[];
  /** The ZooKeeper ensemble (three members). */
  zookeeper: ZooKeeperNode[];
  /** Every ClickHouse server, shard by shard: [shard 1 replica 1, shard 1 replica 2, shard 2 replica 1, …]. */
  clickhouse: ClickHouseNode[];
  /** The ClickHouse servers of each shard. */
  shards: ClickHouseNode[][];
  /** The broker that is the active KRaft controller now. */
  activeController(): Promise<number>;
  /**
   * HAProxy on a free port, round robin over `backends` (ports on 127.0.0.1), each
   * checked with GET `checkPath` every 500 ms (down after 2 failures, up after 2 passes).
   */
  balancer(name: string, backends: number[], checkPath: string): Promise<Balancer>;
  /**
   * The services' users of data database `database` and its migrator, in users.d on every
   * ClickHouse server (the interserver user may then use the database too); resolves once
   * every running server accepts the migrator. The services' users need their databases:
   * wait for them after migrating (waitForClusterUsers).
   */
  serviceUsers(database: string): Promise<ClusterUsers>;
  /** Who the shards' part of a distributed query runs as (remote_servers `<user>`). */
  interserver: Credentials;
  dir: string;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  dataDir?: string;
  keepData?: boolean;
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** ClickHouse shards (default 2), each of two replicas. */
  shards?: number;
  /** false: no Kafka brokers (kafkaBrokers is ''). */
  kafka?: boolean;
}

/** A server of the cluster: its process in `dir` (stdout.log), ready when `probe` says so. */
function node(
  name: string,
  command: [string, string[]],
  dir: string,
  probe: { what: string; answers: () => Promise<boolean>; timeoutMs: number; log: string },
): Node {
  const proc = new ManagedProcess({
    name,
    command,
    output: 'file',
    logFile: join(dir, 'stdout.log'),
    logHint: join(dir, probe.log),
  });
  return {
    name,
    start: () => proc.ensureStarted().waitAnswers(probe.what, probe.answers, probe.timeoutMs),
    kill: async (signal = 'SIGKILL') => void (await proc.stop(signal, 5000)),
    get running() {
      return proc.running;
    },
    get pid() {
      return proc.pid;
    },
  };
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? ((l: string) => process.stderr.write(`[cluster] ${l}\n`));
  const root = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'telemetry-cluster-'));
  mkdirSync(root, { recursive: true });
  const haproxyBin = await ensureHaproxy(log);
  const [chBin, kafkaJars, toolsJars, zkJars] = await Promise.all([
    ensureClickHouse(log),
    ensureKafkaJars(env, log),
    ensureKafkaTools(env, log),
    ensureZookeeperJars(env, log),
  ]);

  // ZooKeeper: an ensemble of three.
  const zkIds = [1, 2, 3];
  const zkPorts = await Promise.all(
    zkIds.map(async (id) => ({
      id,
      client: await freePort(),
      quorumPort: await freePort(),
      electionPort: await freePort(),
    })),
  );
  const zookeeper: ZooKeeperNode[] = zkPorts.map((z) => {
    const dir = join(root, `zookeeper-${z.id}`);
    const cfg = zookeeperConfig(dir, z.client, { id: z.id, ensemble: zkPorts });
    const main = ['org.apache.zookeeper.server.quorum.QuorumPeerMain', cfg];
    // Object.assign keeps node()'s getters (a spread would copy their values once).
    return Object.assign(
      node(`zookeeper-${z.id}`, ['java', [...javaArgs({ min: '96m', max: '96m' }, zkJars, dir), ...main]], dir, {
        what: `ZooKeeper ${z.id}`,
        answers: () => zookeeperServes(z.client),
        timeoutMs: 90_000,
        log: 'stdout.log',
      }),
      { port: z.client },
    );
  });

  // Kafka: three brokers that are also the three controllers.
  const ids = opts.kafka === false ? [] : [1, 2, 3];
  const ports = await Promise.all(ids.map(async () => ({ port: await freePort(), controller: await freePort() })));
  const voters = ids.map((id, i) => `${id}@127.0.0.1:${ports[i]!.controller}`).join(',');
  const kafkaBrokers = ports.map((p) => `127.0.0.1:${p.port}`).join(',');
  const clusterId = ids.length > 0 ? await kafkaClusterId(javaArgs({ min: '64m', max: '64m' }, kafkaJars, root)) : '';
  const brokers: Broker[] = [];
  for (const [i, id] of ids.entries()) {
    const { port, controller } = ports[i]!;
    const dir = join(root, `kafka-${id}`);
    mkdirSync(dir, { recursive: true });
    const props = kafkaProperties(dir, { id, port, controllerPort: controller, voters, quorum: true });
    const java = javaArgs({ min: '384m', max: '384m' }, kafkaJars, dir);
    await formatKafkaStorage(java, props, join(dir, 'data'), clusterId);
    // Object.assign keeps node()'s `running` getter (a spread would copy its value once).
    brokers.push(
      Object.assign(
        node(`kafka-${id}`, ['java', [...java, 'kafka.Kafka', props]], dir, {
          what: `Kafka broker ${id}`,
          answers: () => kafkaAnswers(port, 3),
          timeoutMs: 120_000,
          log: 'server.log',
        }),
        { id, port },
      ),
    );
  }

  // The interserver user's password is new each run.
  const interserver: Credentials = { user: 'interserver', password: randomBytes(12).toString('hex') };
  const userDatabases: string[] = [];
  // ClickHouse: shards of two replicas each.
  const shardCount = opts.shards ?? 2;
  const places = Array.from({ length: shardCount * 2 }, (_, i) => ({
    shard: Math.floor(i / 2) + 1,
    replica: (i % 2) + 1,
  }));
  const chPorts = await Promise.all(
    places.map(async () => ({ http: await freePort(), tcp: await freePort(), interserver: await freePort() })),
  );
  const shardPorts = Array.from({ length: shardCount }, (_, s) =>
    places.flatMap((p, i) => (p.shard === s + 1 ? [chPorts[i]!.tcp] : [])),
  );
  const clickhouse: ClickHouseNode[] = chPorts.map((p, i) => {
    const { shard, replica } = places[i]!;
    const dir = join(root, `clickhouse-${i + 1}`);
    mkdirSync(dir, { recursive: true });
    const xml = clickhouseClusterXml(
      zkPorts.map((z) => z.client),
      { shard, replica: `ch${i + 1}`, interserverPort: p.interserver },
      shardPorts,
      interserver,
    );
    clickhouseConfig(dir, p.http, p.tcp, xml, { logQueries: true });
    writeFileSync(join(dir, 'users.d', 'interserver.xml'), interserverUsersXml(interserver, userDatabases));
    const url = `http://127.0.0.1:${p.http}`;
    return Object.assign(
      node(`clickhouse-${i + 1}`, [chBin, [`--config-file=${join(dir, 'config.xml')}`]], dir, {
        what: `ClickHouse ${i + 1} (shard ${shard}, replica ${replica})`,
        answers: () => httpOk(`${url}/ping`),
        timeoutMs: 60_000,
        log: 'error.log',
      }),
      { url, tcpPort: p.tcp, shard, replica, dir },
    );
  });
  const shards = Array.from({ length: shardCount }, (_, s) => clickhouse.filter((c) => c.shard === s + 1));

  const balancers: ManagedProcess[] = [];
  const all: Node[] = [...zookeeper, ...brokers, ...clickhouse];
  try {
    // The members find each other only when all run: started together.
    await Promise.all(zookeeper.map((z) => z.start()));
    await Promise.all([...brokers.map((b) => b.start()), ...clickhouse.map((c) => c.start())]);
  } catch (err) {
    await Promise.all(all.map((n) => n.kill()));
    throw err;
  }
  log(
    `up: kafka ${kafkaBrokers || '-'}; zookeeper ${zkPorts.map((z) => `127.0.0.1:${z.client}`).join(', ')}; ` +
      `clickhouse ${shards.map((s, i) => `shard ${i + 1}: ${s.map((c) => c.url).join(' ')}`).join('; ')}`,
  );

  return {
    kafkaBrokers,
    brokers,
    zookeeper,
    clickhouse,
    shards,
    dir: root,
    interserver,
    serviceUsers: async (database) => {
      const users = newClusterUsers(database);
      userDatabases.push(database);
      for (const c of clickhouse) {
        writeFileSync(join(c.dir, 'users.d', `${database}.xml`), clusterUsersXml(database, users));
        writeFileSync(join(c.dir, 'users.d', 'interserver.xml'), interserverUsersXml(interserver, userDatabases));
      }
      await Promise.all(clickhouse.filter((c) => c.running).map((c) => migratorAccepted(c.url, users.migrator)));
      return users;
    },
    activeController: async () => {
      // The quorum's leader, as Kafka's own tool reports it (kafkajs' describeCluster
      // names some broker in KRaft mode, not the active controller).
      const { stdout } = await run('java', [
        '-Xmx128m',
        '-cp',
        `${toolsJars}/*:${kafkaJars}/*`,
        'org.apache.kafka.tools.MetadataQuorumCommand',
        '--bootstrap-server',
        kafkaBrokers,
        'describe',
        '--status',
      ]);
      const leader = /LeaderId:\s*(\d+)/.exec(stdout)?.[1];
      if (!leader) throw new Error(`no LeaderId in the metadata quorum's status: ${stdout.slice(0, 500)}`);
      return Number(leader);
    },
    leadsNothing: async (brokerId) => {
      const partitions = await partitionsOf(kafkaBrokers);
      return partitions !== undefined && partitions.every((p) => p.leader !== brokerId);
    },
    fullyInSync: async () => {
      const partitions = await partitionsOf(kafkaBrokers);
      return partitions !== undefined && partitions.every((p) => p.isr.length === 3);
    },
    balancer: async (name, backends, checkPath) => {
      const port = await freePort();
      const dir = join(root, `haproxy-${name}`);
      mkdirSync(dir, { recursive: true });
      const cfg = haproxyConfig(dir, port, backends, checkPath);
      const logFile = join(dir, 'stdout.log');
      const proc = new ManagedProcess({
        name: `HAProxy ${name}`,
        command: [haproxyBin, ['-db', '-f', cfg]],
        output: 'file',
        logFile,
      });
      balancers.push(proc.start());
      await proc.waitForPort(port, 20_000);
      return {
        port,
        url: `http://127.0.0.1:${port}`,
        get pid() {
          return proc.pid;
        },
        stop: async () => void (await proc.stop()),
      };
    },
    stop: async () => {
      await Promise.all([...balancers.map((b) => b.stop()), ...brokers.map((b) => b.kill('SIGTERM'))]);
      await Promise.all(clickhouse.map((c) => c.kill('SIGTERM')));
      await Promise.all(zookeeper.map((z) => z.kill('SIGTERM')));
      if (!opts.keepData) rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Polls until `url` accepts the migrator (18.16 reloads users.d within seconds). */
async function migratorAccepted(url: string, migrator: Credentials): Promise<void> {
  const deadline = Date.now() + 30_000;
  const auth = new URLSearchParams({ user: migrator.user, password: migrator.password, database: 'default' });
  for (;;) {
    const r = await fetch(`${url}/?${auth.toString()}`, {
      method: 'POST',
      body: 'SELECT 1',
      signal: AbortSignal.timeout(5000),
    }).catch(() => undefined);
    if (r?.ok) return;
    if (Date.now() > deadline) throw new Error(`${url} did not accept the user ${migrator.user} in time`);
    await new Promise((res) => setTimeout(res, 250));
  }
}

/** Polls until every server of the cluster accepts every service user of `database` (once migrated). */
export async function waitForClusterUsers(cluster: Cluster, database: string, users: ClusterUsers): Promise<void> {
  await Promise.all(cluster.clickhouse.map((c) => waitForUsers(c.url, database, users)));
}

/**
 * Every partition's leader and in-sync replicas, or undefined when no broker answers.
 * Each broker is asked alone in turn: kafkajs gives up on its first seed when that one
 * is down (the one a scenario just killed, maybe).
 */
async function partitionsOf(brokers: string): Promise<{ leader: number; isr: number[] }[] | undefined> {
  for (const broker of brokers.split(',')) {
    try {
      return await withBrokerAdmin(broker, async (admin) => {
        const { topics } = await admin.fetchTopicMetadata();
        return topics.flatMap((t) => t.partitions.map((p) => ({ leader: p.leader, isr: p.isr })));
      });
    } catch {
      // The next broker.
    }
  }
  return undefined;
}
