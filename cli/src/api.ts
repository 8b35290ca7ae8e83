/**
 * The CLI's client of the public API (docs/as-code.md, "The API"): the installation's URL
 * and an API key (Authorization: Bearer). The key is never printed, not even in errors.
 */

export interface ApiTarget {
  /** The query service's base URL, e.g. https://telemetry.example.com (no trailing /). */
  url: string;
  key: string;
}

/** A problem the server reports, at a JSON pointer into the document sent. */
export interface ServerProblem {
  path: string;
  message: string;
}

/** The API refused the request, or could not be reached. */
export class ApiError extends Error {
  constructor(
    /** The envelope's code (VALIDATION_FAILED, UNAUTHORIZED…), or UNREACHABLE / BAD_ANSWER. */
    readonly code: string,
    message: string,
    readonly status: number,
    readonly problems: ServerProblem[] = [],
  ) {
    super(message);
  }
}

const TIMEOUT_MS = 300_000;

export async function apiCall<T>(target: ApiTarget, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  let r: Response;
  try {
    r = await fetch(`${target.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${target.key}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (e as Error).message;
    throw new ApiError('UNREACHABLE', `cannot reach ${target.url}: ${why}`, 0);
  }
  const text = await r.text();
  let envelope: { success?: boolean; data?: T; code?: string; error?: string; details?: { problems?: unknown } };
  try {
    envelope = JSON.parse(text) as typeof envelope;
  } catch {
    throw new ApiError(
      'BAD_ANSWER',
      `${method} ${path}: HTTP ${r.status}, not a JSON answer (is this the query service's URL?)`,
      r.status,
    );
  }
  if (r.ok && envelope.success === true) return envelope.data as T;
  const problems = Array.isArray(envelope.details?.problems)
    ? (envelope.details.problems as unknown[]).flatMap((p): ServerProblem[] =>
        p !== null && typeof p === 'object' && typeof (p as ServerProblem).message === 'string'
          ? [{ path: String((p as ServerProblem).path ?? ''), message: (p as ServerProblem).message }]
          : [],
      )
    : [];
  throw new ApiError(
    envelope.code ?? `HTTP_${r.status}`,
    envelope.error ?? `${method} ${path}: HTTP ${r.status}`,
    r.status,
    problems,
  );
}
