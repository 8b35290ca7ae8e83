import { createHash } from 'node:crypto';
import type { ClickHouseSettings } from '@clickhouse/client';
import { sqlIdentifier, sqlNumber, sqlString, type ClickHouseClient, type Engine } from '@telemetry/platform';
import { insertSettingsOf, mutationSql } from './distributed-writes.js';
import { layoutOf, tableRef } from './layout.js';

/**
 * What a deletion request does in ClickHouse (docs/deletions.md, docs/clickhouse.md "What a
 * deletion does to rollups"): the rows of its ids of its tenant go from every table of
 * DELETION_CLICKHOUSE_TABLES that exists, then the events_per_minute minutes those events were in are
 * recomputed from the events that remain. The stream consumer runs it (its ClickHouse user
 * writes the data tables and holds ALTER DELETE there already, for retention).
 *
 * - ClickHouse 18.16: `ALTER TABLE … DELETE WHERE` mutations, waited for in system.mutations;
 * - current ClickHouse: lightweight `DELETE FROM … WHERE` (rows are hidden at once, removed
 *   at the next merge), waited for the same way.
 *
 * On a cluster (CLICKHOUSE_CLUSTER, docs/clickhouse.md "On a cluster") a Distributed table
 * takes no mutation: the deletes run on the local tables ON CLUSTER (every shard, every
 * replica), the mutations are waited for on every shard, and what plans and checks them
 * (the minutes, the counts before and after) reads through the `_all` tables, as does the
 * recompute, which inserts through `events_per_minute_all`.
 */

/** Where a deletion runs: the cluster ('' for one server) and the settings of its reads through `_all`. */
export interface DeletionPlace {
  cluster: string;
  readSettings?: ClickHouseSettings;
}

const ONE_SERVER: DeletionPlace = { cluster: '' };

/** `table` of `database` as the deletion reads and inserts it (its `_all` table on a cluster). */
function tableOf(database: string, table: string, place: DeletionPlace): string {
  return tableRef(database, table, layoutOf({ clickhouseCluster: place.cluster }));
}

/**
 * On a cluster, every read of a deletion (the mutation wait through cluster(…, system,
 * mutations), the counts through `_all`, the recompute's INSERT … SELECT from events_all)
 * asks each shard's FIRST replica in remote_servers order, the one the wait found done.
 * NOTE: cluster() and `_all` reach one replica per shard, and an 18.16 mutation runs on
 * each replica on its own: with the default (random) balancing the recompute could read
 * a replica still mutating and count deleted events again. A replica is passed over only
 * when it fails or lags (max_replica_delay_for_distributed_queries); then the counts'
 * poll (remaining) waits again, but a recompute that ran meanwhile is not repeated
 * (docs/deletions.md, "On a cluster").
 */
export const SAME_REPLICA_SETTINGS: Readonly<ClickHouseSettings> = Object.freeze({ load_balancing: 'in_order' });

/** The settings of a deletion's reads (and, with `insert`, INSERT … SELECT) through `_all`. */
function settingsOf(place: DeletionPlace, insert = false): ClickHouseSettings {
  const sharded = layoutOf({ clickhouseCluster: place.cluster });
  return {
    ...(sharded.sharded ? { ...(place.readSettings ?? {}), ...SAME_REPLICA_SETTINGS } : {}),
    ...(insert ? insertSettingsOf(sharded) : {}),
  };
}

/**
 * The tables a deletion removes rows from, in this order; a table that does not exist (yet)
 * is skipped. Each has tenant_id and at least one of user_id and anonymous_id. Add a table
 * here when it stores either id.
 */
export const DELETION_CLICKHOUSE_TABLES: readonly string[] = ['events', 'failed_events'];

/** The rollup recomputed after the events are gone. */
export const DELETION_ROLLUP = 'events_per_minute';

/** The ids of one tenant to delete. */
export interface DeletionTarget {
  tenantId: string;
  userIds: readonly string[];
  anonymousIds: readonly string[];
}

