import { CHECK_STATUSES, STATUS_PAGE_LIMITS, STATUS_PAGE_SLUG_PATTERN } from '../limits.js';
import { monitorIdSchema } from '../schemas.js';
import type { Json } from './responses.js';

/**
 * The parameters and headers more than one route family of the OpenAPI document uses:
 * query parameters (time range, status, paging), the monitor id and status page slug in
 * the path, conditional requests (If-Match on a monitor's version, If-None-Match on a
 * cached read) and the response headers that go with them (ETag, Link, Cache-Control,
 * RateLimit-*). The patterns here are the ones the query service's params.ts accepts.
 */

/** The forms params.ts accepts: a date, or a date-time with seconds optional and a zone. */
export const TIME_PARAM_PATTERN =
  '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2}))?$';
export const STATUS_PARAM_PATTERN = `^(${CHECK_STATUSES.join('|')})(,(${CHECK_STATUSES.join('|')}))*$`;

/** An optional query parameter. */
export const queryParam = (name: string, schema: Json, description?: string): Json => ({
  name,
  in: 'query',
  required: false,
  ...(description !== undefined ? { description } : {}),
  schema,
});

/** A response header (a string unless said otherwise). */
export const header = (description: string, schema: Json = { type: 'string' }): Json => ({ description, schema });

export const timeParam = (name: string, description: string): Json =>
  queryParam(name, { type: 'string', pattern: TIME_PARAM_PATTERN, examples: ['2026-11-22T10:00:00Z'] }, description);

export const statusParam: Json = {
  ...queryParam(
    'status',
    { type: 'string', pattern: STATUS_PARAM_PATTERN },
    'One or more statuses, comma-separated or repeated.',
  ),
  examples: { one: { value: 'down' }, several: { value: 'down,degraded' } },
};

/** `limit`: 1 to `max`, default 100. */
export const limitParam = (max: number): Json =>
  queryParam('limit', { type: 'integer', minimum: 1, maximum: max, default: 100 });

export const cursorParam = queryParam('cursor', { type: 'string' }, 'next_cursor of the previous page.');

export const linkHeader = { Link: header('rel="next" URL when there is a next page.') };

export const monitorPath: Json = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'Monitor identifier.',
  schema: monitorIdSchema,
};

export const slugPath: Json = {
  name: 'slug',
  in: 'path',
  required: true,
  description: "The status page's slug: its public path /status/{slug}.",
  schema: { type: 'string', pattern: STATUS_PAGE_SLUG_PATTERN, maxLength: STATUS_PAGE_LIMITS.maxSlugLength },
};

export const rateHeaders = {
  'RateLimit-Limit': header('Burst size of the key’s bucket.', { type: 'integer' }),
  'RateLimit-Remaining': header('Requests left in the bucket.', { type: 'integer' }),
  'RateLimit-Reset': header('Seconds until the bucket is full again.', { type: 'integer' }),
};

export const etagHeader = { ETag: header("The monitor's version: send it back in If-Match to change it safely.") };

export const ifMatch: Json = {
  name: 'If-Match',
  in: 'header',
  required: false,
  description:
    'The ETag of the monitor as last read: a change is made only if nobody changed it since (else 412 PRECONDITION_FAILED, nothing changed). `*` or absent: unconditional.',
  schema: { type: 'string' },
};

/** Conditional reads of check history (sendCacheable in the query service). */
export const cacheHeaders = {
  ETag: header('A tag of this answer: send it back in If-None-Match to get 304 while nothing changed.'),
  'Cache-Control': header(
    '`private, max-age=86400` for a range that ended more than an hour ago (it no longer changes); `private, no-cache` otherwise (keep it, but revalidate with If-None-Match).',
  ),
  Vary: header('`Authorization`: the answer depends on the key.'),
};

export const ifNoneMatch: Json = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  description: 'The ETag of an earlier answer to the same request: 304 with no body while it is still the answer.',
  schema: { type: 'string' },
};

export const notModified: Json = {
  '304': { description: 'Not modified: the answer is still the one whose ETag was sent.', headers: cacheHeaders },
};

/** The session's CSRF token: every state-changing request the session cookie authenticates carries it. */
export const csrfHeader = (required: boolean): Json => ({
  name: 'X-CSRF-Token',
  in: 'header',
  required,
  description: required
    ? "The session's CSRF token (GET /api/session answers it as csrf_token)."
    : "With the session cookie (not with an API key): the session's CSRF token (GET /api/session answers it as csrf_token), else 403 CSRF_FAILED.",
  // NOTE: no length limits: with an API key the header is not read, so no length of it is refused.
  schema: { type: 'string' },
});
