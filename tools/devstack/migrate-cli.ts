/**
 * npm run migrate: applies ClickHouse migrations and creates the Kafka topics, against
 * KAFKA_BROKERS / CLICKHOUSE_URL, or the stack that `npm start` runs; with DATABASE_URL
 * (the registry's owner), also the registry's PostgreSQL migrations and the copy of the
 * previous version's ClickHouse registry (docs/operations.md, "Moving the registry to
 * PostgreSQL"). SECRETS_KEYS opens the copied monitors' secrets (the stack's own key
 * ring when unset and `npm start` made one).
 *
 * `npm run migrate -- to-cluster [--dry-run] [--json] [--max-partitions=N]
 * [--source-url=URL] [--source-user=NAME] [--source-database=NAME]` copies a single
 * server's database (SOURCE_CLICKHOUSE_*) into the cluster of CLICKHOUSE_URL /
 * CLICKHOUSE_CLUSTER / CLICKHOUSE_DATABASE (docs/clickhouse.md, "Moving to a cluster").
 * Exit code 0: complete and counted equal; 1: refused, failed or a count differed;
 * 3: stopped by --max-partitions (run it again to resume).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClickHouse, createLogger, loadConfig } from '@telemetry/platform';
import {
  CLUSTER_DDL_TIMEOUT_MS,
  describeCopy,
  describeToCluster,
  provisionFromEnv,
  toCluster,
  toClusterSpec,
  ToClusterError,
} from '@telemetry/store';
import { envWithLocalStack } from './local-env.js';

const env = envWithLocalStack();
// Where start.ts keeps the development key ring.
const devKeys = join('.stack', 'secrets-keys');
if (!env.SECRETS_KEYS && existsSync(devKeys)) env.SECRETS_KEYS = readFileSync(devKeys, 'utf8').trim();

if (process.argv[2] === 'to-cluster') process.exit(await toClusterCommand(process.argv.slice(3)));

const done = await provisionFromEnv(env, createLogger({ service: 'migrate', level: 'warn' }));
const applied = (what: string, versions: number[]): string =>
  versions.length ? `${what}: applied migrations ${versions.join(', ')}` : `${what}: schema is up to date`;
const lines = [applied('ClickHouse', done.clickhouse)];
if (done.registry && done.copied) {
  lines.push(applied('registry (PostgreSQL)', done.registry), 'copied from the ClickHouse registry:');
  lines.push(...describeCopy(done.copied).map((l) => `  ${l}`));
} else {
  lines.push('DATABASE_URL is not set: the registry (PostgreSQL) was not migrated and nothing was copied');
}
process.stdout.write(`${lines.join('\n')}\n`);

/** `to-cluster`: flags override the SOURCE_CLICKHOUSE_* variables; returns the exit code. */
async function toClusterCommand(args: string[]): Promise<number> {
  const flag = (name: string): string | undefined =>
    args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const known = ['dry-run', 'json', 'max-partitions', 'source-url', 'source-user', 'source-database'];
  const unknown = args.filter((a) => !known.includes(a.replace(/^--/, '').replace(/=.*$/, '')));
  if (unknown.length > 0) {
    process.stderr.write(`to-cluster: unknown argument ${unknown.join(' ')}\n`);
    return 1;
  }
  const overrides: Record<string, string | undefined> = {
    SOURCE_CLICKHOUSE_URL: flag('source-url'),
    SOURCE_CLICKHOUSE_USER: flag('source-user'),
    SOURCE_CLICKHOUSE_DATABASE: flag('source-database'),
  };
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) env[k] = v;
  const maxPartitions = Number(flag('max-partitions') ?? '0');
  if (!Number.isInteger(maxPartitions) || maxPartitions < 0) {
    process.stderr.write('to-cluster: --max-partitions must be a whole number\n');
    return 1;
  }
  const json = args.includes('--json');
  const config = loadConfig(toClusterSpec, env);
  const source = {
    url: config.sourceUrl,
    user: config.sourceUser,
    password: config.sourcePassword,
    database: config.sourceDatabase || config.clickhouseDatabase,
  };
  const target = {
    url: config.clickhouseUrl,
    user: config.clickhouseUser,
    password: config.clickhousePassword,
    database: config.clickhouseDatabase,
    cluster: config.clickhouseCluster,
  };
  // ON CLUSTER DDL waits for every server (as the migrations' own client does).
  const client = (e: typeof source) =>
    createClickHouse({
      url: e.url,
      username: e.user,
      password: e.password,
      database: 'default',
      requestTimeoutMs: CLUSTER_DDL_TIMEOUT_MS,
    });
  const sourceClient = client(source);
  const targetClient = client(target);
  try {
    const report = await toCluster({
      source,
      target,
      sourceClient,
      targetClient,
      logger: createLogger({ service: 'to-cluster', level: 'warn' }),
      dryRun: args.includes('--dry-run'),
      maxPartitions,
      onPartition: json
        ? undefined
        : (p) =>
            p.action !== 'planned' &&
            process.stderr.write(`${p.action} ${p.table} ${p.partition}: ${p.sourceRows} -> ${p.targetRows ?? '-'}\n`),
    });
    process.stdout.write(json ? `${JSON.stringify(report)}\n` : `${describeToCluster(report).join('\n')}\n`);
    if (report.mismatches.length > 0) return 1;
    if (report.interrupted) return 3;
    return 0;
  } catch (err) {
    if (!(err instanceof ToClusterError)) throw err;
    process.stderr.write(`to-cluster refused: ${err.message}\n`);
    return 1;
  } finally {
    await Promise.all([sourceClient.close(), targetClient.close()]);
  }
}
