import { Gauge, type Counter, type Registry } from 'prom-client';
import type { Check } from '@telemetry/contract';
import {
  counter,
  sleepOn,
  systemClock,
  type Clock,
  type Component,
  type Logger,
  type TopicRecord,
} from '@telemetry/platform';
import { rowToCheck, type CheckHistoryRow, type CheckRow, type ChecksQuery, type Decoded } from '@telemetry/store';

/**
 * The hot tail (docs/operations.md, "The hot tail"): the newest checks of each monitor in
 * memory, fed from the check-results topic, answering first pages and small ranges
 * without ClickHouse. What it answers is exactly what ClickHouse answers once the same
 * checks are there (same rows, order and cursors); it may be fresher (a check is
 * readable once it is in Kafka).
 *
 * Per monitor it holds the newest `perMonitor` checks, in (created_at, id) order, and a
 * promise: every check of the monitor at or above its lowest key is here (or, when the
 * monitor has fewer checks, every check). A page is answered only when that promise
 * covers it; anything else goes to ClickHouse.
 *
 * No gap, no duplicate: a monitor is loaded from ClickHouse (its newest checks) merged with
 * what the reader holds from the stream consumer's committed offsets on. Everything
 * before a committed offset is in ClickHouse (the consumer commits after its insert), and
 * the reader keeps every check it read at or after the committed offsets (`buffer`), so
 * the union misses nothing; ids already held are skipped, which also hides the checks
 * Kafka delivers twice.
 */

/** A check as the tail keeps it: its sort key and the API's object. */
export interface TailCheck {
  t: number;
  id: string;
  status: string;
  check: Check;
}

/** What the tail tells about the checks it reads (the page cache, page-cache.ts). */
export interface TailWatcher {
  onCheck(tenantId: string, monitorId: string, t: number): void;
  clear(): void;
}

/** What the tail needs of the topic reader (TopicReader in @telemetry/platform). */
export interface TailReader {
  positions(): readonly number[];
  committedOffsets(partitions: number): Promise<number[]>;
  earliestOffsets(): Promise<number[]>;
}

export interface CheckTailOptions {
  /** The newest `limit` checks of a monitor from ClickHouse, newest first (checksSql). */
  load: (tenantId: string, monitorId: string, limit: number) => Promise<CheckHistoryRow[]>;
  decode: (value: Buffer | null) => Decoded<CheckRow>;
  perMonitor: number;
  maxMonitors: number;
  /** Checks read but maybe not yet in ClickHouse that are kept for loads; more drop the oldest. */
  maxBuffered: number;
  /** How often the stream consumer's committed offsets are read. */
  committedEveryMs: number;
  /** No answers from the tail when the reader or the offsets are older than this. */
  staleAfterMs: number;
  logger: Logger;
  registry: Registry;
  clock?: Clock;
}

/** (t, id) order, as ClickHouse's ORDER BY created_at, id (ids are ASCII: byte order). */
function cmp(at: number, aid: string, bt: number, bid: string): number {
  return at !== bt ? at - bt : aid < bid ? -1 : aid > bid ? 1 : 0;
}

/** One monitor's newest checks, ascending. */
class MonitorTail {
  readonly rows: TailCheck[] = [];
  private readonly ids = new Set<string>();
  /** True while the monitor has no check below rows[0] (it had fewer than the cap). */
  complete = true;

  constructor(private readonly cap: number) {}

