/**
 * The load generator: a few loops POST batches of events with unique client ids to the
 * gateway at a steady rate over keep-alive connections, and record for every batch (so
 * for every event id) whether it was acknowledged (200) or not, and why not. Nothing is
 * retried: an event that did not get a 200 is never counted as accepted.
 */
import { Agent, request, type IncomingMessage } from 'node:http';

export interface Outcome {
  ids: string[];
  /** Answered 200: every event of the batch was acknowledged by Kafka. */
  ok: boolean;
  /** `200`, `503 KAFKA_UNAVAILABLE`, `ECONNREFUSED`, `ECONNRESET`, `ECONNRESET reused`, `timeout`, ... */
  kind: string;
  /** When the request was started and settled (ms since epoch). */
  start: number;
  end: number;
}

export interface LoadOptions {
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

export class LoadGenerator {
  readonly outcomes: Outcome[] = [];
  private running = false;
  private loops: Promise<void>[] = [];
  private seq = 0;
  private readonly agent: Agent;

  constructor(private readonly opts: LoadOptions) {
    this.agent = new Agent({ keepAlive: true, maxSockets: opts.loops });
  }

  start(): void {
    this.running = true;
    this.loops = Array.from({ length: this.opts.loops }, (_, i) => this.loop(i));
  }

  /** Stops starting requests and waits for the ones in flight to settle. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.agent.destroy();
  }

  get sent(): number {
    return this.outcomes.reduce((n, o) => n + o.ids.length, 0);
  }

  /** The first acknowledged batch whose request started at or after `t`. */
  firstAckedSince(t: number): Outcome | undefined {
    return this.outcomes.find((o) => o.ok && o.start >= t);
  }

  private nextIds(): string[] {
    return Array.from({ length: this.opts.batchSize }, () => `${this.opts.idPrefix}.${this.seq++}`);
  }

  private body(ids: string[]): string {
    return JSON.stringify({
      events: ids.map((id) => ({ id, source: this.opts.source, category: 'fault-load', payload: { id } })),
    });
  }

  private async loop(index: number): Promise<void> {
    // Spread the loops over the interval so the rate is steady rather than bursty.
    await sleep((this.opts.intervalMs * index) / this.opts.loops);
    let next = Date.now();
    while (this.running) {
      next += this.opts.intervalMs;
      const ids = this.nextIds();
      this.outcomes.push(await this.post(ids));
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
      else next = Date.now();
    }
  }

  private post(ids: string[]): Promise<Outcome> {
    const body = this.body(ids);
    const start = Date.now();
    return new Promise<Outcome>((resolve) => {
      let settled = false;
      const done = (ok: boolean, kind: string): void => {
        if (settled) return;
        settled = true;
        resolve({ ids, ok, kind, start, end: Date.now() });
      };
      const req = request(
        {
          host: '127.0.0.1',
          port: this.opts.port,
          path: PATH,
          method: 'POST',
          agent: this.agent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'x-access-key': this.opts.key,
          },
        },
        (res) => {
          readAll(res).then(
            (text) => done(res.statusCode === 200, describe(res.statusCode ?? 0, text)),
            (err: unknown) => done(false, `${res.statusCode} then ${errorKind(err)}`),
          );
        },
      );
      req.setTimeout(this.opts.requestTimeoutMs, () => req.destroy(new TimeoutError()));
      req.on('error', (err) => done(false, `${errorKind(err)}${req.reusedSocket ? ' reused' : ''}`));
      req.end(body);
    });
  }
}

/**
 * Requests that are certainly in flight inside the gateway: the headers and half of the
 * body are sent on fresh connections, the rest only when `finish()` is called. A server
 * that drains on SIGTERM must answer them.
 */
export class SlowRequests {
  private readonly pending: { finish(): void; outcome: Promise<Outcome> }[] = [];

  constructor(
    private readonly opts: Pick<LoadOptions, 'port' | 'key' | 'source' | 'idPrefix' | 'batchSize' | 'requestTimeoutMs'>,
  ) {}

  open(count: number): void {
    for (let i = 0; i < count; i++) {
      const ids = Array.from({ length: this.opts.batchSize }, (_, j) => `${this.opts.idPrefix}.slow${i}.${j}`);
      const body = JSON.stringify({
        events: ids.map((id) => ({ id, source: this.opts.source, category: 'fault-slow', payload: { id } })),
      });
      const half = Math.floor(body.length / 2);
      const start = Date.now();
      let finish = (): void => {};
      const outcome = new Promise<Outcome>((resolve) => {
        let settled = false;
        const done = (ok: boolean, kind: string): void => {
          if (settled) return;
          settled = true;
          resolve({ ids, ok, kind, start, end: Date.now() });
        };
        const req = request(
          {
            host: '127.0.0.1',
            port: this.opts.port,
            path: PATH,
            method: 'POST',
            agent: false,
            headers: {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
              'x-access-key': this.opts.key,
            },
          },
          (res) => {
            readAll(res).then(
              (text) => done(res.statusCode === 200, describe(res.statusCode ?? 0, text)),
              (err: unknown) => done(false, `${res.statusCode} then ${errorKind(err)}`),
            );
          },
        );
        req.setTimeout(this.opts.requestTimeoutMs, () => req.destroy(new TimeoutError()));
        req.on('error', (err) => done(false, errorKind(err)));
        req.flushHeaders();
        req.write(body.slice(0, half));
        finish = () => req.end(body.slice(half));
      });
      this.pending.push({ finish, outcome });
    }
  }

  /** Sends the rest of every body and waits for the answers. */
  async finish(): Promise<Outcome[]> {
    for (const p of this.pending) p.finish();
    return Promise.all(this.pending.map((p) => p.outcome));
  }
}

class TimeoutError extends Error {
  constructor() {
    super('client timeout');
  }
}

function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => (text += d));
    res.on('end', () => resolve(text));
    res.on('error', reject);
    res.on('aborted', () => reject(new Error('response aborted')));
  });
}

function describe(status: number, text: string): string {
  if (status === 200) return '200';
  try {
    const code = (JSON.parse(text) as { code?: unknown }).code;
    return typeof code === 'string' ? `${status} ${code}` : String(status);
  } catch {
    return String(status);
  }
}

function errorKind(err: unknown): string {
  if (err instanceof TimeoutError) return 'timeout';
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : (err as Error).message;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
