/**
 * The part of autocannon 8's programmatic API the benchmark uses (autocannon ships no
 * types, and @types/autocannon describes an older major).
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    /** One connection of the load generator. */
    interface Client {
      setHeaders(headers: Record<string, string>): void;
    }

    interface Options {
      url: string;
      method?: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
      headers?: Record<string, string>;
      body?: string | Buffer;
      connections?: number;
      pipelining?: number;
      /** Seconds. */
      duration?: number;
      /** Requests per second over all connections (with coordinated-omission correction). */
      overallRate?: number;
      /** Seconds before a request counts as timed out. */
      timeout?: number;
      /** A response whose body differs counts as a mismatch. */
      expectBody?: string;
      /** Called once per connection, e.g. to give each its own headers. */
      setupClient?: (client: Client) => void;
      /** Record latencies of 2xx responses only. */
      excludeErrorStats?: boolean;
    }

    /** Milliseconds for latency, per-second samples for requests and throughput. */
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total?: number;
      p50: number;
      p90: number;
      p97_5: number;
      p99: number;
      p99_9: number;
    }

    interface Result {
      latency: Histogram;
      requests: Histogram;
      throughput: Histogram;
      errors: number;
      timeouts: number;
      mismatches: number;
      non2xx: number;
      resets: number;
      '1xx': number;
      '2xx': number;
      '3xx': number;
      '4xx': number;
      '5xx': number;
      statusCodeStats: Record<string, { count: number }>;
      /** Seconds, measured. */
      duration: number;
      start: Date;
      finish: Date;
    }

    interface Instance extends EventEmitter, PromiseLike<Result> {
      stop(): void;
    }
  }

  function autocannon(opts: autocannon.Options): autocannon.Instance;
  export = autocannon;
}
