import type { Request, RequestHandler } from 'express';
import { CHECK_STATUSES, ID_PATTERN, LIMITS, type Check } from '@telemetry/contract';
import {
  AppError,
  StoreUnavailableError,
  sqlIdentifier,
  sqlNumber,
  sqlString,
  sqlStringList,
  type ClickHouseClient,
  type Logger,
} from '@telemetry/runtime';

export interface ChecksQuery {
  monitorId: string;
  limit: number;
  order: 'asc' | 'desc';
  from: number | undefined;
  to: number | undefined;
  statuses: string[];
  cursor: { t: number; id: string } | undefined;
}

const MONITOR_ID = new RegExp(ID_PATTERN);
const KNOWN_PARAMS = new Set(['limit', 'order', 'from', 'to', 'status', 'cursor']);

function bad(param: string, message: string): AppError {
  return new AppError('INVALID_PARAMETER', `${param}: ${message}`, { parameter: param });
}

function single(req: Request, name: string): string | undefined {
  const v = (req.query as Record<string, unknown>)[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw bad(name, 'give it once');
  return v;
}

function parseTime(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  // ISO 8601 with a zone (Z or ±hh:mm), or a date alone (taken as UTC midnight).
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/.test(raw)) {
    throw bad(name, 'must be an ISO 8601 date-time with a time zone, e.g. 2026-11-22T10:00:00Z');
  }
  const ms = Date.parse(raw);
  if (!Number.isFinite(ms) || ms < 0 || ms > 4_294_967_295_000) throw bad(name, 'is not a valid date-time in range');
  return Math.floor(ms / 1000);
}

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
  const monitorId = String(req.params.id);
  if (monitorId.length > LIMITS.maxMonitorIdLength || !MONITOR_ID.test(monitorId)) {
    throw bad('id', `a monitor id is 1-${LIMITS.maxMonitorIdLength} letters, digits and . _ : -`);
  }
  for (const k of Object.keys(req.query)) {
    if (!KNOWN_PARAMS.has(k))
      throw bad(k.slice(0, 64), `unknown query parameter; known: ${[...KNOWN_PARAMS].join(', ')}`);
  }
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
  const from = parseTime('from', single(req, 'from'));
  const to = parseTime('to', single(req, 'to'));
  if (from !== undefined && to !== undefined && from >= to) throw bad('to', 'must be after from');
  const statusRaw = (req.query as Record<string, unknown>).status;
  const statuses = (Array.isArray(statusRaw) ? statusRaw : statusRaw === undefined ? [] : [statusRaw])
    .flatMap((s) => String(s).split(','))
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  for (const s of statuses) {
    if (!(CHECK_STATUSES as readonly string[]).includes(s))
      throw bad('status', `must be one or more of ${CHECK_STATUSES.join(', ')}`);
  }
  const cursorRaw = single(req, 'cursor');
  return {
    monitorId,
    limit,
    order: orderRaw,
    from,
    to,
    statuses: [...new Set(statuses)],
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
  return `SELECT id, monitor_id, status, response_time, status_code, toUnixTimestamp(created_at) AS ts
    FROM ${sqlIdentifier(database)}.checks
    WHERE ${where.join(' AND ')}
    ORDER BY created_at ${dir}, id ${dir}
    LIMIT 1 BY id
    LIMIT ${sqlNumber(q.limit + 1)}`;
}

interface CheckRow {
  id: string;
  monitor_id: string;
  status: string;
  response_time: number;
  status_code: number;
  ts: number | string;
}

export function toIsoSeconds(unix: number): string {
  return new Date(unix * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export interface ChecksRouteDeps {
  client: ClickHouseClient;
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
      const rs = await deps.client.query({
        query: checksSql(deps.database, q),
        format: 'JSONEachRow',
        abort_signal: AbortSignal.timeout(deps.queryTimeoutMs),
      });
      rows = await rs.json<CheckRow>();
    } catch (err) {
      deps.logger.warn('checks query failed', { request_id: req.id, err: String(err) });
      throw new StoreUnavailableError();
    }
    const page = rows.slice(0, q.limit);
    const data: Check[] = page.map((r) => ({
      id: r.id,
      monitor_id: r.monitor_id,
      status: r.status as Check['status'],
      response_time: Number(r.response_time),
      status_code: Number(r.status_code),
      created_at: toIsoSeconds(Number(r.ts)),
    }));
    const lastRow = page[page.length - 1];
    const next = rows.length > q.limit && lastRow ? encodeCursor(Number(lastRow.ts), lastRow.id) : null;
    if (next) {
      const params = new URLSearchParams(req.query as Record<string, string>);
      params.set('cursor', next);
      res.setHeader('Link', `<${req.baseUrl}${req.path}?${params.toString()}>; rel="next"`);
    }
    res.json({ success: true, data, next_cursor: next });
  };
}
