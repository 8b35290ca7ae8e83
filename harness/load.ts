/**
 * The one load-generator core: an HTTP request and a keep-alive client, a closed loop (N
 * workers, each sending when its previous request is answered), an open loop (a fixed
 * schedule whatever the answers do; latency from each request's scheduled time), steady
 * loops (each starts a request every interval, or at once when late: the load of the fault
 * suite, the cluster suite (event-batches.ts) and the soak), a lean raw-socket client for an
 * open loop at thousands of requests per second, and autocannon, typed once.
 */
import http from 'node:http';
import net from 'node:net';
import { createRequire } from 'node:module';
import type { EventEmitter } from 'node:events';
import { sleep } from './processes.js';
import { quantiles, type Quantiles } from './report.js';

export interface Reply {
  status: number;
  body: string;
}

/** What a failed request says beyond its error: whether it went on a kept-alive socket, and the status when the answer broke off. */
export interface RequestFailure extends Error {
  code?: string;
  reusedSocket?: boolean;
  status?: number;
}

export interface RequestOptions {
  url: URL;
  /** A keep-alive agent, or false for a connection of its own. */
  agent: http.Agent | false;
  method: string;
  path: string;
  headers: Record<string, string>;
  timeoutMs: number;
}

/**
 * One HTTP/1.1 request and its whole answer. `write` sends the body (by default all of it
 * at once: `req.end(body)`); a failure is a RequestFailure.
 */
export function httpRequest(
  o: RequestOptions,
  body?: string,
  write: (req: http.ClientRequest) => void = (req) => req.end(body),
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent: o.agent,
        host: o.url.hostname,
        port: Number(o.url.port),
        method: o.method,
        path: o.path,
        headers: body === undefined ? o.headers : { ...o.headers, 'Content-Length': String(Buffer.byteLength(body)) },
        timeout: o.timeoutMs,
      },
      (res) => {
        const fail = (err: RequestFailure): void => reject(Object.assign(err, { status: res.statusCode ?? 0 }));
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', fail);
        res.on('aborted', () => fail(new Error('response aborted')));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err: RequestFailure) => reject(Object.assign(err, { reusedSocket: req.reusedSocket })));
    write(req);
  });
}

/** Keep-alive HTTP/1.1 to one host. */
export class HttpClient {
  private readonly agent: http.Agent;
  private readonly url: URL;

  constructor(base: string, maxSockets = Infinity) {
    this.url = new URL(base);
    this.agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: 1024 });
  }

  request(
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: string,
    timeoutMs = 30_000,
  ): Promise<Reply> {
    return httpRequest({ url: this.url, agent: this.agent, method, path, headers, timeoutMs }, body);
  }

  close(): void {
    this.agent.destroy();
  }
}

/** The error code of a failed request (`ECONNREFUSED`, `timeout`, ...). */
export function errorKind(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : (err as Error).message;
}

/** What one logical request (one or more HTTP requests) came to. */
export interface Outcome {
  /** HTTP status (0 on a network error). */
  status: number;
  /** 2xx and the expected body. */
  ok: boolean;
  problem?: string;
}

export type Op = () => Promise<Outcome>;

/** Occurrences of `needle` in `s` (row counting without parsing). */
export function countOf(s: string, needle: string): number {
  let n = 0;
  for (let i = s.indexOf(needle); i !== -1; i = s.indexOf(needle, i + needle.length)) n++;
  return n;
}

export interface LoadResult {
  requests: number;
  ok: number;
  non2xx: number;
  /** 2xx with an unexpected body. */
  badBody: number;
  /** Network errors and timeouts. */
  errors: number;
  /** Open loop: requests not sent because `maxInFlight` were already waiting. */
  dropped: number;
  /** From the first send to the last answer. */
  seconds: number;
  /** ms per request (open loop: from its scheduled send time). */
  latencies: number[];
  /** Open loop: ms from the actual send (no queueing behind the schedule). */
  sendLatencies?: number[];
  firstProblem?: string;
}

export class Recorder {
  readonly r: LoadResult = {
    requests: 0,
    ok: 0,
    non2xx: 0,
    badBody: 0,
    errors: 0,
    dropped: 0,
    seconds: 0,
    latencies: [],
  };

  add(o: Outcome, ms?: number): void {
    const r = this.r;
    r.requests++;
    if (ms !== undefined) r.latencies.push(ms);
    if (o.ok) r.ok++;
    else if (o.status === 0) r.errors++;
    else if (o.status < 200 || o.status > 299) r.non2xx++;
    else r.badBody++;
    if (!o.ok) r.firstProblem ??= o.problem ?? `status ${o.status}`;
  }
}

const attempt = (op: Op): Promise<Outcome> =>
  op().catch((err: unknown) => ({ status: 0, ok: false, problem: String(err) }));

