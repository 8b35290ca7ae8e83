import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { DEFAULT_TENANT, IP_STORAGE_MODES, SCOPES, withImpliedScopes, type IpStorage } from '@telemetry/contract';
import { AppError, Mirror } from '@telemetry/platform';

/** The change feed's name for access keys (registry_changes.entity). */
export const KEYS_ENTITY = 'access_keys';

/**
 * Keys look like `tk_<16 hex key id>_<64 hex secret>` (telemetry access keys) and
 * `ak_<16 hex key id>_<64 hex secret>` (API keys). The key id is public and indexes
 * the record; only SHA-256 of the secret is stored. The secret has 256 bits of
 * entropy, so a fast hash is enough (no password stretching needed), and the hash is
 * compared with timingSafeEqual, also when the key id is unknown.
 */
export type KeyKind = 'telemetry' | 'api';

/** API key scopes: the contract's (docs/access.md). */
export { SCOPES, type Scope } from '@telemetry/contract';

const PREFIX: Record<KeyKind, string> = { telemetry: 'tk', api: 'ak' };
const KEY_FORMAT = /^(tk|ak)_([0-9a-f]{16})_([0-9a-f]{64})$/;

export interface KeyRecord {
  tenant_id: string;
  key_id: string;
  kind: KeyKind;
  name: string;
  secret_hash: string;
  scopes: string[];
  monitor_ids: string[];
  allowed_origins: string[];
  allowed_sources: string[];
  revoked: number;
  created_at: string;
  /** When the key stops working ('YYYY-MM-DD hh:mm:ss', UTC), or null: never. */
  expires_at: string | null;
  version: number;
  /** Who made it: a person's id (`per_…`), or `operator` (npm run keys), or '' before people existed. */
  created_by?: string;
  /** A telemetry key's events: what ClickHouse keeps of the client's address (docs/enrichment.md); absent: truncated. */
  ip_storage?: IpStorage;
}

/** What a key keeps of an address when nobody said (docs/enrichment.md). */
export const DEFAULT_IP_STORAGE: IpStorage = 'truncated';

/** `v` if it is an ip_storage mode (full, truncated, none). */
export function isIpStorage(v: unknown): v is IpStorage {
  return (IP_STORAGE_MODES as readonly unknown[]).includes(v);
}

export interface ParsedKey {
  kind: KeyKind;
  keyId: string;
  secret: string;
}

export function parseKey(raw: string): ParsedKey | undefined {
  if (raw.length > 100) return undefined;
  const m = KEY_FORMAT.exec(raw);
  if (!m) return undefined;
  return { kind: m[1] === 'tk' ? 'telemetry' : 'api', keyId: m[2]!, secret: m[3]! };
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

const DUMMY_HASH = Buffer.from(hashSecret('0'.repeat(64)), 'hex');

export interface NewKey {
  tenantId: string;
  kind: KeyKind;
  name: string;
  scopes?: string[];
  monitorIds?: string[];
  allowedOrigins?: string[];
  allowedSources?: string[];
  /** Seconds from now until the key stops working; undefined: never. */
  expiresInSeconds?: number;
  /** Who makes it (KeyRecord.created_by). */
  createdBy?: string;
  /** What its events keep of the client's address (default truncated). */
  ipStorage?: IpStorage;
}

/** '90d', '12h', '30m', '3600s': seconds; undefined when it is not such a duration. */
export function parseDuration(s: string): number | undefined {
  const m = /^([1-9][0-9]{0,5})([smhd])$/.exec(s.trim());
  if (!m) return undefined;
  return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86_400 }[m[2] as 's' | 'm' | 'h' | 'd'];
}

