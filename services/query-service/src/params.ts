import type { Request, Response } from 'express';
import type { TableLayout, VerifiedKey } from '@telemetry/store';
import { CHECK_STATUSES, ID_PATTERN, LIMITS, TIME_PARAM_PATTERN } from '@telemetry/contract';
import { bad, single, AppError, StoreUnavailableError, type ClickHouseReader, type Logger } from '@telemetry/platform';

/** Parameters of the monitor routes: every rule answers 400 INVALID_PARAMETER. */

/** What every read route needs: the lean reader, the database and how to reach its tables, the logger, the query deadline. */
export interface ReadDeps {
  reader: ClickHouseReader;
  database: string;
  layout: TableLayout;
  logger: Logger;
  queryTimeoutMs: number;
}

export const MONITOR_ID = new RegExp(ID_PATTERN);

/** The tenant of the request's API key (set by the bearer check): every read is confined to it. */
export function tenantOf(res: Response): string {
  return (res.locals.key as VerifiedKey).tenantId;
}
const TIME_PATTERN = new RegExp(TIME_PARAM_PATTERN);

export function monitorIdOf(req: Request): string {
  const monitorId = String(req.params.id);
  if (monitorId.length > LIMITS.maxMonitorIdLength || !MONITOR_ID.test(monitorId)) {
    throw bad('id', `a monitor id is 1-${LIMITS.maxMonitorIdLength} letters, digits and . _ : -`);
  }
  return monitorId;
}

/**
 * A keyset cursor as the history routes issue it: the (time, id) of the last row of a page,
 * the time a non-negative integer (seconds of a check, milliseconds of a delivery attempt)
 * and the id one of ours (at most 128 characters).
 */
export function isTimeIdCursor(v: unknown): v is [number, string] {
  return isTimeCursorOf(v, MONITOR_ID);
}

/** A (time, id) keyset cursor whose id matches `id` (at most 128 characters). */
export function isTimeCursorOf(v: unknown, id: RegExp): v is [number, string] {
  return (
    Array.isArray(v) &&
    v.length === 2 &&
    Number.isSafeInteger(v[0]) &&
    (v[0] as number) >= 0 &&
    typeof v[1] === 'string' &&
    v[1].length <= 128 &&
    id.test(v[1])
  );
}

/** ISO 8601 with a zone (Z or ±hh:mm), or a date alone (UTC midnight), as unix seconds. */
export function timeParam(req: Request, name: string): number | undefined {
  const raw = single(req, name);
  if (raw === undefined) return undefined;
  if (!TIME_PATTERN.test(raw)) {
    throw bad(name, 'must be an ISO 8601 date-time with a time zone, e.g. 2026-11-22T10:00:00Z');
  }
  const ms = Date.parse(raw);
  if (!Number.isFinite(ms) || ms < 0 || ms > 4_294_967_295_000) throw bad(name, 'is not a valid date-time in range');
  return Math.floor(ms / 1000);
}

export function rangeParams(req: Request): { from: number | undefined; to: number | undefined } {
  const from = timeParam(req, 'from');
  const to = timeParam(req, 'to');
  // from = to is an empty range (no checks); to before from is a mistake.
  if (from !== undefined && to !== undefined && from > to) throw bad('to', 'must not be before from');
  return { from, to };
}

/** `status=down,degraded` or `status=down&status=degraded`. */
export function statusesParam(req: Request): string[] {
  const raw = (req.query as Record<string, unknown>).status;
  const statuses = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw])
    .flatMap((s) => String(s).split(','))
    .map((s) => s.trim());
  for (const s of statuses) {
    if (!(CHECK_STATUSES as readonly string[]).includes(s)) {
      throw bad('status', `must be one or more of ${CHECK_STATUSES.join(', ')}`);
    }
  }
  return [...new Set(statuses)];
}

/**
 * How long a read of checks up to `to` (epoch seconds; undefined: up to now) may be kept.
 * A range that ended more than CLOSED_AFTER_SECONDS ago no longer changes (checks reach
 * ClickHouse within seconds of their time; the margin covers a consumer catching up after
 * an outage): clients may keep it a day. Anything newer must be revalidated with its ETag
 * (If-None-Match, answered 304 while nothing changed).
 */
export function cacheControlFor(to: number | undefined, nowSeconds = Date.now() / 1000): string {
  return isClosed(to, nowSeconds) ? `private, max-age=${CLOSED_MAX_AGE_SECONDS}` : 'private, no-cache';
}

/** A range up to `to` that ended more than CLOSED_AFTER_SECONDS ago: it no longer changes. */
export function isClosed(to: number | undefined, nowSeconds = Date.now() / 1000): boolean {
  return to !== undefined && to <= nowSeconds - CLOSED_AFTER_SECONDS;
}

/** A range that ended this long ago is closed (cacheControlFor). */
export const CLOSED_AFTER_SECONDS = 3600;
/** How long a closed range may be kept by the client. */
export const CLOSED_MAX_AGE_SECONDS = 86_400;

/**
 * Reads the rows of one query of a request with the lean reader, within QUERY_TIMEOUT_MS: a
 * failure (building the query included) is logged as `<what> failed` and answered 503
 * STORE_UNAVAILABLE.
 */
export async function readRows<T>(deps: ReadDeps, req: Request, what: string, sql: () => string): Promise<T[]> {
  try {
    return (await deps.reader.query<T>(sql(), AbortSignal.timeout(deps.queryTimeoutMs))).data;
  } catch (err) {
    deps.logger.warn(`${what} failed`, { request_id: req.id, err: String(err) });
    throw new StoreUnavailableError();
  }
}

/** Runs a ClickHouse call of a request: a failure is logged and answered 503 STORE_UNAVAILABLE. */
export async function storeCall<T>(logger: Logger, req: Request, what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    // Our own answers (a quota, a taken slug, REGISTRY_UNAVAILABLE) go out as they are.
    if (err instanceof AppError) {
      if (err.code === 'REGISTRY_UNAVAILABLE') logger.warn(`${what} failed`, { request_id: req.id, err: String(err) });
      throw err;
    }
    logger.warn(`${what} failed`, { request_id: req.id, err: String(err) });
    throw new StoreUnavailableError();
  }
}

/** Epoch ms as the API's times (ISO 8601 in whole seconds, UTC); null stays null. */
export function isoSecondsOf(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
