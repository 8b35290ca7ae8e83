import type { Request, RequestHandler } from 'express';
import type { Check } from '@telemetry/contract';
import { cursorParam, limitParam, rejectUnknown, sendPage, single, bad } from '@telemetry/platform';
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
  defaultLimit: number;
  maxLimit: number;
}

export function checksRoute(deps: ChecksRouteDeps): RequestHandler {
  return async (req, res) => {
    const q = { ...parseChecksQuery(req, deps.defaultLimit, deps.maxLimit), tenantId: tenantOf(res) };
    const hot = await deps.tail?.page(q);
    if (hot) {
      sendPage(
        req,
        res,
        hot,
        q.limit ?? hot.length,
        (r) => [r.t, r.id],
        (r) => r.check,
        cacheControlFor(q.to),
      );
      return;
    }
    const rows = await readRows<CheckHistoryRow>(deps, req, 'checks query', () =>
      checksSql(deps.database, deps.layout, q),
    );
    sendPage(
      req,
      res,
      rows,
      q.limit ?? rows.length,
      (r) => [Number(r.ts), r.id],
      (r): Check => rowToCheck(r),
      cacheControlFor(q.to),
    );
  };
}
