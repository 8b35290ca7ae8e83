import type { Request, RequestHandler } from 'express';
import type { Check } from '@telemetry/contract';
import {
  bad,
  MONITOR_ID,
  monitorIdOf,
  rangeParams,
  rejectUnknown,
  single,
  statusesParam,
  toIsoSeconds,
} from './params.js';
import {
  StoreUnavailableError,
  sqlIdentifier,
  sqlNumber,
  sqlString,
  sqlStringList,
  type ClickHouseReader,
  type Logger,
} from '@telemetry/platform';

export interface ChecksQuery {
  monitorId: string;
  /** Page size; null for no limit (the export). */
  limit: number | null;
  order: 'asc' | 'desc';
  from: number | undefined;
  to: number | undefined;
  statuses: string[];
  cursor: { t: number; id: string } | undefined;
}

const KNOWN_PARAMS = new Set(['limit', 'order', 'from', 'to', 'status', 'cursor']);

export function encodeCursor(t: number, id: string): string {
  return Buffer.from(JSON.stringify([t, id])).toString('base64url');
}

function decodeCursor(raw: string): { t: number; id: string } {
  try {
    if (raw.length > 400) throw new Error('too long');
    const v = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(v) &&
      v.length === 2 &&
      Number.isInteger(v[0]) &&
      (v[0] as number) >= 0 &&
      typeof v[1] === 'string' &&
      MONITOR_ID.test(v[1])
    ) {
      return { t: v[0] as number, id: v[1] };
    }
  } catch {
    // fall through
  }
  throw bad('cursor', 'is not a cursor this service issued');
}

export function parseChecksQuery(req: Request, defaultLimit: number, maxLimit: number): ChecksQuery {
  const monitorId = monitorIdOf(req);
  rejectUnknown(req, KNOWN_PARAMS);
  const limitRaw = single(req, 'limit');
  let limit = defaultLimit;
  if (limitRaw !== undefined) {
    if (!/^\d{1,6}$/.test(limitRaw) || Number(limitRaw) < 1 || Number(limitRaw) > maxLimit) {
      throw bad('limit', `must be an integer from 1 to ${maxLimit}`);
    }
    limit = Number(limitRaw);
  }
  const orderRaw = single(req, 'order') ?? 'desc';
  if (orderRaw !== 'asc' && orderRaw !== 'desc') throw bad('order', 'must be asc or desc');
  const { from, to } = rangeParams(req);
  const cursorRaw = single(req, 'cursor');
  return {
    monitorId,
    limit,
    order: orderRaw,
    from,
    to,
    statuses: statusesParam(req),
    cursor: cursorRaw === undefined ? undefined : decodeCursor(cursorRaw),
  };
}

/**
 * The documented read pattern for checks: the sort key is (monitor_id, created_at, id),
 * so a monitor's rows are contiguous, and `LIMIT 1 BY id` hides duplicate rows that
 * ReplacingMergeTree has not merged yet.
 */
export function checksSql(database: string, q: ChecksQuery): string {
  const dir = q.order === 'desc' ? 'DESC' : 'ASC';
  const cmp = q.order === 'desc' ? '<' : '>';
  const where = [`monitor_id = ${sqlString(q.monitorId)}`];
  if (q.from !== undefined) where.push(`created_at >= toDateTime(${sqlNumber(q.from)})`);
  if (q.to !== undefined) where.push(`created_at < toDateTime(${sqlNumber(q.to)})`);
  if (q.statuses.length > 0) where.push(`status IN ${sqlStringList(q.statuses)}`);
  if (q.cursor) {
    const t = `toDateTime(${sqlNumber(q.cursor.t)})`;
    where.push(`(created_at ${cmp} ${t} OR (created_at = ${t} AND id ${cmp} ${sqlString(q.cursor.id)}))`);
  }
  return `SELECT id, monitor_id, status, response_time, status_code, error, toUnixTimestamp(created_at) AS ts
    FROM ${sqlIdentifier(database)}.checks
    WHERE ${where.join(' AND ')}
    ORDER BY created_at ${dir}, id ${dir}
    LIMIT 1 BY id${
      q.limit === null
        ? ''
        : `
    LIMIT ${sqlNumber(q.limit + 1)}` /* one more: is there a next page? */
    }`;
}

/** A row of checksSql's result. */
export interface CheckRow {
  id: string;
  monitor_id: string;
  status: string;
  response_time: number;
  status_code: number;
  error: string;
  ts: number | string;
}

/** The seed's check object (section 2.2) from a row: numbers as numbers, time as `YYYY-MM-DDThh:mm:ssZ`. */
export function rowToCheck(r: CheckRow): Check {
  return {
    id: r.id,
    monitor_id: r.monitor_id,
    status: r.status as Check['status'],
    // Float64 printed by ClickHouse 18.16 shows binary noise (1.3599999999999999): µs is plenty.
    response_time: Math.round(Number(r.response_time) * 1000) / 1000,
    status_code: Number(r.status_code),
    error: (r.error || null) as Check['error'],
    created_at: toIsoSeconds(Number(r.ts)),
  };
}

export interface ChecksRouteDeps {
  reader: ClickHouseReader;
  database: string;
  logger: Logger;
  defaultLimit: number;
  maxLimit: number;
  queryTimeoutMs: number;
}

export function checksRoute(deps: ChecksRouteDeps): RequestHandler {
  return async (req, res) => {
    const q = parseChecksQuery(req, deps.defaultLimit, deps.maxLimit);
    let rows: CheckRow[];
    try {
      rows = (await deps.reader.query<CheckRow>(checksSql(deps.database, q), AbortSignal.timeout(deps.queryTimeoutMs)))
        .data;
    } catch (err) {
      deps.logger.warn('checks query failed', { request_id: req.id, err: String(err) });
      throw new StoreUnavailableError();
    }
    const limit = q.limit ?? rows.length;
    const page = rows.slice(0, limit);
    const data: Check[] = page.map(rowToCheck);
    const lastRow = page[page.length - 1];
    const next = rows.length > limit && lastRow ? encodeCursor(Number(lastRow.ts), lastRow.id) : null;
    if (next) {
      const params = new URLSearchParams(req.query as Record<string, string>);
      params.set('cursor', next);
      res.setHeader('Link', `<${req.baseUrl}${req.path}?${params.toString()}>; rel="next"`);
    }
    res.json({ success: true, data, next_cursor: next });
  };
}