  add(c: TailCheck): void {
    if (this.ids.has(c.id)) return;
    const rows = this.rows;
    const low = rows[0];
    // Below the lowest kept check of a full tail: ClickHouse has it; the tail promises nothing there.
    if (!this.complete && low && cmp(c.t, c.id, low.t, low.id) < 0) return;
    let lo = 0;
    let hi = rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cmp(rows[mid]!.t, rows[mid]!.id, c.t, c.id) < 0) lo = mid + 1;
      else hi = mid;
    }
    rows.splice(lo, 0, c);
    this.ids.add(c.id);
    if (rows.length > this.cap) {
      this.ids.delete(rows.shift()!.id);
      this.complete = false;
    }
  }

  /**
   * The rows of `q` (limit + 1 at most, in q's order), or undefined when rows below the
   * lowest kept check could belong to the answer.
   */
  page(q: ChecksQuery): TailCheck[] | undefined {
    const rows = this.rows;
    const want = q.limit === null ? Infinity : q.limit + 1;
    const statuses = q.statuses.length > 0 ? new Set(q.statuses) : undefined;
    const low = rows[0];
    // Does the query exclude everything below the lowest kept check?
    const covered =
      this.complete ||
      low === undefined ||
      (q.from !== undefined && q.from > low.t) ||
      (q.order === 'asc' && q.cursor !== undefined && cmp(q.cursor.t, q.cursor.id, low.t, low.id) >= 0);
    const fits = (r: TailCheck): boolean =>
      (q.from === undefined || r.t >= q.from) &&
      (q.to === undefined || r.t < q.to) &&
      (statuses === undefined || statuses.has(r.status));
    const out: TailCheck[] = [];
    if (q.order === 'desc') {
      for (let i = rows.length - 1; i >= 0 && out.length < want; i--) {
        const r = rows[i]!;
        if (q.cursor && cmp(r.t, r.id, q.cursor.t, q.cursor.id) >= 0) continue;
        if (q.from !== undefined && r.t < q.from) break;
        if (fits(r)) out.push(r);
      }
      return out.length >= want || covered ? out : undefined;
    }
    if (!covered) return undefined;
    for (let i = 0; i < rows.length && out.length < want; i++) {
      const r = rows[i]!;
      if (q.cursor && cmp(r.t, r.id, q.cursor.t, q.cursor.id) <= 0) continue;
      if (q.to !== undefined && r.t >= q.to) break;
      if (fits(r)) out.push(r);
    }
    return out;
  }
}

interface Buffered {
  offset: number;
  key: string;
  check: TailCheck;
}

type Outcome = 'hit' | 'miss' | 'cold' | 'unready';

/** A decoded check row as the tail keeps it (the API's object built once, as rowToCheck builds it from ClickHouse). */
export function tailCheckOf(r: CheckRow): TailCheck {
  return {
    t: r.created_at,
    id: r.id,
    status: r.status,
    check: rowToCheck({
      id: r.id,
      monitor_id: r.monitor_id,
      status: r.status,
      response_time: r.response_time,
      status_code: r.status_code,
      error: r.error,
      location: r.location,
      tls_days_left: r.tls_days_left,
      detail: r.detail,
      timings: r.timings,
      screenshot: r.screenshot,
      ts: r.created_at,
    }),
  };
}

export class CheckTail implements Component {
  readonly name = 'check-tail';
  readonly essential = false;
  private readonly monitors = new Map<string, MonitorTail>();
  private readonly loads = new Map<string, Promise<MonitorTail | undefined>>();
  /** Per partition, the checks read at or after `bufferStart` (decodable ones), in offset order. */
  private buffer: Buffered[][] = [];
  private bufferStart: number[] = [];
  private buffered = 0;
  /** The stream consumer's committed offsets (its start offsets where it has none), and when read. */
  private committed: number[] | undefined;
  private committedAt = -Infinity;
  private startOffsets: number[] = [];
  /** Snapshots of `committed` that loads in flight rely on (the buffer is kept back to them). */
  private readonly pinned = new Set<number[]>();
  private generation = 0;
  private stopped = false;
  private refresher: Promise<void> | undefined;
  private reader: TailReader | undefined;
  private watcher: TailWatcher | undefined;
  private readonly clock: Clock;
  private readonly requests: Counter<'result'>;
  private readonly loadsDone: Counter<'result'>;

  constructor(private readonly o: CheckTailOptions) {
    this.clock = o.clock ?? systemClock;
    this.requests = counter(
      o.registry,
      'query_check_tail_requests_total',
      'check history pages by where they were answered: hit (the tail), miss (ClickHouse: outside what the tail holds), cold (ClickHouse: monitor not loaded), unready (ClickHouse: tail not caught up)',
      ['result'],
    );
    this.loadsDone = counter(
      o.registry,
      'query_check_tail_loads_total',
      'monitors loaded into the tail from ClickHouse, by result (ok, failed, dropped)',
      ['result'],
    );
    const gauge = (name: string, help: string, value: () => number) =>
      new Gauge({
        name,
        help,
        registers: [o.registry],
        collect() {
          this.set(value());
        },
      });
    gauge('query_check_tail_monitors', 'monitors held in the tail', () => this.monitors.size);
    gauge('query_check_tail_checks', 'checks held in the tail', () => this.checksHeld());
    gauge(
      'query_check_tail_buffered',
      'checks read but maybe not yet in ClickHouse, kept for loads',
      () => this.buffered,
    );
  }

  /** The reader is bound late: it calls back into the tail (startAt, onStart, onRecords). */
  attach(reader: TailReader): void {
    this.reader = reader;
  }

  /** Told of every check read, and of restarts. */
  watch(watcher: TailWatcher): void {
    this.watcher = watcher;
  }

