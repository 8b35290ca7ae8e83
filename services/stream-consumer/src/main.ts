import { ConfigError, createLogger, installSignalHandlers } from '@telemetry/platform';
import { loadConsumerConfig } from './config.js';
import { startConsumer } from './service.js';

// Composition root of the stream consumer.
try {
  const config = loadConsumerConfig(process.env);
  const logger = createLogger({ service: 'stream-consumer', level: config.logLevel });
  const consumer = await startConsumer(config, logger);
  installSignalHandlers(consumer.runner, logger);
} catch (err) {
  process.stderr.write(
    `stream-consumer: ${err instanceof ConfigError ? err.message : String((err as Error).stack ?? err)}\n`,
  );
  process.exit(err instanceof ConfigError ? 2 : 1);
}
