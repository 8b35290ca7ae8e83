import type { Counter, Histogram, Registry } from 'prom-client';
import {
  classifyInsertError,
  counter,
  histogram,
  retryDelayMs,
  type InsertErrorClass,
  type Logger,
  type Table,
} from '@telemetry/platform';

/** Where rows go. ClickHouse in production (ClickHouseInserter); a fake in unit tests. */
export interface RowSink {
  insert(table: string, rows: readonly object[]): Promise<void>;
}

/**
 * Where rows that ClickHouse rejects for their data go (the dead-letter topic); the
 * write resolves only after this resolved, so their offsets are committed only once
 * they are safe there.
 */
export type RejectedRowsHandler = (table: string, rows: readonly object[], reason: string) => Promise<void>;

export interface BatchWriterOptions {
  sink: RowSink;
  logger: Logger;
  registry: Registry;
  maxRows: number;
  maxAgeMs: number;
  /** Inserts into one table in flight at once (1: one after another). */
  concurrency?: number;
  retryMaxMs: number;
  onRejected: RejectedRowsHandler;
  /** Whether an insert error is about the rows, the batch as a whole (both never retried as they are) or passing; ClickHouse's codes by default. */
  classify?: (err: unknown) => InsertErrorClass;
  /**
   * Tables whose inserts are capped by size as well as by maxRows (byteLimit()): rows of
   * hundreds of kilobytes (screenshots) would make a batch of maxRows gigabytes.
   */
  byteLimits?: ReadonlyMap<string, ByteLimit>;
}

/**
 * A table as the metrics name it: its own name (`events`, `checks`, `failed_events`),
 * whatever database and layout it was written in (`db`.`events` on one server,
 * `db`.`events_all` on a cluster), so dashboards and alerts hold across both.
 */
