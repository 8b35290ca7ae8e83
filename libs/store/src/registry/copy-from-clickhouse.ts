import type { ClickHouseClient } from '@clickhouse/client';
import type { PgClient, PgPool, SecretBox } from '@telemetry/platform';
import { ClickHouseKeySource } from '../legacy/keys.js';
import { currentMonitorIdsSql, LegacyMonitorStore } from '../legacy/monitors.js';
import { LegacyStatusPageStore } from '../legacy/status-pages.js';
import type { StoredMonitor } from '../monitor-rows.js';
import { legacyListTenants } from '../legacy/tenants.js';
import { insertKeyRecordsIn } from './keys.js';
import { MonitorStore } from './monitors.js';
import { registryWrite, sqlState } from './pg.js';
import { StatusPageStore } from './status-pages.js';
import { ensureTenantsIn } from './tenants.js';

/**
 * `npm run migrate`'s copy of the previous version's registry, ClickHouse's
 * `<db>_keys.tenants`, `<db>_keys.access_keys`, `<db>_registry.monitors` and
 * `<db>_registry.status_pages`, into PostgreSQL (docs/operations.md, "Moving the registry
 * to PostgreSQL"). Each table is copied in batches in id order, each batch one registry
 * write transaction that skips the ids an earlier run copied (COPY_LOG, kept in the same
 * transaction) and the ids PostgreSQL holds already (ON CONFLICT DO NOTHING): a second
 * run copies nothing, a run stopped half-way resumes where it stopped, and a row deleted
 * in PostgreSQL after its copy is not copied again by a later run (every release's
 * provisioning runs the copy while the ClickHouse tables are still there).
 *
 * NOTE: a row already copied is never changed: a change made in ClickHouse after its row
 * was copied (an edit, a revocation, a deletion) does not follow.
 *
 * Monitors are read with their secrets open (the key ring) and sealed again with its
 * first key, rows from before sealing included; deleted ones are not copied. A heartbeat
 * monitor gets the nonce '' (heartbeats.ts), so the token its job calls with keeps working.
 */

/** The tables copied, in the order the foreign keys need (tenants first). */
export const COPIED_TABLES = ['tenants', 'access_keys', 'monitors', 'status_pages'] as const;
export type CopiedTable = (typeof COPIED_TABLES)[number];

export interface CopyCount {
  /** Rows inserted by this run. */
  copied: number;
  /** Rows left alone: copied by an earlier run (even if deleted since), or their id (slug) made in PostgreSQL. */
  existing: number;
}

export type CopyReport = Record<CopiedTable, CopyCount>;

export interface CopyOptions {
  /** Rows per batch (one transaction each); 500 unless given. */
  batchSize?: number;
  /** The key ring that opens the monitors' secrets and seals them again; needed when ClickHouse holds monitors. */
  box?: SecretBox;
  /** Called after each committed batch with the table's counts so far (progress; a test stops a run here). */
  afterBatch?: (table: CopiedTable, counts: Readonly<CopyCount>) => void | Promise<void>;
}

export const DEFAULT_COPY_BATCH = 500;

/**
 * The copy's own record of the ids it copied (per table), made by the copy like
 * schema_migrations by the migrations: no service reads it, no role but the owner's may.
 */
export const COPY_LOG = 'registry_copied_from_clickhouse';
const COPY_LOG_TABLE = `CREATE TABLE IF NOT EXISTS ${COPY_LOG} (
  entity text NOT NULL,
  id text NOT NULL,
  copied_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (entity, id))`;

/**
 * Copies the ClickHouse registry of CLICKHOUSE_DATABASE `database` (read through `ch`,
 * a client of any database: every table is named with its database) into the registry
 * in `db` (PostgreSQL, as its owner, migrated). Returns what it copied per table.
 */
