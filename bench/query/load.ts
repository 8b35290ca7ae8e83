/**
 * Load generation for `npm run bench:query`: one keep-alive HTTP client used for the
 * service and for ClickHouse alike, a closed loop (N workers, each sending its next
 * request when the previous one is answered), a paced open loop (a fixed request rate,
 * latency measured from each request's scheduled send time, so a slow answer also counts
 * the delay it causes to the requests behind it), and autocannon's `overallRate` mode.
 */
import type { EventEmitter } from 'node:events';
import http from 'node:http';
import { createRequire } from 'node:module';

export interface Reply {
  status: number;
  body: string;
}

/** Keep-alive HTTP/1.1 to one host; every request gets its own socket up to `maxSockets`. */
export class HttpClient {
  private readonly agent: http.Agent;
  private readonly host: string;
  private readonly port: number;

  constructor(base: string, maxSockets = Infinity) {
    const u = new URL(base);
    this.host = u.hostname;
    this.port = Number(u.port);
    this.agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: 1024 });
  }

  request(
    method: 'GET' | 'POST',
    path: string,
    headers: Record<string, string>,
    body?: string,
    timeoutMs = 30_000,
  ): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          agent: this.agent,
          host: this.host,
          port: this.port,
          method,
          path,
          headers: body === undefined ? headers : { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
          timeout: timeoutMs,
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** What one logical request (one or more HTTP requests) came to. */
export interface Outcome {
  /** HTTP status (the worst one when the operation made several requests); 0 on a network error. */
  status: number;
  /** 2xx and the expected body (row count). */
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
  /** Logical requests answered (or failed) in the run. */
  requests: number;
  ok: number;
  /** Answered with a status outside 2xx. */
  non2xx: number;
  /** 2xx with an unexpected body or row count. */
  badBody: number;
  /** Network errors and timeouts. */
  errors: number;
  /** Paced runs: requests not sent because `maxInFlight` were already waiting. */
  dropped: number;
  statuses: Record<string, number>;
  /** From the first send to the last answer. */
  seconds: number;
  /** Latency of every request, ms (paced runs: from its scheduled send time). */
  latencies: number[];
  /** Paced runs: latency from the actual send (no queueing behind the schedule), ms. */
  sendLatencies?: number[];
  firstProblem?: string;
}

class Recorder {
  readonly r: LoadResult = {
    requests: 0,
    ok: 0,
    non2xx: 0,
    badBody: 0,
    errors: 0,
    dropped: 0,
    statuses: {},
    seconds: 0,
    latencies: [],
  };

  add(o: Outcome, ms?: number): void {
    const r = this.r;
    r.requests++;
    if (ms !== undefined) r.latencies.push(ms);
    const key = String(o.status);
    r.statuses[key] = (r.statuses[key] ?? 0) + 1;
    if (o.ok) r.ok++;
    else if (o.status === 0) r.errors++;
    else if (o.status < 200 || o.status > 299) r.non2xx++;
    else r.badBody++;
    if (!o.ok && r.firstProblem === undefined) r.firstProblem = o.problem ?? `status ${o.status}`;
  }
}

async function attempt(op: Op): Promise<Outcome> {
  try {
    return await op();
  } catch (err) {
    return { status: 0, ok: false, problem: String(err) };
  }
}

/** `connections` workers, each sending its next request as soon as the previous one is answered. */
export async function closedLoop(op: Op, connections: number, seconds: number): Promise<LoadResult> {
  const rec = new Recorder();
  const start = performance.now();
  const end = start + seconds * 1000;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const o = await attempt(op);
      rec.add(o, performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  rec.r.seconds = (performance.now() - start) / 1000;
  return rec.r;
}

/**
 * `rate` requests a second, evenly spaced, whatever the answers do (open loop). Latency
 * runs from the scheduled send time (no coordinated omission). At most `maxInFlight`
 * requests wait at once; the schedule's next requests are dropped (and counted) beyond.
 */
export function paced(op: Op, rate: number, seconds: number, maxInFlight: number): Promise<LoadResult> {
  const rec = new Recorder();
  const sendLatencies: number[] = [];
  const total = Math.max(1, Math.round(rate * seconds));
  const interval = 1000 / rate;
  const start = performance.now() + 5;
  let next = 0;
  let inFlight = 0;
  let lastDone = start;
  return new Promise((resolve) => {
    const finishIfDone = (): void => {
      if (next >= total && inFlight === 0) {
        rec.r.seconds = (lastDone - start) / 1000;
        rec.r.sendLatencies = sendLatencies;
        resolve(rec.r);
      }
    };
    const tick = (): void => {
      const now = performance.now();
      while (next < total && start + next * interval <= now) {
        const scheduled = start + next * interval;
        next++;
        if (inFlight >= maxInFlight) {
          rec.r.dropped++;
          continue;
        }
        inFlight++;
        const sent = performance.now();
        void attempt(op).then((o) => {
          const done = performance.now();
          rec.add(o, done - scheduled);
          sendLatencies.push(done - sent);
          lastDone = done;
          inFlight--;
          finishIfDone();
        });
      }
      if (next < total) setTimeout(tick, Math.max(0, start + next * interval - performance.now()));
      else finishIfDone();
    };
    setTimeout(tick, 5);
  });
}

// ---------------------------------------------------------------- autocannon

/** The part of autocannon 8's API used here (it ships no types). */
interface AcRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}
interface AcContext {
  expect?: (body: string) => string | undefined;
}
interface AcOptions {
  url: string;
  connections: number;
  duration: number;
  overallRate: number;
  timeout: number;
  headers?: Record<string, string>;
  requests: {
    method: string;
    setupRequest: (req: AcRequest, context: AcContext) => AcRequest;
    onResponse: (status: number, body: string, context: AcContext) => void;
  }[];
}
interface AcResult {
  latency: { p50: number; p99: number; mean: number; max: number };
  requests: { average: number; total?: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
  statusCodeStats: Record<string, { count: number }>;
  duration: number;
}
interface AcInstance extends EventEmitter, PromiseLike<AcResult> {
  stop(): void;
}
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: AcOptions) => AcInstance;

export interface AutocannonRun {
  result: LoadResult;
  /** autocannon's own figures: its latency histogram (whole ms) with its coordinated-omission correction. */
  reported: { p50: number; p99: number; rps: number };
}

/**
 * autocannon with `overallRate`: each connection may send rate/connections requests per
 * one-second window. `next()` gives each request (path, body); `check()` judges an answer.
 * `result.latencies` are the raw response times autocannon measured (no correction).
 */
export async function autocannonRate(opts: {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  rate: number;
  connections: number;
  seconds: number;
  next: () => { path: string; body?: string; expect: (body: string) => string | undefined };
}): Promise<AutocannonRun> {
  const rec = new Recorder();
  const inst = autocannon({
    url: opts.url,
    connections: opts.connections,
    duration: opts.seconds,
    overallRate: opts.rate,
    timeout: 30,
    headers: opts.headers,
    requests: [
      {
        method: opts.method,
        // One request in flight per connection: its context carries the request's expectation
        // from setupRequest to onResponse (autocannon renews the context before each request).
        setupRequest: (req, context) => {
          const n = opts.next();
          context.expect = n.expect;
          return { ...req, method: opts.method, path: n.path, ...(n.body === undefined ? {} : { body: n.body }) };
        },
        onResponse: (status, body, context) => {
          const problem = status === 200 ? context.expect?.(body) : `status ${status}`;
          rec.add({ status, ok: problem === undefined, problem });
        },
      },
    ],
  });
  inst.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => {
    rec.r.latencies.push(ms);
  });
  const res = await inst;
  rec.r.seconds = res.duration;
  rec.r.errors += res.errors;
  return {
    result: rec.r,
    reported: { p50: res.latency.p50, p99: res.latency.p99, rps: res.requests.average },
  };
}

// ---------------------------------------------------------------- figures

export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export interface LatencyFigures {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export function latencyFigures(latencies: readonly number[]): LatencyFigures {
  const s = [...latencies].filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const round = (x: number): number => Math.round(x * 100) / 100;
  return {
    p50: round(percentile(s, 0.5)),
    p90: round(percentile(s, 0.9)),
    p99: round(percentile(s, 0.99)),
    max: round(s[s.length - 1] ?? NaN),
    mean: round(s.reduce((a, b) => a + b, 0) / Math.max(1, s.length)),
  };
}