/** `connections` workers, each sending its next request as soon as the previous one is answered. */
export async function closedLoop(op: Op, connections: number, seconds: number): Promise<LoadResult> {
  const rec = new Recorder();
  const start = performance.now();
  const end = start + seconds * 1000;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      rec.add(await attempt(op), performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  rec.r.seconds = (performance.now() - start) / 1000;
  return rec.r;
}

/**
 * Open loop: `total` sends, send k at start + k * intervalMs whatever the answers do. At
 * most `maxInFlight` wait at once; beyond, `drop(k)` is called instead. Resolves with the
 * seconds from the start to the last answer.
 */
export async function openLoop(o: {
  total: number;
  intervalMs: number;
  maxInFlight: number;
  send: (k: number, scheduledAt: number) => Promise<void>;
  drop: (k: number) => void;
}): Promise<number> {
  const pending: Promise<void>[] = [];
  let inFlight = 0;
  let last = performance.now();
  const start = last;
  for (let k = 0; k < o.total;) {
    const due = Math.min(o.total, Math.floor((performance.now() - start) / o.intervalMs) + 1);
    for (; k < due; k++) {
      if (inFlight >= o.maxInFlight) {
        o.drop(k);
        continue;
      }
      inFlight++;
      pending.push(
        o.send(k, start + k * o.intervalMs).finally(() => {
          inFlight--;
          last = performance.now();
        }),
      );
    }
    if (k < o.total) await sleep(Math.max(1, Math.min(5, start + k * o.intervalMs - performance.now())));
  }
  await Promise.all(pending);
  return (last - start) / 1000;
}

/** An open loop of `op` at `rate` req/s for `seconds`; latency from each request's scheduled send time. */
export async function paced(op: Op, rate: number, seconds: number, maxInFlight: number): Promise<LoadResult> {
  const rec = new Recorder();
  const sendLatencies: number[] = (rec.r.sendLatencies = []);
  rec.r.seconds = await openLoop({
    total: Math.max(1, Math.round(rate * seconds)),
    intervalMs: 1000 / rate,
    maxInFlight,
    send: async (_k, at) => {
      const sent = performance.now();
      rec.add(await attempt(op), performance.now() - at);
      sendLatencies.push(performance.now() - sent);
    },
    drop: () => rec.r.dropped++,
  });
  return rec.r;
}

/**
 * `loops` loops, spread over the interval, each running `body(i)` every `intervalMs` (at
 * once when the previous one took longer) while `running()`; resolves when all have stopped.
 */
export function steadyLoops(
  loops: number,
  intervalMs: number,
  running: () => boolean,
  body: (loop: number) => Promise<void>,
): Promise<void[]> {
  return Promise.all(
    Array.from({ length: loops }, async (_, i) => {
      await sleep((intervalMs * i) / loops);
      let next = Date.now();
      while (running()) {
        next += intervalMs;
        await body(i);
        const wait = next - Date.now();
        if (wait > 0) await sleep(wait);
        else next = Date.now();
      }
    }),
  );
}

/** Percentiles of latencies in ms, rounded to 0.01 ms. */
export function latencyFigures(latencies: readonly number[]): Quantiles {
  const q = quantiles(latencies);
  const r = (x: number): number => Math.round(x * 100) / 100;
  return { p50: r(q.p50), p90: r(q.p90), p99: r(q.p99), max: r(q.max), min: r(q.min), mean: r(q.mean) };
}

// ---------------------------------------------------------------- raw sockets

interface RawConn {
  socket: net.Socket;
  request: Buffer;
  buf: Buffer | undefined;
  current: { resolve(r: Reply): void; reject(e: Error): void } | undefined;
  dead: boolean;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/**
 * A lean HTTP/1.1 client for an open loop (`paced`) at thousands of requests per second
 * from one process, where node:http's client would be the bottleneck (and autocannon's
 * rate mode is not an open loop: each connection sends back to back until its quota of
 * the second is used, then waits for the next second). `connections` keep-alive sockets,
 * each sending its own prepared request bytes (one request at a time, no pipelining); a
 * request waits for a free socket. Reads the status, Content-Length and body only: an
 * answer without Content-Length fails the request.
 */
export class RawHttpClient {
  private readonly idle: RawConn[] = [];
  private readonly waiting: RawConn['current'][] = [];
  private readonly conns: RawConn[] = [];

  private constructor(private readonly timeoutMs: number) {}

  /** Opens `connections` sockets to `url`'s host and port; socket i sends `request(i)`. */
  static async open(
    url: string,
    connections: number,
    request: (i: number) => Buffer,
    timeoutMs = 10_000,
  ): Promise<RawHttpClient> {
    const u = new URL(url);
    const client = new RawHttpClient(timeoutMs);
    // A socket that could not connect fails the whole client: the others are closed, not left open.
    await Promise.all(
      Array.from(
        { length: connections },
        (_, i) =>
          new Promise<void>((resolve, reject) => {
            const socket = net.connect({ host: u.hostname, port: Number(u.port), noDelay: true }, () => {
              socket.off('error', reject);
              resolve();
            });
            socket.once('error', reject);
            const c: RawConn = { socket, request: request(i), buf: undefined, current: undefined, dead: false };
            client.conns.push(c);
            client.wire(c);
            client.idle.push(c);
          }),
      ),
    ).catch((err: unknown) => {
      client.close();
      throw err;
    });
    return client;
  }

  /** Sends on the next free socket; resolves with the answer. */
  send(): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      const c = this.idle.pop();
      const job = { resolve, reject };
      if (c) this.start(c, job);
      else if (this.conns.every((x) => x.dead)) reject(new Error('every connection is closed'));
      else this.waiting.push(job);
    });
  }

  close(): void {
    for (const c of this.conns) c.socket.destroy();
  }

  private start(c: RawConn, job: NonNullable<RawConn['current']>): void {
    c.current = job;
    c.socket.write(c.request);
  }

  private release(c: RawConn): void {
    const next = this.waiting.shift();
    if (next) this.start(c, next);
    else this.idle.push(c);
  }

  private wire(c: RawConn): void {
    c.socket.setTimeout(this.timeoutMs, () => {
      if (c.current) c.socket.destroy(new Error('timeout'));
    });
    c.socket.on('data', (chunk: Buffer) => {
      if (!c.current) {
        // Bytes with no request waiting: the socket would otherwise be handed out twice.
        c.socket.destroy(new Error('an answer to no request'));
        return;
      }
      c.buf = c.buf ? Buffer.concat([c.buf, chunk]) : chunk;
      const end = c.buf.indexOf(HEAD_END);
      if (end < 0) return;
      const head = c.buf.toString('latin1', 0, end);
      const length = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
      if (!length) {
        c.socket.destroy(new Error('an answer without Content-Length'));
        return;
      }
      const bodyEnd = end + 4 + Number(length[1]);
      if (c.buf.length < bodyEnd) return;
      const reply = { status: Number(head.slice(9, 12)), body: c.buf.toString('utf8', end + 4, bodyEnd) };
      c.buf = c.buf.length > bodyEnd ? c.buf.subarray(bodyEnd) : undefined;
      const job = c.current;
      c.current = undefined;
      this.release(c);
      job.resolve(reply);
    });
    const fail = (err?: Error): void => {
      c.dead = true;
      const i = this.idle.indexOf(c);
      if (i >= 0) this.idle.splice(i, 1);
      c.current?.reject(err ?? new Error('connection closed'));
      c.current = undefined;
      if (this.conns.every((x) => x.dead))
        for (const w of this.waiting.splice(0)) w?.reject(new Error('every connection is closed'));
    };
    c.socket.on('error', fail);
    c.socket.on('close', () => fail());
  }
}

