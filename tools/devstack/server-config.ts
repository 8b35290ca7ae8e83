/**
 * The configuration files of the servers the dev stack and the cluster harness run, written
 * into each server's own directory: ClickHouse's config.xml and users.xml (and the cluster
 * elements of a replica), Kafka's server.properties for one KRaft node or a node of a
 * three-broker quorum (with its JVM arguments and storage format), ZooKeeper's zoo.cfg and
 * HAProxy's haproxy.cfg. Every server listens on 127.0.0.1 only.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { here, run } from './installers.js';

/** The cluster's name in ClickHouse (remote_servers, ON CLUSTER). */
export const CLUSTER_NAME = 'telemetry';

/**
 * A ClickHouse server's config.xml and users.xml in `dir`; `extraXml` adds elements (a
 * cluster's). `logQueries` keeps system.query_log (flushed every second) with every
 * profile's queries in it: the cluster suite reads there which user ran what.
 */
export function clickhouseConfig(
  dir: string,
  httpPort: number,
  tcpPort: number,
  extraXml = '',
  opts: { logQueries?: boolean } = {},
): void {
  const queryLog = opts.logQueries
    ? '  <query_log><database>system</database><table>query_log</table><flush_interval_milliseconds>1000</flush_interval_milliseconds></query_log>\n'
    : '';
  const logQueries = opts.logQueries ? '<log_queries>1</log_queries>' : '';
  writeFileSync(
    join(dir, 'config.xml'),
    `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${dir}/server.log</log><errorlog>${dir}/error.log</errorlog><console>0</console></logger>
  <http_port>${httpPort}</http_port>
  <tcp_port>${tcpPort}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>${dir}/data/</path>
  <tmp_path>${dir}/tmp/</tmp_path>
  <user_files_path>${dir}/user_files/</user_files_path>
  <format_schema_path>${dir}/format_schemas/</format_schema_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>268435456</mark_cache_size>
  <max_concurrent_queries>200</max_concurrent_queries>
${queryLog}${extraXml}</yandex>
`,
  );
  // The services' users come in users.d/<database>.xml (users.ts), with these profiles:
  // svc_reader may read and change query settings (readonly=2) but never write;
  // svc_writer may insert but run no DDL (allow_ddl=0).
  mkdirSync(join(dir, 'users.d'), { recursive: true });
  writeFileSync(
    join(dir, 'users.xml'),
    `<?xml version="1.0"?>
<yandex>
  <profiles>
    <default><max_memory_usage>4000000000</max_memory_usage>${logQueries}</default>
    <svc_reader><readonly>2</readonly>${logQueries}</svc_reader>
    <svc_writer><allow_ddl>0</allow_ddl>${logQueries}</svc_writer>
  </profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default>
  </users>
  <quotas><default></default></quotas>
</yandex>
`,
  );
}

/** Where a ClickHouse server sits in the cluster: its shard (1-based), its replica name, its interserver port. */
export interface ClusterPlace {
  shard: number;
  replica: string;
  interserverPort: number;
}

/**
 * The cluster elements of a ClickHouse server's config: the ZooKeeper ensemble, its
 * shard and replica (macros), the cluster of `shards` (each shard's servers' TCP ports;
 * internal_replication: a Distributed insert goes to one replica of a shard and
 * replication brings it to the others), distributed DDL. `user` is who the servers send
 * the shards' part of a distributed query as (the interserver user, users.ts
 * interserverUsersXml): 18.16 has no `<secret>`, so each replica of remote_servers names
 * it and its password (in the clear: ClickHouse logs in with it; the users.d files hold
 * only its hash).
 */
export function clickhouseClusterXml(
  zkPorts: number[],
  place: ClusterPlace,
  shards: number[][],
  user?: { user: string; password: string },
): string {
  if (user && !/^\w+$/.test(user.user + user.password)) throw new Error('interserver user: letters, digits and _ only');
  const login = user ? `<user>${user.user}</user><password>${user.password}</password>` : '';
  const nodes = zkPorts.map((p) => `<node><host>127.0.0.1</host><port>${p}</port></node>`).join('');
  const remote = shards
    .map(
      (ports) =>
        `<shard><internal_replication>true</internal_replication>${ports
          .map((p) => `<replica><host>127.0.0.1</host><port>${p}</port>${login}</replica>`)
          .join('')}</shard>`,
    )
    .join('');
  return `  <interserver_http_port>${place.interserverPort}</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <zookeeper>${nodes}<session_timeout_ms>10000</session_timeout_ms></zookeeper>
  <macros><shard>${String(place.shard).padStart(2, '0')}</shard><replica>${place.replica}</replica></macros>
  <remote_servers><${CLUSTER_NAME}>${remote}</${CLUSTER_NAME}></remote_servers>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
`;
}

