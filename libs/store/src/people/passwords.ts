import { Algorithm, hash, verify } from '@node-rs/argon2';
import { dictionary } from '@zxcvbn-ts/language-common';
import { ACCESS_LIMITS } from '@telemetry/contract';
import { AppError } from '@telemetry/platform';

/**
 * Passwords (docs/access.md, "Passwords"): Argon2id, the memory-hard hash OWASP's password
 * storage cheat sheet puts first, with its baseline parameters (19 MiB, 2 passes, 1 lane),
 * by @node-rs/argon2 (MIT; prebuilt binaries, no compiler needed). The stored value is the
 * PHC string, which names its parameters, so raising them later still verifies old hashes
 * (and `needsRehash` says when to store a new one at the next sign-in).
 *
 * A new password is at least ACCESS_LIMITS.minPasswordLength characters, at most
 * maxPasswordLength, and not one of the 49,233 common passwords of zxcvbn-ts's list
 * (@zxcvbn-ts/language-common, MIT), compared in lower case.
 */
export const PASSWORD_HASH = {
  algorithm: Algorithm.Argon2id,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const;

const COMMON = new Set(dictionary.passwords.map((p) => p.toLowerCase()));

/** Why `password` may not be a new password, or undefined (count in code points). */
export function passwordProblem(password: string): 'too_short' | 'too_long' | 'common' | undefined {
  const length = [...password].length;
  if (length < ACCESS_LIMITS.minPasswordLength) return 'too_short';
  if (length > ACCESS_LIMITS.maxPasswordLength) return 'too_long';
  if (COMMON.has(password.toLowerCase())) return 'common';
  return undefined;
}

/** 400 WEAK_PASSWORD (with `details.reason`) unless `password` may be a new password. */
export function requireStrongPassword(password: string): void {
  const reason = passwordProblem(password);
  if (reason === undefined) return;
  const say = {
    too_short: `a password has at least ${ACCESS_LIMITS.minPasswordLength} characters`,
    too_long: `a password has at most ${ACCESS_LIMITS.maxPasswordLength} characters`,
    common: 'this password is on the list of common passwords; choose another',
  }[reason];
  throw new AppError('WEAK_PASSWORD', say, { reason, path: '/password' });
}

/** The PHC string of `password`'s Argon2id hash (a fresh salt each time). */
export function hashPassword(password: string): Promise<string> {
  return hash(password, PASSWORD_HASH);
}

/**
 * Whether `password` matches `stored`. With no stored hash (an unknown account, an
 * SSO-only person) a dummy hash is verified, so the answer takes as long either way.
 */
export async function verifyPassword(stored: string | null | undefined, password: string): Promise<boolean> {
  const phc = stored ?? (await dummyHash());
  try {
    return (await verify(phc, password)) && stored !== null && stored !== undefined;
  } catch {
    return false;
  }
}

/** Whether a stored hash was made with other parameters than PASSWORD_HASH's. */
export function needsRehash(stored: string): boolean {
  const { memoryCost: m, timeCost: t, parallelism: p } = PASSWORD_HASH;
  return !stored.startsWith(`$argon2id$v=19$m=${m},t=${t},p=${p}$`);
}

let dummy: Promise<string> | undefined;
function dummyHash(): Promise<string> {
  dummy ??= hashPassword('dummy password, never matched');
  return dummy;
}