export function metricTable(table: string): string {
  const name = (table.split('.').pop() ?? table).replace(/`/g, '');
  return name.endsWith('_all') ? name.slice(0, -'_all'.length) : name;
}

/** A cap on the bytes of one insert into a table: each row's weight, and the most one insert carries. */
export interface ByteLimit {
  maxBytes: number;
  weigh(row: object): number;
}

/** A byte cap for `table`, weighing its own rows (typed: a weigher of another table's rows does not compile). */
export function byteLimit<Row extends object>(
  table: Table<Row>,
  maxBytes: number,
  weigh: (row: Row) => number,
): [string, ByteLimit] {
  return [table, { maxBytes, weigh: (row) => weigh(row as Row) }];
}

const INSERT_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const BATCH_ROWS = [1, 10, 100, 500, 1000, 2500, 5000, 10_000, 25_000, 50_000, 100_000];

/** ClickHouse refused these rows (for their data, or the batch as a whole): retrying them as they are cannot help. */
class RowsRejectedError extends Error {
  constructor(
    message: string,
    readonly kind: 'rejected' | 'split',
  ) {
    super(message);
  }
}

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
}

interface Buffer {
  rows: object[];
  /** Weight of `rows` (byteLimits), 0 for a table without a byte cap. */
  bytes: number;
  /** Rows of this table written and not yet inserted (buffered or in an insert). */
  pending: number;
  waiters: Waiter[];
  timer: NodeJS.Timeout | undefined;
  /** Flushes of this table under way; at most `concurrency` of them insert at once. */
  flushes: Set<Promise<void>>;
  inserting: number;
  /** Flushes waiting for an insert slot, in the order they were cut. */
  queued: (() => void)[];
}

export class WriterStoppedError extends Error {}

/**
 * Gathers rows per table and inserts them in batches that flush on size or age.
 * write() resolves only once its rows are in ClickHouse (or, if ClickHouse rejects
 * them for their data, handed to onRejected), so the caller can commit offsets after
 * it. Transient insert errors are retried with capped exponential backoff and jitter
 * until the writer is stopped. A batch rejected for its data is halved until the bad
 * rows stand alone: the good rows are written, each bad row goes to onRejected with
 * ClickHouse's reason, and the partition keeps flowing. A batch larger than maxRows
 * (or, for a table in byteLimits, than its maxBytes) is split, and flushes once it is.
 */
export class BatchWriter {
  private readonly buffers = new Map<string, Buffer>();
  private draining = false;
  private stopped = false;
  /** Rows written and not yet inserted (buffered or in an insert), of every table. */
  private pending = 0;
  private roomWaiters: (() => void)[] = [];
  private readonly rowsWritten: Counter<'table'>;
  private readonly retries: Counter<'table'>;
  private readonly rejected: Counter<'table'>;
  private readonly splits: Counter<'table'>;
  private readonly insertSeconds: Histogram<'table'>;
  private readonly batchRows: Histogram<'table'>;
  /** Per table: when its last insert succeeded (unix seconds). */
  private readonly lastInserts = new Map<string, number>();

  constructor(private readonly opts: BatchWriterOptions) {
    const r = opts.registry;
    const by = ['table'] as const;
    this.rowsWritten = counter(r, 'consumer_rows_written_total', 'Rows inserted into ClickHouse', by);
    this.retries = counter(r, 'consumer_insert_retries_total', 'Inserts (or dead-letter sends) retried', by);
    this.rejected = counter(r, 'consumer_rows_rejected_total', 'Rows ClickHouse refused, dead-lettered', by);
    this.splits = counter(
      r,
      'consumer_insert_splits_total',
      'Batches split because ClickHouse refused them whole (too many partitions or parts)',
      by,
    );
    this.insertSeconds = histogram(r, 'consumer_insert_duration_seconds', 'One successful insert', by, INSERT_SECONDS);
    this.batchRows = histogram(r, 'consumer_insert_batch_rows', 'Rows per ClickHouse insert', by, BATCH_ROWS);
  }

  /** Resolves when `rows` are inserted; rejects only if the writer is stopped first. */
  write<Row extends object>(table: Table<Row>, rows: readonly Row[]): Promise<void> {
    if (this.stopped) return Promise.reject(new WriterStoppedError('writer stopped'));
    if (rows.length === 0) return Promise.resolve();
    const buf = this.bufferOf(table);
    this.pending += rows.length;
    buf.pending += rows.length;
    const done = new Promise<void>((resolve, reject) => buf.waiters.push({ resolve, reject }));
    for (const r of rows) buf.rows.push(r);
    const limit = this.opts.byteLimits?.get(table);
    if (limit) for (const r of rows) buf.bytes += limit.weigh(r);
    if (this.draining || buf.rows.length >= this.opts.maxRows || (limit && buf.bytes >= limit.maxBytes)) {
      this.flush(table);
    } else buf.timer ??= setTimeout(() => this.flush(table), this.opts.maxAgeMs);
    return done;
  }

  /** When an insert into `table` last succeeded (unix seconds), if one did since start. */
  lastInsertAt(table: string): number | undefined {
    return this.lastInserts.get(table);
  }

  get pendingRows(): number {
    return this.pending;
  }

  /** Rows of `table` written and not yet inserted. */
  pendingRowsOf(table: string): number {
    return this.buffers.get(table)?.pending ?? 0;
  }

  /**
   * Resolves true once fewer than `limit` rows of `table` are waiting for an insert, or
   * false after `timeoutMs` (if given) without room. Each table has its own room: a
   * table whose inserts keep failing never holds another's writes.
   */
  waitForRoom(table: string, limit: number, timeoutMs?: number): Promise<boolean> {
    const room = (): boolean => this.pendingRowsOf(table) < limit || this.stopped;
    if (room()) return Promise.resolve(true);
    return new Promise((resolve) => {
      let settled = false;
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              settled = true;
              // Not left behind in the list (a stuck table would add one a second).
              const i = this.roomWaiters.indexOf(check);
              if (i >= 0) this.roomWaiters.splice(i, 1);
              resolve(false);
            }, timeoutMs);
      const check = (): void => {
        if (settled) return;
        if (room()) {
          settled = true;
          clearTimeout(timer);
          resolve(true);
        } else this.roomWaiters.push(check);
      };
      this.roomWaiters.push(check);
    });
  }

  private released(buf: Buffer, n: number): void {
    this.pending -= n;
    buf.pending -= n;
    for (const w of this.roomWaiters.splice(0)) w();
  }

  /** From now on every write flushes at once (used while shutting down). */
  drain(): void {
    this.draining = true;
    for (const table of this.buffers.keys()) this.flush(table);
  }

  /** Flushes what is buffered, then refuses new writes; pending retries give up. */
  async stop(): Promise<void> {
    this.drain();
    await Promise.all([...this.buffers.values()].flatMap((b) => [...b.flushes]));
    this.stopped = true;
  }

  /** Gives up at once: pending writes reject and nothing more is inserted. */
  abort(): void {
    this.stopped = true;
    for (const b of this.buffers.values()) {
      clearTimeout(b.timer);
      for (const w of b.waiters.splice(0)) w.reject(new WriterStoppedError('writer aborted'));
      this.released(b, b.rows.length);
      b.rows = [];
      b.bytes = 0;
    }
  }

  private bufferOf(table: string): Buffer {
    let b = this.buffers.get(table);
    if (!b) {
      b = {
        rows: [],
        bytes: 0,
        pending: 0,
        waiters: [],
        timer: undefined,
        flushes: new Set(),
        inserting: 0,
        queued: [],
      };
      this.buffers.set(table, b);
    }
    return b;
  }

  private flush(table: string): void {
    const buf = this.bufferOf(table);
    clearTimeout(buf.timer);
    buf.timer = undefined;
    if (buf.rows.length === 0) return;
    const rows = buf.rows;
    const waiters = buf.waiters;
    buf.rows = [];
    buf.bytes = 0;
    buf.waiters = [];
    const flush = (async () => {
      await this.insertSlot(buf);
      try {
        for (const chunk of this.chunksOf(table, rows)) await this.insertOrBisect(table, chunk);
        for (const w of waiters) w.resolve();
      } catch (err) {
        for (const w of waiters) w.reject(err as Error);
      } finally {
        this.released(buf, rows.length);
        // The slot passes straight to the next queued flush, or is given back.
        const next = buf.queued.shift();
        if (next) next();
        else buf.inserting--;
      }
    })();
    buf.flushes.add(flush);
    void flush.finally(() => buf.flushes.delete(flush));
  }

  /**
   * `rows` cut into inserts of at most maxRows rows and, for a table with a byte cap, at
   * most its maxBytes (a single row heavier than that goes alone).
   */
  chunksOf(table: string, rows: object[]): object[][] {
    const limit = this.opts.byteLimits?.get(table);
    const chunks: object[][] = [];
    let chunk: object[] = [];
    let bytes = 0;
    for (const r of rows) {
      const w = limit ? limit.weigh(r) : 0;
      if (chunk.length > 0 && (chunk.length >= this.opts.maxRows || (limit && bytes + w > limit.maxBytes))) {
        chunks.push(chunk);
        chunk = [];
        bytes = 0;
      }
      chunk.push(r);
      bytes += w;
    }
    if (chunk.length > 0) chunks.push(chunk);
    return chunks;
  }

  /**
   * Waits for one of the table's insert slots. Inserts overlap so that ClickHouse
   * writes one block while this process encodes the next; rows of one partition may
   * then land out of order, which nothing relies on (offsets are committed per
   * partition in order by the consumer, and copies are removed on read).
   */
  private async insertSlot(buf: Buffer): Promise<void> {
    if (buf.inserting < (this.opts.concurrency ?? 1)) buf.inserting++;
    else await new Promise<void>((r) => buf.queued.push(r));
  }

  /**
   * Inserts `rows`; when ClickHouse rejects them for their data, or refuses the batch as
   * a whole (too many partitions in one block, too many parts), each half on its own. A
   * single row rejected for its data is dead-lettered with ClickHouse's reason (the
   * partition keeps flowing; `npm run dlq:replay` sends it back once fixed); a single row
   * still refused whole is retried with backoff until the table takes it.
   */
  private async insertOrBisect(table: string, rows: object[]): Promise<void> {
    try {
      await this.insertWithRetry(table, rows);
    } catch (err) {
      if (!(err instanceof RowsRejectedError)) throw err;
      if (rows.length === 1 && err.kind === 'split') {
        // One row spans one partition: what is still refused is the table's state (too many
        // parts, merges behind), not the row. Retried with backoff, as a transient error.
        await this.insertWithRetry(table, rows, true);
        return;
      }
      if (rows.length === 1) {
        await this.deadLetter(table, rows, err.message);
        return;
      }
      if (err.kind === 'split') this.splits.inc({ table: metricTable(table) });
      const half = Math.ceil(rows.length / 2);
      await this.insertOrBisect(table, rows.slice(0, half));
      await this.insertOrBisect(table, rows.slice(half));
    }
  }

  private async insertWithRetry(table: string, rows: object[], splitIsTransient = false): Promise<void> {
    const classify = this.opts.classify ?? classifyInsertError;
    for (let attempt = 0; ; attempt++) {
      if (this.stopped) throw new WriterStoppedError('writer stopped during retries');
      const end = this.insertSeconds.startTimer({ table: metricTable(table) });
      try {
        await this.opts.sink.insert(table, rows);
        end();
        this.lastInserts.set(table, Math.floor(Date.now() / 1000));
        this.rowsWritten.inc({ table: metricTable(table) }, rows.length);
        this.batchRows.observe({ table: metricTable(table) }, rows.length);
        return;
      } catch (err) {
        const kind = classify(err);
        if (kind === 'rejected' || (kind === 'split' && !splitIsTransient)) {
          throw new RowsRejectedError(String(err).slice(0, 500), kind);
        }
        await this.backoff('insert failed, retrying', table, rows.length, attempt, err);
      }
    }
  }

  /** Hands rejected rows to onRejected, retrying (as inserts are) until it succeeds or the writer stops. */
  private async deadLetter(table: string, rows: object[], reason: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      if (this.stopped) throw new WriterStoppedError('writer stopped while dead-lettering');
      try {
        await this.opts.onRejected(table, rows, reason);
        this.rejected.inc({ table: metricTable(table) }, rows.length);
        this.opts.logger.warn('rows rejected by ClickHouse, dead-lettered', { table, rows: rows.length, reason });
        return;
      } catch (err) {
        await this.backoff('dead-lettering rejected rows failed, retrying', table, rows.length, attempt, err);
      }
    }
  }

  /** Capped exponential backoff with jitter (half to all of the step). */
  private async backoff(what: string, table: string, rows: number, attempt: number, err: unknown): Promise<void> {
    this.retries.inc({ table: metricTable(table) });
    const delay = retryDelayMs(attempt, this.opts.retryMaxMs);
    this.opts.logger.warn(what, { table, rows, attempt, delay_ms: Math.round(delay), err: String(err) });
    await new Promise((r) => setTimeout(r, delay));
  }
}
