import { createClickHouse, createKafka, createLogger, ensureTopics, type Logger } from '@telemetry/platform';
import { migrate } from '@telemetry/store';
import type { Stack } from './stack.js';
import type { ServiceUsers } from './users.js';
import { provisionPostgres } from './postgres.js';

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
