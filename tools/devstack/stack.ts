/**
 * The stack harness: one piece of code that gives `npm start`, the tests and CI a real
 * Kafka, a real ClickHouse and a real PostgreSQL (the registry).
 *
 *   1. KAFKA_BROKERS and CLICKHOUSE_URL set  -> use those servers as they are;
 *   2. else a Docker engine answers          -> testcontainers (apache/kafka, clickhouse);
 *   3. else local processes                  -> install Debian's clickhouse-server if
 *      missing, fetch Apache Kafka's jars from Maven Central once (cached), and run both
 *      on free loopback ports under a data directory; stop() ends them.
 *   PostgreSQL runs as a local process (postgres.ts) unless DATABASE_ADMIN_URL names one.
 *
 * Quiet unless something fails: server output goes to log files under the data dir,
 * whose path is printed with the error.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import type { Admin } from 'kafkajs';
import { createClickHouse } from '@telemetry/platform';
import { startLocalPostgres, type LocalPostgres } from './postgres.js';
import { createUsersWithSql, sameUserForAll, waitForUsers, writeUsersFile, type ServiceUsers } from './users.js';

export const run = promisify(execFile);
export const here = dirname(fileURLToPath(import.meta.url));

export const KAFKA_VERSION = '4.1.1';
export const KAFKA_IMAGE = `apache/kafka:${KAFKA_VERSION}`;
export const CLICKHOUSE_IMAGE = 'clickhouse/clickhouse-server:25.8';

export interface Stack {
  mode: 'external' | 'testcontainers' | 'local';
  kafkaBrokers: string;
  clickhouseUrl: string;
  /** A PostgreSQL superuser's URL (the registry: provisionPostgres makes its database and roles). */
  postgresAdminUrl: string;
  /**
   * Creates one ClickHouse user per service for `database` (after its migrations) and
   * returns their credentials: see users.ts. With an external server that does not
   * manage users with SQL, every service gets the `default` user.
   */
  serviceUsers(database: string): Promise<ServiceUsers>;
  /** Local mode: the ClickHouse server's users.d (pass it on as CLICKHOUSE_USERS_DIR). */
  clickhouseUsersDir?: string;
  /** Stops what this harness started (nothing in `external` mode). */
  stop(): Promise<void>;
  /** Local mode: stop / start the ClickHouse or Kafka process (fault tests). */
  control?: {
    stopClickHouse(): Promise<void>;
    startClickHouse(): Promise<void>;
    stopKafka(): Promise<void>;
    startKafka(): Promise<void>;
    stopPostgres(): Promise<void>;
    startPostgres(): Promise<void>;
  };
}

export interface StackOptions {
  /** Where local servers keep data and logs. Default: a fresh temp dir, removed on stop. */
  dataDir?: string;
  /** Keep `dataDir` on stop (npm start keeps data between runs). */
  keepData?: boolean;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
  /** Always run local processes (fault tests need servers they can stop and start). */
  forceLocal?: boolean;
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const env = opts.env ?? process.env;
  if (opts.forceLocal) return startLocal(opts);
  if (env.KAFKA_BROKERS && env.CLICKHOUSE_URL) {
    const postgres = await postgresFor(opts);
    return {
      mode: 'external',
      kafkaBrokers: env.KAFKA_BROKERS,
      clickhouseUrl: env.CLICKHOUSE_URL,
      postgresAdminUrl: postgres.adminUrl,
      // A local 18.16 server's users.d (the tests pass theirs), else SQL.
      serviceUsers: (database) =>
        env.CLICKHOUSE_USERS_DIR
          ? usersInDir(env.CLICKHOUSE_USERS_DIR, env.CLICKHOUSE_URL!, database)
          : usersWithSql(env.CLICKHOUSE_URL!, database, true),
      stop: () => postgres.stop(),
    };
  }
  if (await dockerAnswers()) return startWithTestcontainers(opts);
  return startLocal(opts);
}

/**
 * The registry's PostgreSQL when Kafka and ClickHouse are someone else's: DATABASE_ADMIN_URL
 * (a role that may create databases and roles) when set, else a local server.
 */
async function postgresFor(opts: StackOptions): Promise<{ adminUrl: string; stop(): Promise<void> }> {
  const env = opts.env ?? process.env;
  if (env.DATABASE_ADMIN_URL) return { adminUrl: env.DATABASE_ADMIN_URL, stop: async () => {} };
  const log = opts.log ?? ((l: string) => process.stderr.write(`[stack] ${l}\n`));
  const root = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'telemetry-pg-'));
  const pgServer = await startLocalPostgres(join(root, 'postgres'), log);
  return {
    adminUrl: pgServer.adminUrl,
    stop: async () => {
      await pgServer.stop();
      if (!opts.keepData && !opts.dataDir) rmSync(root, { recursive: true, force: true });
    },
  };
}

