import { ConfigError, createLogger } from '@telemetry/platform';
import { provisionFromEnv } from '../provision.js';

// Entry point of the one-shot provisioning step in containers (migrations + topics; with
// DATABASE_URL the registry's migrations and the copy from ClickHouse).
const logger = createLogger({ service: 'provision', level: process.env.LOG_LEVEL ?? 'info' });
try {
  const done = await provisionFromEnv(process.env, logger);
  logger.info('provisioned', {
    applied_migrations: done.clickhouse,
    ...(done.registry ? { applied_registry_migrations: done.registry } : {}),
    ...(done.copied ? { copied_from_clickhouse: done.copied } : {}),
  });
} catch (err) {
  process.stderr.write(`provision: ${err instanceof ConfigError ? err.message : String(err)}\n`);
  process.exit(1);
}
