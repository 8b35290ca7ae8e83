import type { Request } from 'express';
import { AppError } from '@telemetry/platform';
import type { Reservation, SignInThrottle } from '@telemetry/store';

/**
 * Where a password is checked (sign-in, a password change, accepting an invitation as an
 * existing person), the sign-in throttle (libs/store/src/people/throttle.ts) applies.
 */

/**
 * The address a request came from: `req.ip`, which beginApp makes the connection's peer,
 * or X-Forwarded-For's client when the peer is one of TRUSTED_PROXIES (libs/platform
 * trusted-proxies.ts), normalised; '' when the socket has gone.
 */
export function clientAddress(req: Request): string {
  return req.ip ?? '';
}

/**
 * Reserves a password check of `email` from this address (counted as a failure until
 * `succeeded()`), or 429 SIGN_IN_THROTTLED while a bucket that applies is blocked.
 */
export async function reserveAttempt(throttle: SignInThrottle, email: string, address: string): Promise<Reservation> {
  const r = await throttle.attempt(email, address);
  if (typeof r !== 'number') return r;
  throw new AppError(
    'SIGN_IN_THROTTLED',
    `too many failed sign-ins: try again in ${r} s`,
    { retry_after: r },
    { 'Retry-After': String(r) },
  );
}