async function dockerAnswers(): Promise<boolean> {
  try {
    await run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * A free loopback port below the kernel's ephemeral range (ip_local_port_range), so
 * that no outgoing connection (a Kafka client's, a health check's) can take it between
 * now and the moment a server listens on it, as one from port 0 could.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  for (let i = 0; i < 50; i++) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
    // Never the same port twice in one process: two servers not yet listening would share it.
    if (!handedOut.has(port) && (await canListen(port))) {
      handedOut.add(port);
      return port;
    }
  }
  return listenOn(0);
}

const handedOut = new Set<number>();

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function canListen(port: number): Promise<boolean> {
  return listenOn(port).then(
    () => true,
    () => false,
  );
}

function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const bound = (srv.address() as { port: number }).port;
      srv.close(() => resolve(bound));
    });
  });
}

export async function waitFor(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  logHint: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} did not answer within ${timeoutMs} ms; see ${logHint}`);
}

// ---------------------------------------------------------------- testcontainers

async function startWithTestcontainers(opts: StackOptions): Promise<Stack> {
  // NOTE: not exercised on our own machines (no Docker engine there); kept small and
  // close to the images' documented settings.
  const { GenericContainer, Wait } = await import('testcontainers');
  const kafkaPort = await freePort();
  const kafka = await new GenericContainer(KAFKA_IMAGE)
    .withExposedPorts({ container: 9092, host: kafkaPort })
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${kafkaPort}`,
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .start();
  const ch = await new GenericContainer(CLICKHOUSE_IMAGE)
    .withExposedPorts(8123)
    .withEnvironment({ CLICKHOUSE_SKIP_USER_SETUP: '1', CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT: '1' })
    .withWaitStrategy(Wait.forHttp('/ping', 8123))
    .start();
  const postgres = await postgresFor(opts);
  return {
    mode: 'testcontainers',
    kafkaBrokers: `127.0.0.1:${kafkaPort}`,
    clickhouseUrl: `http://${ch.getHost()}:${ch.getMappedPort(8123)}`,
    postgresAdminUrl: postgres.adminUrl,
    serviceUsers: (database) => usersWithSql(`http://${ch.getHost()}:${ch.getMappedPort(8123)}`, database, false),
    stop: async () => {
      await Promise.all([kafka.stop(), ch.stop(), postgres.stop()]);
    },
  };
}

// ---------------------------------------------------------------- local processes

export function cacheDir(env: NodeJS.ProcessEnv): string {
  return env.DEVSTACK_CACHE_DIR ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'telemetry-pipeline');
}

async function which(cmd: string): Promise<string | undefined> {
  try {
    const { stdout } = await run('sh', ['-c', `command -v ${cmd}`]);
    return stdout.trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Debian's clickhouse-server, installed with apt-get when missing. */
export async function ensureClickHouse(log: (l: string) => void): Promise<string> {
  const found = await which('clickhouse-server');
  if (found) return found;
  if (process.getuid?.() !== 0) {
    throw new Error(
      'clickhouse-server is not installed: run `sudo apt-get install -y clickhouse-server`, or set CLICKHOUSE_URL',
    );
  }
  log('installing clickhouse-server with apt-get (once)...');
  const aptEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env: aptEnv, maxBuffer: 64 * 1024 * 1024 });
  await run('apt-get', ['install', '-y', '-qq', 'clickhouse-server', 'clickhouse-client'], {
    env: aptEnv,
    maxBuffer: 64 * 1024 * 1024,
  });
  const installed = await which('clickhouse-server');
  if (!installed) throw new Error('apt-get installed clickhouse-server but it is not on PATH');
  return installed;
}

/** Apache Kafka's jars from Maven Central, fetched once into the cache. */
export function ensureKafkaJars(env: NodeJS.ProcessEnv, log: (l: string) => void): Promise<string> {
  return ensureMavenJars(env, log, 'kafka', `kafka-${KAFKA_VERSION}`, `Apache Kafka ${KAFKA_VERSION}`);
}

/**
 * Apache Kafka's own tools (ProducerPerformance, ConsumerPerformance: the benchmarks'
 * anchors), same version as the broker, fetched on first use into the cache.
 */
