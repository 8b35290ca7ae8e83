import { randomBytes } from 'node:crypto';
import { DEFAULT_TENANT } from '@telemetry/contract';
import { Partitioners } from 'kafkajs';
import { loadGatewayConfig, startGateway } from '@telemetry/ingest-gateway';
import { loadQueryConfig, startQueryService } from '@telemetry/query-service';
import { loadConsumerConfig, startConsumer } from '@telemetry/stream-consumer';
import { loadRunnerConfig, startCheckRunner } from '@telemetry/check-runner';
import {
  createClickHouse,
  createKafka,
  createLogger,
  createPostgres,
  LineCollector,
  type PgPool,
  type ClickHouseClient,
  type Logger,
} from '@telemetry/platform';
import pg from 'pg';
import {
  issueKey,
  MonitorStore,
  PG_SERVICE_ROLE_NAMES,
  pgRoleName,
  placeholderMonitor,
  quoteIdent,
  type NewKey,
} from '@telemetry/store';
import { runStack } from '../global-setup.js';
import { withDatabase } from '../../tools/devstack/postgres.js';
import { runSecretBox, RUN_HEARTBEAT_KEY, RUN_SECRETS_KEYS, until, type ServiceName } from '../../harness/processes.js';
import { storeEnv, type ServiceUsers } from '../../tools/devstack/users.js';
import { freePort } from '../../tools/devstack/ports.js';

export { apiCall, apiClient, apiRequest, type ApiAnswer, type ApiClient, type Envelope } from './api.js';

export const RELIABILITY_TITLE = '# Reliability\n\nFigures written by the test suites themselves.\n';

/** What global-setup started for this run. */
export function testStack() {
  const need = (name: string): string => {
    const v = process.env[name];
    if (!v) throw new Error(`${name} is not set: run the tests with npm test (global setup starts the stack)`);
    return v;
  };
  return {
    kafkaBrokers: need('TEST_KAFKA_BROKERS'),
    clickhouseUrl: need('TEST_CLICKHOUSE_URL'),
    database: need('TEST_DATABASE'),
    eventsTopic: need('TEST_EVENTS_TOPIC'),
    checksTopic: need('TEST_CHECKS_TOPIC'),
    deadLetterTopic: need('TEST_DEAD_LETTER_TOPIC'),
    alertsTopic: need('TEST_ALERTS_TOPIC'),
    webhookDeliveriesTopic: need('TEST_WEBHOOK_DELIVERIES_TOPIC'),
    auditTopic: need('TEST_AUDIT_TOPIC'),
    monitorChangesTopic: need('TEST_MONITOR_CHANGES_TOPIC'),
    screenshotsTopic: need('TEST_SCREENSHOTS_TOPIC'),
    runRequestsTopic: need('TEST_RUN_REQUESTS_TOPIC'),
    runRepliesTopic: need('TEST_RUN_REPLIES_TOPIC'),
    /** Each service's own ClickHouse user (tools/devstack/users.ts). */
    users: JSON.parse(need('TEST_CLICKHOUSE_USERS')) as ServiceUsers,
    /** Where the stack's ClickHouse reads users from (local mode), for `npm start` in external mode. */
    usersDir: process.env.TEST_CLICKHOUSE_USERS_DIR ?? '',
  };
}

/** The run's Mailpit's SMTP URL (global setup; test/support/mailpit.ts reads what arrived). */
export function mailpitSmtpUrl(): string {
  const url = process.env.MAILPIT_SMTP_URL;
  if (!url) throw new Error('MAILPIT_SMTP_URL is not set: run the tests with npm test (global setup starts Mailpit)');
  return url;
}

