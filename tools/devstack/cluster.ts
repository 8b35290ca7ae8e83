/**
 * The cluster harness (`npm run test:cluster`, docs/operations.md "Clusters"): the same
 * local processes as stack.ts, several of each, on free loopback ports under one data
 * directory:
 *
 * - three Kafka brokers in KRaft mode, each also a controller (a quorum of three), with
 *   replication factor 3 and min.insync.replicas=2 for every topic;
 * - Apache ZooKeeper (standalone; its jars from Maven Central, cached like Kafka's);
 * - two ClickHouse servers, replicas of one shard of the cluster `telemetry`
 *   (remote_servers, macros, distributed DDL through ZooKeeper);
 * - HAProxy (Debian's) in front of whatever the caller starts: balancer().
 *
 * Every process can be killed (SIGKILL) and started again on its ports and data.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  clickhouseConfig,
  ensureClickHouse,
  ensureKafkaJars,
  ensureKafkaTools,
  ensureMavenJars,
  freePort,
  here,
  httpOk,
  kafkaAnswers,
  ManagedProcess,
  run,
  waitFor,
  withBrokerAdmin,
} from './stack.js';

export const CLUSTER_NAME = 'telemetry';
const ZOOKEEPER_VERSION = '3.9.3';

/** One server process of the cluster. */
export interface Node {
  name: string;
  /** Starts it and waits until it answers. */
  start(): Promise<void>;
  /** Kills it (SIGKILL unless told) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  readonly running: boolean;
}

export interface Broker extends Node {
  id: number;
  port: number;
}

export interface ClickHouseNode extends Node {
  url: string;
  tcpPort: number;
}

export interface Balancer {
  port: number;
  url: string;
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
  zookeeper: Node;
  clickhouse: ClickHouseNode[];
  /** The broker that is the active KRaft controller now. */
  activeController(): Promise<number>;
  /**
   * HAProxy on a free port, round robin over `backends` (ports on 127.0.0.1), each
   * checked with GET `checkPath` every 500 ms (down after 2 failures, up after 2 passes).
   */
  balancer(name: string, backends: number[], checkPath: string): Promise<Balancer>;
  dir: string;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  dataDir?: string;
  keepData?: boolean;
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}

function node(name: string, proc: ManagedProcess, ready: () => Promise<void>): Node {
  return {
    name,
    start: async () => {
      proc.start();
      await ready();
    },
    kill: (signal = 'SIGKILL') => proc.stop(signal, 5000),
    get running() {
      return proc.running;
    },
  };
}

/** ZooKeeper answers `imok` to `ruok`. */
function zookeeperAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write('ruok'));
    let text = '';
    socket.setTimeout(1000, () => socket.destroy());
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('close', () => resolve(text === 'imok'));
    socket.on('error', () => resolve(false));
  });
}

