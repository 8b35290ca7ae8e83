/**
 * The stack harness: one piece of code that gives `npm start`, the tests and CI a real
 * Kafka, a real ClickHouse and a real PostgreSQL (the registry), and stops them again.
 *
 *   1. KAFKA_BROKERS and CLICKHOUSE_URL set  -> use those servers as they are;
 *   2. else a Docker engine answers          -> testcontainers (apache/kafka, clickhouse);
 *   3. else local processes                  -> the servers' programs (installers.ts) with
 *      their configs (server-config.ts) on free loopback ports (ports.ts) under a data
 *      directory, each a ManagedProcess (process.ts) polled until it answers (probes.ts);
 *      stop() ends them, and in local mode each can be stopped and started (fault tests).
 *   PostgreSQL runs as a local process (postgres.ts) unless DATABASE_ADMIN_URL names one.
 *
 * Quiet unless something fails: server output goes to log files under the data dir,
 * whose path is printed with the error.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureClickHouse, ensureKafkaJars, KAFKA_VERSION, run } from './installers.js';
import { freePort } from './ports.js';
import { startLocalPostgres, type LocalPostgres } from './postgres.js';
import { kafkaAnswers, httpOk } from './probes.js';
import { ManagedProcess } from './process.js';
import { clickhouseConfig, formatKafkaStorage, javaArgs, kafkaProperties } from './server-config.js';
import { usersInDir, usersWithSql, type ServiceUsers } from './users.js';

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
  const clickhouse = new ManagedProcess({
    name: 'ClickHouse',
    command: [chBin, [`--config-file=${join(chDir, 'config.xml')}`]],
    output: 'file',
    logFile: join(chDir, 'stdout.log'),
    logHint: join(chDir, 'error.log'),
  });

  const props = kafkaProperties(kDir, { id: 1, port: ports.kafka, controllerPort: ports.controller });
  const java = javaArgs({ min: '256m', max: '768m' }, jars, kDir);
  await formatKafkaStorage(java, props, join(kDir, 'data'));
  const kafka = new ManagedProcess({
    name: 'Kafka',
    command: ['java', [...java, 'kafka.Kafka', props]],
    output: 'file',
    logFile: join(kDir, 'stdout.log'),
    logHint: join(kDir, 'server.log'),
  });

  const chUrl = `http://127.0.0.1:${ports.chHttp}`;
  const startClickHouse = (): Promise<void> =>
    clickhouse.ensureStarted().waitAnswers('ClickHouse', () => httpOk(`${chUrl}/ping`), 60_000);
  const startKafka = (): Promise<void> =>
    kafka.ensureStarted().waitAnswers('Kafka', () => kafkaAnswers(ports.kafka), 90_000);
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
    clickhouseUrl: chUrl,
    postgresAdminUrl: pgServer.adminUrl,
    serviceUsers: (database) => usersInDir(join(chDir, 'users.d'), chUrl, database),
    clickhouseUsersDir: join(chDir, 'users.d'),
    control: {
      stopClickHouse: async () => void (await clickhouse.stop()),
      startClickHouse,
      stopKafka: async () => void (await kafka.stop()),
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
