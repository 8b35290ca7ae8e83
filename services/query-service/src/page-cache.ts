import type { Counter, Registry } from 'prom-client';
import { counter, systemClock, type Clock } from '@telemetry/platform';
import type { ChecksQuery } from '@telemetry/store';

/**
 * Deep pages (docs/operations.md, "The page cache"): history pages below the hot tail,
 * kept for a short time keyed by their cursor. A page answered from ClickHouse reads
 * `readAhead` pages more, kept under the cursors a client following `next_cursor` sends.
 *
 * Only newest-first pages with a cursor are kept: what they answer lies below the cursor,
 * where checks arrive only late. The hot tail's reader sees every check on its way to
 * ClickHouse (`onCheck`): one at or below a kept page's cursor drops the monitor's pages
 * it could change, and a page read while such a check is still on its way (`settled`
 * false: read, not yet committed by the stream consumer) is not kept. So a kept page is
 * what ClickHouse answers, except for retention, which drops checks whole days at a
 * time: a kept page may show them for at most `ttlMs` more.
 */

/** A check of a page: its sort key and the API object's JSON. */
export interface PageItem {
  t: number;
  id: string;
  json: string;
}

export interface PageCacheOptions {
  /** Checks kept in all (the items of every page); the least recently read pages go first. */
  maxChecks: number;
  /** How long a page is kept. */
  ttlMs: number;
  /** Pages read ahead of a page answered from ClickHouse. */
  readAhead: number;
  /** False while a check of the monitor at or below `t` may be on its way to ClickHouse (or the tail cannot tell). */
  settled: (tenantId: string, monitorId: string, t: number) => boolean;
  /** False while the tail's reader is behind the stream consumer's commits: checks it has not seen may be in ClickHouse. */
  caughtUp: () => boolean;
  registry: Registry;
  clock?: Clock;
}

interface Entry {
  key: string;
  monitor: string;
  /** The page's rows: limit + 1 at most (the last one says there is a next page). */
  items: PageItem[];
  /** Its cursor's time: a check at or below it may change the page. */
  hiT: number;
  expires: number;
}

/** A read in flight: kept only when no check of its monitor arrived meanwhile. */
export interface PageFill {
  readonly q: ChecksQuery;
  /** Rows to ask ClickHouse for (checksSql's limit): the page and the ones read ahead. */
  readonly limit: number;
  readonly monitor: string;
  /** A check of the monitor arrived while it was read: not kept. */
  spoiled: boolean;
}

export class PageCache {
  private readonly entries = new Map<string, Entry>();
  private readonly byMonitor = new Map<string, Set<string>>();
  /** Reads in flight per monitor (at most as many as requests in flight). */
  private readonly reading = new Map<string, Set<PageFill>>();
  private checks = 0;
  private readonly clock: Clock;
  private readonly requests: Counter<'result'>;

  constructor(private readonly o: PageCacheOptions) {
    this.clock = o.clock ?? systemClock;
    this.requests = counter(
      o.registry,
      'query_page_cache_requests_total',
      'history pages with a cursor below the hot tail, by result: hit (the page cache), miss (ClickHouse, the page and the ones after it then kept), unsettled (ClickHouse, not kept: a check of the monitor is on its way)',
      ['result'],
    );
  }

  /** The kept page of `q`, or undefined. */
  get(q: ChecksQuery): PageItem[] | undefined {
    const key = cacheKey(q);
    if (key === undefined) return undefined;
    const e = this.entries.get(key);
    if (!e || !this.o.caughtUp()) return undefined;
    if (e.expires <= this.clock.now()) {
      this.remove(e);
      return undefined;
    }
    // Most recently read last: the first entries go first.
    this.entries.delete(key);
    this.entries.set(key, e);
    this.requests.inc({ result: 'hit' });
    return e.items;
  }

  /** A read of `q` whose answer may be kept (store), or undefined: read `q` as it is. */
  begin(q: ChecksQuery): PageFill | undefined {
    if (cacheKey(q) === undefined || q.limit === null) return undefined;
    if (!this.o.settled(q.tenantId, q.monitorId, q.cursor!.t)) {
      this.requests.inc({ result: 'unsettled' });
      return undefined;
    }
    this.requests.inc({ result: 'miss' });
    const fill: PageFill = {
      q,
      limit: q.limit * (1 + this.o.readAhead),
      monitor: monitorKey(q.tenantId, q.monitorId),
      spoiled: false,
    };
    let fills = this.reading.get(fill.monitor);
    if (!fills) this.reading.set(fill.monitor, (fills = new Set()));
    fills.add(fill);
    return fill;
  }

