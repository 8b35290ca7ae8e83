import { ConfigError, createLogger, installSignalHandlers } from '@telemetry/platform';
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';

// Composition root of the ingest gateway.
try {
  const config = loadGatewayConfig(process.env);
  const logger = createLogger({ service: 'ingest-gateway', level: config.logLevel });
  const gateway = await startGateway(config, logger);
  installSignalHandlers(gateway.runner, logger);
} catch (err) {
  process.stderr.write(
    `ingest-gateway: ${err instanceof ConfigError ? err.message : String((err as Error).stack ?? err)}\n`,
  );
  process.exit(err instanceof ConfigError ? 2 : 1);
}