export function ensureKafkaTools(env: NodeJS.ProcessEnv = process.env, log = (_: string) => {}): Promise<string> {
  return ensureMavenJars(env, log, 'kafka-tools', `kafka-tools-${KAFKA_VERSION}`, `Kafka ${KAFKA_VERSION} tools`);
}

/** The runtime jars of tools/devstack/<pom>/pom.xml, copied from Maven Central into the cache once. */
export async function ensureMavenJars(
  env: NodeJS.ProcessEnv,
  log: (l: string) => void,
  pom: string,
  name: string,
  what: string,
): Promise<string> {
  const dir = join(cacheDir(env), name);
  const marker = join(dir, '.complete');
  if (existsSync(marker)) return dir;
  if (!(await which('mvn')) || !(await which('java'))) {
    throw new Error(
      'Java and Maven are needed to fetch and run Kafka: install openjdk-17-jre-headless and maven, or set KAFKA_BROKERS',
    );
  }
  log(`fetching ${what} jars from Maven Central (once)...`);
  mkdirSync(dir, { recursive: true });
  await run(
    'mvn',
    ['-q', '-B', '-f', join(here, pom, 'pom.xml'), 'dependency:copy-dependencies', `-DoutputDirectory=${dir}`],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  writeFileSync(marker, new Date().toISOString());
  return dir;
}

export class ManagedProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    private readonly cmd: string,
    private readonly args: string[],
    private readonly logFile: string,
    private readonly extraEnv: NodeJS.ProcessEnv = {},
  ) {}

  start(): void {
    // Idempotent: a second broker or server on the same ports and data would fight the
    // first (a fault test's clean-up may "restart" a server that is already back).
    if (this.running) return;
    const out = openLog(this.logFile);
    const child = spawn(this.cmd, this.args, {
      stdio: ['ignore', out, out],
      env: { ...process.env, ...this.extraEnv },
      detached: false,
    });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    liveChildren.add(child);
    child.once('exit', () => liveChildren.delete(child));
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    child.kill(signal);
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(t);
  }
}

function openLog(file: string): number {
  return openSync(file, 'a');
}

// Servers must not outlive the process that started them, even when it crashes.
const liveChildren = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of liveChildren) c.kill('SIGKILL');
});

async function usersInDir(dir: string, url: string, database: string): Promise<ServiceUsers> {
  const users = writeUsersFile(dir, database);
  await waitForUsers(url, database, users);
  return users;
}

/** The services' users on a server that manages users with SQL; else (18.16) `default` for all, if allowed. */
async function usersWithSql(url: string, database: string, fallBack: boolean): Promise<ServiceUsers> {
  const admin = createClickHouse({ url, username: 'default', password: '', database: 'default' });
  try {
    const users = await createUsersWithSql(admin, database);
    await waitForUsers(url, database, users);
    return users;
  } catch (err) {
    if (!fallBack) throw err;
    process.stderr.write(`[stack] no per-service ClickHouse users (${String(err).split('\n')[0]}): all use default\n`);
    return sameUserForAll({ user: 'default', password: '' });
  } finally {
    await admin.close();
  }
}

