/**
 * What every service expects to exist before it starts, made for one run or for npm start:
 * ClickHouse migrations, the Kafka topics (and the variables that name them), one
 * ClickHouse user and one PostgreSQL role per service.
 */
import { createClickHouse, createKafka, createLogger, ensureTopics, type Logger } from '@telemetry/platform';
import { migrate } from '@telemetry/store';
import type { Stack } from './stack.js';
import type { ServiceUsers } from './users.js';
import { provisionPostgres } from './postgres.js';

/** The topics of one pipeline, by what they carry. */
export interface PipelineTopics {
  events: string;
  checks: string;
  deadLetter: string;
  alerts: string;
  webhookDeliveries: string;
  audit: string;
  monitorChanges: string;
  screenshots: string;
  runRequests: string;
  runReplies: string;
}

/** The services' variables that name the topics of `t`. */
export function topicEnv(t: PipelineTopics) {
  return {
    EVENTS_TOPIC: t.events,
    CHECKS_TOPIC: t.checks,
    DEAD_LETTER_TOPIC: t.deadLetter,
    ALERTS_TOPIC: t.alerts,
    WEBHOOK_DELIVERIES_TOPIC: t.webhookDeliveries,
    AUDIT_TOPIC: t.audit,
    MONITOR_CHANGES_TOPIC: t.monitorChanges,
    SCREENSHOTS_TOPIC: t.screenshots,
    RUN_REQUESTS_TOPIC: t.runRequests,
    RUN_REPLIES_TOPIC: t.runReplies,
  };
}

export interface ProvisionOptions {
  database: string;
  topics: string[];
  partitions: number;
  logger?: Logger;
}

/**
 * Migrations, topics, one ClickHouse user per service and the registry's PostgreSQL
 * database with one role per service: what every service expects to exist. Idempotent;
 * returns the services' credentials (fresh passwords).
 */
export async function provision(stack: Stack, opts: ProvisionOptions): Promise<ServiceUsers> {
  const logger = opts.logger ?? createLogger({ service: 'devstack', level: 'warn' });
  const client = createClickHouse({ url: stack.clickhouseUrl, username: 'default', password: '', database: 'default' });
  try {
    await migrate(client, opts.database, logger);
  } finally {
    await client.close();
  }
  const kafka = createKafka({ brokers: stack.kafkaBrokers.split(','), clientId: 'devstack', logger });
  await ensureTopics(
    kafka,
    opts.topics.map((topic) => ({ topic, numPartitions: opts.partitions })),
  );
  const postgres = await provisionPostgres(stack.postgresAdminUrl, opts.database, logger);
  return { ...(await stack.serviceUsers(opts.database)), postgres };
}
