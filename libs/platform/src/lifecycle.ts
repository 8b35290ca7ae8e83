import type { Logger } from './logger.js';

/**
 * Time and timers for components that wait: the system clock in production, a fake in
 * unit tests (so a test of an interval does not wait for it).
 */
export interface Clock {
  now(): number;
  /** `unref`: the timer does not keep the process alive. */
  setTimeout(fn: () => void, ms: number, opts?: { unref?: boolean }): object;
  clearTimeout(timer: object | undefined): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms, opts) => {
    const t = setTimeout(fn, ms);
    if (opts?.unref) t.unref();
    return t;
  },
  clearTimeout: (t) => clearTimeout(t as NodeJS.Timeout | undefined),
};

/** Resolves after `ms` on `clock`. */
export function sleepOn(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/** The contract every long-lived part follows. */
export interface Component {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** True while the part can do its work (used by /readyz). */
  health(): boolean;
  /** When false, an unhealthy part shows in /readyz details but does not fail readiness. */
  readonly essential?: boolean;
}

/**
 * Starts components in the given order and stops them in the reverse order, once.
 * Order them so that reverse order is the shutdown order we want: the HTTP server or
 * the consumer last (it stops accepting work first), then writers/producers (flush),
 * then clients (disconnect).
 */
export class ServiceRunner {
  private stopping: Promise<void> | undefined;
  private started: Component[] = [];
  private readonly components: Component[] = [];

  constructor(
    private readonly logger: Logger,
    private readonly shutdownTimeoutMs = 25_000,
  ) {}

  /** Adds components in start order (reverse is the shutdown order). */
  use(...components: Component[]): this {
    this.components.push(...components);
    return this;
  }

  async start(): Promise<void> {
    for (const c of this.components) {
      await c.start();
      this.started.push(c);
      this.logger.debug('component started', { component: c.name });
    }
  }

  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  health = (): Record<string, boolean> => {
    return Object.fromEntries(this.components.map((c) => [c.name, c.health()]));
  };

  /** Ready while every component is healthy and no shutdown has begun. */
  ready = (): boolean => !this.isStopping && this.components.every((c) => c.essential === false || c.health());

  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    const deadline = new Promise<'timeout'>((resolve) => {
      const t = setTimeout(() => resolve('timeout'), this.shutdownTimeoutMs);
      t.unref();
    });
    for (const c of [...this.started].reverse()) {
      try {
        const r = await Promise.race([c.stop().then(() => 'ok' as const), deadline]);
        if (r === 'timeout') {
          this.logger.error('shutdown deadline passed', { component: c.name });
          return;
        }
      } catch (err) {
        this.logger.error('component failed to stop', { component: c.name, err: String(err) });
      }
    }
  }
}

/** SIGTERM/SIGINT run the graceful shutdown once; a second signal exits at once. */
export function installSignalHandlers(runner: ServiceRunner, logger: Logger): void {
  let received = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (received) {
      logger.warn('second signal, exiting now', { signal });
      process.exit(1);
    }
    received = true;
    logger.info('shutting down', { signal });
    runner.stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error('shutdown failed', { err: String(err) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
