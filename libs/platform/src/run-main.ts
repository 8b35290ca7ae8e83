import { ConfigError, type Env } from './config.js';
import { installSignalHandlers, type ServiceRunner } from './lifecycle.js';
import { createLogger, type Logger } from './logger.js';

/**
 * The body of every service's main.ts: reads and validates the config once, builds the
 * logger, starts the service and hands SIGTERM/SIGINT to its runner. A bad config
 * exits 2 with a message naming the variable; any other start-up failure exits 1.
 */
export async function runMain<C extends { logLevel: string }>(
  service: string,
  load: (env: Env) => C,
  start: (config: C, logger: Logger) => Promise<{ runner: ServiceRunner }>,
): Promise<void> {
  try {
    const config = load(process.env);
    const logger = createLogger({ service, level: config.logLevel });
    const started = await start(config, logger);
    installSignalHandlers(started.runner, logger);
  } catch (err) {
    process.stderr.write(
      `${service}: ${err instanceof ConfigError ? err.message : String((err as Error).stack ?? err)}\n`,
    );
    process.exit(err instanceof ConfigError ? 2 : 1);
  }
}