/** Rows deleted so far per table; `rollup_minutes`: minutes of events_per_minute recomputed. */
export type DeletionCounts = Record<string, number>;

/** Longest digest list text in one statement: 18.16's max_query_size is 256 KiB. */
const MAX_IDS_SQL_BYTES = 64 * 1024;
/** The quoted text of one id's digest in a statement: 64 hex digits, quotes, comma and space. */
const DIGEST_SQL_BYTES = 68;
/** Minutes recomputed per statement. */
const MINUTES_PER_STATEMENT = 500;

/** `values` in groups whose digests' quoted text stays under `maxBytes`. */
function chunksOf(values: readonly string[], maxBytes: number): string[][] {
  const per = Math.max(1, Math.floor(maxBytes / DIGEST_SQL_BYTES));
  const out: string[][] = [];
  for (let i = 0; i < values.length; i += per) out.push(values.slice(i, i + per));
  return out;
}

/** The id conditions of one statement: a chunk of one kind of id. */
interface IdChunk {
  column: 'user_id' | 'anonymous_id';
  ids: string[];
}

function idChunks(t: DeletionTarget): IdChunk[] {
  return [
    ...chunksOf(t.userIds, MAX_IDS_SQL_BYTES).map((ids) => ({ column: 'user_id' as const, ids })),
    ...chunksOf(t.anonymousIds, MAX_IDS_SQL_BYTES).map((ids) => ({ column: 'anonymous_id' as const, ids })),
  ];
}

/** An id as the deletion SQL names it: the upper-case hex of its SHA-256 (ClickHouse's `hex(SHA256(x))`). */
export function idDigest(id: string): string {
  return createHash('sha256').update(id, 'utf8').digest('hex').toUpperCase();
}

/**
 * SQL: rows of the tenant whose `column` is one of `ids`. The ids appear only as their
 * SHA-256 digests, never raw: the statement's text is kept in system.mutations (and the
 * query log), which on ClickHouse 18.16 every user can read (docs/deletions.md).
 */
export function deletionPredicate(tenantId: string, chunk: IdChunk): string {
  const digests = chunk.ids.map((id) => sqlString(idDigest(id)));
  return `tenant_id = ${sqlString(tenantId)} AND hex(SHA256(${chunk.column})) IN (${digests.join(', ')})`;
}

async function rows<T>(ch: ClickHouseClient, query: string, settings?: ClickHouseSettings): Promise<T[]> {
  return (await ch.query({ query, format: 'JSONEachRow', clickhouse_settings: settings })).json<T>();
}

async function count(
  ch: ClickHouseClient,
  table: string,
  where: string,
  settings?: ClickHouseSettings,
): Promise<number> {
  return Number(
    (await rows<{ n: string }>(ch, `SELECT count() AS n FROM ${table} WHERE ${where}`, settings))[0]?.n ?? 0,
  );
}

/** The columns of each table of `database` that exists. */
async function columnsOf(ch: ClickHouseClient, database: string): Promise<Map<string, Set<string>>> {
  const found = await rows<{ table: string; name: string }>(
    ch,
    `SELECT table, name FROM system.columns WHERE database = ${sqlString(database)}`,
  );
  const out = new Map<string, Set<string>>();
  for (const r of found) {
    if (!out.has(r.table)) out.set(r.table, new Set());
    out.get(r.table)!.add(r.name);
  }
  return out;
}

/**
 * The statement that deletes the rows `where` selects from the local `table`: a mutation
 * on 18.16, a lightweight delete on current ClickHouse; ON CLUSTER on a cluster.
 */
export function deleteSql(engine: Engine, database: string, table: string, where: string, cluster: string): string {
  const name = `${sqlIdentifier(database)}.${sqlIdentifier(table)}`;
  return mutationSql(
    engine.modern ? `DELETE FROM ${name} WHERE ${where}` : `ALTER TABLE ${name} DELETE WHERE ${where}`,
    cluster,
  );
}

