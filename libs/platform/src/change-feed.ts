import { Counter, Gauge, type Registry } from 'prom-client';
import { systemClock, type Clock, type Component } from './lifecycle.js';
import type { Logger } from './logger.js';

/** One entry of a change log: `entity` row `id` changed (or went) at sequence `seq`. */
export interface FeedChange {
  seq: number;
  entity: string;
  id: string;
}

/** Where a feed reads its log: the newest sequence, the oldest kept, and what came after a sequence. */
export interface ChangeLog {
  /** The newest sequence (0: none yet) and the oldest still kept (older entries were pruned). */
  head(): Promise<{ newest: number; oldest: number }>;
  /** Entries after `seq`, in sequence order, at most `limit`. */
  after(seq: number, limit: number): Promise<FeedChange[]>;
  /** Calls `wake` whenever a change may have been written (LISTEN); resolves once listening. Undefined: poll only. */
  listen?(wake: () => void, lost: (err: Error) => void): Promise<{ close(): Promise<void> }>;
}

/** A copy of one entity's rows that a feed keeps current. */
export interface FeedSubscriber {
  readonly entity: string;
  /** Loads every row (at start, and when the log no longer reaches back to this copy). */
  reload(): Promise<void>;
  /** Reloads these rows (absent ones are gone). */
  apply(ids: readonly string[]): Promise<void>;
}

export interface ChangeFeedOptions {
  name: string;
  log: ChangeLog;
  /** Asks the log every this often even without a notice (a notice lost with a connection). */
  catchUpMs: number;
  logger: Logger;
  registry?: Registry;
  clock?: Clock;
}

const PAGE = 5000;

/**
 * Keeps in-memory copies of registry tables current from a change log: a full load at
 * start, then only what changed, read when a notice arrives (LISTEN) and on a timer.
 * An idle replica thus costs one small query per `catchUpMs`, however many rows there
 * are; a change reaches it as fast as the notice does. While the log is unreachable the
 * copies stay as they are (and health() turns false after three missed catch-ups).
 */
export class ChangeFeed implements Component {
  readonly name: string;
  readonly essential = false;
  private readonly subscribers: FeedSubscriber[] = [];
  private seq = 0;
  private lastOkAt: number | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private timer: object | undefined;
  private stopped = false;
  private listener: { close(): Promise<void> } | undefined;
  private reconnect: object | undefined;
  /** A reconnection is scheduled or running: never two at once. */
  private reconnecting = false;
  private readonly clock: Clock;
  private readonly catchUps: Counter | undefined;
  private readonly applied: Counter | undefined;
  private readonly waiters = new Set<{ seq: number; resolve: () => void }>();
  /** Notices before the first full load are left to the catch-up that ends start(). */
  private loaded = false;

  constructor(private readonly opts: ChangeFeedOptions) {
    this.name = opts.name;
    this.clock = opts.clock ?? systemClock;
    const registry = opts.registry;
    if (registry) {
      const labelNames = ['feed'];
      this.catchUps = new Counter({
        name: 'registry_feed_catchups_total',
        help: 'Reads of the registry change log, by outcome (ok, failed)',
        labelNames: ['feed', 'outcome'],
        registers: [registry],
      });
      this.applied = new Counter({
        name: 'registry_feed_changes_total',
        help: 'Registry changes applied to this replica s copies',
        labelNames,
        registers: [registry],
      });
      // Read when scraped: this replica's position in the change log.
      const gauge = (metric: string, help: string, value: () => number): void => {
        const feed = this.name;
        new Gauge({
          name: metric,
          help,
          labelNames,
          registers: [registry],
          collect() {
            this.set({ feed }, value());
          },
        });
      };
      gauge(
        'registry_feed_last_sync_timestamp_seconds',
        'When this replica last read the registry change log successfully (unix seconds; 0: never)',
        () => (this.lastOkAt === undefined ? 0 : this.lastOkAt / 1000),
      );
      gauge('registry_feed_sequence', 'The newest registry change this replica has applied', () => this.seq);
    }
  }

