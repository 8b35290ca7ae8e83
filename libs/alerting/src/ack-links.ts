import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { SealingKey } from '@telemetry/platform';

/**
 * Acknowledge links (docs/alerting.md, "Acknowledging"): `<PUBLIC_URL>/ack/<token>`, where
 * the token names the tenant, the incident, the recipient it was sent to and when it
 * expires, and carries an HMAC-SHA256 under a key derived (HKDF) from each key of the
 * SECRETS_KEYS ring: the first signs, every key verifies, so rotating the ring keeps links
 * already sent working until they expire. Opening the link shows a page; only its button
 * (a POST) acknowledges, since mail scanners follow links.
 */

export interface AckClaim {
  tenant_id: string;
  incident_id: string;
  /** Who the link was sent to: `email:ops@example.com`, `slack:<channel name>`. */
  recipient: string;
  /** Unix seconds. */
  expires: number;
}

const INFO = 'telemetry ack links v1';

function macKey(k: SealingKey): Buffer {
  return Buffer.from(hkdfSync('sha256', k.key, Buffer.alloc(0), INFO, 32));
}

function mac(key: Buffer, payload: string): Buffer {
  return createHmac('sha256', key).update(payload).digest();
}

export class AckLinks {
  private readonly keys: Buffer[];

  constructor(
    ring: readonly SealingKey[],
    private readonly publicUrl: string,
    private readonly ttlSeconds: number,
  ) {
    if (ring.length === 0) throw new Error('acknowledge links need a key');
    this.keys = ring.map(macKey);
  }

  /** A token for `claim` (expiring ttlSeconds after `now`, ms). */
  token(c: Omit<AckClaim, 'expires'>, now: number): string {
    const claim: AckClaim = { ...c, expires: Math.floor(now / 1000) + this.ttlSeconds };
    const payload = Buffer.from(JSON.stringify(claim)).toString('base64url');
    return `${payload}.${mac(this.keys[0]!, payload).toString('base64url')}`;
  }

  /** The link to the confirmation page. */
  link(c: Omit<AckClaim, 'expires'>, now: number): string {
    return `${this.publicUrl.replace(/\/+$/, '')}/ack/${this.token(c, now)}`;
  }

  /** The claim of a genuine, unexpired token; undefined for anything else. */
  verify(token: string, now: number): AckClaim | undefined {
    const m = /^([A-Za-z0-9_-]{1,2000})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!m) return undefined;
    const given = Buffer.from(m[2]!, 'base64url');
    if (!this.keys.some((k) => timingSafeEqual(mac(k, m[1]!), given))) return undefined;
    let claim: AckClaim;
    try {
      claim = JSON.parse(Buffer.from(m[1]!, 'base64url').toString('utf8')) as AckClaim;
    } catch {
      return undefined;
    }
    if (typeof claim !== 'object' || claim === null) return undefined;
    const { tenant_id, incident_id, recipient, expires } = claim;
    if (typeof tenant_id !== 'string' || typeof incident_id !== 'string' || typeof recipient !== 'string')
      return undefined;
    if (typeof expires !== 'number' || expires * 1000 < now) return undefined;
    return { tenant_id, incident_id, recipient, expires };
  }
}