  /**
   * True when every check of the monitor at or below `t` that the stream consumer has
   * not yet committed (so maybe not yet in ClickHouse) has been read and none is: a
   * ClickHouse read of those checks is complete, and any check arriving later is told to
   * the watcher. False when the tail cannot tell (not caught up, or it dropped checks).
   */
  settled(tenantId: string, monitorId: string, t: number): boolean {
    const committed = this.committed;
    if (!committed || !this.ready()) return false;
    if (!committed.every((c, p) => this.bufferStart[p]! <= c)) return false;
    const key = tailKey(tenantId, monitorId);
    return this.buffer.every((buf, p) => {
      const floor = committed[p]!;
      for (let i = buf.length - 1; i >= 0 && buf[i]!.offset >= floor; i--) {
        const b = buf[i]!;
        if (b.key === key && b.check.t <= t) return false;
      }
      return true;
    });
  }

  start(): Promise<void> {
    this.refresher = this.refreshCommitted();
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.refresher;
  }

  health(): boolean {
    return this.ready();
  }

  /** Where the reader starts: the stream consumer's committed offsets, else the earliest kept. */
  async startAt(partitions: number): Promise<number[]> {
    const reader = this.requireReader();
    const [committed, earliest] = await Promise.all([reader.committedOffsets(partitions), reader.earliestOffsets()]);
    return Array.from({ length: partitions }, (_, p) => Math.max(committed[p] ?? -1, earliest[p] ?? 0));
  }

  /** The reader (re)started: nothing held before continues. */
  onStart(offsets: readonly number[]): void {
    this.generation++;
    this.monitors.clear();
    this.loads.clear();
    this.startOffsets = [...offsets];
    this.bufferStart = [...offsets];
    this.buffer = offsets.map(() => []);
    this.buffered = 0;
    this.committed = [...offsets];
    this.committedAt = this.clock.now();
    this.watcher?.clear();
  }

  onRecords(partition: number, records: TopicRecord[]): void {
    const buf = this.buffer[partition];
    if (!buf) return;
    for (const rec of records) {
      const d = this.o.decode(rec.value);
      // What the consumer cannot decode never reaches ClickHouse (dead letters): nor the tail.
      if (!d.ok) continue;
      const key = tailKey(d.row.tenant_id, d.row.monitor_id);
      const check = tailCheckOf(d.row);
      buf.push({ offset: rec.offset, key, check });
      this.buffered++;
      this.monitors.get(key)?.add(check);
      this.watcher?.onCheck(d.row.tenant_id, d.row.monitor_id, check.t);
    }
    while (this.buffered > this.o.maxBuffered) this.dropOldest();
  }

  /**
   * The page of `q` from the tail, loading the monitor first when it is cold and the
   * request asks for its newest checks; undefined: ask ClickHouse.
   */
  async page(q: ChecksQuery): Promise<TailCheck[] | undefined> {
    if (!this.ready()) return this.count('unready');
    const key = tailKey(q.tenantId, q.monitorId);
    let m = this.monitors.get(key);
    if (m) {
      // Most recently used last: the first entries are the ones dropped when full.
      this.monitors.delete(key);
      this.monitors.set(key, m);
    } else {
      if (q.order !== 'desc' || q.cursor !== undefined) return this.count('cold');
      m = await this.load(q.tenantId, q.monitorId);
      if (!m) return this.count('cold');
    }
    const rows = m.page(q);
    this.requests.inc({ result: rows ? 'hit' : 'miss' });
    return rows;
  }

  /**
   * Does the tail hold the check, saying it has a screenshot? The check can be served from
   * here before the stream consumer has stored the screenshot (another topic, another
   * batch): the screenshot route then waits for it a little (screenshots.route.ts).
   */
  announcesScreenshot(tenantId: string, monitorId: string, checkId: string): boolean {
    const m = this.monitors.get(tailKey(tenantId, monitorId));
    return m?.rows.some((r) => r.id === checkId && r.check.screenshot !== null) ?? false;
  }

  /** What the tail holds now (for tests and /metrics). */
  stats(): { monitors: number; checks: number; buffered: number; ready: boolean } {
    return { monitors: this.monitors.size, checks: this.checksHeld(), buffered: this.buffered, ready: this.ready() };
  }

  private count(result: Outcome): undefined {
    this.requests.inc({ result });
    return undefined;
  }

  /** Summed when asked (a scrape, a test): at most TAIL_MAX_MONITORS entries. */
  private checksHeld(): number {
    let n = 0;
    for (const m of this.monitors.values()) n += m.rows.length;
    return n;
  }