export function uid(prefix = 'x'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

/** Polls `probe` until it returns a value other than undefined, or fails at the deadline (the harness's poller). */
export function eventually<T>(
  what: string | (() => string),
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 20_000,
): Promise<T> {
  return until(what, probe, timeoutMs, 100);
}

let registryPool: PgPool | undefined;

/** This run's registry (PostgreSQL) as its owner: one pool for the whole test process. */
export function adminRegistry(): PgPool {
  registryPool ??= createPostgres(
    { databaseUrl: registryOwnerUrl(), databasePoolMax: 4, databaseTimeoutMs: 10_000 },
    createLogger({ service: 'test', level: 'warn' }),
    'tests',
  );
  return registryPool;
}

/** The owner's DATABASE_URL of this run's registry. */
export function registryOwnerUrl(): string {
  const url = testStack().users.postgres?.owner;
  if (!url) throw new Error('the registry is not provisioned: run the tests with npm test');
  return url;
}

/** A PostgreSQL database of this test's own on the run's server, and how to remove it. */
export interface ScratchDatabase {
  database: string;
  /** The database's owner (the server's admin, as in the dev stack). */
  ownerUrl: string;
  /** The run's server as its admin (CREATE DATABASE, roles). */
  adminUrl: string;
  /** Drops the database and the service roles made for it (provisionPostgres). */
  drop(): Promise<void>;
}

/**
 * An empty database (no tables, no roles) on this run's PostgreSQL, for tests that need a
 * registry apart from the run's: the copy from ClickHouse, a restored backup.
 */
export async function scratchDatabase(prefix = 'scratch'): Promise<ScratchDatabase> {
  const adminUrl = runStack().postgresAdminUrl;
  const database = `${prefix}_${randomBytes(5).toString('hex')}`;
  const admin = async (sql: string): Promise<void> => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE ${quoteIdent(database)}`);
  return {
    database,
    adminUrl,
    ownerUrl: withDatabase(adminUrl, database),
    drop: async () => {
      await admin(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`);
      for (const s of PG_SERVICE_ROLE_NAMES) await admin(`DROP ROLE IF EXISTS ${quoteIdent(pgRoleName(database, s))}`);
    },
  };
}

/** The rows `sql` selects, as JSONEachRow. */
export async function selectRows<T>(ch: ClickHouseClient, sql: string): Promise<T[]> {
  return (await ch.query({ query: sql, format: 'JSONEachRow' })).json<T>();
}

/** The number `sql` selects as `n` (its first row). */
export async function selectCount(ch: ClickHouseClient, sql: string): Promise<number> {
  return Number((await selectRows<{ n: string | number }>(ch, sql))[0]!.n);
}

export function adminClickHouse(): ClickHouseClient {
  const s = testStack();
  return createClickHouse({ url: s.clickhouseUrl, username: 'default', password: '', database: s.database });
}

/** A key's spec; its tenant is the default tenant unless given. */
export type KeySpec = Omit<NewKey, 'tenantId'> & { tenantId?: string };

/** Issues a key in this run's registry. */
export async function newKey(spec: KeySpec): Promise<string> {
  return (await issueKey(adminRegistry(), { tenantId: DEFAULT_TENANT, ...spec })).key;
}

export function serviceEnv(extra: Record<string, string> = {}): Record<string, string> {
  const s = testStack();
  return {
    LOG_LEVEL: 'info',
    KAFKA_BROKERS: s.kafkaBrokers,
    CLICKHOUSE_URL: s.clickhouseUrl,
    CLICKHOUSE_DATABASE: s.database,
    // The owner's; ownUser() gives a service its own role.
    DATABASE_URL: registryOwnerUrl(),
    REGISTRY_CATCH_UP_MS: '1000',
    EVENTS_TOPIC: s.eventsTopic,
    CHECKS_TOPIC: s.checksTopic,
    DEAD_LETTER_TOPIC: s.deadLetterTopic,
    ALERTS_TOPIC: s.alertsTopic,
    WEBHOOK_DELIVERIES_TOPIC: s.webhookDeliveriesTopic,
    AUDIT_TOPIC: s.auditTopic,
    MONITOR_CHANGES_TOPIC: s.monitorChangesTopic,
    SCREENSHOTS_TOPIC: s.screenshotsTopic,
    RUN_REQUESTS_TOPIC: s.runRequestsTopic,
    RUN_REPLIES_TOPIC: s.runRepliesTopic,
    HOST: '127.0.0.1',
    PORT: '0',
    MIGRATE_ON_START: 'false',
    SECRETS_KEYS: RUN_SECRETS_KEYS,
    HEARTBEAT_KEY: RUN_HEARTBEAT_KEY,
    // The tests' targets and webhook receivers listen on loopback; Kafka and ClickHouse
    // stay denied (they always are). test/e2e/egress.int.test.ts runs the default policy.
    EGRESS_ALLOW: '127.0.0.1/32,::1/128',
    // The suite runs on either producer library: KAFKA_CLIENT=kafkajs npm test.
    ...(process.env.KAFKA_CLIENT ? { KAFKA_CLIENT: process.env.KAFKA_CLIENT } : {}),
    // Tests check often, to see results quickly.
    MIN_INTERVAL_SECONDS: '1',
    // The run's Mailpit (global setup): all mail the services send arrives there.
    SMTP_URL: mailpitSmtpUrl(),
    ...extra,
  };
}

/**
 * The service's own least-privileged ClickHouse user, for this run's database; none
 * when `extra` points the service at another database or server (it has no grants there).
 */
export function ownUser(service: ServiceName, extra: Record<string, string> = {}): Record<string, string> {
  if (extra.CLICKHOUSE_DATABASE !== undefined || extra.CLICKHOUSE_URL !== undefined) return {};
  return storeEnv(testStack().users, service);
}

