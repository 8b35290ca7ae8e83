import { migrateWith } from './migrations.js';
import { migrateRegistry } from './registry/schema.js';
import {
  type Env,
  type Logger,
  checkPostgresUrl,
  clickhouseSpec,
  createPostgres,
  createKafka,
  ensureTopics,
  kafkaSpec,
  loadConfig,
  logSpec,
  topicSpec,
  v,
} from '@telemetry/platform';

export const provisionSpec = {
  ...logSpec,
  ...kafkaSpec,
  ...topicSpec,
  ...clickhouseSpec,
  // The owner's: migrations create tables. Optional here, so that a ClickHouse-only step still runs.
  databaseUrl: v.secret(
    'DATABASE_URL',
    '',
    "PostgreSQL of the registry as the database's owner (migrations create its tables), postgres://owner:password@host:port/database; empty: the registry's migrations are not applied",
    (raw) => (raw === '' ? undefined : checkPostgresUrl(raw)),
  ),
} as const;

/**
 * The one-shot set-up step (a Kubernetes Job, a compose service, `npm run migrate`):
 * applies ClickHouse migrations, the registry's PostgreSQL migrations (when DATABASE_URL
 * is set) and creates the Kafka topics with TOPIC_PARTITIONS partitions. Idempotent;
 * existing topics are left as they are. The services' PostgreSQL roles are granted on the
 * tables afterwards (deploy/postgres/roles.sql).
 */
export async function provisionFromEnv(env: Env, logger: Logger): Promise<number[]> {
  const c = loadConfig(provisionSpec, env);
  const applied = await migrateWith(c, logger);
  if (c.databaseUrl !== '') {
    const pool = createPostgres(
      { databaseUrl: c.databaseUrl, databasePoolMax: 1, databaseTimeoutMs: 60_000 },
      logger,
      'telemetry-provision',
    );
    try {
      await migrateRegistry(pool, logger);
    } finally {
      await pool.end();
    }
  }
  const kafka = createKafka({ brokers: c.kafkaBrokers, clientId: `${c.kafkaClientId}-provision`, logger });
  await ensureTopics(
    kafka,
    [
      c.eventsTopic,
      c.checksTopic,
      c.alertsTopic,
      c.webhookDeliveriesTopic,
      c.monitorChangesTopic,
      c.deadLetterTopic,
    ].map((topic) => ({
      topic,
      numPartitions: c.topicPartitions,
    })),
  );
  return applied;
}
