import { Secret, TOTP } from 'otpauth';
import type { PgQueryable, SecretBox } from '@telemetry/platform';
import { registryCall } from '../registry/pg.js';
import type { PersonRecord } from './people.js';

/**
 * Two-step sign-in (docs/access.md, "Passwords"): RFC 6238 TOTP (SHA-1, 6 digits, 30 s,
 * what every authenticator app reads) by `otpauth` (MIT). The secret is sealed with the
 * SECRETS_KEYS ring, bound to its person; it is pending until a correct code turns it on.
 * A code is accepted within one step either side of now, and each step once
 * (people.totp_last_step): a code seen over a shoulder or replayed does not sign in again.
 */

const PERIOD = 30;
const DIGITS = 6;
const WINDOW = 1;

const context = (personId: string): string => `totp:${personId}`;

function totpOf(secret: Secret, email = ''): TOTP {
  return new TOTP({ issuer: 'Telemetry', label: email, secret, algorithm: 'SHA1', digits: DIGITS, period: PERIOD });
}

/** The time step `code` is valid for (within the window), or undefined. */
export function totpStep(secretBase32: string, code: string, nowMs = Date.now()): number | undefined {
  if (!/^\d{6}$/.test(code)) return undefined;
  const totp = totpOf(Secret.fromBase32(secretBase32));
  const delta = totp.validate({ token: code, timestamp: nowMs, window: WINDOW });
  return delta === null ? undefined : totp.counter({ timestamp: nowMs }) + delta;
}

/** The code of `secretBase32` at `nowMs` (tests, and a console's preview). */
export function totpCode(secretBase32: string, nowMs = Date.now()): string {
  return totpOf(Secret.fromBase32(secretBase32)).generate({ timestamp: nowMs });
}

export class TotpStore {
  constructor(
    private readonly db: PgQueryable,
    private readonly box: SecretBox,
  ) {}

  /** A new pending secret for `person` (replacing a pending one): its base32 and otpauth:// URL. */
  async start(
    person: Pick<PersonRecord, 'id' | 'email'>,
  ): Promise<{ secret: string; otpauth_url: string } | undefined> {
    const secret = new Secret({ size: 20 });
    const { rowCount } = await registryCall(() =>
      this.db.query(
        'UPDATE people SET totp_sealed = $2, totp_enabled = false WHERE person_id = $1 AND NOT totp_enabled',
        [person.id, this.box.seal(secret.base32, context(person.id))],
      ),
    );
    if (rowCount !== 1) return undefined;
    return { secret: secret.base32, otpauth_url: totpOf(secret, person.email).toString() };
  }

  /**
   * Whether `code` is right for the person's secret (pending or on), and its step newer
   * than the last one accepted: the step is then taken, so the same code never passes twice.
   */
  async accept(person: PersonRecord, code: string, nowMs = Date.now()): Promise<boolean> {
    if (!person.totp_sealed) return false;
    let secret: string;
    try {
      secret = this.box.open(person.totp_sealed, context(person.id));
    } catch {
      return false;
    }
    const step = totpStep(secret, code, nowMs);
    if (step === undefined || step <= person.totp_last_step) return false;
    const { rowCount } = await registryCall(() =>
      this.db.query('UPDATE people SET totp_last_step = $2 WHERE person_id = $1 AND totp_last_step < $2', [
        person.id,
        step,
      ]),
    );
    return rowCount === 1;
  }

  /** Turns the pending secret on (after accept). */
  async enable(personId: string): Promise<boolean> {
    const { rowCount } = await registryCall(() =>
      this.db.query(
        'UPDATE people SET totp_enabled = true WHERE person_id = $1 AND totp_sealed IS NOT NULL AND NOT totp_enabled',
        [personId],
      ),
    );
    return rowCount === 1;
  }

  /** Turns two-step sign-in off and forgets the secret. */
  async disable(personId: string): Promise<void> {
    await registryCall(() =>
      this.db.query('UPDATE people SET totp_enabled = false, totp_sealed = NULL WHERE person_id = $1', [personId]),
    );
  }
}