export async function copyRegistryFromClickHouse(
  ch: ClickHouseClient,
  database: string,
  db: PgPool,
  opts: CopyOptions = {},
): Promise<CopyReport> {
  const size = opts.batchSize ?? DEFAULT_COPY_BATCH;
  if (!Number.isInteger(size) || size < 1) throw new Error(`a batch size is a positive integer, not ${size}`);
  const report = Object.fromEntries(COPIED_TABLES.map((t) => [t, { copied: 0, existing: 0 }])) as CopyReport;

  await db.query(COPY_LOG_TABLE);
  const copy = async <T>(
    table: CopiedTable,
    batches: Iterable<T[]> | AsyncIterable<T[]>,
    idOf: (row: T) => string,
    insert: (tx: PgClient, batch: T[]) => Promise<number>,
  ): Promise<void> => {
    const counts = report[table];
    for await (const batch of batches) {
      let copied: number;
      try {
        copied = await registryWrite(db, async (tx) => {
          const ids = batch.map(idOf);
          const { rows } = await tx.query<{ id: string }>(
            `SELECT id FROM ${COPY_LOG} WHERE entity = $1 AND id = ANY($2::text[])`,
            [table, ids],
          );
          const done = new Set(rows.map((r) => r.id));
          const n = await insert(
            tx,
            batch.filter((row) => !done.has(idOf(row))),
          );
          await tx.query(`INSERT INTO ${COPY_LOG} (entity, id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`, [
            table,
            ids,
          ]);
          return n;
        });
      } catch (err) {
        throw new CopyError(table, idOf(batch[0]!), idOf(batch[batch.length - 1]!), err);
      }
      counts.copied += copied;
      counts.existing += batch.length - copied;
      await opts.afterBatch?.(table, { ...counts });
    }
  };

  await copy(
    'tenants',
    chunks(await legacyListTenants(ch, database), size),
    (t) => t.tenant_id,
    (tx, batch) => ensureTenantsIn(tx, batch),
  );
  const keys = (await new ClickHouseKeySource(ch, database).loadAll()).sort((a, b) => compare(a.key_id, b.key_id));
  await copy(
    'access_keys',
    chunks(keys, size),
    (k) => k.key_id,
    (tx, batch) => insertKeyRecordsIn(tx, batch),
  );
  if (opts.box) {
    const legacy = new LegacyMonitorStore(ch, database, opts.box);
    const monitors = new MonitorStore(db, opts.box);
    await copy(
      'monitors',
      monitorBatches(legacy, size),
      (m) => m.id,
      (tx, batch) => monitors.insertMigratedIn(tx, batch),
    );
  } else {
    const n = await currentMonitorCount(ch, database);
    if (n > 0) {
      throw new Error(
        `ClickHouse holds ${n} monitors: copying them opens their secrets and seals them again, which needs the query service's key ring (SECRETS_KEYS)`,
      );
    }
  }
  const pages = new StatusPageStore(db);
  await copy(
    'status_pages',
    chunks(await new LegacyStatusPageStore(ch, database).all(), size),
    (p) => p.slug,
    (tx, batch) => pages.insertMigratedIn(tx, batch),
  );
  return report;
}

/** "tenants: 3 copied, 0 already there", one line per table. */
export function describeCopy(report: CopyReport): string[] {
  return COPIED_TABLES.map((t) => `${t}: ${report[t].copied} copied, ${report[t].existing} already there`);
}

/** A batch that PostgreSQL refused: which table and ids, and why (a tenant missing from `tenants`, a CHECK). */
export class CopyError extends Error {
  constructor(
    readonly table: CopiedTable,
    readonly firstId: string,
    readonly lastId: string,
    readonly reason: unknown,
  ) {
    const state = sqlState(reason);
    const hint = state === '23503' ? ' (a row names a tenant that ClickHouse has no tenants row of)' : '';
    super(
      `copying ${table} ${firstId}…${lastId} failed${hint}: ${reason instanceof Error ? reason.message : String(reason)}; batches before it are copied, and a new run resumes`,
    );
    this.name = 'CopyError';
  }
}

function* chunks<T>(rows: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < rows.length; i += size) yield rows.slice(i, i + size);
}

/** Current (not deleted) monitors, `size` at a time in ClickHouse's id order. */
async function* monitorBatches(legacy: LegacyMonitorStore, size: number): AsyncGenerator<StoredMonitor[]> {
  let afterId: string | undefined;
  for (;;) {
    const batch = await legacy.list({ afterId, limit: size });
    if (batch.length > 0) yield batch;
    if (batch.length < size) return;
    afterId = batch[batch.length - 1]!.id;
  }
}

async function currentMonitorCount(ch: ClickHouseClient, database: string): Promise<number> {
  const rs = await ch.query({
    query: `SELECT count() AS n FROM (${currentMonitorIdsSql(database)})`,
    format: 'JSONEachRow',
  });
  return Number((await rs.json<{ n: number | string }>())[0]?.n ?? 0);
}

/** Key ids (hex) in ClickHouse's order. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
