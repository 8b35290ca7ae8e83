import { migrateWith, provisioningClient } from './migrations.js';
import {
  type Env,
  type Logger,
  checkPostgresUrl,
  clickhouseSpec,
  createKafka,
  createPostgres,
  ensureTopics,
  kafkaSpec,
  loadConfig,
  logSpec,
  postgresSpec,
  SecretBox,
  sealingKeysVar,
  topicSpec,
  v,
} from '@telemetry/platform';
import { copyRegistryFromClickHouse, type CopyReport } from './registry/copy-from-clickhouse.js';
import { migrateRegistry } from './registry/schema.js';

const keyRing = sealingKeysVar(
  'SECRETS_KEYS',
  "the query service's key ring (id:base64(32 bytes), comma-separated): opens the secrets of the monitors copied from ClickHouse and seals them again with its first key; needed when ClickHouse holds monitors",
);

/** The registry's part of provisioning: optional, so that ClickHouse and Kafka can be provisioned alone. */
export const provisionRegistrySpec = {
  databaseUrl: v.secret(
    'DATABASE_URL',
    '',
    "the registry's PostgreSQL as the database's owner: its migrations are applied and the previous version's ClickHouse registry is copied into it (docs/operations.md, \"Moving the registry to PostgreSQL\"); empty: ClickHouse and Kafka only",
    checkPostgresUrl,
  ),
  databaseTimeoutMs: postgresSpec.databaseTimeoutMs,
  secretsKeys: v.secret('SECRETS_KEYS', '', keyRing.doc, (raw) => void keyRing.parse(raw)),
} as const;

export const provisionSpec = {
  ...logSpec,
  ...kafkaSpec,
  ...topicSpec,
  ...clickhouseSpec,
  ...provisionRegistrySpec,
} as const;

export interface Provisioned {
  /** ClickHouse migrations applied by this run. */
  clickhouse: number[];
  /** PostgreSQL migrations applied by this run; undefined without DATABASE_URL. */
  registry?: number[];
  /** What the copy from ClickHouse copied; undefined without DATABASE_URL. */
  copied?: CopyReport;
}

/**
 * The one-shot set-up step (a Kubernetes Job, a compose service, `npm run migrate`):
 * applies ClickHouse migrations and creates the Kafka topics with TOPIC_PARTITIONS
 * partitions; with DATABASE_URL, applies the registry's PostgreSQL migrations and copies
 * the previous version's ClickHouse registry into it (registry/copy-from-clickhouse.ts).
 * Idempotent; existing topics are left as they are, rows copied before are skipped.
 */
export async function provisionFromEnv(env: Env, logger: Logger): Promise<Provisioned> {
  const c = loadConfig(provisionSpec, env);
  const clickhouse = await migrateWith(c, logger);
  const kafka = createKafka({ brokers: c.kafkaBrokers, clientId: `${c.kafkaClientId}-provision`, logger });
  await ensureTopics(
    kafka,
    [
      c.eventsTopic,
      c.checksTopic,
      c.alertsTopic,
      c.webhookDeliveriesTopic,
      c.auditTopic,
      c.monitorChangesTopic,
      c.deadLetterTopic,
      c.screenshotsTopic,
      c.runRequestsTopic,
      c.runRepliesTopic,
    ].map((topic) => ({
      topic,
      numPartitions: c.topicPartitions,
    })),
  );
  if (c.databaseUrl === '') return { clickhouse };

  const db = createPostgres(
    { databaseUrl: c.databaseUrl, databasePoolMax: 2, databaseTimeoutMs: c.databaseTimeoutMs },
    logger,
    'migrate',
  );
  const ch = provisioningClient(c);
  try {
    const registry = await migrateRegistry(db, logger);
    const box = c.secretsKeys === '' ? undefined : new SecretBox(keyRing.parse(c.secretsKeys));
    const copied = await copyRegistryFromClickHouse(ch, c.clickhouseDatabase, db, { box });
    return { clickhouse, registry, copied };
  } finally {
    await Promise.all([db.end(), ch.close()]);
  }
}
