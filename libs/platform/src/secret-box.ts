import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { refuseDocumentedExample, type VarSpec } from './config.js';

/**
 * Encryption at rest for customer secrets (AES-256-GCM). A key ring holds one or more
 * named 32-byte keys: the first seals, every key opens, so a key is rotated by putting
 * a new one first, re-sealing, then dropping the old one (docs/operations.md).
 * A sealed value reads `v1.<key id>.<iv>.<tag>.<ciphertext>` (base64url parts), and is
 * bound to `context` (authenticated, not stored): a value copied to another record
 * does not open there.
 */
export interface SealingKey {
  id: string;
  key: Buffer;
}

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

/** `id:base64key,id2:base64key2` (first seals) as keys; throws naming what is wrong, never echoing a key. */
export function parseSealingKeys(raw: string): SealingKey[] {
  const keys = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map((item, i) => {
      const at = item.indexOf(':');
      const id = at > 0 ? item.slice(0, at) : '';
      if (!KEY_ID.test(id)) throw new Error(`entry ${i + 1} must be <id>:<base64 of 32 bytes>, id of [A-Za-z0-9_-]`);
      const key = Buffer.from(item.slice(at + 1), 'base64');
      if (key.length !== 32) throw new Error(`key ${id} must be 32 bytes, base64 encoded (openssl rand -base64 32)`);
      return { id, key };
    });
  if (keys.length === 0) throw new Error('must name at least one key');
  if (new Set(keys.map((k) => k.id)).size !== keys.length) throw new Error('key ids must differ');
  return keys;
}

/** A config variable holding a key ring (see parseSealingKeys). */
export function sealingKeysVar(name: string, doc: string): VarSpec<SealingKey[]> {
  return {
    name,
    default: undefined,
    doc,
    parse: (raw) => {
      const keys = parseSealingKeys(raw);
      // The published examples' keys are text that says so (base64 of "...replace-me...").
      for (const k of keys) refuseDocumentedExample(k.key.toString('latin1'));
      return keys;
    },
  };
}

/** A fresh key ring entry, as `id:base64`: for development stacks and tests. */
export function newSealingKeyText(id: string): string {
  return `${id}:${randomBytes(32).toString('base64')}`;
}

export class SecretBox {
  private readonly byId: Map<string, Buffer>;
  private readonly current: SealingKey;

  constructor(keys: readonly SealingKey[]) {
    if (keys.length === 0) throw new Error('a SecretBox needs a key');
    this.current = keys[0]!;
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  /** The id of the key that seals. */
  get keyId(): string {
    return this.current.id;
  }

  seal(plain: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', this.current.id, iv, cipher.getAuthTag(), ct]
      .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
      .join('.');
  }

  open(sealed: string, context: string): string {
    const parts = sealed.split('.');
    if (parts.length !== 5 || parts[0] !== 'v1') throw new Error('not a sealed value');
    const key = this.byId.get(parts[1]!);
    if (!key) throw new Error(`sealed with key ${parts[1]}, which the key ring does not hold`);
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(parts[2]!, 'base64url'));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(Buffer.from(parts[3]!, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(parts[4]!, 'base64url')), decipher.final()]).toString('utf8');
  }

  /**
   * A keyed fingerprint of a secret, `fp1.<key id>.<22 base64url characters>`: an
   * HMAC-SHA256 (truncated to 128 bits) of `context` and `value` under a key derived from
   * the ring's first key. It tells whether two values are the same without showing
   * either; without the key it cannot be checked against guesses. `context` (a tenant id)
   * makes the same value fingerprint differently elsewhere.
   */
  fingerprint(value: string, context: string): string {
    return `fp1.${this.current.id}.${fingerprintMac(this.current.key, value, context)}`;
  }

  /** Is `fp` the fingerprint of `value` in `context` under any key of the ring (in constant time)? */
  fingerprintMatches(fp: string, value: string, context: string): boolean {
    const parts = fp.split('.');
    if (parts.length !== 3 || parts[0] !== 'fp1') return false;
    const key = this.byId.get(parts[1]!);
    if (!key) return false;
    const want = Buffer.from(fingerprintMac(key, value, context), 'utf8');
    const got = Buffer.from(parts[2]!, 'utf8');
    return got.length === want.length && timingSafeEqual(got, want);
  }
}

/** The MAC of a fingerprint: HMAC-SHA256 under a key derived from a sealing key (never the sealing key itself). */
function fingerprintMac(sealingKey: Buffer, value: string, context: string): string {
  const derived = createHmac('sha256', sealingKey).update('telemetry secret fingerprint v1').digest();
  return createHmac('sha256', derived)
    .update(`${context}\0${value}`, 'utf8')
    .digest()
    .subarray(0, 16)
    .toString('base64url');
}

/** The key ring of the services that read or write customer secrets (query service, check runner). */
export const secretsSpec = {
  secretsKeys: sealingKeysVar(
    'SECRETS_KEYS',
    'key ring sealing customer secrets at rest (AES-256-GCM): id:base64(32 bytes), comma-separated, the first seals; e.g. k1:$(openssl rand -base64 32) (the published examples, whose keys say replace-me, are refused)',
  ),
};