  /** Adds a copy to keep current (before start). */
  subscribe(s: FeedSubscriber): void {
    this.subscribers.push(s);
  }

  /** The newest change applied. */
  get sequence(): number {
    return this.seq;
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.loaded = false;
    await this.connect();
    // The head first, then the rows: a change written between the two is read again by
    // the catch-up below (applying a change twice is harmless).
    const { newest } = await this.opts.log.head();
    await Promise.all(this.subscribers.map((s) => s.reload()));
    this.seq = newest;
    this.loaded = true;
    this.lastOkAt = this.clock.now();
    await this.catchUp();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    this.clock.clearTimeout(this.reconnect);
    await this.listener?.close().catch(() => undefined);
    this.listener = undefined;
    await this.running?.catch(() => undefined);
  }

  health(): boolean {
    return this.lastOkAt !== undefined && this.clock.now() - this.lastOkAt < this.opts.catchUpMs * 3 + 10_000;
  }

  /** Reads the log now (coalesced with one already running); rejects when it fails. */
  catchUp(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    const run = this.read().finally(() => {
      this.running = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        this.catchUp().catch((err: unknown) => this.failed(err));
      }
    });
    this.running = run;
    return run;
  }

  /** Resolves once this replica has applied change `seq` (or at the deadline, false). */
  waitFor(seq: number, timeoutMs: number): Promise<boolean> {
    if (this.seq >= seq) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w = {
        seq,
        resolve: () => {
          this.clock.clearTimeout(t);
          this.waiters.delete(w);
          resolve(true);
        },
      };
      const t = this.clock.setTimeout(() => {
        this.waiters.delete(w);
        resolve(false);
      }, timeoutMs);
      this.waiters.add(w);
    });
  }

  private async read(): Promise<void> {
    try {
      const { oldest, newest } = await this.opts.log.head();
      if (oldest > this.seq + 1 || newest < this.seq) {
        // The log was pruned past this copy, or went back behind it (a restore, a failover
        // that lost its last commits: new changes may reuse sequences this copy has seen):
        // load everything again.
        await Promise.all(this.subscribers.map((s) => s.reload()));
        this.advance(newest);
      } else {
        for (;;) {
          const changes = await this.opts.log.after(this.seq, PAGE);
          if (changes.length === 0) break;
          const byEntity = new Map<string, Set<string>>();
          for (const c of changes) {
            if (!byEntity.has(c.entity)) byEntity.set(c.entity, new Set());
            byEntity.get(c.entity)!.add(c.id);
          }
          // Every subscriber's apply ends before the next read starts, failed or not.
          const results = await Promise.allSettled(
            this.subscribers.map((s) => {
              const ids = byEntity.get(s.entity);
              return ids ? s.apply([...ids]) : Promise.resolve();
            }),
          );
          const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
          if (failed) throw failed.reason;
          this.applied?.inc({ feed: this.name }, changes.length);
          this.advance(changes[changes.length - 1]!.seq);
          if (changes.length < PAGE) break;
        }
      }
      this.lastOkAt = this.clock.now();
      this.catchUps?.inc({ feed: this.name, outcome: 'ok' });
    } catch (err) {
      this.catchUps?.inc({ feed: this.name, outcome: 'failed' });
      throw err;
    }
  }

  private advance(seq: number): void {
    if (seq > this.seq) this.seq = seq;
    for (const w of this.waiters) if (w.seq <= this.seq) w.resolve();
  }

  private failed(err: unknown): void {
    this.opts.logger.warn('registry changes not read; the copies stay as they are', {
      feed: this.name,
      err: String(err),
    });
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimeout(
      () => {
        this.catchUp()
          .catch((err: unknown) => this.failed(err))
          .finally(() => this.schedule());
      },
      this.opts.catchUpMs,
      { unref: true },
    );
  }

  /** LISTENs when the log can; a lost connection is made again after a second (then caught up). */
  private async connect(): Promise<void> {
    const log = this.opts.log;
    if (!log.listen) return;
    this.listener = await log.listen(
      () => {
        if (this.loaded) this.catchUp().catch((err: unknown) => this.failed(err));
      },
      (err) => {
        this.listener = undefined;
        if (this.stopped) return;
        this.opts.logger.warn('registry LISTEN connection lost; connecting again', {
          feed: this.name,
          err: String(err),
        });
        this.retryConnect();
      },
    );
  }

  /** One reconnection at a time, a second apart, until one listens (then a catch-up). */
  private retryConnect(): void {
    if (this.reconnecting || this.stopped) return;
    this.reconnecting = true;
    this.reconnect = this.clock.setTimeout(
      () => {
        if (this.stopped) {
          this.reconnecting = false;
          return;
        }
        this.connect()
          .then(
            () => {
              this.reconnecting = false;
              return this.catchUp();
            },
            (err: unknown) => {
              this.reconnecting = false;
              throw err;
            },
          )
          .catch((err: unknown) => {
            this.failed(err);
            if (!this.listener) this.retryConnect();
          });
      },
      1000,
      { unref: true },
    );
  }
}

