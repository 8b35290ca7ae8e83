import type { Request, Response } from 'express';
import { AppError } from './errors.js';
import { sendCacheable, sendCacheableJson } from './http.js';

/**
 * Query parameters and paging, shared by every list route: each rule answers 400
 * INVALID_PARAMETER naming the parameter.
 */

export function bad(param: string, message: string): AppError {
  return new AppError('INVALID_PARAMETER', `${param}: ${message}`, { parameter: param });
}

/** A parameter given at most once. */
export function single(req: Request, name: string): string | undefined {
  const v = (req.query as Record<string, unknown>)[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw bad(name, 'give it once');
  return v;
}

/** Unknown parameters are refused: a typo must not silently return unfiltered data. */
export function rejectUnknown(req: Request, known: ReadonlySet<string>): void {
  for (const k of Object.keys(req.query)) {
    if (!known.has(k)) throw bad(k.slice(0, 64), `unknown query parameter; known: ${[...known].join(', ')}`);
  }
}

/** `limit`: an integer from 1 to `max`, `fallback` when absent. */
export function limitParam(req: Request, max: number, fallback: number): number {
  const raw = single(req, 'limit');
  if (raw === undefined) return fallback;
  if (!/^\d{1,6}$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    throw bad('limit', `must be an integer from 1 to ${max}`);
  }
  return Number(raw);
}

/** An opaque cursor: a JSON value, base64url. */
export function encodeCursor(position: unknown): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

/**
 * The `cursor` parameter decoded, or undefined when absent; a cursor that is not
 * JSON or that `accept` refuses (not one this service issued) is 400.
 */
export function cursorParam<T>(req: Request, accept: (v: unknown) => v is T): T | undefined {
  const raw = single(req, 'cursor');
  if (raw === undefined) return undefined;
  try {
    if (raw.length <= 400) {
      const v = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
      if (accept(v)) return v;
    }
  } catch {
    // fall through
  }
  throw bad('cursor', 'is not a cursor this service issued');
}

/** `Link: <…>; rel="next"` for the same route and parameters with `cursor` set. */
export function nextLink(req: Request, cursor: string): string {
  const params = new URLSearchParams(req.query as Record<string, string>);
  params.set('cursor', cursor);
  return `<${req.baseUrl}${req.path}?${params.toString()}>; rel="next"`;
}

/**
 * The cursor after the last of a page's first `limit` rows when `rows` holds more (null
 * otherwise), also sent as a Link header.
 */
function nextCursorOf<R>(
  req: Request,
  res: Response,
  rows: readonly R[],
  limit: number,
  cursorOf: (last: R) => unknown,
): string | null {
  const last = rows[Math.min(limit, rows.length) - 1];
  const next = rows.length > limit && last !== undefined ? encodeCursor(cursorOf(last)) : null;
  if (next) res.setHeader('Link', nextLink(req, next));
  return next;
}

/**
 * Answers a page: `rows` holds up to one row more than `limit` (asked for to learn
 * whether a next page exists); the data is the first `limit`, and `next_cursor` (and a
 * Link header) points after the last of them when more remain.
 */
export function sendPage<R>(
  req: Request,
  res: Response,
  rows: readonly R[],
  limit: number,
  cursorOf: (last: R) => unknown,
  toItem: (row: R) => unknown,
  /** Cache-Control of a page with an ETag (sendCacheable); none: a plain answer. */
  cacheControl?: string,
): void {
  const page = rows.slice(0, limit);
  const next = nextCursorOf(req, res, rows, limit, cursorOf);
  const body = { success: true, data: page.map(toItem), next_cursor: next };
  if (cacheControl === undefined) res.json(body);
  else sendCacheable(req, res, body, cacheControl);
}

/**
 * As sendPage with a Cache-Control, of items already serialized: `jsonOf(row)` is
 * JSON.stringify of the item, so the body (and its ETag) is byte for byte what sendPage
 * sends, without building and serializing the objects per request.
 */
export function sendJsonPage<R>(
  req: Request,
  res: Response,
  rows: readonly R[],
  limit: number,
  cursorOf: (last: R) => unknown,
  jsonOf: (row: R) => string,
  cacheControl: string,
): void {
  const n = Math.min(limit, rows.length);
  const next = nextCursorOf(req, res, rows, limit, cursorOf);
  let data = '';
  for (let i = 0; i < n; i++) data += (i === 0 ? '' : ',') + jsonOf(rows[i]!);
  sendCacheableJson(req, res, `{"success":true,"data":[${data}],"next_cursor":${JSON.stringify(next)}}`, cacheControl);
}
