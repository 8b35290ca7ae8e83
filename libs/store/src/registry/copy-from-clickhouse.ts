import type { ClickHouseClient } from '@clickhouse/client';
import type { PgPool, SecretBox } from '@telemetry/platform';
import { ClickHouseKeySource } from '../legacy/keys.js';
import { currentMonitorIdsSql, LegacyMonitorStore } from '../legacy/monitors.js';
import { LegacyStatusPageStore } from '../legacy/status-pages.js';
import type { StoredMonitor } from '../monitor-rows.js';
import { legacyListTenants } from '../legacy/tenants.js';
import { insertKeyRecords } from './keys.js';
import { MonitorStore } from './monitors.js';
import { sqlState } from './pg.js';
import { StatusPageStore } from './status-pages.js';
import { ensureTenants } from './tenants.js';

/**
 * `npm run migrate`'s copy of the previous version's registry, ClickHouse's
 * `<db>_keys.tenants`, `<db>_keys.access_keys`, `<db>_registry.monitors` and
 * `<db>_registry.status_pages`, into PostgreSQL (docs/operations.md, "Moving the registry
 * to PostgreSQL"). Each table is copied in batches in id order, each batch one
 * transaction whose inserts skip ids PostgreSQL holds already (ON CONFLICT DO NOTHING):
 * a second run copies nothing, and a run stopped half-way resumes where it stopped.
 *
 * NOTE: a row already in PostgreSQL is never changed: a change made in ClickHouse after
 * its row was copied (an edit, a revocation, a deletion) does not follow.
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
  /** Rows whose id (slug) PostgreSQL held already: copied by an earlier run, or made there since. */
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

  const copy = async <T>(
    table: CopiedTable,
    batches: Iterable<T[]> | AsyncIterable<T[]>,
    idOf: (row: T) => string,
    insert: (batch: T[]) => Promise<number>,
  ): Promise<void> => {
    const counts = report[table];
    for await (const batch of batches) {
      let copied: number;
      try {
        copied = await insert(batch);
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
    (batch) => ensureTenants(db, batch),
  );
  const keys = (await new ClickHouseKeySource(ch, database).loadAll()).sort((a, b) => compare(a.key_id, b.key_id));
  await copy(
    'access_keys',
    chunks(keys, size),
    (k) => k.key_id,
    (batch) => insertKeyRecords(db, batch),
  );
  if (opts.box) {
    const legacy = new LegacyMonitorStore(ch, database, opts.box);
    const monitors = new MonitorStore(db, opts.box);
    await copy(
      'monitors',
      monitorBatches(legacy, size),
      (m) => m.id,
      (batch) => monitors.insertMigrated(batch),
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
    (batch) => pages.insertMigrated(batch),
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
