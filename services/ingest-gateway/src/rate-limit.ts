import type { ServerResponse } from 'node:http';
import { AppError } from '@telemetry/platform';

/**
 * A token bucket per access key, in this process's memory: `ratePerSecond` requests per
 * second on average, bursts up to `burst`. With N gateway replicas behind a load
 * balancer a key gets up to N x the rate (docs/api.md says so); set the rate per replica.
 */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until a token is available again (the Retry-After on a 429). */
  resetSeconds: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweepMs = 0;

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.ratePerSecond > 0;
  }

  take(key: string): RateDecision {
    const now = this.now();
    this.sweep(now);
    let b = this.buckets.get(key);
    if (!b) {
      b = { tokens: this.burst, updatedMs: now };
      this.buckets.set(key, b);
    }
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.updatedMs) / 1000) * this.ratePerSecond);
    b.updatedMs = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return {
        allowed: true,
        limit: this.burst,
        remaining: Math.floor(b.tokens),
        resetSeconds: Math.ceil((this.burst - b.tokens) / this.ratePerSecond),
      };
    }
    return {
      allowed: false,
      limit: this.burst,
      remaining: 0,
      resetSeconds: Math.max(1, Math.ceil((1 - b.tokens) / this.ratePerSecond)),
    };
  }

  /** Forgets full buckets now and then, so memory follows the number of active keys. */
  private sweep(now: number): void {
    if (now - this.lastSweepMs < 60_000) return;
    this.lastSweepMs = now;
    for (const [k, b] of this.buckets) {
      if (b.tokens + ((now - b.updatedMs) / 1000) * this.ratePerSecond >= this.burst) this.buckets.delete(k);
    }
  }
}

/** Takes a request of `id` from `limiter`: RateLimit headers, and 429 with Retry-After when it is over. */
export function applyLimit(limiter: RateLimiter, id: string, res: ServerResponse, message: string): void {
  if (!limiter.enabled) return;
  const d = limiter.take(id);
  res.setHeader('RateLimit-Limit', String(d.limit));
  res.setHeader('RateLimit-Remaining', String(d.remaining));
  res.setHeader('RateLimit-Reset', String(d.resetSeconds));
  if (!d.allowed) {
    throw new AppError('RATE_LIMITED', message, { limit: 'rateLimit' }, { 'Retry-After': String(d.resetSeconds) });
  }
}
