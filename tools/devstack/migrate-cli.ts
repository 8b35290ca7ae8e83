/** npm run migrate: applies ClickHouse migrations at CLICKHOUSE_URL (or `npm start`'s stack). */
import { createClickHouse, createLogger, migrate } from '@telemetry/runtime';
import { envWithLocalStack } from './local-env.js';

const env = envWithLocalStack();
if (!env.CLICKHOUSE_URL) {
  process.stderr.write('CLICKHOUSE_URL is not set\n');
  process.exit(2);
}
const database = env.CLICKHOUSE_DATABASE ?? 'telemetry';
const client = createClickHouse({
  url: env.CLICKHOUSE_URL,
  username: env.CLICKHOUSE_USER ?? 'default',
  password: env.CLICKHOUSE_PASSWORD ?? '',
  database: 'default',
});
try {
  const applied = await migrate(client, database, createLogger({ service: 'migrate', level: 'info' }));
  process.stdout.write(applied.length ? `applied migrations ${applied.join(', ')}\n` : 'schema is up to date\n');
} finally {
  await client.close();
}