function brokerProperties(dir: string, id: number, port: number, controllerPort: number, voters: string): string {
  const file = join(dir, 'server.properties');
  writeFileSync(
    file,
    [
      'process.roles=broker,controller',
      `node.id=${id}`,
      `controller.quorum.voters=${voters}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      `log.dirs=${dir}/data`,
      'default.replication.factor=3',
      'min.insync.replicas=2',
      'offsets.topic.replication.factor=3',
      'offsets.topic.num.partitions=10',
      'transaction.state.log.replication.factor=3',
      'transaction.state.log.min.isr=2',
      'group.initial.rebalance.delay.ms=0',
      'auto.create.topics.enable=false',
      'unclean.leader.election.enable=false',
      // A killed broker is fenced (its partitions led elsewhere) after 3 s, not 9.
      'broker.session.timeout.ms=3000',
      'broker.heartbeat.interval.ms=500',
      'num.partitions=1',
      'log.flush.interval.messages=9223372036854775807',
      '',
    ].join('\n'),
  );
  return file;
}

/** The cluster elements of a ClickHouse server's config: ZooKeeper, its replica, the cluster, distributed DDL. */
function clusterXml(zkPort: number, interserverPort: number, replica: string, tcpPorts: number[]): string {
  const replicas = tcpPorts.map((p) => `<replica><host>127.0.0.1</host><port>${p}</port></replica>`).join('');
  return `  <interserver_http_port>${interserverPort}</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <zookeeper><node><host>127.0.0.1</host><port>${zkPort}</port></node><session_timeout_ms>10000</session_timeout_ms></zookeeper>
  <macros><shard>01</shard><replica>${replica}</replica></macros>
  <remote_servers><${CLUSTER_NAME}><shard><internal_replication>true</internal_replication>${replicas}</shard></${CLUSTER_NAME}></remote_servers>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
`;
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
    ensureMavenJars(env, log, 'zookeeper', `zookeeper-${ZOOKEEPER_VERSION}`, `Apache ZooKeeper ${ZOOKEEPER_VERSION}`),
  ]);
  const javaOpts = (heap: string, jars: string, logDir: string): string[] => [
    `-Xms${heap}`,
    `-Xmx${heap}`,
    '-XX:+UseG1GC',
    `-Dkafka.logs.dir=${logDir}`,
    `-Dlog4j.configuration=file:${join(here, 'kafka', 'log4j.properties')}`,
    '-cp',
    `${jars}/*`,
  ];

  // ZooKeeper.
  const zkDir = join(root, 'zookeeper');
  mkdirSync(join(zkDir, 'data'), { recursive: true });
  const zkPort = await freePort();
  writeFileSync(
    join(zkDir, 'zoo.cfg'),
    [
      'tickTime=500',
      `dataDir=${zkDir}/data`,
      `clientPort=${zkPort}`,
      'clientPortAddress=127.0.0.1',
      'admin.enableServer=false',
      '4lw.commands.whitelist=ruok',
      'maxSessionTimeout=20000',
      '',
    ].join('\n'),
  );
  const zookeeper = node(
    'zookeeper',
    new ManagedProcess(
      'java',
      [...javaOpts('128m', zkJars, zkDir), 'org.apache.zookeeper.server.ZooKeeperServerMain', join(zkDir, 'zoo.cfg')],
      join(zkDir, 'stdout.log'),
    ),
    () => waitFor('ZooKeeper', () => zookeeperAnswers(zkPort), 60_000, join(zkDir, 'stdout.log')),
  );

  // Kafka: three brokers that are also the three controllers.
  const ids = [1, 2, 3];
  const ports = await Promise.all(ids.map(async () => ({ port: await freePort(), controller: await freePort() })));
  const voters = ids.map((id, i) => `${id}@127.0.0.1:${ports[i]!.controller}`).join(',');
  const kafkaBrokers = ports.map((p) => `127.0.0.1:${p.port}`).join(',');
  const { stdout: clusterId } = await run('java', [
    ...javaOpts('64m', kafkaJars, root),
    'kafka.tools.StorageTool',
    'random-uuid',
  ]);
  const brokers: Broker[] = [];
  for (const [i, id] of ids.entries()) {
    const dir = join(root, `kafka-${id}`);
    mkdirSync(dir, { recursive: true });
    const props = brokerProperties(dir, id, ports[i]!.port, ports[i]!.controller, voters);
    const args = javaOpts('384m', kafkaJars, dir);
    await run('java', [...args, 'kafka.tools.StorageTool', 'format', '-t', clusterId.trim(), '-c', props]);
    const proc = new ManagedProcess('java', [...args, 'kafka.Kafka', props], join(dir, 'stdout.log'));
    // Object.assign keeps node()'s `running` getter (a spread would copy its value once).
    brokers.push(
      Object.assign(
        node(`kafka-${id}`, proc, () =>
          waitFor(`Kafka broker ${id}`, () => kafkaAnswers(ports[i]!.port, 3), 120_000, join(dir, 'server.log')),
        ),
        { id, port: ports[i]!.port },
      ),
    );
  }

  // ClickHouse: two replicas of one shard.
  const chPorts = await Promise.all(
    [0, 1].map(async () => ({ http: await freePort(), tcp: await freePort(), interserver: await freePort() })),
  );
  const clickhouse: ClickHouseNode[] = chPorts.map((p, i) => {
    const dir = join(root, `clickhouse-${i + 1}`);
    mkdirSync(dir, { recursive: true });
    clickhouseConfig(
      dir,
      p.http,
      p.tcp,
      clusterXml(
        zkPort,
        p.interserver,
        `ch${i + 1}`,
        chPorts.map((q) => q.tcp),
      ),
    );
    const url = `http://127.0.0.1:${p.http}`;
    const proc = new ManagedProcess(chBin, [`--config-file=${join(dir, 'config.xml')}`], join(dir, 'stdout.log'));
    return Object.assign(
      node(`clickhouse-${i + 1}`, proc, () =>
        waitFor(`ClickHouse ${i + 1}`, () => httpOk(`${url}/ping`), 60_000, join(dir, 'error.log')),
      ),
      { url, tcpPort: p.tcp },
    );
  });

  const balancers: ManagedProcess[] = [];
  const all: Node[] = [zookeeper, ...brokers, ...clickhouse];
  try {
    await zookeeper.start();
    await Promise.all([...brokers.map((b) => b.start()), ...clickhouse.map((c) => c.start())]);
  } catch (err) {
    await Promise.all(all.map((n) => n.kill()));
    throw err;
  }
  log(
    `up: kafka ${kafkaBrokers}; zookeeper 127.0.0.1:${zkPort}; clickhouse ${clickhouse.map((c) => c.url).join(', ')}`,
  );

  return {
    kafkaBrokers,
    brokers,
    zookeeper,
    clickhouse,
    dir: root,
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
      const cfg = join(dir, 'haproxy.cfg');
      writeFileSync(
        cfg,
        [
          'global',
          '  maxconn 4096',
          'defaults',
          '  mode http',
          '  timeout connect 2s',
          '  timeout client 60s',
          '  timeout server 60s',
          '  retries 2',
          '  option redispatch',
          'frontend fe',
          `  bind 127.0.0.1:${port}`,
          '  default_backend be',
          'backend be',
          '  balance roundrobin',
          `  option httpchk GET ${checkPath}`,
          '  http-check expect status 200',
          '  default-server inter 500ms fall 2 rise 2',
          ...backends.map((b, i) => `  server s${i + 1} 127.0.0.1:${b} check`),
          '',
        ].join('\n'),
      );
      const proc = new ManagedProcess(haproxyBin, ['-db', '-f', cfg], join(dir, 'stdout.log'));
      proc.start();
      balancers.push(proc);
      await waitFor(`HAProxy ${name}`, () => portOpen(port), 20_000, join(dir, 'stdout.log'));
      return { port, url: `http://127.0.0.1:${port}`, stop: () => proc.stop() };
    },
    stop: async () => {
      await Promise.all([...balancers.map((b) => b.stop()), ...brokers.map((b) => b.kill('SIGTERM'))]);
      await Promise.all(clickhouse.map((c) => c.kill('SIGTERM')));
      await zookeeper.kill('SIGTERM');
      if (!opts.keepData) rmSync(root, { recursive: true, force: true });
    },
  };
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

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** Debian's haproxy, installed with apt-get when missing (as root). */
async function ensureHaproxy(log: (l: string) => void): Promise<string> {
  const found = await run('sh', ['-c', 'command -v haproxy']).then(
    (r) => r.stdout.trim(),
    () => '',
  );
  if (found) return found;
  if (process.getuid?.() !== 0) throw new Error('haproxy is not installed: run `sudo apt-get install -y haproxy`');
  log('installing haproxy with apt-get (once)...');
  const aptEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env: aptEnv, maxBuffer: 64 * 1024 * 1024 });
  await run('apt-get', ['install', '-y', '-qq', 'haproxy'], { env: aptEnv, maxBuffer: 64 * 1024 * 1024 });
  return '/usr/sbin/haproxy';
}
