/** The API as the console calls it: same origin, the signed-in key, a deadline, the envelope. */

const KEY = 'telemetry.apiKey';
/** A request slower than this fails with a clear message instead of spinning forever. */
const DEADLINE_MS = 15_000;

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
    /** The envelope's other details (IN_USE's `used_by`). */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface Page<T> {
  data: T;
  next_cursor?: string | null;
}

/** The API key lives in sessionStorage: it goes when the tab closes (the sign-in page says so). */
export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  signIn: (key: string): void => sessionStorage.setItem(KEY, key),
  signOut: (): void => sessionStorage.removeItem(KEY),
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

export async function call<T>(method: string, path: string, body?: unknown, auth = true): Promise<Page<T>> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const key = session.key();
  if (auth && key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(DEADLINE_MS),
      cache: 'no-store',
    });
  } catch (err) {
    const timedOut = err instanceof DOMException && err.name === 'TimeoutError';
    throw new ApiError(
      0,
      timedOut ? 'TIMEOUT' : 'NETWORK',
      timedOut
        ? `The server did not answer within ${DEADLINE_MS / 1000} s. Try again in a moment.`
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
    throw new ApiError(
      res.status,
      env?.code ?? 'HTTP_' + String(res.status),
      env?.error ?? `The server answered ${res.status} ${res.statusText}.`,
      env?.details?.problems ?? [],
      env?.details ?? {},
    );
  }
  return { data: env.data as T, next_cursor: env.next_cursor ?? null };
}

export const get = <T>(path: string): Promise<T> => call<T>('GET', path).then((p) => p.data);
