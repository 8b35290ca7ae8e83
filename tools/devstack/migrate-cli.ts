/**
 * npm run migrate: applies ClickHouse migrations and creates the Kafka topics, against
 * KAFKA_BROKERS / CLICKHOUSE_URL, or the stack that `npm start` runs; with DATABASE_URL
 * (the registry's owner), also the registry's PostgreSQL migrations and the copy of the
 * previous version's ClickHouse registry (docs/operations.md, "Moving the registry to
 * PostgreSQL"). SECRETS_KEYS opens the copied monitors' secrets (the stack's own key
 * ring when unset and `npm start` made one).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from '@telemetry/platform';
import { describeCopy, provisionFromEnv } from '@telemetry/store';
import { envWithLocalStack } from './local-env.js';

const env = envWithLocalStack();
// Where start.ts keeps the development key ring.
const devKeys = join('.stack', 'secrets-keys');
if (!env.SECRETS_KEYS && existsSync(devKeys)) env.SECRETS_KEYS = readFileSync(devKeys, 'utf8').trim();

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
