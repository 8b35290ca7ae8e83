import { Agent, request } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Component } from './lifecycle.js';

/**
 * A lean read path to ClickHouse for the query service's hot routes: one keep-alive
 * HTTP POST per query and one JSON.parse of the answer. Measured against
 * @clickhouse/client 1.23 (BENCHMARKS.md, bench:query): that client spends about 1 ms of
 * CPU per query (a timer before every request, a stream pipeline per body), which made
 * the service reach only ~0.65x of ClickHouse's own throughput. Everything else (DDL,
 * inserts, streaming exports) keeps using @clickhouse/client.
 *
 * Values never reach SQL here: callers build SQL with sqlString/sqlNumber (sql.ts).
 */
export interface ClickHouseReaderOptions {
  url: string;
  username: string;
  password: string;
  database: string;
  /** Settings sent with every query (URL parameters), e.g. max_execution_time. */
  settings?: Record<string, string | number>;
  /** Sockets kept open to ClickHouse (queries in flight at most). */
  maxSockets?: number;
  /**
   * An idle socket is closed after this many ms (default 2,000): below ClickHouse's
   * keep_alive_timeout (3 s in 18.16's config, 10 or 30 s in current versions), so that
   * we close it before the server does.
   */
  idleSocketMs?: number;
}

/** How a request fails when the server had closed the kept-alive socket it went out on. */
const CLOSED_SOCKET = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/**
 * Whether `err`, on request `req`, says only that a kept-alive socket had been closed by
 * the server before our request reached it: nothing was answered, so the query can be
 * sent again on a new connection (reads only, which these are).
 */
function closedKeptAliveSocket(req: { reusedSocket: boolean }, err: unknown, answered: boolean): boolean {
  if (!req.reusedSocket || answered) return false;
  const e = err as { code?: unknown; message?: unknown };
  return (typeof e.code === 'string' && CLOSED_SOCKET.has(e.code)) || e.message === 'socket hang up';
}

export class ClickHouseQueryError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`ClickHouse answered ${status}: ${body.slice(0, 500)}`);
    this.name = 'ClickHouseQueryError';
  }
}

/** What FORMAT JSON returns. */
export interface JsonResult<T> {
  data: T[];
  totals?: T;
  rows: number;
}

export class ClickHouseReader implements Component {
  readonly name = 'clickhouse-reader';
  // Its health is the ClickHouse component's (ping); this part only holds sockets.
  readonly essential = false;
  private readonly base: URL;
  private readonly agent: Agent;
  private readonly headers: Record<string, string>;
  private readonly send: typeof request;

  constructor(opts: ClickHouseReaderOptions) {
    this.base = new URL(opts.url);
    this.base.searchParams.set('database', opts.database);
    for (const [k, v] of Object.entries(opts.settings ?? {})) this.base.searchParams.set(k, String(v));
    const https = this.base.protocol === 'https:';
    const agentOpts = {
      keepAlive: true,
      maxSockets: opts.maxSockets ?? 64,
      keepAliveMsecs: 10_000,
      // The agent destroys a free socket whose timeout fires (an active one only emits it).
      timeout: opts.idleSocketMs ?? 2000,
    };
    this.agent = https ? new HttpsAgent(agentOpts) : new Agent(agentOpts);
    this.send = https ? httpsRequest : request;
    this.headers = {
      'Content-Type': 'text/plain; charset=utf-8',
      'X-ClickHouse-User': opts.username,
      'X-ClickHouse-Key': opts.password,
    };
  }

  /**
   * Runs `sql` (without a FORMAT clause) and returns ClickHouse's FORMAT JSON answer. A
   * query that went out on a kept-alive socket the server had just closed is sent once
   * more, on a new connection (closedKeptAliveSocket).
   */
  query<T>(sql: string, signal?: AbortSignal): Promise<JsonResult<T>> {
    const body = `${sql}\nFORMAT JSON`;
    return this.post<T>(body, signal, true);
  }

  private post<T>(body: string, signal: AbortSignal | undefined, mayRetry: boolean): Promise<JsonResult<T>> {
    return new Promise((resolve, reject) => {
      let answered = false;
      const req = this.send(
        this.base,
        {
          method: 'POST',
          agent: this.agent,
          headers: { ...this.headers, 'Content-Length': Buffer.byteLength(body) },
          signal,
        },
        (res) => {
          answered = true;
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (res.statusCode !== 200) return reject(new ClickHouseQueryError(res.statusCode ?? 0, text));
            try {
              resolve(JSON.parse(text) as JsonResult<T>);
            } catch (err) {
              reject(err instanceof Error ? err : new Error(String(err)));
            }
          });
        },
      );
      req.on('error', (err) => {
        if (mayRetry && !signal?.aborted && closedKeptAliveSocket(req, err, answered)) {
          this.post<T>(body, signal, false).then(resolve, reject);
        } else {
          reject(err);
        }
      });
      req.end(body);
    });
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  health(): boolean {
    return true;
  }

  stop(): Promise<void> {
    this.agent.destroy();
    return Promise.resolve();
  }
}
