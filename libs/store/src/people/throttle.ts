import { isIPv4, isIPv6 } from 'node:net';
import type { PgPool } from '@telemetry/platform';
import { inTransaction } from '@telemetry/platform';
import { registryCall } from '../registry/pg.js';

/**
 * Sign-in throttling (docs/access.md, "Passwords"): failed sign-ins are counted in three
 * buckets, the account (its email), the address, and the pair. A bucket lets `free`
 * failures through; each failure after them blocks it for a delay that doubles, from
 * `baseSeconds` up to `capSeconds`. A bucket forgets one failure per `decaySeconds` since
 * its last one, and a successful sign-in empties the pair's and the account's buckets.
 * While a bucket is blocked, a sign-in it covers is refused before its password is looked
 * at (429 SIGN_IN_THROTTLED, Retry-After).
 *
 * Not a lockout: the account's cap is small (30 s), so failures from other addresses only
 * slow its owner down; one address guessing (the pair, and the address across accounts)
 * waits up to 15 minutes. The pair's `free` is below the account's: a guesser from one
 * address is held by its pair bucket before the account's delay starts, and the owner,
 * from their own address, still signs in at once.
 */
export interface ThrottleRule {
  free: number;
  baseSeconds: number;
  capSeconds: number;
  decaySeconds: number;
}

export type ThrottleBucket = 'account' | 'address' | 'pair';

export const SIGN_IN_THROTTLE: Record<ThrottleBucket, ThrottleRule> = {
  account: { free: 5, baseSeconds: 1, capSeconds: 30, decaySeconds: 60 },
  pair: { free: 3, baseSeconds: 1, capSeconds: 900, decaySeconds: 300 },
  address: { free: 100, baseSeconds: 1, capSeconds: 900, decaySeconds: 300 },
};

/** How long a bucket is blocked after its `failures`-th failure (seconds; 0 while free). */
export function throttleDelaySeconds(rule: ThrottleRule, failures: number): number {
  if (failures <= rule.free) return 0;
  // 2^30 s is past any cap: the exponent is bounded so the arithmetic stays finite.
  return Math.min(rule.capSeconds, rule.baseSeconds * 2 ** Math.min(failures - rule.free - 1, 30));
}

/** A bucket's failures once `elapsedSeconds` passed since its last one (one forgotten per decaySeconds). */
export function decayedFailures(rule: ThrottleRule, failures: number, elapsedSeconds: number): number {
  return Math.max(0, failures - Math.floor(Math.max(0, elapsedSeconds) / rule.decaySeconds));
}

/**
 * The address a bucket counts: an IPv4 address (a v4-mapped IPv6 one as IPv4), or an IPv6
 * address's /64, which one subscriber usually holds whole (counting each of its addresses
 * apart would let one client rotate through 2^64 of them).
 */
export function throttleAddress(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!;
  if (!isIPv6(address)) return address.slice(0, 100);
  const [head = '', tail] = address.toLowerCase().split('%')[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/** The buckets a sign-in of `email` from `address` falls in (email as stored: lower case). */
export function throttleBuckets(email: string, address: string): Record<ThrottleBucket, string> {
  const e = email.slice(0, 254);
  const a = throttleAddress(address);
  return { account: `account:${e}`, address: `address:${a}`, pair: `pair:${e}|${a}` };
}

const KINDS: ThrottleBucket[] = ['account', 'pair', 'address'];

export class SignInThrottle {
  constructor(
    private readonly pool: PgPool,
    private readonly rules: Record<ThrottleBucket, ThrottleRule> = SIGN_IN_THROTTLE,
  ) {}

  /** Seconds until a sign-in of `email` from `address` may be tried (0: now). */
  async retryAfter(email: string, address: string): Promise<number> {
    const buckets = Object.values(throttleBuckets(email, address));
    const { rows } = await registryCall(() =>
      this.pool.query<{ wait_ms: string | null }>(
        `SELECT max(extract(epoch FROM blocked_until - now()) * 1000)::bigint AS wait_ms
         FROM sign_in_failures WHERE bucket = ANY($1) AND blocked_until > now()`,
        [buckets],
      ),
    );
    const waitMs = Number(rows[0]?.wait_ms ?? 0);
    return waitMs > 0 ? Math.ceil(waitMs / 1000) : 0;
  }

  /** Counts a failed sign-in in its three buckets (one transaction; concurrent failures all count). */
  async failed(email: string, address: string): Promise<void> {
    const buckets = throttleBuckets(email, address);
    await registryCall(() =>
      inTransaction(this.pool, async (tx) => {
        for (const kind of KINDS) {
          const rule = this.rules[kind];
          const bucket = buckets[kind];
          await tx.query(
            `INSERT INTO sign_in_failures (bucket, failures, last_failure_at, blocked_until)
             VALUES ($1, 0, now(), now()) ON CONFLICT (bucket) DO NOTHING`,
            [bucket],
          );
          const { rows } = await tx.query<{ failures: number; elapsed: number }>(
            `SELECT failures, extract(epoch FROM now() - last_failure_at)::float8 AS elapsed
             FROM sign_in_failures WHERE bucket = $1 FOR UPDATE`,
            [bucket],
          );
          const failures = decayedFailures(rule, rows[0]!.failures, rows[0]!.elapsed) + 1;
          await tx.query(
            `UPDATE sign_in_failures SET failures = $2, last_failure_at = now(),
               blocked_until = GREATEST(blocked_until, now() + make_interval(secs => $3))
             WHERE bucket = $1`,
            [bucket, failures, throttleDelaySeconds(rule, failures)],
          );
        }
      }),
    );
  }

  /** A successful sign-in: the account's and the pair's failures are forgotten (the address's stay). */
  async succeeded(email: string, address: string): Promise<void> {
    const { account, pair } = throttleBuckets(email, address);
    await registryCall(() => this.pool.query('DELETE FROM sign_in_failures WHERE bucket = ANY($1)', [[account, pair]]));
  }
}

/**
 * Forgets what sign-in no longer needs (hourly, by the query service): throttle buckets
 * quiet and unblocked for a day, reset links a day past their expiry, sessions past their
 * absolute expiry. Returns how many rows went.
 */
export async function pruneSignInRecords(pool: PgPool): Promise<number> {
  const statements = [
    `DELETE FROM sign_in_failures WHERE blocked_until < now() - interval '1 day'
       AND last_failure_at < now() - interval '1 day'`,
    `DELETE FROM password_resets WHERE expires_at < now() - interval '1 day'`,
    'DELETE FROM sessions WHERE expires_at < now()',
  ];
  let n = 0;
  for (const sql of statements) n += (await registryCall(() => pool.query(sql))).rowCount ?? 0;
  return n;
}
