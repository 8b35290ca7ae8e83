import { expect } from 'chai';
import { Registry } from 'prom-client';
import { DEFAULT_TENANT } from '@telemetry/contract';
import { systemClock, type Clock } from '@telemetry/platform';
import type { ChecksQuery } from '@telemetry/store';
import { PageCache, type PageItem } from '../../services/query-service/src/page-cache.js';

/**
 * The page cache keeps a deep page and the pages read ahead under the cursors a client
 * following next_cursor sends; a check arriving at or below a kept page's cursor drops it,
 * a read during which one arrives is not kept, and pages expire and stay within the bound.
 */

const base = 1_790_000_000;
/** One monitor's history, newest first, one check a second. */
const history: PageItem[] = Array.from({ length: 100 }, (_, i) => {
  const t = base + 100 - i;
  return { t, id: `c${String(i).padStart(3, '0')}`, json: `{"n":${i}}` };
});

function q(cursor: PageItem, limit = 10, o: Partial<ChecksQuery> = {}): ChecksQuery {
  return {
    tenantId: DEFAULT_TENANT,
    monitorId: 'm1',
    limit,
    order: 'desc',
    from: undefined,
    to: undefined,
    statuses: [],
    cursor: { t: cursor.t, id: cursor.id },
    ...o,
  };
}

/** What ClickHouse answers: the rows after the cursor, limit + 1. */
function read(query: ChecksQuery, limit: number): PageItem[] {
  const i = history.findIndex((r) => r.t === query.cursor!.t && r.id === query.cursor!.id);
  return history.slice(i + 1, i + 1 + limit + 1);
}

function cache(
  o: {
    maxChecks?: number;
    ttlMs?: number;
    readAhead?: number;
    settled?: boolean;
    caughtUp?: boolean;
    clock?: Clock;
  } = {},
) {
  return new PageCache({
    maxChecks: o.maxChecks ?? 10_000,
    ttlMs: o.ttlMs ?? 10_000,
    readAhead: o.readAhead ?? 2,
    settled: () => o.settled ?? true,
    caughtUp: () => o.caughtUp ?? true,
    registry: new Registry(),
    clock: o.clock,
  });
}

function fillFrom(pages: PageCache, query: ChecksQuery): PageItem[] {
  const fill = pages.begin(query)!;
  const rows = read(query, fill.limit);
  pages.store(fill, rows);
  return rows;
}

describe('PageCache: deep pages kept by cursor', () => {
  it('keeps the page read and the pages after it, each as ClickHouse answers it', () => {
    const pages = cache({ readAhead: 2 });
    const first = q(history[19]!);
    expect(pages.get(first)).to.equal(undefined);
    const fill = pages.begin(first)!;
    expect(fill.limit).to.equal(30);
    pages.store(fill, read(first, fill.limit));
    // Follow next_cursor (the last row of each page) three pages: each equals a fresh read.
    let query = first;
    for (let page = 0; page < 3; page++) {
      const got = pages.get(query);
      expect(got, `page ${page}`).to.deep.equal(read(query, 10));
      query = q(got![9]!);
    }
    // The fourth was not read ahead.
    expect(pages.get(query)).to.equal(undefined);
  });

  it('keeps the last pages of a history whole, and not other limits or filters', () => {
    const pages = cache({ readAhead: 5 });
    fillFrom(pages, q(history[74]!));
    expect(pages.get(q(history[74]!))).to.deep.equal(read(q(history[74]!), 10));
    const lastPage = q(history[94]!);
    expect(pages.get(lastPage)).to.deep.equal(history.slice(95));
    expect(pages.get(q(history[74]!, 11))).to.equal(undefined);
    expect(pages.get(q(history[74]!, 10, { statuses: ['down'] }))).to.equal(undefined);
    expect(pages.get(q(history[74]!, 10, { order: 'asc' }))).to.equal(undefined);
  });

  it('drops the pages a check arriving at or below their cursor could change, and keeps the others', () => {
    const pages = cache({ readAhead: 2 });
    fillFrom(pages, q(history[19]!));
    // A check newer than every cursor changes nothing.
    pages.onCheck(DEFAULT_TENANT, 'm1', base + 1000);
    expect(pages.get(q(history[19]!))).to.not.equal(undefined);
    // One between the third page's cursor and the second's drops the first two, not the third (all below it).
    pages.onCheck(DEFAULT_TENANT, 'm1', history[35]!.t);
    expect(pages.get(q(history[19]!))).to.equal(undefined);
    expect(pages.get(q(history[29]!))).to.equal(undefined);
    expect(pages.get(q(history[39]!))).to.deep.equal(read(q(history[39]!), 10));
    // Another monitor's check changes nothing here.
    pages.onCheck(DEFAULT_TENANT, 'm2', base);
    expect(pages.get(q(history[39]!))).to.not.equal(undefined);
  });

  it('keeps nothing of a read during which a check of the monitor arrived, or while one is on its way', () => {
    const pages = cache();
    const query = q(history[19]!);
    const fill = pages.begin(query)!;
    pages.onCheck(DEFAULT_TENANT, 'm1', base + 1000);
    pages.store(fill, read(query, fill.limit));
    expect(pages.get(query)).to.equal(undefined);
    expect(cache({ settled: false }).begin(query)).to.equal(undefined);
    // Nor is a kept page answered while the tail's reader is behind the consumer's commits.
    let caughtUp = true;
    const behind = new PageCache({
      maxChecks: 1000,
      ttlMs: 10_000,
      readAhead: 0,
      settled: () => true,
      caughtUp: () => caughtUp,
      registry: new Registry(),
    });
    fillFrom(behind, query);
    caughtUp = false;
    expect(behind.get(query)).to.equal(undefined);
    caughtUp = true;
    expect(behind.get(query)).to.deep.equal(read(query, 10));
    // A failed read leaves nothing behind.
    const failed = pages.begin(query)!;
    pages.abandon(failed);
    expect(pages.get(query)).to.equal(undefined);
  });

  it('keeps pages for ttlMs, and at most maxChecks checks (least recently read first)', () => {
    let now = 1_000_000;
    const clock: Clock = { ...systemClock, now: () => now };
    const pages = cache({ ttlMs: 5000, readAhead: 0, maxChecks: 25, clock });
    fillFrom(pages, q(history[9]!));
    fillFrom(pages, q(history[29]!));
    expect(pages.stats()).to.deep.equal({ pages: 2, checks: 22 });
    pages.get(q(history[9]!));
    fillFrom(pages, q(history[49]!));
    // The page of cursor 29 was read least recently: it went.
    expect(pages.get(q(history[29]!))).to.equal(undefined);
    expect(pages.get(q(history[9]!))).to.not.equal(undefined);
    expect(pages.stats().checks).to.be.at.most(25);
    now += 5000;
    expect(pages.get(q(history[9]!))).to.equal(undefined);
  });

  it('keeps only newest-first pages with a cursor', () => {
    const pages = cache();
    expect(pages.begin({ ...q(history[0]!), cursor: undefined })).to.equal(undefined);
    expect(pages.begin(q(history[0]!, 10, { order: 'asc' }))).to.equal(undefined);
    expect(pages.begin(q(history[0]!, 10, { locations: ['eu'] }))).to.equal(undefined);
  });
});
