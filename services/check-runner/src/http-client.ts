import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { CheckError } from '@telemetry/contract';
import { egressDenied, portOf, type EgressPolicy } from '@telemetry/platform';

export interface HttpCall {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string | null;
  timeoutMs: number;
  /** Redirects followed (0: a 3xx is the answer). */
  maxRedirects: number;
  /** Bytes of the response body kept; the rest is not read. */
  maxBodyBytes: number;
  signal?: AbortSignal;
  /** Judges the address of every connection, redirect hops included. */
  policy: EgressPolicy;
  /** Headers dropped on a redirect to another origin (besides CREDENTIAL_HEADERS). */
  secretHeaders?: readonly string[];
}

/** Never sent to another origin than the monitor's own after a redirect. */
export const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'] as const;

export interface HttpAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  /** The first maxBodyBytes of the body. */
  body: Buffer;
  /** The body was longer than maxBodyBytes. */
  truncated: boolean;
}

export class HttpCallError extends Error {
  constructor(
    readonly kind: CheckError,
    message: string,
  ) {
    super(message);
  }
}

/** What a failed call means for a check. */
export function classify(err: unknown, timedOut: boolean): CheckError {
  const code = String((err as { code?: string }).code ?? '');
  if (code === 'EGRESS_DENIED') return 'target_not_allowed';
  if (timedOut) return 'timeout';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') return 'dns';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || code === 'EPIPE' || /socket hang up/i.test(String(err))) return 'connection_reset';
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) {
    return 'tls';
  }
  return 'network';
}

/**
 * One HTTP(S) request on a fresh connection (no keep-alive: a check measures what a new
 * visitor gets, DNS and handshakes included), bounded by `timeoutMs` over the whole
 * exchange, following up to `maxRedirects` redirects. Fails with HttpCallError.
 */
export async function httpCall(call: HttpCall): Promise<HttpAnswer> {
  // One controller and one timer per call (AbortSignal.any costs more, and keeps
  // listeners on the caller's signal).
  const abort = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    abort.abort();
  }, call.timeoutMs);
  const onAbort = (): void => abort.abort();
  call.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await follow(call, abort.signal, () => timedOut);
  } finally {
    clearTimeout(timer);
    call.signal?.removeEventListener('abort', onAbort);
  }
}

async function follow(call: HttpCall, signal: AbortSignal, timedOut: () => boolean): Promise<HttpAnswer> {
  let url = new URL(call.url);
  let method = call.method;
  let body = call.body ?? undefined;
  let headers = call.headers;
  for (let hop = 0; ; hop++) {
    let answer: HttpAnswer;
    try {
      answer = await once(url, method, headers, body, call.maxBodyBytes, signal, call.policy);
    } catch (err) {
      const kind = classify(err, timedOut());
      throw new HttpCallError(kind, kind === 'timeout' ? `no answer within ${call.timeoutMs} ms` : String(err));
    }
    const location = answer.headers.location;
    if (answer.statusCode < 300 || answer.statusCode >= 400 || !location || hop >= call.maxRedirects) return answer;
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      return answer;
    }
    if (next.protocol !== 'http:' && next.protocol !== 'https:') return answer;
    if (url.protocol === 'https:' && next.protocol === 'http:') {
      throw new HttpCallError('insecure_redirect', `a redirect from https to http (${next.origin}) is not followed`);
    }
    // Credentials and the monitor's own headers stay with the monitor's origin.
    if (next.origin !== url.origin)
      headers = withoutHeaders(headers, [...CREDENTIAL_HEADERS, ...(call.secretHeaders ?? [])]);
    url = next;
    if (answer.statusCode === 303 || ((answer.statusCode === 301 || answer.statusCode === 302) && method === 'POST')) {
      method = 'GET';
      body = undefined;
    }
  }
}

function withoutHeaders(headers: Record<string, string>, names: readonly string[]): Record<string, string> {
  const drop = new Set(names.map((n) => n.toLowerCase()));
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !drop.has(k.toLowerCase())));
}

function once(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  maxBodyBytes: number,
  signal: AbortSignal,
  policy: EgressPolicy,
): Promise<HttpAnswer> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const port = portOf(url);
  // An IP literal never reaches a lookup: judge it here, before anything is sent.
  const literal = policy.checkLiteral(url);
  if (literal && !literal.allowed) return Promise.reject(egressDenied(`${url.host}`));
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method,
        agent: false,
        signal,
        // A name is resolved once, its address judged and pinned for this connection.
        lookup: policy.pinnedLookup(port),
        headers: {
          ...headers,
          Connection: 'close',
          ...(body !== undefined ? { 'Content-Length': String(Buffer.byteLength(body)) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const finish = (truncated: boolean): void => {
          resolve({
            statusCode: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).subarray(0, maxBodyBytes),
            truncated,
          });
        };
        res.on('data', (c: Buffer) => {
          if (size >= maxBodyBytes) return;
          chunks.push(c);
          size += c.length;
          if (size >= maxBodyBytes) {
            finish(true);
            res.destroy();
          }
        });
        res.on('end', () => finish(false));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