  /** The read of `fill` failed: nothing is kept. */
  abandon(fill: PageFill): void {
    const fills = this.reading.get(fill.monitor);
    fills?.delete(fill);
    if (fills?.size === 0) this.reading.delete(fill.monitor);
  }

  /**
   * Keeps the page of `fill` and the pages after it from `rows` (its read's answer, in
   * order, at most fill.limit + 1), unless a check of the monitor arrived meanwhile.
   */
  store(fill: PageFill, rows: readonly PageItem[]): void {
    this.abandon(fill);
    if (fill.spoiled) return;
    const pageSize = fill.q.limit!;
    const exhausted = rows.length <= fill.limit;
    const expires = this.clock.now() + this.o.ttlMs;
    let cursor = fill.q.cursor!;
    for (let start = 0; start === 0 || start < rows.length; start += pageSize) {
      const items = rows.slice(start, start + pageSize + 1);
      // A page is known when it has its row after, or nothing follows the read.
      if (items.length <= pageSize && !exhausted) break;
      this.put({
        key: cacheKey({ ...fill.q, cursor })!,
        monitor: fill.monitor,
        items,
        hiT: cursor.t,
        expires,
      });
      if (items.length <= pageSize) break;
      const last = items[pageSize - 1]!;
      cursor = { t: last.t, id: last.id };
    }
  }

  /** The tail's reader read a check of the monitor (at `t`): pages it could change go, reads in flight are not kept. */
  onCheck(tenantId: string, monitorId: string, t: number): void {
    if (this.entries.size === 0 && this.reading.size === 0) return;
    const monitor = monitorKey(tenantId, monitorId);
    for (const fill of this.reading.get(monitor) ?? []) fill.spoiled = true;
    const keys = this.byMonitor.get(monitor);
    if (keys === undefined) return;
    for (const key of [...keys]) {
      const e = this.entries.get(key)!;
      if (t <= e.hiT) this.remove(e);
    }
  }

  /** Everything goes (the tail's reader restarted: what it saw before no longer counts). */
  clear(): void {
    this.entries.clear();
    this.byMonitor.clear();
    for (const fills of this.reading.values()) for (const fill of fills) fill.spoiled = true;
    this.checks = 0;
  }

  stats(): { pages: number; checks: number } {
    return { pages: this.entries.size, checks: this.checks };
  }

  private put(e: Entry): void {
    const old = this.entries.get(e.key);
    if (old) this.remove(old);
    if (e.items.length > this.o.maxChecks) return;
    this.entries.set(e.key, e);
    let keys = this.byMonitor.get(e.monitor);
    if (!keys) this.byMonitor.set(e.monitor, (keys = new Set()));
    keys.add(e.key);
    this.checks += e.items.length;
    while (this.checks > this.o.maxChecks) this.remove(this.entries.values().next().value!);
  }

  private remove(e: Entry): void {
    if (this.entries.get(e.key) !== e) return;
    this.entries.delete(e.key);
    this.checks -= e.items.length;
    const keys = this.byMonitor.get(e.monitor);
    keys?.delete(e.key);
    if (keys?.size === 0) this.byMonitor.delete(e.monitor);
  }
}

function monitorKey(tenantId: string, monitorId: string): string {
  return `${tenantId}\u0000${monitorId}`;
}

/** The key of a page that may be kept (newest first, with a cursor and a limit), else undefined. */
function cacheKey(q: ChecksQuery): string | undefined {
  if (q.order !== 'desc' || q.cursor === undefined || q.limit === null) return undefined;
  if (q.ids !== undefined || q.locations !== undefined) return undefined;
  return JSON.stringify([
    q.tenantId,
    q.monitorId,
    q.limit,
    q.from ?? null,
    q.to ?? null,
    q.statuses,
    q.cursor.t,
    q.cursor.id,
  ]);
}
