/**
 * The gateway load of the fault suite and the cluster suite, on the load-generator core
 * (load.ts): steady loops POST batches of events with unique client ids over keep-alive
 * connections, and record for every batch (so for every event id) whether it was
 * acknowledged (200) or not, why not (`503 KAFKA_UNAVAILABLE`, `ECONNRESET reused`,
 * `timeout`, ...), and when it started and settled. Nothing is retried: an event that did
 * not get a 200 is never counted as accepted. SlowRequests holds requests open inside the
 * gateway (half a body sent) for a shutdown to answer.
 */
import { errorKind, httpRequest, HttpClient, steadyLoops, type Reply, type RequestFailure } from './load.js';

export interface BatchOutcome {
  ids: string[];
  /** Answered 200: every event of the batch was acknowledged by Kafka. */
  ok: boolean;
  /** `200`, `503 KAFKA_UNAVAILABLE`, `ECONNREFUSED`, `ECONNRESET`, `ECONNRESET reused`, `timeout`, ... */
  kind: string;
  /** When the request was started and settled (ms since epoch). */
  start: number;
  end: number;
}

export interface BatchLoadOptions {
  /** The gateway's port on 127.0.0.1. */
  port: number;
  key: string;
  source: string;
  /** Prefix of the client event ids (unique per scenario and run). */
  idPrefix: string;
  loops: number;
  batchSize: number;
  /** Each loop starts a request every `intervalMs` (or at once when the last one took longer). */
  intervalMs: number;
  requestTimeoutMs: number;
}

const PATH = '/api/telemetry/events';

export class EventBatchLoad {
  readonly outcomes: BatchOutcome[] = [];
  private running = false;
  private loops: Promise<unknown> = Promise.resolve();
  private seq = 0;
  private readonly http: HttpClient;

  constructor(private readonly opts: BatchLoadOptions) {
    this.http = new HttpClient(`http://127.0.0.1:${opts.port}`, opts.loops);
  }

  start(): void {
    this.running = true;
    this.loops = steadyLoops(
      this.opts.loops,
      this.opts.intervalMs,
      () => this.running,
      async () => {
        const ids = Array.from({ length: this.opts.batchSize }, () => `${this.opts.idPrefix}.${this.seq++}`);
        this.outcomes.push(await this.post(ids));
      },
    );
  }

  /** Stops starting requests and waits for the ones in flight to settle. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loops;
    this.http.close();
  }

  get sent(): number {
    return this.outcomes.reduce((n, o) => n + o.ids.length, 0);
  }

  /** The first acknowledged batch whose request started at or after `t`. */
  firstAckedSince(t: number): BatchOutcome | undefined {
    return this.outcomes.find((o) => o.ok && o.start >= t);
  }

  private post(ids: string[]): Promise<BatchOutcome> {
    const o = this.opts;
    const start = Date.now();
    return settle(
      ids,
      start,
      this.http.request('POST', PATH, headers(o.key), body(ids, o.source, 'fault-load'), o.requestTimeoutMs),
    );
  }
}

/**
 * Requests that are certainly in flight inside the gateway: the headers and half of the
 * body are sent on fresh connections, the rest only when `finish()` is called. A server
 * that drains on SIGTERM must answer them.
 */
export class SlowRequests {
  private readonly pending: { finish(): void; outcome: Promise<BatchOutcome> }[] = [];

  constructor(
    private readonly opts: Pick<
      BatchLoadOptions,
      'port' | 'key' | 'source' | 'idPrefix' | 'batchSize' | 'requestTimeoutMs'
    >,
  ) {}

  open(count: number): void {
    const o = this.opts;
    for (let i = 0; i < count; i++) {
      const ids = Array.from({ length: o.batchSize }, (_, j) => `${o.idPrefix}.slow${i}.${j}`);
      const text = body(ids, o.source, 'fault-slow');
      const half = Math.floor(text.length / 2);
      let finish = (): void => {};
      const url = new URL(`http://127.0.0.1:${o.port}`);
      const request = { url, agent: false as const, method: 'POST', path: PATH, headers: headers(o.key) };
      const reply = httpRequest({ ...request, timeoutMs: o.requestTimeoutMs }, text, (req) => {
        req.flushHeaders();
        req.write(text.slice(0, half));
        finish = () => req.end(text.slice(half));
      });
      this.pending.push({ finish: () => finish(), outcome: settle(ids, Date.now(), reply) });
    }
  }

  /** Sends the rest of every body and waits for the answers. */
  async finish(): Promise<BatchOutcome[]> {
    for (const p of this.pending) p.finish();
    return Promise.all(this.pending.map((p) => p.outcome));
  }
}

function headers(key: string): Record<string, string> {
  return { 'content-type': 'application/json', 'x-access-key': key };
}

function body(ids: string[], source: string, category: string): string {
  return JSON.stringify({ events: ids.map((id) => ({ id, source, category, payload: { id } })) });
}

/** The outcome of a batch's request, started at `start`. */
async function settle(ids: string[], start: number, reply: Promise<Reply>): Promise<BatchOutcome> {
  const [ok, kind] = await reply.then(
    (r): [boolean, string] => [r.status === 200, answerKind(r)],
    (err: RequestFailure): [boolean, string] => [false, failureKind(err)],
  );
  return { ids, ok, kind, start, end: Date.now() };
}

/** `200`, or the status and our error code (`503 KAFKA_UNAVAILABLE`), or the status alone. */
function answerKind(r: Reply): string {
  if (r.status === 200) return '200';
  try {
    const code = (JSON.parse(r.body) as { code?: unknown }).code;
    return typeof code === 'string' ? `${r.status} ${code}` : String(r.status);
  } catch {
    return String(r.status);
  }
}

/** `ECONNREFUSED`, `ECONNRESET reused` (on a kept-alive socket), `timeout`, or `503 then ECONNRESET` (the answer broke off). */
function failureKind(err: RequestFailure): string {
  if (err.status !== undefined) return `${err.status} then ${errorKind(err)}`;
  return `${errorKind(err)}${err.reusedSocket ? ' reused' : ''}`;
}