/** A ClickHouse server's config.xml and users.xml in `dir`; `extraXml` adds elements (a cluster's). */
export function clickhouseConfig(dir: string, httpPort: number, tcpPort: number, extraXml = ''): void {
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
${extraXml}</yandex>
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
    <default><max_memory_usage>4000000000</max_memory_usage></default>
    <svc_reader><readonly>2</readonly></svc_reader>
    <svc_writer><allow_ddl>0</allow_ddl></svc_writer>
  </profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default>
  </users>
  <quotas><default></default></quotas>
</yandex>
`,
  );
}

function kafkaConfig(dir: string, port: number, controllerPort: number): string {
  const file = join(dir, 'server.properties');
  writeFileSync(
    file,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      `log.dirs=${dir}/data`,
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=10',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'group.initial.rebalance.delay.ms=0',
      'auto.create.topics.enable=false',
      'num.partitions=1',
      'log.flush.interval.messages=9223372036854775807',
      '',
    ].join('\n'),
  );
  return file;
}

export async function httpOk(url: string): Promise<boolean> {
  const r = await fetch(url, { signal: AbortSignal.timeout(1000) });
  return r.ok;
}

/** Runs `fn` with a kafkajs admin client of `broker` alone that gives up at once (for probes). */
export async function withBrokerAdmin<T>(broker: string, fn: (admin: Admin) => Promise<T>): Promise<T> {
  const { Kafka, logLevel } = await import('kafkajs');
  const admin = new Kafka({
    brokers: [broker],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
    connectionTimeout: 1000,
  }).admin();
  try {
    await admin.connect();
    return await fn(admin);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** The broker on `port` answers, sees at least `brokers` brokers and a controller, and every partition has a leader. */
export function kafkaAnswers(port: number, brokers = 1): Promise<boolean> {
  return withBrokerAdmin(`127.0.0.1:${port}`, async (admin) => {
    const c = await admin.describeCluster();
    if (c.brokers.length < brokers || c.controller === null) return false;
    // After a restart the broker is fenced until it has caught up; it is ready for
    // clients once every partition it knows has a leader again.
    const { topics } = await admin.fetchTopicMetadata();
    return topics.every((t) => t.partitions.every((p) => p.leader >= 0));
  });
}

async function startLocal(opts: StackOptions): Promise<Stack> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? ((l: string) => process.stderr.write(`[stack] ${l}\n`));
  const root = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'telemetry-stack-'));
  const chDir = join(root, 'clickhouse');
  const kDir = join(root, 'kafka');
  mkdirSync(chDir, { recursive: true });
  mkdirSync(kDir, { recursive: true });

  const [chBin, jars] = await Promise.all([ensureClickHouse(log), ensureKafkaJars(env, log)]);

  // Fresh free ports every time: neither server's data depends on its ports.
  const ports = {
    chHttp: await freePort(),
    chTcp: await freePort(),
    kafka: await freePort(),
    controller: await freePort(),
  };
  clickhouseConfig(chDir, ports.chHttp, ports.chTcp);
  const clickhouse = new ManagedProcess(
    chBin,
    [`--config-file=${join(chDir, 'config.xml')}`],
    join(chDir, 'stdout.log'),
  );

  const props = kafkaConfig(kDir, ports.kafka, ports.controller);
  const javaArgs = [
    '-Xms256m',
    '-Xmx768m',
    '-XX:+UseG1GC',
    `-Dkafka.logs.dir=${kDir}`,
    `-Dlog4j.configuration=file:${join(here, 'kafka', 'log4j.properties')}`,
    '-cp',
    `${jars}/*`,
  ];
  if (!existsSync(join(kDir, 'data', 'meta.properties'))) {
    const { stdout: uuid } = await run('java', [...javaArgs, 'kafka.tools.StorageTool', 'random-uuid']);
    await run('java', [...javaArgs, 'kafka.tools.StorageTool', 'format', '-t', uuid.trim(), '-c', props]);
  }
  const kafka = new ManagedProcess('java', [...javaArgs, 'kafka.Kafka', props], join(kDir, 'stdout.log'));

  const startClickHouse = async (): Promise<void> => {
    clickhouse.start();
    await waitFor(
      'ClickHouse',
      () => httpOk(`http://127.0.0.1:${ports.chHttp}/ping`),
      60_000,
      join(chDir, 'error.log'),
    );
  };
  const startKafka = async (): Promise<void> => {
    kafka.start();
    await waitFor('Kafka', () => kafkaAnswers(ports.kafka), 90_000, join(kDir, 'server.log'));
  };
  let postgres: LocalPostgres | undefined;
  try {
    await Promise.all([
      startClickHouse(),
      startKafka(),
      startLocalPostgres(join(root, 'postgres'), log).then((p) => {
        postgres = p;
      }),
    ]);
  } catch (err) {
    await Promise.all([clickhouse.stop('SIGKILL'), kafka.stop('SIGKILL'), postgres?.stop()]);
    throw err;
  }
  const pgServer = postgres!;

  return {
    mode: 'local',
    kafkaBrokers: `127.0.0.1:${ports.kafka}`,
    clickhouseUrl: `http://127.0.0.1:${ports.chHttp}`,
    postgresAdminUrl: pgServer.adminUrl,
    serviceUsers: (database) => usersInDir(join(chDir, 'users.d'), `http://127.0.0.1:${ports.chHttp}`, database),
    clickhouseUsersDir: join(chDir, 'users.d'),
    control: {
      stopClickHouse: () => clickhouse.stop(),
      startClickHouse,
      stopKafka: () => kafka.stop(),
      startKafka,
      stopPostgres: () => pgServer.stop(),
      startPostgres: () => pgServer.start(),
    },
    stop: async () => {
      await Promise.all([kafka.stop(), clickhouse.stop(), pgServer.stop()]);
      if (!opts.keepData) rmSync(root, { recursive: true, force: true });
    },
  };
}
