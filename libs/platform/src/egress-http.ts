import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { CheckError } from '@telemetry/contract';
import { egressDenied, portOf, type EgressPolicy } from './egress.js';
import { deadline } from './deadline.js';

export interface HttpCall {
  url: string;
  method: string;
  headers: Record<string, string>;
  /** A string is sent as UTF-8; a Buffer as it is (a browser check's binary upload). */
  body?: string | Buffer | null;
  timeoutMs: number;
  /** Redirects followed (0: a 3xx is the answer). */
  maxRedirects: number;
  /** Bytes of the response body read at most; the rest is not read. */
  maxBodyBytes: number;
  /** Searched for in the body as it streams by (nothing of the body is held for it). */
  keyword?: string | null;
  /** Bytes of the start of the body kept in the answer (default 0: none). */
  keepBytes?: number;
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
  /** The first keepBytes of the body. */
  body: Buffer;
  /** The body was longer than maxBodyBytes (the rest was not read). */
  truncated: boolean;
  /** Whether the keyword was in the part read (undefined: no keyword asked). */
  keywordFound?: boolean;
}

/**
 * Looks for a byte string in a stream of chunks while holding none of them: only the
 * last (needle length - 1) bytes are kept, for a match that spans two chunks. A
 * response of any size costs a check at most one chunk plus the keyword in memory.
 */
export class StreamSearch {
  private readonly needle: Buffer;
  private tail: Buffer = Buffer.alloc(0);
  found = false;

  constructor(needle: string) {
    this.needle = Buffer.from(needle, 'utf8');
  }

  push(chunk: Buffer): void {
    if (this.found || this.needle.length === 0) {
      this.found = true;
      return;
    }
    const hay = this.tail.length > 0 ? Buffer.concat([this.tail, chunk]) : chunk;
    if (hay.indexOf(this.needle) >= 0) {
      this.found = true;
      this.tail = Buffer.alloc(0);
      return;
    }
    const keep = Math.min(hay.length, this.needle.length - 1);
    // A copy: a view would keep the whole chunk alive.
    this.tail = Buffer.from(hay.subarray(hay.length - keep));
  }
}

/** Why a 307/308 to another origin with a body fails (an HttpCallError `network`): its message starts so. */
export const RESEND_BODY = 'redirect to another origin would resend the body';

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
  const bound = deadline(call.timeoutMs, call.signal, () => abort.abort());
  try {
    return await follow(call, abort.signal, bound.timedOut);
  } finally {
    bound.clear();
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
      answer = await once(url, method, headers, body, call, signal);
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
    if (answer.statusCode === 303 || ((answer.statusCode === 301 || answer.statusCode === 302) && method === 'POST')) {
      method = 'GET';
      body = undefined;
    }
    // Credentials, the monitor's own headers and the body stay with the monitor's origin:
    // a 307/308 would resend the body (an api_flow login's password) there, so it fails.
    if (next.origin !== url.origin) {
      if (body !== undefined && body !== '') {
        throw new HttpCallError('network', `${RESEND_BODY} (${next.origin})`);
      }
      headers = withoutHeaders(headers, [...CREDENTIAL_HEADERS, ...(call.secretHeaders ?? [])]);
    }
    url = next;
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
  body: string | Buffer | undefined,
  call: HttpCall,
  signal: AbortSignal,
): Promise<HttpAnswer> {
  const { policy, maxBodyBytes } = call;
  const keepBytes = Math.min(call.keepBytes ?? 0, maxBodyBytes);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const port = portOf(url);
  // An IP literal or a denied port never reaches a lookup: judge them here, before anything is sent.
  const literal = policy.checkUrl(url);
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
        // The body streams through: only its first keepBytes and the keyword search's
        // window stay in memory, however large it is.
        const kept: Buffer[] = [];
        let keptSize = 0;
        let size = 0;
        const search = call.keyword ? new StreamSearch(call.keyword) : undefined;
        const finish = (truncated: boolean): void => {
          resolve({
            statusCode: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(kept),
            truncated,
            ...(search ? { keywordFound: search.found } : {}),
          });
        };
        res.on('data', (c: Buffer) => {
          if (size >= maxBodyBytes) return;
          const part = size + c.length > maxBodyBytes ? c.subarray(0, maxBodyBytes - size) : c;
          size += part.length;
          if (keptSize < keepBytes) {
            const k = Buffer.from(part.subarray(0, keepBytes - keptSize));
            kept.push(k);
            keptSize += k.length;
          }
          search?.push(part);
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
