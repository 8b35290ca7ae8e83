import { ConfigError, createLogger } from '@telemetry/platform';
import { provisionFromEnv } from '../provision.js';

// Entry point of the one-shot provisioning step in containers (migrations + topics).
const logger = createLogger({ service: 'provision', level: process.env.LOG_LEVEL ?? 'info' });
try {
  const applied = await provisionFromEnv(process.env, logger);
  logger.info('provisioned', { applied_migrations: applied });
} catch (err) {
  process.stderr.write(`provision: ${err instanceof ConfigError ? err.message : String(err)}\n`);
  process.exit(1);
}
