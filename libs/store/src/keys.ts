import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { type Logger, Snapshot, type MigrationsByVersion, sqlIdentifier } from '@telemetry/platform';

/**
 * Keys look like `tk_<16 hex key id>_<64 hex secret>` (telemetry access keys) and
 * `ak_<16 hex key id>_<64 hex secret>` (API keys). The key id is public and indexes
 * the record; only SHA-256 of the secret is stored. The secret has 256 bits of
 * entropy, so a fast hash is enough (no password stretching needed), and the hash is
 * compared with timingSafeEqual, also when the key id is unknown.
 */
export type KeyKind = 'telemetry' | 'api';

/** Statements per migration version (see migrations.ts). */
export const keysMigrations: MigrationsByVersion = {
  1: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.access_keys (
        key_id String, kind String, name String, secret_hash String, scopes Array(String),
        monitor_ids Array(String), allowed_origins Array(String), allowed_sources Array(String),
        revoked UInt8, created_at DateTime('UTC'), version UInt64
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY key_id`,
  ],
};

/** API key scopes (docs/api.md). */
export const SCOPES = ['checks:read', 'monitors:read', 'monitors:write'] as const;
export type Scope = (typeof SCOPES)[number];

const PREFIX: Record<KeyKind, string> = { telemetry: 'tk', api: 'ak' };
const KEY_FORMAT = /^(tk|ak)_([0-9a-f]{16})_([0-9a-f]{64})$/;

export interface KeyRecord {
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
  version: number;
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

/** Where key records come from. ClickHouse in production; a small fake in unit tests. */
export interface KeySource {
  loadAll(): Promise<KeyRecord[]>;
}

export class ClickHouseKeySource implements KeySource {
  constructor(
    private readonly client: ClickHouseClient,
    private readonly database: string,
  ) {}

  async loadAll(): Promise<KeyRecord[]> {
    const rs = await this.client.query({
      query: `SELECT key_id, kind, name, secret_hash, scopes, monitor_ids, allowed_origins, allowed_sources,
                revoked, toString(created_at) AS created_at, version
              FROM ${sqlIdentifier(this.database)}.access_keys FINAL`,
      format: 'JSONEachRow',
    });
    return (await rs.json<KeyRecord>()).map((r) => ({ ...r, revoked: Number(r.revoked), version: Number(r.version) }));
  }
}

export interface NewKey {
  kind: KeyKind;
  name: string;
  scopes?: string[];
  monitorIds?: string[];
  allowedOrigins?: string[];
  allowedSources?: string[];
}

/** Issues a key: stores its hash and returns the plaintext, which is never stored. */
export async function issueKey(
  client: ClickHouseClient,
  database: string,
  spec: NewKey,
): Promise<{ key: string; record: KeyRecord }> {
  for (const s of spec.scopes ?? []) {
    if (!(SCOPES as readonly string[]).includes(s)) throw new Error(`unknown scope ${s}; known: ${SCOPES.join(', ')}`);
  }
  const keyId = randomBytes(8).toString('hex');
  const secret = randomBytes(32).toString('hex');
  const record: KeyRecord = {
    key_id: keyId,
    kind: spec.kind,
    name: spec.name,
    secret_hash: hashSecret(secret),
    scopes: spec.kind === 'api' ? (spec.scopes ?? ['checks:read']) : [],
    monitor_ids: spec.monitorIds ?? [],
    allowed_origins: spec.allowedOrigins ?? [],
    allowed_sources: spec.allowedSources ?? [],
    revoked: 0,
    created_at: new Date().toISOString().slice(0, 19).replace('T', ' '),
    version: Date.now(),
  };
  await client.insert({ table: `${sqlIdentifier(database)}.access_keys`, values: [record], format: 'JSONEachRow' });
  return { key: `${PREFIX[spec.kind]}_${keyId}_${secret}`, record };
}

/** Revokes a key by id; services stop accepting it within KEY_REFRESH_MS. */
export async function revokeKey(client: ClickHouseClient, database: string, keyId: string): Promise<boolean> {
  const records = await new ClickHouseKeySource(client, database).loadAll();
  const rec = records.find((r) => r.key_id === keyId);
  if (!rec) return false;
  await client.insert({
    table: `${sqlIdentifier(database)}.access_keys`,
    values: [{ ...rec, revoked: 1, version: Math.max(Date.now(), rec.version + 1) }],
    format: 'JSONEachRow',
  });
  return true;
}

export interface VerifiedKey {
  keyId: string;
  name: string;
  kind: KeyKind;
  scopes: ReadonlySet<string>;
  monitorIds: ReadonlySet<string>;
  allowedOrigins: ReadonlySet<string>;
  allowedSources: ReadonlySet<string>;
}

interface KeyEntry {
  hash: Buffer;
  verified: VerifiedKey;
  revoked: boolean;
}

function indexKeys(records: KeyRecord[]): Map<string, KeyEntry> {
  const next = new Map<string, KeyEntry>();
  for (const r of records) {
    next.set(r.key_id, {
      hash: Buffer.from(r.secret_hash, 'hex'),
      revoked: r.revoked !== 0,
      verified: {
        keyId: r.key_id,
        name: r.name,
        kind: r.kind,
        scopes: new Set(r.scopes),
        monitorIds: new Set(r.monitor_ids),
        allowedOrigins: new Set(r.allowed_origins),
        allowedSources: new Set(r.allowed_sources),
      },
    });
  }
  return next;
}

const NO_KEYS: ReadonlyMap<string, KeyEntry> = new Map();

/**
 * An in-memory copy of the key records, reloaded every `refreshMs`, so that checking
 * a key costs no I/O and a revocation takes effect without a restart. While the source
 * is unreachable the last copy stays in force.
 */
export class KeyStore extends Snapshot<Map<string, KeyEntry>> {
  // start() fails when the first load fails: a service must not start without its keys.
  constructor(source: KeySource, logger: Logger, refreshMs: number) {
    super({
      name: 'key-store',
      load: async () => indexKeys(await source.loadAll()),
      intervalMs: refreshMs,
      logger,
      failureMessage: 'key refresh failed',
    });
  }

  /** The key's identity, or undefined when it is malformed, unknown, revoked or of another kind. */
  verify(raw: string, kind: KeyKind): VerifiedKey | undefined {
    const parsed = parseKey(raw);
    if (!parsed) return undefined;
    const entry = (this.value() ?? NO_KEYS).get(parsed.keyId);
    const given = Buffer.from(hashSecret(parsed.secret), 'hex');
    // Compare against a dummy when the id is unknown so both paths cost the same.
    const equal = timingSafeEqual(given, entry && entry.hash.length === given.length ? entry.hash : DUMMY_HASH);
    if (!entry || !equal || entry.revoked || parsed.kind !== kind || entry.verified.kind !== kind) return undefined;
    return entry.verified;
  }
}
