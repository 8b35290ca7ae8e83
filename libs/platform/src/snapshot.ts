import { systemClock, type Clock, type Component } from './lifecycle.js';
import type { Logger } from './logger.js';

export interface SnapshotOptions<T> {
  /** The component's name (health details). */
  name: string;
  /** Loads a full copy from the source. */
  load: () => Promise<T>;
  /** Wait between the end of one load and the start of the next. */
  intervalMs: number;
  logger: Logger;
  /** Logged (warn) when a timed reload fails; the last good copy stays. */
  failureMessage: string;
  /**
   * true (default): start() fails when the first load fails. false: it starts without a
   * copy (value() is undefined, health() false) and keeps trying on the interval.
   */
  requireFirstLoad?: boolean;
  /** Also unhealthy when the last good load is older than this (default: never stale). */
  staleAfterMs?: number;
  /** See Component.essential. */
  essential?: boolean;
  /** Called after every successful load, with the copy it replaced. */
  onLoad?: (next: T, previous: T | undefined) => void;
  clock?: Clock;
}

/**
 * A periodically reloaded in-memory copy of something slow to read (keys, the monitor
 * registry, the set of monitor ids), so that reading it costs no I/O. While the source
 * fails the last good copy stays in force. Loads never overlap on the timer; a
 * refresh() starts a load at once, and a load that ends after a newer one is dropped.
 */
export class Snapshot<T> implements Component {
  readonly name: string;
  readonly essential: boolean | undefined;
  private current: T | undefined;
  private loadedAt: number | undefined;
  private timer: object | undefined;
  private stopped = false;
  private started = 0;
  private applied = 0;
  private readonly clock: Clock;

  constructor(private readonly opts: SnapshotOptions<T>) {
    this.name = opts.name;
    this.essential = opts.essential;
    this.clock = opts.clock ?? systemClock;
  }

  async start(): Promise<void> {
    this.stopped = false;
    try {
      await this.refresh();
    } catch (err) {
      if (this.opts.requireFirstLoad !== false) throw err;
      this.opts.logger.warn(this.opts.failureMessage, { err: String(err) });
    }
    this.schedule();
  }

  /** The last good copy; undefined until the first load succeeded. */
  value(): T | undefined {
    return this.current;
  }

  /** Loaded at least once (and, with staleAfterMs, recently). */
  health(): boolean {
    if (this.loadedAt === undefined) return false;
    return this.opts.staleAfterMs === undefined || this.clock.now() - this.loadedAt < this.opts.staleAfterMs;
  }

  /** Loads now; rejects (keeping the last copy) when the source fails. */
  async refresh(): Promise<void> {
    const seq = ++this.started;
    const next = await this.opts.load();
    // A load that started before the last applied one carries older data.
    if (seq < this.applied) return;
    this.applied = seq;
    const previous = this.current;
    this.current = next;
    this.loadedAt = this.clock.now();
    this.opts.onLoad?.(next, previous);
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    return Promise.resolve();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimeout(
      () => {
        this.refresh()
          .catch((err: unknown) => this.opts.logger.warn(this.opts.failureMessage, { err: String(err) }))
          .finally(() => this.schedule());
      },
      this.opts.intervalMs,
      { unref: true },
    );
  }
}
