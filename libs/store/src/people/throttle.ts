import { isIPv4, isIPv6 } from 'node:net';
import type { PgPool } from '@telemetry/platform';
import { inTransaction } from '@telemetry/platform';
import { registryCall } from '../registry/pg.js';

/**
 * Sign-in throttling (docs/access.md, "Passwords"): failed sign-ins are counted in three
 * buckets, the account (its email), the address, and the pair. A bucket lets `free`
 * failures through; each failure after them blocks it for a delay that doubles, from
 * `baseSeconds` up to `capSeconds`. A bucket forgets one failure per `decaySeconds` since
 * its last one. Each attempt is counted as a failure before its password is checked
 * (`attempt`, atomic: parallel guesses cannot all pass a check before one is counted); a
 * right password gives it back (`Reservation.succeeded`): the pair's and the account's
 * buckets empty, the address's loses the one failure, and the pair becomes known for 30
 * days. While a bucket that applies is blocked, a sign-in it covers is refused before its
 * password is looked at (429 SIGN_IN_THROTTLED, Retry-After).
 *
 * Not a lockout: the account bucket does not apply to a known pair, so failures from other
 * addresses never hold the owner at an address they signed in from (OWASP's "known
 * device", by address); elsewhere its cap is small (30 s). One address guessing (the pair,
 * and the address across accounts) waits up to 15 minutes. The pair's `free` is below the
 * account's: a guesser from one address is held by its pair bucket first.
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

/** How long a successful sign-in keeps its (email, address) pair known: the account bucket does not hold it. */
export const KNOWN_PAIR_SECONDS = 30 * 24 * 3600;

/** The row that marks (email, address) known (blocked_until: until when; failures 0). */
export function knownBucket(email: string, address: string): string {
  return `known:${email.slice(0, 254)}|${throttleAddress(address)}`;
}

/** An attempt counted as a failure before its password is checked; `succeeded` gives it back. */
export interface Reservation {
  /** The password was right: the account's and the pair's failures go, the address's failure is given back, the pair is known. */
  succeeded(): Promise<void>;
}

interface BucketRow {
  bucket: string;
  failures: number;
  elapsed: number;
  wait: number;
}

export class SignInThrottle {
  constructor(
    private readonly pool: PgPool,
    private readonly rules: Record<ThrottleBucket, ThrottleRule> = SIGN_IN_THROTTLE,
  ) {}

  /**
   * Reserves a password check of `email` from `address`: in one transaction that locks the
   * buckets (concurrent attempts queue here, so N parallel guesses are N counted failures),
   * the seconds to wait if a bucket that applies is blocked (nothing counted), else the attempt
   * is counted as a failure in every bucket and a Reservation is returned. The account bucket
   * does not apply to a known pair (a sign-in succeeded from it in the last 30 days).
   */
  async attempt(email: string, address: string): Promise<number | Reservation> {
    const buckets = throttleBuckets(email, address);
    const known = knownBucket(email, address);
    const wait = await registryCall(() =>
      inTransaction(this.pool, async (tx) => {
        const names = Object.values(buckets).sort();
        await tx.query(
          `INSERT INTO sign_in_failures (bucket, failures, last_failure_at, blocked_until)
           SELECT b, 0, now(), now() FROM unnest($1::text[]) AS b ORDER BY b ON CONFLICT (bucket) DO NOTHING`,
          [names],
        );
        const { rows } = await tx.query<BucketRow>(
          `SELECT bucket, failures, extract(epoch FROM now() - last_failure_at)::float8 AS elapsed,
             extract(epoch FROM blocked_until - now())::float8 AS wait
           FROM sign_in_failures WHERE bucket = ANY($1) ORDER BY bucket FOR UPDATE`,
          [[...names, known]],
        );
        const byName = new Map(rows.map((r) => [r.bucket, r]));
        const isKnown = (byName.get(known)?.wait ?? 0) > 0;
        const applies = KINDS.filter((k) => !(isKnown && k === 'account'));
        const longest = Math.max(0, ...applies.map((k) => byName.get(buckets[k])!.wait));
        if (longest > 0) return Math.ceil(longest);
        for (const kind of KINDS) {
          const rule = this.rules[kind];
          const row = byName.get(buckets[kind])!;
          const failures = decayedFailures(rule, row.failures, row.elapsed) + 1;
          await tx.query(
            `UPDATE sign_in_failures SET failures = $2, last_failure_at = now(),
               blocked_until = GREATEST(blocked_until, now() + make_interval(secs => $3))
             WHERE bucket = $1`,
            [row.bucket, failures, throttleDelaySeconds(rule, failures)],
          );
        }
        return 0;
      }),
    );
    if (wait > 0) return wait;
    return { succeeded: () => this.succeeded(email, address) };
  }

  private async succeeded(email: string, address: string): Promise<void> {
    const { account, pair, address: addressBucket } = throttleBuckets(email, address);
    await registryCall(() =>
      inTransaction(this.pool, async (tx) => {
        await tx.query('DELETE FROM sign_in_failures WHERE bucket = ANY($1)', [[account, pair]]);
        await tx.query('UPDATE sign_in_failures SET failures = greatest(failures - 1, 0) WHERE bucket = $1', [
          addressBucket,
        ]);
        await tx.query(
          `INSERT INTO sign_in_failures (bucket, failures, last_failure_at, blocked_until)
           VALUES ($1, 0, now(), now() + make_interval(secs => $2))
           ON CONFLICT (bucket) DO UPDATE SET blocked_until = EXCLUDED.blocked_until`,
          [knownBucket(email, address), KNOWN_PAIR_SECONDS],
        );
      }),
    );
  }
}

/**
 * Forgets what sign-in no longer needs (hourly, by the query service): throttle buckets
 * quiet and unblocked for a day (a known pair's row stays until its 30 days are over), reset links a day past their expiry, sessions past their
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