export interface KafkaNode {
  id: number;
  port: number;
  controllerPort: number;
  /** controller.quorum.voters; alone: itself. */
  voters?: string;
  /** A node of a three-broker quorum: replication factor 3, min.insync.replicas 2, fenced after 3 s. */
  quorum?: boolean;
}

/** server.properties of a KRaft node that is broker and controller, in `dir`; returns its path. */
export function kafkaProperties(dir: string, n: KafkaNode): string {
  const replicas = n.quorum ? 3 : 1;
  const minIsr = n.quorum ? 2 : 1;
  const file = join(dir, 'server.properties');
  writeFileSync(
    file,
    [
      'process.roles=broker,controller',
      `node.id=${n.id}`,
      `controller.quorum.voters=${n.voters ?? `${n.id}@127.0.0.1:${n.controllerPort}`}`,
      `listeners=PLAINTEXT://127.0.0.1:${n.port},CONTROLLER://127.0.0.1:${n.controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${n.port}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      `log.dirs=${dir}/data`,
      ...(n.quorum ? [`default.replication.factor=${replicas}`, `min.insync.replicas=${minIsr}`] : []),
      `offsets.topic.replication.factor=${replicas}`,
      'offsets.topic.num.partitions=10',
      `transaction.state.log.replication.factor=${replicas}`,
      `transaction.state.log.min.isr=${minIsr}`,
      'group.initial.rebalance.delay.ms=0',
      'auto.create.topics.enable=false',
      ...(n.quorum
        ? [
            'unclean.leader.election.enable=false',
            // A killed broker is fenced (its partitions led elsewhere) after 3 s, not 9.
            'broker.session.timeout.ms=3000',
            'broker.heartbeat.interval.ms=500',
          ]
        : []),
      'num.partitions=1',
      'log.flush.interval.messages=9223372036854775807',
      '',
    ].join('\n'),
  );
  return file;
}

/** The JVM arguments of Kafka (or ZooKeeper) from `jars`, with its logs in `logDir`. */
export function javaArgs(heap: { min: string; max: string }, jars: string, logDir: string): string[] {
  return [
    `-Xms${heap.min}`,
    `-Xmx${heap.max}`,
    '-XX:+UseG1GC',
    `-Dkafka.logs.dir=${logDir}`,
    `-Dlog4j.configuration=file:${join(here, 'kafka', 'log4j.properties')}`,
    '-cp',
    `${jars}/*`,
  ];
}

/** A new KRaft cluster id (Kafka's StorageTool). */
export async function kafkaClusterId(java: string[]): Promise<string> {
  const { stdout } = await run('java', [...java, 'kafka.tools.StorageTool', 'random-uuid']);
  return stdout.trim();
}

/** Formats the node's log dirs for `clusterId` (a new one when not given), unless they are formatted. */
export async function formatKafkaStorage(java: string[], props: string, dataDir: string, clusterId?: string) {
  if (existsSync(join(dataDir, 'meta.properties'))) return;
  const id = clusterId ?? (await kafkaClusterId(java));
  await run('java', [...java, 'kafka.tools.StorageTool', 'format', '-t', id, '-c', props]);
}

/** A member of a ZooKeeper ensemble: its id (myid) and every member's quorum and election ports. */
export interface ZookeeperMember {
  id: number;
  ensemble: { id: number; quorumPort: number; electionPort: number }[];
}

/**
 * ZooKeeper's zoo.cfg in `dir` (standalone, or a member of an ensemble: `member`), with
 * the four-letter words `ruok` and `srvr` allowed; returns its path.
 */
export function zookeeperConfig(dir: string, port: number, member?: ZookeeperMember): string {
  mkdirSync(join(dir, 'data'), { recursive: true });
  const file = join(dir, 'zoo.cfg');
  const ensemble = member
    ? [
        'initLimit=20',
        'syncLimit=10',
        ...member.ensemble.map((m) => `server.${m.id}=127.0.0.1:${m.quorumPort}:${m.electionPort}`),
      ]
    : [];
  if (member) writeFileSync(join(dir, 'data', 'myid'), `${member.id}\n`);
  writeFileSync(
    file,
    [
      'tickTime=500',
      `dataDir=${dir}/data`,
      `clientPort=${port}`,
      'clientPortAddress=127.0.0.1',
      'admin.enableServer=false',
      '4lw.commands.whitelist=ruok,srvr',
      'maxSessionTimeout=20000',
      ...ensemble,
      '',
    ].join('\n'),
  );
  return file;
}

/**
 * haproxy.cfg in `dir`: HTTP on `port`, round robin over `backends` (ports on 127.0.0.1),
 * each checked with GET `checkPath` every 500 ms (down after 2 failures, up after 2 passes).
 */
export function haproxyConfig(dir: string, port: number, backends: number[], checkPath: string): string {
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(
    file,
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
  return file;
}
