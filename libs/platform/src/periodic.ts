import type { Component } from './lifecycle.js';
import type { Logger } from './logger.js';

/**
 * A component that runs `run` at start and then every `intervalMs`, one run at a time
 * (a run still going when the next is due makes that one skip). Not essential: a failed
 * run is logged, makes health() false until a run succeeds, and never stops the service.
 */
export class PeriodicJob implements Component {
  readonly essential = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private ok = true;

  constructor(
    readonly name: string,
    private readonly intervalMs: number,
    private readonly run: () => Promise<unknown>,
    private readonly logger: Logger,
  ) {}

  start(): Promise<void> {
    this.tick();
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
    return Promise.resolve();
  }

  private tick(): void {
    if (this.running) return;
    // A run that throws instead of rejecting is a failed run too.
    this.running = Promise.resolve()
      .then(() => this.run())
      .then(
        () => {
          this.ok = true;
        },
        (err: unknown) => {
          this.ok = false;
          this.logger.warn(`${this.name} run failed`, { err: String(err) });
        },
      );
    void this.running.finally(() => (this.running = undefined));
  }

  health(): boolean {
    return this.ok;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}

/**
 * How long to wait before retry number `attempt` (0 first): capped exponential backoff
 * from 100 ms, with jitter (half to all of the step), so that retrying replicas spread out.
 */
export function retryDelayMs(attempt: number, maxMs: number): number {
  return Math.min(maxMs, 100 * 2 ** Math.min(attempt, 16)) * (0.5 + Math.random() / 2);
}