/**
 * A feed subscriber holding one entity's rows by id: `load` reads the rows of some ids
 * (all when undefined).
 */
export class Mirror<T> implements FeedSubscriber {
  private rows = new Map<string, T>();
  private loadedOnce = false;
  private readonly listeners: ((ids: readonly string[]) => void)[] = [];

  constructor(
    readonly entity: string,
    private readonly load: (ids?: readonly string[]) => Promise<T[]>,
    private readonly idOf: (row: T) => string,
    /**
     * A row's version, when rows have one: then a change the copy holds already (its own
     * write, put() before the notice came back) is no change, and listeners hear only of
     * rows that changed.
     */
    private readonly versionOf?: (row: T) => number,
  ) {}

  /** Calls `fn` after rows changed (loaded again, changed or gone), with their ids. */
  onChange(fn: (ids: readonly string[]) => void): void {
    this.listeners.push(fn);
  }

  private changed(ids: readonly string[]): void {
    for (const fn of this.listeners) fn(ids);
  }

  get loaded(): boolean {
    return this.loadedOnce;
  }

  get(id: string): T | undefined {
    return this.rows.get(id);
  }

  values(): IterableIterator<T> {
    return this.rows.values();
  }

  get size(): number {
    return this.rows.size;
  }

  async reload(): Promise<void> {
    const next = new Map<string, T>();
    for (const r of await this.load()) next.set(this.idOf(r), r);
    const changed = [...new Set([...this.rows.keys(), ...next.keys()])];
    this.rows = next;
    this.loadedOnce = true;
    this.changed(changed);
  }

  async apply(ids: readonly string[]): Promise<void> {
    const found = new Map((await this.load(ids)).map((r) => [this.idOf(r), r]));
    const changed: string[] = [];
    for (const id of ids) {
      const before = this.rows.get(id);
      let r = found.get(id);
      // A read that started before a newer one ended (a notice's reload beside the feed's)
      // never puts an older version back.
      if (r !== undefined && before !== undefined && this.versionOf && this.versionOf(r) < this.versionOf(before)) {
        r = before;
      }
      if (r === undefined) this.rows.delete(id);
      else this.rows.set(id, r);
      const same =
        this.versionOf !== undefined &&
        before !== undefined &&
        r !== undefined &&
        this.versionOf(before) === this.versionOf(r);
      if (!same && (before !== undefined || r !== undefined)) changed.push(id);
    }
    if (changed.length > 0) this.changed(changed);
  }

  /** Puts a row this replica just wrote (its notice follows). */
  put(row: T): void {
    this.rows.set(this.idOf(row), row);
  }

  /** Removes a row this replica just deleted. */
  remove(id: string): void {
    this.rows.delete(id);
  }
}
