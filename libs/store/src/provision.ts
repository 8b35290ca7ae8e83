import { migrateWith } from './migrations.js';
import {
  type Env,
  type Logger,
  clickhouseSpec,
  createKafka,
  ensureTopics,
  kafkaSpec,
  loadConfig,
  logSpec,
  topicSpec,
} from '@telemetry/platform';

export const provisionSpec = { ...logSpec, ...kafkaSpec, ...topicSpec, ...clickhouseSpec } as const;

/**
 * The one-shot set-up step (a Kubernetes Job, a compose service, `npm run migrate`):
 * applies ClickHouse migrations and creates the Kafka topics with TOPIC_PARTITIONS
 * partitions. Idempotent; existing topics are left as they are.
 */
export async function provisionFromEnv(env: Env, logger: Logger): Promise<number[]> {
  const c = loadConfig(provisionSpec, env);
  const applied = await migrateWith(c, logger);
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
