/** What the operator CLIs (keys, tenants, migrate) share: the admin clients and the exit path. */
import {
  createClickHouse,
  createLogger,
  createPostgres,
  type ClickHouseClient,
  type PgPool,
} from '@telemetry/platform';
import { layoutOf, type TableLayout } from '@telemetry/store';
import { envWithLocalStack } from './local-env.js';

/**
 * ClickHouse at CLICKHOUSE_URL (or the stack `npm start` runs), as CLICKHOUSE_USER;
 * undefined (after saying why) when there is none. `layout`: where reads of the data
 * tables go (their `_all` tables when CLICKHOUSE_CLUSTER is set).
 */
export function adminFromEnv(): { client: ClickHouseClient; database: string; layout: TableLayout } | undefined {
  const env = envWithLocalStack();
  if (!env.CLICKHOUSE_URL) {
    process.stderr.write('CLICKHOUSE_URL is not set and no stack from `npm start` was found\n');
    return undefined;
  }
  const database = env.CLICKHOUSE_DATABASE ?? 'telemetry';
  const client = createClickHouse({
    url: env.CLICKHOUSE_URL,
    username: env.CLICKHOUSE_USER ?? 'default',
    password: env.CLICKHOUSE_PASSWORD ?? '',
    database,
  });
  return { client, database, layout: layoutOf({ clickhouseCluster: env.CLICKHOUSE_CLUSTER }) };
}

/**
 * The registry (PostgreSQL) at DATABASE_URL (or the stack `npm start` runs), as the role
 * given there: the database's owner for the operators' tools. Undefined (after saying why)
 * when there is none.
 */
export function registryFromEnv(): PgPool | undefined {
  const env = envWithLocalStack();
  if (!env.DATABASE_URL) {
    process.stderr.write('DATABASE_URL is not set and no stack from `npm start` was found\n');
    return undefined;
  }
  return createPostgres(
    { databaseUrl: env.DATABASE_URL, databasePoolMax: 2, databaseTimeoutMs: 10_000 },
    createLogger({ service: 'cli', level: 'warn' }),
    'cli',
  );
}

/** Runs a CLI's main and exits with its code; an error is one line on stderr and exit 1. */
export function runCli(name: string, main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${name}: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