/** The bytes of one HTTP/1.1 request with a body (Content-Length set from it). */
export function rawRequest(url: string, method: string, headers: Record<string, string>, body: string): Buffer {
  const u = new URL(url);
  const b = Buffer.from(body);
  const lines = [`${method} ${u.pathname}${u.search} HTTP/1.1`, `Host: ${u.host}`];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  lines.push(`Content-Length: ${b.length}`, '', '');
  return Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), b]);
}

// ---------------------------------------------------------------- autocannon

/**
 * The part of autocannon 8's programmatic API we use, declared once: autocannon ships no
 * types (its current major, 9, neither), and @types/autocannon describes major 7.
 */
export interface AutocannonOptions {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  pipelining?: number;
  /** Seconds. */
  duration: number;
  /** Requests per second over all connections (with coordinated-omission correction). */
  overallRate?: number;
  /** Seconds before a request counts as timed out. */
  timeout?: number;
  /** A 2xx answer whose body differs counts as a mismatch. */
  expectBody?: string;
  /** As expectBody, judged by a function (which, unlike expectBody, autocannon allows with `requests`). */
  verifyBody?: (body: string) => boolean;
  /** Called once per connection, e.g. to give each its own headers. */
  setupClient?: (client: { setHeaders(headers: Record<string, string>): void }) => void;
  requests?: {
    method?: string;
    setupRequest?: (
      req: AutocannonRequest,
      context: { expect?: (body: string) => string | undefined },
    ) => AutocannonRequest;
    onResponse?: (status: number, body: string, context: { expect?: (body: string) => string | undefined }) => void;
  }[];
}
interface AutocannonRequest {
  method?: string;
  path?: string;
  /** Per request, when set in setupRequest (autocannon rebuilds a request with a setupRequest every time). */
  headers?: Record<string, string>;
  body?: string;
}
/** Latency in ms; requests per second samples. */
export interface AutocannonResult {
  latency: { p50: number; p90: number; p99: number; mean: number; max: number };
  requests: { average: number };
  errors: number;
  timeouts: number;
  mismatches: number;
  non2xx: number;
  '2xx': number;
  statusCodeStats: Record<string, { count: number }>;
  /** Seconds, measured. */
  duration: number;
}
export interface AutocannonInstance extends EventEmitter, PromiseLike<AutocannonResult> {
  stop(): void;
}
export const autocannon = createRequire(import.meta.url)('autocannon') as (o: AutocannonOptions) => AutocannonInstance;
