/**
 * npm run migrate: applies ClickHouse migrations and creates the Kafka topics, against
 * KAFKA_BROKERS / CLICKHOUSE_URL, or the stack that `npm start` runs.
 */
import { createLogger } from '@telemetry/platform';
import { provisionFromEnv } from '@telemetry/store';
import { envWithLocalStack } from './local-env.js';

const applied = await provisionFromEnv(envWithLocalStack(), createLogger({ service: 'migrate', level: 'warn' }));
process.stdout.write(applied.length ? `applied migrations ${applied.join(', ')}\n` : 'schema is up to date\n');
