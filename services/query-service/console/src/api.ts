import type { Scope, SessionView } from '@telemetry/contract/access';

/**
 * The API as the console calls it: same origin, a deadline, the envelope, and one of two
 * ways of signing in (docs/console.md):
 * - session mode (the default): the session cookie (HttpOnly, sent by the browser), and on
 *   every state-changing request the session's CSRF token as `X-CSRF-Token`, kept in memory
 *   only (GET /api/session hands it out; fetched again once after a 403 CSRF_FAILED);
 * - API-key mode: `Authorization: Bearer` with a key kept in this tab's sessionStorage
 *   (scripts and people who prefer it).
 * A 401 on a signed-in call (SESSION_EXPIRED, MISSING_CREDENTIALS, a revoked key) goes to
 * the handler main.ts sets: the sign-in page, with a message.
 */

const KEY = 'telemetry.apiKey';
/**
 * Set while a session may exist (after a sign-in, or before leaving for single sign-on):
 * only then does the console ask GET /api/session on load, so a first visit makes no
 * request that answers 401. A hint, never a credential: the cookie is HttpOnly.
 */
const HINT = 'telemetry.session';
/** A request slower than this fails with a clear message instead of spinning forever. */
const DEADLINE_MS = 15_000;
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface Problem {
  path: string;
  message: string;
}

/** A failed call: the envelope's code and message, or what went wrong on the way. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly problems: Problem[] = [],
    /** The envelope's other details (IN_USE's `used_by`, WEAK_PASSWORD's `reason`). */
    readonly details: Record<string, unknown> = {},
    /** Retry-After in seconds, when the server sent one (SIGN_IN_THROTTLED). */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }
}

export interface Page<T> {
  data: T;
  next_cursor?: string | null;
}

let current: SessionView | null = null;
let onUnauthorized: (err: ApiError) => void = () => undefined;

/** Who is signed in, and how. */
export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  mode: (): 'key' | 'session' => (sessionStorage.getItem(KEY) ? 'key' : 'session'),
  /** API-key mode: the key lives in sessionStorage (the sign-in page says so). */
  signIn: (key: string): void => sessionStorage.setItem(KEY, key),
  /** The signed-in session (session mode), or null. */
  view: (): SessionView | null => current,
  /** Session mode: what GET /api/session (or a sign-in) answered; null when it ended. */
  set(view: SessionView | null): void {
    current = view;
    if (view) localStorage.setItem(HINT, '1');
    else localStorage.removeItem(HINT);
  },
  /** Whether a session may exist (see HINT); `expect()` before leaving for single sign-on. */
  maybe: (): boolean => localStorage.getItem(HINT) !== null,
  expect: (): void => localStorage.setItem(HINT, '1'),
  /** Forgets the key and the session here (the server's side ends by DELETE /api/session). */
  signOut(): void {
    sessionStorage.removeItem(KEY);
    session.set(null);
  },
  /**
   * Whether the person may do what `scope` allows: in session mode, their role's scopes; in
   * API-key mode always (the key's scopes are not known here; the server still answers 403).
   */
  can: (scope: Scope): boolean => session.mode() === 'key' || (current?.scopes.includes(scope) ?? false),
  /** What a 401 on a signed-in call does (main.ts: the sign-in page with a message). */
  onUnauthorized(handler: (err: ApiError) => void): void {
    onUnauthorized = handler;
  },
};

interface Envelope {
  success: boolean;
  data?: unknown;
  next_cursor?: string | null;
  /** The seed's failure envelope: a message, a stable code and optional details. */
  error?: string;
  code?: string;
  details?: { problems?: Problem[] } & Record<string, unknown>;
}

/**
 * One request. `auth` false: a public route (sign-in, invitations, status pages), sent with
 * neither key nor CSRF token, and a 401 is the caller's to show. `deadlineMs`: longer for a
 * request that waits on purpose (run once now waits for a runner's check).
 */
export async function call<T>(
  method: string,
  path: string,
  body?: unknown,
  auth = true,
  deadlineMs = DEADLINE_MS,
): Promise<Page<T>> {
  try {
    return await send<T>(method, path, body, auth, deadlineMs);
  } catch (err) {
    if (!(err instanceof ApiError) || !auth) throw err;
    let failed = err;
    // The token went stale (a new session in another tab): fetch it again, once.
    if (err.code === 'CSRF_FAILED' && session.mode() === 'session') {
      try {
        await refreshSession();
        return await send<T>(method, path, body, auth, deadlineMs);
      } catch (again) {
        if (!(again instanceof ApiError)) throw again;
        failed = again;
      }
    }
    if (failed.status === 401) onUnauthorized(failed);
    throw failed;
  }
}

/** Whether `key` is accepted (one read), for the API-key sign-in: a 401 is the form's to show. */
export async function probeKey(key: string): Promise<void> {
  session.signIn(key);
  try {
    await send('GET', '/api/monitors?limit=1', undefined, true);
  } catch (err) {
    session.signOut();
    throw err;
  }
}

/** GET /api/session into `session.view()` (and its CSRF token); a 401 propagates. */
export async function refreshSession(): Promise<SessionView> {
  const view = (await send<SessionView>('GET', '/api/session', undefined, true)).data;
  session.set(view);
  return view;
}

async function send<T>(
  method: string,
  path: string,
  body: unknown,
  auth: boolean,
  deadlineMs = DEADLINE_MS,
): Promise<Page<T>> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const key = session.key();
  if (auth && key) headers.Authorization = `Bearer ${key}`;
  else if (auth && !SAFE.has(method)) {
    if (!current) await refreshSession();
    if (current) headers['X-CSRF-Token'] = current.csrf_token;
  }
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      // The session cookie goes to this origin only (and never with an API key's request).
      credentials: key && auth ? 'omit' : 'same-origin',
      signal: AbortSignal.timeout(deadlineMs),
      cache: 'no-store',
    });
  } catch (err) {
    const timedOut = err instanceof DOMException && err.name === 'TimeoutError';
    throw new ApiError(
      0,
      timedOut ? 'TIMEOUT' : 'NETWORK',
      timedOut
        ? `The server did not answer within ${deadlineMs / 1000} s. Try again in a moment.`
        : 'The server cannot be reached. Check your connection and try again.',
    );
  }
  let env: Envelope | undefined;
  try {
    env = (await res.json()) as Envelope;
  } catch {
    env = undefined;
  }
  if (!res.ok || !env || !env.success) {
    const wait = Number(res.headers.get('Retry-After'));
    throw new ApiError(
      res.status,
      env?.code ?? 'HTTP_' + String(res.status),
      env?.error ?? `The server answered ${res.status} ${res.statusText}.`,
      env?.details?.problems ?? [],
      env?.details ?? {},
      Number.isFinite(wait) && wait > 0 ? wait : null,
    );
  }
  return { data: env.data as T, next_cursor: env.next_cursor ?? null };
}

export const get = <T>(path: string): Promise<T> => call<T>('GET', path).then((p) => p.data);