export function dateTimeText(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

/** A new key of `spec`: its record (the hash of its secret) and the plaintext, which is never stored. */
export function newKeyRecord(spec: NewKey, now = Date.now()): { key: string; record: KeyRecord } {
  for (const s of spec.scopes ?? []) {
    if (!(SCOPES as readonly string[]).includes(s)) throw new Error(`unknown scope ${s}; known: ${SCOPES.join(', ')}`);
  }
  if (spec.ipStorage !== undefined && !isIpStorage(spec.ipStorage)) {
    throw new Error(`unknown ip_storage ${String(spec.ipStorage)}; known: ${IP_STORAGE_MODES.join(', ')}`);
  }
  const keyId = randomBytes(8).toString('hex');
  const secret = randomBytes(32).toString('hex');
  const record: KeyRecord = {
    tenant_id: spec.tenantId,
    key_id: keyId,
    kind: spec.kind,
    name: spec.name,
    secret_hash: hashSecret(secret),
    scopes: spec.kind === 'api' ? (spec.scopes ?? ['checks:read']) : [],
    monitor_ids: spec.monitorIds ?? [],
    allowed_origins: spec.allowedOrigins ?? [],
    allowed_sources: spec.allowedSources ?? [],
    revoked: 0,
    created_at: dateTimeText(now),
    expires_at: spec.expiresInSeconds === undefined ? null : dateTimeText(now + spec.expiresInSeconds * 1000),
    version: now,
    created_by: spec.createdBy ?? 'operator',
    ip_storage: spec.ipStorage ?? DEFAULT_IP_STORAGE,
  };
  return { key: `${PREFIX[spec.kind]}_${keyId}_${secret}`, record };
}

export interface VerifiedKey {
  keyId: string;
  /** Every read and write of this key is confined to this tenant. */
  tenantId: string;
  name: string;
  kind: KeyKind;
  scopes: ReadonlySet<string>;
  monitorIds: ReadonlySet<string>;
  allowedOrigins: ReadonlySet<string>;
  allowedSources: ReadonlySet<string>;
  /** What ClickHouse keeps of its events' client addresses (the message's ip_storage). */
  ipStorage: IpStorage;
}

export interface KeyEntry {
  hash: Buffer;
  verified: VerifiedKey;
  revoked: boolean;
  /** Epoch ms after which the key is refused (KEY_EXPIRED); Infinity: never. */
  expiresAtMs: number;
}

/** A record's `expires_at` as epoch ms; Infinity when it never expires. */
export function expiryMs(text: string | null): number {
  // toString of a NULL Nullable(DateTime) is NULL (JSON null); 0 would be 1970: treated alike.
  if (text === null || text === '' || text.startsWith('0000') || text.startsWith('1970-01-01')) return Infinity;
  const ms = Date.parse(`${text.replace(' ', 'T')}Z`);
  return Number.isFinite(ms) ? ms : Infinity;
}

/**
 * Key records by key id, as a service checks them (KeyStore's copy; bench:registry's
 * previous-design replica reloads the whole table into one every 2 s).
 */
export function indexKeys(records: KeyRecord[]): Map<string, KeyEntry> {
  const next = new Map<string, KeyEntry>();
  for (const r of records) {
    next.set(r.key_id, {
      hash: Buffer.from(r.secret_hash, 'hex'),
      revoked: r.revoked !== 0,
      expiresAtMs: expiryMs(r.expires_at),
      verified: {
        keyId: r.key_id,
        tenantId: r.tenant_id || DEFAULT_TENANT,
        name: r.name,
        kind: r.kind,
        // A monitors scope carries its channels scope (keys made before those existed).
        scopes: withImpliedScopes(r.scopes),
        monitorIds: new Set(r.monitor_ids),
        allowedOrigins: new Set(r.allowed_origins),
        allowedSources: new Set(r.allowed_sources),
        ipStorage: isIpStorage(r.ip_storage) ? r.ip_storage : DEFAULT_IP_STORAGE,
      },
    });
  }
  return next;
}

/**
 * An in-memory copy of the key records, kept current by the registry's change feed
 * (registry/feed.ts), so that checking a key costs no I/O and a revocation takes effect
 * on every replica within moments. While PostgreSQL is unreachable the last copy stays
 * in force.
 */
export class KeyStore {
  /** Subscribe this to the service's change feed. */
  readonly mirror: Mirror<KeyEntry>;

  /** `load`: the records of these key ids (every record when undefined). */
  constructor(load: (ids?: readonly string[]) => Promise<KeyRecord[]>) {
    this.mirror = new Mirror<KeyEntry>(
      KEYS_ENTITY,
      async (ids) => [...indexKeys(await load(ids)).values()],
      (e) => e.verified.keyId,
    );
  }

  /** The key's identity, or undefined when it is malformed, unknown, revoked, expired or of another kind. */
  verify(raw: string, kind: KeyKind, nowMs = Date.now()): VerifiedKey | undefined {
    const found = this.check(raw, kind, nowMs);
    return typeof found === 'string' ? undefined : found;
  }

  /**
   * The key's identity; else AppError INVALID_CREDENTIALS (malformed, unknown, revoked,
   * of another kind) or KEY_EXPIRED (a valid key past its expiry).
   */
  authenticate(raw: string, kind: KeyKind, nowMs = Date.now()): VerifiedKey {
    const found = this.check(raw, kind, nowMs);
    if (found === 'expired') throw new AppError('KEY_EXPIRED', 'the key has expired; ask for a new one');
    if (found === 'invalid') {
      throw new AppError(
        'INVALID_CREDENTIALS',
        kind === 'api' ? 'the API key is not valid' : 'the access key is not valid',
      );
    }
    return found;
  }

  private check(raw: string, kind: KeyKind, nowMs: number): VerifiedKey | 'invalid' | 'expired' {
    const parsed = parseKey(raw);
    if (!parsed) return 'invalid';
    const entry = this.mirror.get(parsed.keyId);
    const given = Buffer.from(hashSecret(parsed.secret), 'hex');
    // Compare against a dummy when the id is unknown so both paths cost the same.
    const equal = timingSafeEqual(given, entry && entry.hash.length === given.length ? entry.hash : DUMMY_HASH);
    if (!entry || !equal || entry.revoked || parsed.kind !== kind || entry.verified.kind !== kind) return 'invalid';
    // Only a holder of the whole valid key learns that it expired.
    if (nowMs >= entry.expiresAtMs) return 'expired';
    return entry.verified;
  }
}
