/**
 * The shape of one case of the bad-input corpus (test/e2e/bad-input.int.test.ts) and the
 * builders the per-route data files share: a hostile request, the service it goes to, and
 * the status and error code we promise for it. Keys are written as placeholders (`@access`,
 * `@api`, ...) that the runner replaces with the keys it issued; an empty header value
 * means "do not send this header".
 */

/** One hostile request and the answer we promise. */
export interface Case {
  name: string;
  /**
   * `sso`: the query service with single sign-on configured (bad-input/people.ts); `follow`:
   * the one of status pages people follow (bad-input/status-follow.ts).
   */
  service: 'gateway' | 'query' | 'sso' | 'follow';
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** `path`: a VALIDATION_FAILED's field, one of `details.problems[].path`. */
  expect: { status: number; code?: string; path?: string };
}

/** The placeholders a case may use in its path or headers: keys, and the people of bad-input/people.ts. */
export const KEY_NAMES = [
  'access',
  'revoked',
  'api',
  'noScope',
  'otherTenant',
  'monitors',
  'restricted',
  'expiredApi',
  'expiredAccess',
  // an API key with monitors:read only (a viewer's), one with every scope, one with keys:* only
  'viewer',
  'people',
  'keyMaker',
  // not keys: the people the runner makes (bad-input/people.ts, peopleFixtures)
  'foreignKeyId',
  // a deletion request of another tenant (bad-input/deletions.ts)
  'foreignDeletionId',
  'viewerId',
  'viewerSession',
  'viewerCsrf',
  'ownerId',
  'ownerSession',
  'ownerCsrf',
] as const;
export type KeyName = (typeof KEY_NAMES)[number];

/** A monitor of another tenant than every key of the corpus. */
export const FOREIGN_TENANT = 'ten_corpusforeign';
export const FOREIGN = 'foreign-monitor';
/** The monitors the runner registers before the corpus (m1 is the one changed and read). */
export const CORPUS_MONITORS = ['m1', 'tenant-a-monitor', 'tenant-b-monitor'] as const;
/** A monitor id no one registers. */
export const MISSING = 'corpus-missing-monitor';
/** Every name and URL sent in a monitor body carries this mark, so a leak is easy to find. */
export const MARK = 'corpus-bad';

export const ev = (over: object = {}): object => ({ source: 'corpus', category: 'c', payload: {}, ...over });
export const body = (events: unknown, extra: object = {}): string => JSON.stringify({ events, ...extra });

/** POST /api/telemetry/events with the telemetry key unless told. */
export const post = (
  name: string,
  headers: Record<string, string>,
  b: string | Buffer,
  status: number,
  code?: string,
): Case => ({
  name: `POST events: ${name}`,
  service: 'gateway',
  method: 'POST',
  path: '/api/telemetry/events',
  headers: { 'content-type': 'application/json', 'x-access-key': '@access', ...headers },
  body: b,
  expect: { status, code },
});

/** A GET of check history with the checks:read key unless told. */
export const list = (
  name: string,
  path: string,
  headers: Record<string, string>,
  status: number,
  code?: string,
): Case => ({
  name: `GET ${path.split('?')[0]!.replace(/\/api\/monitors\/[^/]*/, '/api/monitors/{id}')}: ${name}`,
  service: 'query',
  method: 'GET',
  path,
  headers: { authorization: 'Bearer @api', ...headers },
  expect: { status, code },
});

/**
 * A builder of query-service cases on a registry object's routes: the case's name shows
 * `id` (its ids) as `{id}`; `b` is sent as JSON (a string as it is); the key is `@people`
 * (every scope) unless told, '' for none.
 */
export const queryRequest =
  (id: RegExp) =>
  (name: string, method: string, path: string, b: unknown, status: number, code?: string, key = '@people'): Case => ({
    name: `${method} ${path.replace(id, '{id}').split('?')[0]}: ${name}`,
    service: 'query',
    method,
    path,
    headers: {
      ...(key === '' ? {} : { authorization: `Bearer ${key}` }),
      ...(b !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: b === undefined ? undefined : typeof b === 'string' ? b : JSON.stringify(b),
    expect: { status, code },
  });

/** A valid monitor body, with `over` on top. */
export const good = (over: object = {}): Record<string, unknown> => ({
  name: `${MARK} monitor`,
  url: `https://${MARK}.example/health`,
  ...over,
});

/** A request to the monitor registry, with the monitors:read+write key unless told. */
export const mon = (
  name: string,
  method: string,
  path: string,
  b: unknown,
  status: number,
  code?: string,
  headers: Record<string, string> = {},
): Case => ({
  name: `${method} ${path.split('?')[0]!.replace(/^\/api\/monitors\/[^/]+/, '/api/monitors/{id}')}: ${name}`,
  service: 'query',
  method,
  path,
  headers: {
    authorization: 'Bearer @monitors',
    ...(b !== undefined ? { 'content-type': 'application/json' } : {}),
    ...headers,
  },
  body: b === undefined ? undefined : typeof b === 'string' || Buffer.isBuffer(b) ? b : JSON.stringify(b),
  expect: { status, code },
});
export const create = (
  name: string,
  b: unknown,
  status: number,
  code?: string,
  headers?: Record<string, string>,
): Case => mon(name, 'POST', '/api/monitors', b, status, code, headers);
export const change = (
  name: string,
  b: unknown,
  status: number,
  code?: string,
  headers?: Record<string, string>,
): Case => mon(name, 'PATCH', '/api/monitors/m1', b, status, code, headers);
export const invalidCreate = (name: string, over: object): Case => create(name, good(over), 400, 'VALIDATION_FAILED');
export const invalidChange = (name: string, b: object): Case => change(name, b, 400, 'VALIDATION_FAILED');

/** An id as a path segment: already-escaped ids go as written. */
export const pathPart = (id: string): string => (/%[0-9A-F]{2}/.test(id) ? id : encodeURIComponent(id));
