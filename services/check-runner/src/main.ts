import { ConfigError, createLogger, installSignalHandlers } from '@telemetry/platform';
import { loadRunnerConfig } from './config.js';
import { startCheckRunner } from './service.js';

// Composition root of the check runner.
try {
  const config = loadRunnerConfig(process.env);
  const logger = createLogger({ service: 'check-runner', level: config.logLevel });
  const service = await startCheckRunner(config, logger);
  installSignalHandlers(service.runner, logger);
} catch (err) {
  process.stderr.write(
    `check-runner: ${err instanceof ConfigError ? err.message : String((err as Error).stack ?? err)}\n`,
  );
  process.exit(err instanceof ConfigError ? 2 : 1);
}