export interface Running {
  url: string;
  logs: LineCollector;
  stop(): Promise<void>;
}

function logger(service: string): { logger: Logger; logs: LineCollector } {
  const logs = new LineCollector();
  return { logger: createLogger({ service, level: 'info', stream: logs }), logs };
}

export async function runGateway(extra: Record<string, string> = {}): Promise<Running> {
  const { logger: l, logs } = logger('ingest-gateway');
  const g = await startGateway(loadGatewayConfig(serviceEnv({ ...ownUser('ingest-gateway', extra), ...extra })), l);
  return { url: `http://127.0.0.1:${g.http.boundPort}`, logs, stop: () => g.runner.stop() };
}

export async function runConsumer(extra: Record<string, string> = {}): Promise<Running> {
  const { logger: l, logs } = logger('stream-consumer');
  const c = await startConsumer(
    loadConsumerConfig(
      serviceEnv({
        BATCH_MAX_AGE_MS: '200',
        CONSUMER_GROUP_ID: uid('group'),
        ...ownUser('stream-consumer', extra),
        ...extra,
      }),
    ),
    l,
  );
  return { url: `http://127.0.0.1:${c.http.boundPort}`, logs, stop: () => c.runner.stop() };
}

export async function runQuery(extra: Record<string, string> = {}): Promise<Running> {
  const { logger: l, logs } = logger('query-service');
  // PUBLIC_URL is the origin a console write must come from: unless a test sets it, the
  // service's own address (a port chosen here, so it is known before the start).
  const port = extra.PUBLIC_URL === undefined && extra.PORT === undefined ? await freePort() : undefined;
  const own: Record<string, string> =
    port === undefined ? {} : { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` };
  const q = await startQueryService(
    loadQueryConfig(
      serviceEnv({
        ...ownUser('query-service', extra),
        ...own,
        ...extra,
      }),
    ),
    l,
  );
  return { url: `http://127.0.0.1:${q.http.boundPort}`, logs, stop: () => q.runner.stop() };
}

/**
 * A check runner in this process (test/support/processes.ts spawns one as a process, for
 * the tests that signal, kill or measure it). It gets a port of its own, as a spawned one
 * does: the runner keeps its own address out of what checks may reach.
 */
export async function runRunner(extra: Record<string, string> = {}): Promise<Running> {
  const { logger: l, logs } = logger('check-runner');
  const port = String(await freePort());
  const r = await startCheckRunner(
    loadRunnerConfig(serviceEnv({ ...ownUser('check-runner', extra), ...extra, PORT: port })),
    l,
  );
  return { url: `http://127.0.0.1:${r.http.boundPort}`, logs, stop: () => r.runner.stop() };
}

/**
 * Registers monitors with these ids straight in the registry table (paused, so no runner
 * checks them): for tests that write check history by hand.
 */
export function registerMonitors(...ids: string[]): Promise<void> {
  return registerMonitorsIn(DEFAULT_TENANT, ...ids);
}

/** registerMonitors in another tenant. */
export async function registerMonitorsIn(tenantId: string, ...ids: string[]): Promise<void> {
  await new MonitorStore(adminRegistry(), runSecretBox()).saveMany(
    ids.map((id) => placeholderMonitor(id, id, tenantId)),
  );
}

/** Produces `values` to `topic` (acks=all), to `partition` when given. */
export async function produce(topic: string, values: (string | object)[], partition?: number): Promise<void> {
  const kafka = createKafka({
    brokers: testStack().kafkaBrokers.split(','),
    clientId: 'test',
    logger: createLogger({ service: 'test', level: 'silent' }),
  });
  const p = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await p.connect();
  try {
    await p.send({
      topic,
      acks: -1,
      messages: values.map((v) => ({ value: typeof v === 'string' ? v : JSON.stringify(v), partition })),
    });
  } finally {
    await p.disconnect();
  }
}

/** Collects every message of `topic` from its beginning, in a group of its own. */
export async function collectTopic(topic: string): Promise<{ values: unknown[]; stop(): Promise<void> }> {
  const kafka = createKafka({
    brokers: testStack().kafkaBrokers.split(','),
    clientId: 'test-collector',
    logger: createLogger({ service: 'test', level: 'silent' }),
  });
  const consumer = kafka.consumer({ groupId: uid('collector'), maxWaitTimeInMs: 200 });
  const values: unknown[] = [];
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    eachMessage: ({ message }) => {
      values.push(JSON.parse(message.value?.toString('utf8') ?? 'null'));
      return Promise.resolve();
    },
  });
  return { values, stop: () => consumer.disconnect() };
}
