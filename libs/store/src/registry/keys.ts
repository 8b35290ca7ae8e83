import type { IpStorage } from '@telemetry/contract';
import type { PgPool, PgQueryable } from '@telemetry/platform';
import { newKeyRecord, type KeyRecord, type NewKey } from '../keys.js';
import { registryCall, registryWrite } from './pg.js';

const COLUMNS = `tenant_id, key_id, kind, name, secret_hash, scopes, monitor_ids, allowed_origins, allowed_sources,
  revoked, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS created_at,
  to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS expires_at, created_by, ip_storage`;

interface Row extends Omit<KeyRecord, 'revoked' | 'version'> {
  revoked: boolean;
}

function decode(r: Row): KeyRecord {
  return { ...r, revoked: r.revoked ? 1 : 0, version: 0 };
}

/** Key records: of these key ids, or every one. */
export async function loadKeyRecords(db: PgQueryable, ids?: readonly string[]): Promise<KeyRecord[]> {
  const { rows } =
    ids === undefined
      ? await db.query<Row>(`SELECT ${COLUMNS} FROM access_keys`)
      : await db.query<Row>(`SELECT ${COLUMNS} FROM access_keys WHERE key_id = ANY($1::text[])`, [ids]);
  return rows.map(decode);
}

/** Stores records as they are (new keys; keys copied from ClickHouse). Returns how many were new. */
export async function insertKeyRecords(db: PgPool, records: readonly KeyRecord[]): Promise<number> {
  if (records.length === 0) return 0;
  return registryWrite(db, (tx) => insertKeyRecordsIn(tx, records));
}

/** insertKeyRecords inside the caller's registry write transaction. */
export async function insertKeyRecordsIn(tx: PgQueryable, records: readonly KeyRecord[]): Promise<number> {
  if (records.length === 0) return 0;
  const { rowCount } = await tx.query(
    `INSERT INTO access_keys (tenant_id, key_id, kind, name, secret_hash, scopes, monitor_ids, allowed_origins,
       allowed_sources, revoked, created_at, expires_at, created_by, ip_storage)
     SELECT r.tenant_id, r.key_id, r.kind, r.name, r.secret_hash,
       ARRAY(SELECT jsonb_array_elements_text(r.scopes)), ARRAY(SELECT jsonb_array_elements_text(r.monitor_ids)),
       ARRAY(SELECT jsonb_array_elements_text(r.allowed_origins)),
       ARRAY(SELECT jsonb_array_elements_text(r.allowed_sources)),
       r.revoked, (r.created_at || 'Z')::timestamptz, (r.expires_at || 'Z')::timestamptz, coalesce(r.created_by, ''),
       coalesce(r.ip_storage, 'truncated')
     FROM jsonb_to_recordset($1::jsonb) AS r(tenant_id text, key_id text, kind text, name text, secret_hash text,
       scopes jsonb, monitor_ids jsonb, allowed_origins jsonb, allowed_sources jsonb, revoked boolean,
       created_at text, expires_at text, created_by text, ip_storage text)
     ON CONFLICT (key_id) DO NOTHING`,
    [
      JSON.stringify(
        records.map((r) => ({
          ...r,
          revoked: r.revoked !== 0,
          expires_at: r.expires_at === null || r.expires_at.startsWith('1970') ? null : r.expires_at,
        })),
      ),
    ],
  );
  return rowCount ?? 0;
}

/** Issues a key: stores its hash and returns the plaintext, which is never stored. */
export async function issueKey(db: PgPool, spec: NewKey): Promise<{ key: string; record: KeyRecord }> {
  const issued = newKeyRecord(spec);
  await insertKeyRecords(db, [issued.record]);
  return issued;
}

/** Revokes a key by id; every replica refuses it once the change reaches it (within a second). */
export async function revokeKey(db: PgPool, keyId: string): Promise<boolean> {
  const { rowCount } = await registryWrite(db, (tx) =>
    tx.query('UPDATE access_keys SET revoked = true WHERE key_id = $1 AND NOT revoked', [keyId]),
  );
  if (rowCount === 1) return true;
  const { rows } = await db.query('SELECT 1 FROM access_keys WHERE key_id = $1', [keyId]);
  return rows.length > 0;
}

/** A tenant's keys, newest first (GET /api/keys; the route never shows secret_hash). */
export async function listTenantKeys(db: PgQueryable, tenantId: string): Promise<KeyRecord[]> {
  const { rows } = await registryCall(() =>
    db.query<Row>(`SELECT ${COLUMNS} FROM access_keys WHERE tenant_id = $1 ORDER BY created_at DESC, key_id`, [
      tenantId,
    ]),
  );
  return rows.map(decode);
}

/**
 * Revokes a key of `tenantId` only: the record as it was (undefined: no such key in this
 * tenant, which is what a key of another tenant looks like too). Revoking a revoked key
 * changes nothing and answers it.
 */
export async function revokeTenantKey(db: PgPool, tenantId: string, keyId: string): Promise<KeyRecord | undefined> {
  return registryWrite(db, async (tx) => {
    const { rows } = await tx.query<Row>(
      `SELECT ${COLUMNS} FROM access_keys WHERE tenant_id = $1 AND key_id = $2 FOR UPDATE`,
      [tenantId, keyId],
    );
    const found = rows[0];
    if (!found) return undefined;
    if (!found.revoked) await tx.query('UPDATE access_keys SET revoked = true WHERE key_id = $1', [keyId]);
    return decode(found);
  });
}

/**
 * Sets what a key of `tenantId` keeps of its events' addresses (PATCH /api/keys/{id},
 * npm run keys -- ip-storage): the record before and after (undefined: no such key in this
 * tenant, or in any when `tenantId` is undefined). Only telemetry keys send events: an API
 * key is answered unchanged. Every gateway replica applies it within a second (the change
 * feed); events already on the topic keep the setting they were sent with.
 */
export async function setTenantKeyIpStorage(
  db: PgPool,
  tenantId: string | undefined,
  keyId: string,
  ipStorage: IpStorage,
): Promise<{ before: KeyRecord; after: KeyRecord } | undefined> {
  return registryWrite(db, async (tx) => {
    const { rows } = await tx.query<Row>(
      `SELECT ${COLUMNS} FROM access_keys WHERE key_id = $1 AND ($2::text IS NULL OR tenant_id = $2) FOR UPDATE`,
      [keyId, tenantId ?? null],
    );
    const found = rows[0];
    if (!found) return undefined;
    if (found.kind !== 'telemetry') return { before: decode(found), after: decode(found) };
    if (found.ip_storage !== ipStorage) {
      await tx.query('UPDATE access_keys SET ip_storage = $2 WHERE key_id = $1', [keyId, ipStorage]);
    }
    return { before: decode(found), after: decode({ ...found, ip_storage: ipStorage }) };
  });
}
