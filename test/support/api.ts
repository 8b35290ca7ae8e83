/**
 * The tests' one client of our HTTP API: a request with an API key (a JSON body when
 * given), answered as {status, body (our envelope), code (the error envelope's code),
 * text, headers}. Every e2e and browser test talks to the query service through it.
 */

/** Our response envelope as the tests read it (docs/api.md): `data` on success, `code` and `details` on failure. */
export interface Envelope<T> {
  success: boolean;
  data: T;
  code?: string;
  error?: string;
  next_cursor?: string | null;
  /** What the failure names: the fields (validation), the parameter, the limit reached. */
  details?: { problems?: { path: string; message: string }[]; parameter?: string; limit?: string };
}

/** An answer: the status, the envelope, its error code (undefined on success), its text and the headers. */
export interface ApiAnswer<T> {
  status: number;
  body: Envelope<T>;
  /** `body.code`: what a test asserts on a refusal. */
  code: string | undefined;
  text: string;
  headers: Headers;
}

export interface ApiOptions {
  /** The key of this request instead of the client's; null sends no Authorization header. */
  key?: string | null;
  /** Extra headers (they win over the defaults). */
  headers?: Record<string, string>;
  /** A body sent as written instead of `body` as JSON (with the content type of `headers`, else JSON). */
  raw?: string;
}

/** A value, or how to read it when the request is made (a URL or key set in `before`). */
export type Lazy<T> = T | (() => T);
const read = <T>(v: Lazy<T>): T => (typeof v === 'function' ? (v as () => T)() : v);

/** One request to `base` (a JSON body when given); throws if the answer is not JSON. */
export async function apiRequest<T>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  options: ApiOptions = {},
): Promise<ApiAnswer<T>> {
  const payload = options.raw ?? (body === undefined ? undefined : JSON.stringify(body));
  const r = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(typeof options.key === 'string' ? { authorization: `Bearer ${options.key}` } : {}),
      ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    body: payload,
  });
  const text = await r.text();
  const parsed = JSON.parse(text) as Envelope<T>;
  return { status: r.status, body: parsed, code: parsed.code, text, headers: r.headers };
}

/** apiRequest with a key: `apiCall(base, key, method, path, body, headers)`. */
export function apiCall<T>(
  base: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<ApiAnswer<T>> {
  return apiRequest<T>(base, method, path, body, { key, headers });
}

/** `api<T>(method, path, body?, options?)` against one service with one key. */
export type ApiClient = <T = unknown>(
  method: string,
  path: string,
  body?: unknown,
  options?: ApiOptions,
) => Promise<ApiAnswer<T>>;

/** A client of the service at `base` with `key` (both may be read when each request is made). */
export function apiClient(base: Lazy<string>, key?: Lazy<string>): ApiClient {
  return <T>(method: string, path: string, body?: unknown, options: ApiOptions = {}) =>
    apiRequest<T>(read(base), method, path, body, {
      ...options,
      key: options.key === undefined ? (key === undefined ? undefined : read(key)) : options.key,
    });
}
