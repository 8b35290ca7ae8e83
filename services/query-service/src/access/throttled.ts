import type { Request } from 'express';
import { AppError } from '@telemetry/platform';
import type { SignInThrottle } from '@telemetry/store';

/**
 * Where a password is checked (sign-in, a password change, accepting an invitation as an
 * existing person), the sign-in throttle (libs/store/src/people/throttle.ts) applies.
 */

/** The address a request came from (TRUSTED_PROXIES is not read yet: the socket's peer). */
export function clientAddress(req: Request): string {
  return req.socket.remoteAddress ?? '';
}

/** 429 SIGN_IN_THROTTLED while a bucket of `email` from this address is blocked. */
export async function refuseThrottled(throttle: SignInThrottle, email: string, address: string): Promise<void> {
  const wait = await throttle.retryAfter(email, address);
  if (wait > 0) {
    throw new AppError(
      'SIGN_IN_THROTTLED',
      `too many failed sign-ins: try again in ${wait} s`,
      { retry_after: wait },
      { 'Retry-After': String(wait) },
    );
  }
}
