import type { Request, RequestHandler } from 'express';
import { cursorParam, limitParam, rejectUnknown, sendJsonPage, sendPage, single, bad } from '@telemetry/platform';
import { checksSql, rowToCheck, type CheckHistoryRow, type ChecksQuery } from '@telemetry/store';
import {
  cacheControlFor,
  isTimeIdCursor,
  monitorIdOf,
  rangeParams,
  readRows,
  statusesParam,
  tenantOf,
  type ReadDeps,
} from './params.js';
import type { CheckTail } from './check-tail.js';
import type { PageCache, PageItem } from './page-cache.js';

const KNOWN_PARAMS = new Set(['limit', 'order', 'from', 'to', 'status', 'cursor']);

export function parseChecksQuery(req: Request, defaultLimit: number, maxLimit: number): Omit<ChecksQuery, 'tenantId'> {
  const monitorId = monitorIdOf(req);
  rejectUnknown(req, KNOWN_PARAMS);
  const limit = limitParam(req, maxLimit, defaultLimit);
  const orderRaw = single(req, 'order') ?? 'desc';
  if (orderRaw !== 'asc' && orderRaw !== 'desc') throw bad('order', 'must be asc or desc');
  const { from, to } = rangeParams(req);
  const cursor = cursorParam(req, isTimeIdCursor);
  return {
    monitorId,
    limit,
    order: orderRaw,
    from,
    to,
    statuses: statusesParam(req),
    cursor: cursor && { t: cursor[0], id: cursor[1] },
  };
}

export interface ChecksRouteDeps extends ReadDeps {
  /** Answers first pages and small ranges from memory; undefined: ClickHouse only. */
  tail: Pick<CheckTail, 'page'> | undefined;
  /** Keeps deep pages (and the ones after them) for a short time; undefined: none. */
  pages: Pick<PageCache, 'get' | 'begin' | 'store' | 'abandon'> | undefined;
  defaultLimit: number;
  maxLimit: number;
}

const cursorOf = (r: { t: number; id: string }): [number, string] => [r.t, r.id];
const jsonOf = (r: { json: string }): string => r.json;

function pageItem(r: CheckHistoryRow): PageItem {
  return { t: Number(r.ts), id: r.id, json: JSON.stringify(rowToCheck(r)) };
}

export function checksRoute(deps: ChecksRouteDeps): RequestHandler {
  return async (req, res) => {
    const q = { ...parseChecksQuery(req, deps.defaultLimit, deps.maxLimit), tenantId: tenantOf(res) };
    const send = (rows: readonly PageItem[]) =>
      sendJsonPage(req, res, rows, q.limit ?? rows.length, cursorOf, jsonOf, cacheControlFor(q.to));
    const hot = await deps.tail?.page(q);
    if (hot) {
      sendPage(req, res, hot, q.limit ?? hot.length, cursorOf, (r) => r.check, cacheControlFor(q.to));
      return;
    }
    const kept = deps.pages?.get(q);
    if (kept) {
      send(kept);
      return;
    }
    const fill = deps.pages?.begin(q);
    let rows: CheckHistoryRow[];
    try {
      rows = await readRows<CheckHistoryRow>(deps, req, 'checks query', () =>
        checksSql(deps.database, deps.layout, fill ? { ...q, limit: fill.limit } : q),
      );
    } catch (err) {
      if (fill) deps.pages!.abandon(fill);
      throw err;
    }
    const items = rows.map(pageItem);
    if (fill) deps.pages!.store(fill, items);
    send(fill && q.limit !== null ? items.slice(0, q.limit + 1) : items);
  };
}
