/**
 * The registry of `npm run bench:registry`, written twice: into ClickHouse's tables of
 * before (the previous design's replica reads them) and into PostgreSQL (the new one's),
 * the same keys and monitors in both; and the changes the benchmark makes to each.
 */
import { DEFAULT_TENANT } from '@telemetry/contract';
import type { ClickHouseClient, PgPool, SecretBox } from '@telemetry/platform';
import {
  insertKeyRecords,
  LegacyMonitorStore,
  MonitorStore,
  legacyKeyRow,
  newKeyRecord,
  revokeKey,
  tableIn,
  type KeyRecord,
  type StoredMonitor,
} from '@telemetry/store';
import { benchMonitor } from '../../harness/run.js';
import { CHANGED_SUFFIX } from './replica.js';

/** Rows per ClickHouse insert and per PostgreSQL statement (insertKeyRecords) or transaction (saveMany). */
const CLICKHOUSE_BATCH = 10_000;
const POSTGRES_BATCH = 5000;

export type Monitor = Omit<StoredMonitor, 'version'>;

export interface Registry {
  keys: KeyRecord[];
  monitors: Monitor[];
}

/** `keys` access keys (telemetry and API keys alternately) and `monitors` HTTP monitors, all of the default tenant. */
export function makeRegistry(keys: number, monitors: number): Registry {
  const now = new Date().toISOString();
  return {
    keys: Array.from(
      { length: keys },
      (_, i) =>
        newKeyRecord({ tenantId: DEFAULT_TENANT, kind: i % 2 ? 'api' : 'telemetry', name: `bench key ${i}` }).record,
    ),
    // Never checked (no runner runs); their secrets are sealed and opened as usual.
    monitors: Array.from({ length: monitors }, (_, i) => benchMonitor(i, (id) => `http://127.0.0.1:9/m/${id}`, now)),
  };
}

/** `n` items spread evenly over `list` (the ones the benchmark changes). */
export function spread<T>(list: readonly T[], n: number): T[] {
  const step = list.length / n;
  return Array.from({ length: Math.min(n, list.length) }, (_, i) => list[Math.floor(i * step)]!);
}

function batches<T>(list: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

/** The previous design's registry: keys as legacyIssueKey wrote them (many per insert), monitors with LegacyMonitorStore.saveMany. */
export async function writeClickHouse(
  ch: ClickHouseClient,
  database: string,
  box: SecretBox,
  r: Registry,
): Promise<void> {
  for (const values of batches(r.keys, CLICKHOUSE_BATCH)) {
    await ch.insert({
      table: tableIn(database, 'keys', 'access_keys'),
      values: values.map(legacyKeyRow),
      format: 'JSONEachRow',
    });
  }
  const store = new LegacyMonitorStore(ch, database, box);
  for (const b of batches(r.monitors, CLICKHOUSE_BATCH)) await store.saveMany(b);
}

/** The new design's registry: insertKeyRecords and MonitorStore.saveMany in batches. */
export async function writePostgres(db: PgPool, box: SecretBox, r: Registry): Promise<void> {
  for (const b of batches(r.keys, POSTGRES_BATCH)) await insertKeyRecords(db, b);
  const store = new MonitorStore(db, box);
  for (const b of batches(r.monitors, POSTGRES_BATCH)) await store.saveMany(b);
}

/** The two changes the benchmark makes, in one store: revoke a key, rename a monitor. */
export interface Writer {
  revoke(key: KeyRecord): Promise<void>;
  rename(monitor: Monitor): Promise<void>;
}

function renamed(m: Monitor): Monitor {
  return { ...m, name: `${m.name}${CHANGED_SUFFIX}`, updated_at: new Date().toISOString() };
}

/** Changes as the previous design made them: a newer row (ReplacingMergeTree), revoked or renamed. */
export function clickHouseWriter(ch: ClickHouseClient, database: string, box: SecretBox): Writer {
  const store = new LegacyMonitorStore(ch, database, box);
  return {
    revoke: async (key) => {
      // What revokeKey wrote then (it found the record by reading every key first).
      await ch.insert({
        table: tableIn(database, 'keys', 'access_keys'),
        values: [{ ...legacyKeyRow(key), revoked: 1, version: Math.max(Date.now(), key.version + 1) }],
        format: 'JSONEachRow',
      });
    },
    rename: async (m) => {
      await store.save(renamed(m));
    },
  };
}

/** Changes as the services make them now: revokeKey, and a conditional update of version 1 (saveMany's). */
export function postgresWriter(db: PgPool, box: SecretBox): Writer {
  const store = new MonitorStore(db, box);
  return {
    revoke: async (key) => {
      if (!(await revokeKey(db, key.key_id))) throw new Error(`key ${key.key_id} is not in PostgreSQL`);
    },
    rename: async (m) => {
      if (!(await store.update(renamed(m), 1))) throw new Error(`monitor ${m.id} is not at version 1`);
    },
  };
}
