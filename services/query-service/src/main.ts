import { ConfigError, createLogger, installSignalHandlers } from '@telemetry/platform';
import { loadQueryConfig } from './config.js';
import { startQueryService } from './service.js';

// Composition root of the query service.
try {
  const config = loadQueryConfig(process.env);
  const logger = createLogger({ service: 'query-service', level: config.logLevel });
  const service = await startQueryService(config, logger);
  installSignalHandlers(service.runner, logger);
} catch (err) {
  process.stderr.write(
    `query-service: ${err instanceof ConfigError ? err.message : String((err as Error).stack ?? err)}\n`,
  );
  process.exit(err instanceof ConfigError ? 2 : 1);
}