  /** Caught up: the reader has read everything the consumer committed, read recently. */
  private ready(): boolean {
    const committed = this.committed;
    const reader = this.reader;
    if (!committed || !reader || this.stopped) return false;
    const now = this.clock.now();
    if (now - this.committedAt > this.o.staleAfterMs) return false;
    const at = reader.positions();
    return at.length === committed.length && committed.every((c, p) => at[p]! >= c);
  }

  private load(tenantId: string, monitorId: string): Promise<MonitorTail | undefined> {
    const key = tailKey(tenantId, monitorId);
    let pending = this.loads.get(key);
    if (!pending) {
      pending = this.loadOnce(tenantId, monitorId, key).finally(() => this.loads.delete(key));
      this.loads.set(key, pending);
    }
    return pending;
  }

  private async loadOnce(tenantId: string, monitorId: string, key: string): Promise<MonitorTail | undefined> {
    const generation = this.generation;
    const snapshot = this.committed;
    if (!snapshot) return undefined;
    this.pinned.add(snapshot);
    let rows: CheckHistoryRow[];
    try {
      rows = await this.o.load(tenantId, monitorId, this.o.perMonitor);
    } catch (err) {
      this.loadsDone.inc({ result: 'failed' });
      this.o.logger.debug('tail load failed', { monitor_id: monitorId, err: String(err) });
      return undefined;
    } finally {
      this.pinned.delete(snapshot);
    }
    // Everything before the snapshot was in ClickHouse when it answered; everything read
    // since must still be held, or the merge could miss a check.
    if (generation !== this.generation || !snapshot.every((c, p) => this.bufferStart[p]! <= c)) {
      this.loadsDone.inc({ result: 'dropped' });
      return undefined;
    }
    const m = new MonitorTail(this.o.perMonitor);
    for (const r of rows) m.add({ t: Number(r.ts), id: r.id, status: r.status, check: rowToCheck(r) });
    // ClickHouse gave its newest `perMonitor`: older checks may exist below them.
    m.complete = rows.length < this.o.perMonitor;
    this.buffer.forEach((buf, p) => {
      for (const b of buf) if (b.key === key && b.offset >= snapshot[p]!) m.add(b.check);
    });
    this.monitors.set(key, m);
    while (this.monitors.size > this.o.maxMonitors) this.monitors.delete(this.monitors.keys().next().value!);
    this.loadsDone.inc({ result: 'ok' });
    return m;
  }

  /** Reads the committed offsets every `committedEveryMs`, and lets go of what they cover. */
  private async refreshCommitted(): Promise<void> {
    while (!this.stopped) {
      const reader = this.reader;
      const parts = this.startOffsets.length;
      if (reader && parts > 0) {
        try {
          const generation = this.generation;
          const got = await reader.committedOffsets(parts);
          if (generation === this.generation) {
            // No commit yet: ClickHouse holds what came before the reader's start.
            this.committed = got.map((c, p) => (c >= 0 ? c : this.startOffsets[p]!));
            this.committedAt = this.clock.now();
            this.trim();
          }
        } catch (err) {
          this.o.logger.debug('committed offsets not read', { err: String(err) });
        }
      }
      await sleepOn(this.clock, this.o.committedEveryMs);
    }
  }

  /** Drops buffered checks below every committed snapshot still in use. */
  private trim(): void {
    const committed = this.committed;
    if (!committed) return;
    this.buffer.forEach((buf, p) => {
      let floor = committed[p]!;
      for (const s of this.pinned) floor = Math.min(floor, s[p]!);
      let n = 0;
      while (n < buf.length && buf[n]!.offset < floor) n++;
      if (n > 0) {
        buf.splice(0, n);
        this.buffered -= n;
      }
      this.bufferStart[p] = Math.max(this.bufferStart[p]!, floor);
    });
  }

  /** The buffer is full (the consumer is far behind): the oldest check goes, and loads wait. */
  private dropOldest(): void {
    let p = -1;
    this.buffer.forEach((b, i) => {
      if (b.length > 0 && (p < 0 || b.length > this.buffer[p]!.length)) p = i;
    });
    if (p < 0) return;
    const gone = this.buffer[p]!.shift()!;
    this.buffered--;
    this.bufferStart[p] = gone.offset + 1;
  }

  private requireReader(): TailReader {
    if (!this.reader) throw new Error('the check tail has no reader');
    return this.reader;
  }
}

function tailKey(tenantId: string, monitorId: string): string {
  return `${tenantId}\u0000${monitorId}`;
}