/** Deletes the rows `where` selects from `table`, and waits until ClickHouse has done it. */
async function deleteWhere(
  ch: ClickHouseClient,
  engine: Engine,
  database: string,
  table: string,
  where: string,
  timeoutMs: number,
  place: DeletionPlace,
): Promise<void> {
  await ch.command({ query: deleteSql(engine, database, table, where, place.cluster) });
  await waitForMutations(ch, database, table, timeoutMs, place.cluster);
}

/** This server's mutations (''), or those of one replica of every shard of `cluster`. */
export function mutationsOf(cluster: string): string {
  return cluster === '' ? 'system.mutations' : `cluster(${sqlString(cluster)}, system, mutations)`;
}

/**
 * Waits until `table` has no unfinished mutation (ours among them: 18.16 names none it
 * made), on this server or on every shard of `cluster`. A mutation that cannot finish
 * (its latest_fail_reason, where the server has it) is an error after `timeoutMs`.
 */
export async function waitForMutations(
  ch: ClickHouseClient,
  database: string,
  table: string,
  timeoutMs: number,
  cluster = '',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
    const open = await rows<{ n: string }>(
      ch,
      `SELECT count() AS n FROM ${mutationsOf(cluster)}
       WHERE database = ${sqlString(database)} AND table = ${sqlString(table)} AND is_done = 0`,
      // The replicas the deletion's reads reach (SAME_REPLICA_SETTINGS).
      cluster === '' ? undefined : { ...SAME_REPLICA_SETTINGS },
    );
    if (Number(open[0]?.n ?? 0) === 0) return;
    if (Date.now() > deadline) throw new Error(`mutations of ${database}.${table} did not finish in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, delay));
  }
}

/**
 * The rows `where` still selects in `table`, asked again until none or `waitMs` passed:
 * on a cluster the `_all` read may reach a replica whose copy of the mutation is still
 * running when the one waited for is done.
 */
async function remaining(
  ch: ClickHouseClient,
  table: string,
  where: string,
  settings: ClickHouseSettings,
  waitMs: number,
): Promise<number> {
  const deadline = Date.now() + waitMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
    const n = await count(ch, table, where, settings);
    if (n === 0 || Date.now() > deadline) return n;
    await new Promise((r) => setTimeout(r, delay));
  }
}

/** SQL: the minute an events row is counted in, as unix seconds (the rollup view's minute). */
const MINUTE_OF_EVENT = 'toUInt32(toStartOfMinute(toDateTime(id_time)))';

/**
 * Deletes the target's rows from every DELETION_CLICKHOUSE_TABLES table of `database` and recomputes
 * the rollup minutes they were in. `done` holds the counts of a run that was interrupted
 * (a claim taken over): deleting again is harmless (the rows are gone), and its counts are
 * added to. `progress` is called after each statement with the counts so far.
 */
export async function deleteEvents(opts: {
  ch: ClickHouseClient;
  engine: Engine;
  database: string;
  target: DeletionTarget;
  done?: DeletionCounts;
  progress?: (counts: DeletionCounts) => Promise<void>;
  mutationTimeoutMs?: number;
  /** On a cluster: where the deletes run and how the `_all` tables are read (one server by default). */
  place?: DeletionPlace;
}): Promise<DeletionCounts> {
  const { ch, engine, database, target } = opts;
  const place = opts.place ?? ONE_SERVER;
  const reads = settingsOf(place);
  const timeoutMs = opts.mutationTimeoutMs ?? 600_000;
  const counts: DeletionCounts = { ...(opts.done ?? {}) };
  const columns = await columnsOf(ch, database);
  const chunks = idChunks(target);
  // The rollup's minutes these events are in, read before they go.
  const minutes = new Set<number>();
  if (columns.get('events')?.has('id_time')) {
    for (const chunk of chunks) {
      if (!columns.get('events')!.has(chunk.column)) continue;
      const found = await rows<{ m: string | number }>(
        ch,
        `SELECT DISTINCT ${MINUTE_OF_EVENT} AS m FROM ${tableOf(database, 'events', place)}
         WHERE ${deletionPredicate(target.tenantId, chunk)}`,
        reads,
      );
      for (const r of found) minutes.add(Number(r.m));
    }
  }
  for (const table of DELETION_CLICKHOUSE_TABLES) {
    const cols = columns.get(table);
    if (!cols?.has('tenant_id')) continue;
    counts[table] ??= 0;
    for (const chunk of chunks) {
      if (!cols.has(chunk.column)) continue;
      const where = deletionPredicate(target.tenantId, chunk);
      const name = tableOf(database, table, place);
      const before = await count(ch, name, where, reads);
      if (before === 0) continue;
      await deleteWhere(ch, engine, database, table, where, timeoutMs, place);
      const after = await remaining(ch, name, where, reads, place.cluster === '' ? 0 : timeoutMs);
      if (after > 0) throw new Error(`${after} rows of ${table} are still there after the delete`);
      counts[table] += before;
      await opts.progress?.({ ...counts });
    }
  }
  const rollupCols = columns.get(DELETION_ROLLUP);
  if (rollupCols && minutes.size > 0) {
    counts.rollup_minutes ??= 0;
    const sorted = [...minutes].sort((a, b) => a - b);
    for (let i = 0; i < sorted.length; i += MINUTES_PER_STATEMENT) {
      const some = sorted.slice(i, i + MINUTES_PER_STATEMENT);
      await recomputeMinutes(ch, engine, database, target.tenantId, [...rollupCols], some, timeoutMs, place);
      counts.rollup_minutes += some.length;
      await opts.progress?.({ ...counts });
    }
  }
  return counts;
}

/**
 * Recomputes the tenant's rollup rows of `minutes` (unix seconds) from the events left:
 * deletes them, then inserts uniqExact states of the remaining events of those minutes.
 * The rollup's columns are read from the server, so a dimension added to it (is_bot) is
 * carried as long as `events` has a column of the same name.
 *
 * NOTE: concurrent inserts are safe. A uniqExact state is the set of event ids; merging
 * states is a set union. An event the consumer inserts meanwhile reaches the rollup
 * through its view (a new part, which the delete, made before, does not touch) and may be
 * read by the recompute too: the union counts it once. Copies of an event (ReplacingMergeTree
 * keeps them until a merge) count once for the same reason.
 */
export async function recomputeMinutes(
  ch: ClickHouseClient,
  engine: Engine,
  database: string,
  tenantId: string,
  rollupColumns: readonly string[],
  minutes: readonly number[],
  timeoutMs: number,
  place: DeletionPlace = ONE_SERVER,
): Promise<void> {
  if (minutes.length === 0) return;
  const list = minutes.map(sqlNumber).join(', ');
  const first = sqlNumber(Math.min(...minutes));
  const end = sqlNumber(Math.max(...minutes) + 60);
  await deleteWhere(
    ch,
    engine,
    database,
    DELETION_ROLLUP,
    `tenant_id = ${sqlString(tenantId)} AND toUInt32(minute) IN (${list})`,
    timeoutMs,
    place,
  );
  const select = rollupColumns.map((c) => {
    if (c === 'minute') return 'toStartOfMinute(toDateTime(id_time)) AS minute';
    if (c === 'events') return 'uniqExactState(event_id) AS events';
    return sqlIdentifier(c);
  });
  const groupBy = rollupColumns
    .filter((c) => c !== 'events')
    .map((c) => (c === 'minute' ? 'minute' : sqlIdentifier(c)));
  await ch.command({
    query: `INSERT INTO ${tableOf(database, DELETION_ROLLUP, place)} (${rollupColumns.map(sqlIdentifier).join(', ')})
      SELECT ${select.join(', ')} FROM ${tableOf(database, 'events', place)}
      WHERE tenant_id = ${sqlString(tenantId)}
        AND id_time >= toDateTime(${first}) AND id_time < toDateTime(${end})
        AND ${MINUTE_OF_EVENT} IN (${list})
      GROUP BY ${groupBy.join(', ')}`,
    clickhouse_settings: settingsOf(place, true),
  });
}
