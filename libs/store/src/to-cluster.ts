/**
 * `npm run migrate -- to-cluster`: copies a single server's database into a cluster's
 * tables, partition by partition (docs/clickhouse.md, "Moving to a cluster").
 *
 * The order, and why the result is exact:
 *   1. the cluster's migrations run first (ON CLUSTER), then the source's schema version
 *      must be the cluster's;
 *   2. base tables (every table of DISTRIBUTED_TABLES that is not a rollup) are copied
 *      partition by partition: a partition not yet recorded as done is first dropped on
 *      every shard, then streamed from the source (`SELECT * … FORMAT Native`) into the
 *      table's `_all` with insert_distributed_sync=1 (each row to the shard of its
 *      sharding key), counted on both sides, and recorded. A run that stopped half-way
 *      copies that partition again from nothing: no row is ever there twice;
 *   3. then the rollups (ROLLUPS): while the base tables were copied their materialized
 *      views fed the cluster's rollups from the copied rows (and again from a partition
 *      copied twice). So every rollup partition is dropped on every shard and the
 *      source's own rollup partition copied in its place (the rollup may hold hours the
 *      base table's retention already dropped), and a rollup partition the source does
 *      not have is dropped. Rollups are inserted into directly, which fires no view.
 *      Because every base partition is done before the first rollup partition is
 *      touched, a resumed run never feeds a rollup partition already copied.
 * Merges are stopped on every copied table (source and cluster) from before the first copy
 * until after the final counts, so that no merge folds rows between two counts.
 * The writers (stream consumers) must be stopped for the whole move: Kafka keeps their
 * backlog, and they are started again with CLICKHOUSE_CLUSTER set (docs/operations.md).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pipeline } from 'node:stream/promises';
import {
  clickhouseSpec,
  clusterDdl,
  detectEngine,
  sqlIdentifier,
  sqlNumber,
  sqlString,
  tableExists,
  type Logger,
  v,
} from '@telemetry/platform';
import { databasesOf } from './databases.js';
import { DISTRIBUTED_TABLES, migrate } from './migrations.js';

/**
 * `npm run migrate -- to-cluster`'s variables: the target is the usual CLICKHOUSE_* (any
 * server of the cluster, CLICKHOUSE_CLUSTER), the source a single server.
 */
export const toClusterSpec = {
  ...clickhouseSpec,
  sourceUrl: v.url(
    'SOURCE_CLICKHOUSE_URL',
    undefined,
    'npm run migrate -- to-cluster: the single server whose database is copied to the cluster (or --source-url)',
  ),
  sourceUser: v.str('SOURCE_CLICKHOUSE_USER', 'default', "to-cluster: the source server's user (or --source-user)"),
  sourcePassword: v.secret('SOURCE_CLICKHOUSE_PASSWORD', '', "to-cluster: the source server's password"),
  sourceDatabase: v.str(
    'SOURCE_CLICKHOUSE_DATABASE',
    '',
    "to-cluster: the source's data database (or --source-database); empty: CLICKHOUSE_DATABASE",
    /^(?:[A-Za-z_][A-Za-z0-9_]{0,54})?$/,
  ),
} as const;

/** Rollup tables and the base table whose materialized view fills each. */
export const ROLLUPS: Record<string, string> = { events_per_minute: 'events', checks_hourly: 'checks' };

/** Tables in the audit database rather than the data database (databases.ts). */
const IN_AUDIT = new Set(['audit_log']);

/**
 * The progress table, in the cluster's data database: one row per (source, table,
 * partition) copied and counted. Replicated on the first shard (ON CLUSTER), written and
 * read through `to_cluster_progress_all` (sharding key 0).
 */
export const PROGRESS_TABLE = 'to_cluster_progress';

/** A refusal or failure the command reports as it is (exit code 1), without a stack. */
export class ToClusterError extends Error {}

/** A server and one of its databases. */
export interface Endpoint {
  url: string;
  user: string;
  password: string;
  database: string;
}

export interface ToClusterOptions {
  source: Endpoint;
  target: Endpoint & { cluster: string };
  sourceClient: ClickHouseClient;
  targetClient: ClickHouseClient;
  logger: Logger;
  dryRun?: boolean;
  /** Stop after copying this many partitions (a resumable run, in steps); 0: no limit. */
  maxPartitions?: number;
  /** How long a partition's count on the cluster may take to reach the source's (a replica catching up). */
  countTimeoutMs?: number;
  /** Progress, one line at a time. */
  onPartition?: (p: PartitionResult) => void;
}

export interface PartitionResult {
  table: string;
  partition: string;
  /** copied now; done before (a previous run); dropped (a rollup partition only the cluster had). */
  action: 'copied' | 'skipped' | 'dropped' | 'planned';
  sourceRows: number;
  targetRows: number | null;
}

export interface TableSummary {
  table: string;
  database: string;
  rollup: boolean;
  partitions: number;
  copied: number;
  skipped: number;
  sourceRows: number;
  targetRows: number | null;
}

export interface ToClusterReport {
  source: string;
  target: string;
  cluster: string;
  shards: number;
  dryRun: boolean;
  /** Every partition done and every table's counts equal. */
  complete: boolean;
  /** Stopped by maxPartitions before the end: run again to resume. */
  interrupted: boolean;
  tables: TableSummary[];
  partitions: PartitionResult[];
  /** Tables of the source holding rows that have no Distributed table, so are not copied. */
  leftBehind: { table: string; rows: number }[];
  /** Count mismatches (the command fails when there is one). */
  mismatches: string[];
}

/** The tables to copy, in their order: base tables first, rollups last (see the top of this file). */
export function copyOrder(tables: readonly string[] = Object.keys(DISTRIBUTED_TABLES)): string[] {
  const base = tables.filter((t) => !(t in ROLLUPS));
  const rollups = tables.filter((t) => t in ROLLUPS);
  return [...base, ...rollups];
}

/** Partition keys to-cluster can copy: none, or a date function of one column. */
const PARTITION_KEY = /^(?:to(?:YYYYMM|YYYYMMDD|Date|Monday|StartOfMonth)\(`?[A-Za-z_][A-Za-z0-9_]*`?\))?$/;

/** A partition's value as system.parts shows it: a number, or `tuple()` for an unpartitioned table. */
const PARTITION_VALUE = /^(?:\d{1,12}|tuple\(\))$/;

/** `key` (system.tables.partition_key) once it is one to-cluster can state in SQL. */
export function checkPartitionKey(table: string, key: string): string {
  if (!PARTITION_KEY.test(key)) {
    throw new ToClusterError(`${table}: partition key "${key}" is not one to-cluster can copy`);
  }
  return key;
}

function checkPartition(table: string, key: string, partition: string): void {
  checkPartitionKey(table, key);
  if (!PARTITION_VALUE.test(partition) || (key === '') !== (partition === 'tuple()')) {
    throw new ToClusterError(`${table}: partition "${partition}" of key "${key}" is not one to-cluster can copy`);
  }
}

/** The WHERE condition selecting one partition of a table whose partition key is `key`. */
export function partitionWhere(table: string, key: string, partition: string): string {
  checkPartition(table, key, partition);
  return key === '' ? '1' : `${key} = ${sqlNumber(Number(partition))}`;
}

/** The partition as ALTER TABLE … DROP PARTITION takes it. */
export function partitionLiteral(table: string, key: string, partition: string): string {
  checkPartition(table, key, partition);
  return key === '' ? 'tuple()' : sqlNumber(Number(partition));
}

/** The SQL of one partition's copy. `db` the table's database (unquoted). */
export function partitionSql(opts: {
  sourceDb: string;
  targetDb: string;
  table: string;
  key: string;
  partition: string;
  cluster: string;
}): { select: string; insert: string; drop: string; sourceCount: string; targetCount: string } {
  const where = partitionWhere(opts.table, opts.key, opts.partition);
  const src = `${sqlIdentifier(opts.sourceDb)}.${sqlIdentifier(opts.table)}`;
  const local = `${sqlIdentifier(opts.targetDb)}.${sqlIdentifier(opts.table)}`;
  const all = `${sqlIdentifier(opts.targetDb)}.${sqlIdentifier(`${opts.table}_all`)}`;
  return {
    select: `SELECT * FROM ${src} WHERE ${where} FORMAT Native`,
    insert: `INSERT INTO ${all} FORMAT Native`,
    drop: `ALTER TABLE ${local} ON CLUSTER ${sqlIdentifier(opts.cluster)} DROP PARTITION ${partitionLiteral(opts.table, opts.key, opts.partition)}`,
    sourceCount: `SELECT count() AS n FROM ${src} WHERE ${where}`,
    targetCount: `SELECT count() AS n FROM ${all} WHERE ${where}`,
  };
}

/**
 * The statements that stop (`STOP`) or start again (`START`) the merges of the copied
 * tables for the whole move, so that no ReplacingMergeTree or AggregatingMergeTree merge
 * folds rows between a count and the copy or the final counts: on the source, each table;
 * on the cluster, each local table ON CLUSTER when `onCluster` (current ClickHouse; the
 * SYSTEM queries of 18.16 take no ON CLUSTER, so there the operator stops them by hand).
 */
export function mergesSql(
  action: 'STOP' | 'START',
  tables: readonly { table: string; database: string; targetDatabase: string }[],
  cluster: string,
  onCluster: boolean,
): { source: string[]; cluster: string[] } {
  const on = sqlIdentifier(cluster);
  return {
    source: tables.map((t) => `SYSTEM ${action} MERGES ${sqlIdentifier(t.database)}.${sqlIdentifier(t.table)}`),
    cluster: onCluster
      ? tables.map(
          (t) =>
            `SYSTEM ${action} MERGES ON CLUSTER ${on} ${sqlIdentifier(t.targetDatabase)}.${sqlIdentifier(t.table)}`,
        )
      : [],
  };
}

/** The progress table's DDL (run through clusterDdl) and its Distributed table. */
export function progressTableSql(targetDb: string, cluster: string): string[] {
  const db = sqlIdentifier(targetDb);
  const local = `${db}.${sqlIdentifier(PROGRESS_TABLE)}`;
  return [
    clusterDdl(
      `CREATE TABLE IF NOT EXISTS ${local} (
        source String, table String, partition String, source_rows UInt64, target_rows UInt64,
        done_at DateTime('UTC') DEFAULT now()
      ) ENGINE = ReplacingMergeTree(done_at) ORDER BY (source, table, partition)`,
      cluster,
      'to-cluster-v1',
    ),
    `CREATE TABLE IF NOT EXISTS ${db}.${sqlIdentifier(`${PROGRESS_TABLE}_all`)} ON CLUSTER ${sqlIdentifier(cluster)} AS ${local}
      ENGINE = Distributed(${sqlIdentifier(cluster)}, ${db}, ${sqlIdentifier(PROGRESS_TABLE)}, 0)`,
  ];
}

/** Reads through `_all` that see every shard and no stale replica. */
const EXACT_READ = {
  skip_unavailable_shards: 0,
  fallback_to_stale_replicas_for_distributed_queries: 0,
  max_parallel_replicas: 1,
} as const;

async function rows<T>(client: ClickHouseClient, query: string, settings?: Record<string, number>): Promise<T[]> {
  const rs = await client.query({ query, format: 'JSONEachRow', clickhouse_settings: settings });
  return rs.json<T>();
}

async function one(client: ClickHouseClient, query: string, settings?: Record<string, number>): Promise<number> {
  return Number((await rows<{ n: number | string }>(client, query, settings))[0]?.n ?? 0);
}

async function schemaVersion(client: ClickHouseClient, database: string): Promise<number> {
  if (!(await tableExists(client, database, 'schema_migrations'))) return 0;
  return one(client, `SELECT max(version) AS n FROM ${sqlIdentifier(database)}.schema_migrations`);
}

function sourceName(s: Endpoint): string {
  const u = new URL(s.url);
  return `${u.host}/${s.database}`;
}

interface PlannedTable {
  table: string;
  database: string;
  targetDatabase: string;
  key: string;
  rollup: boolean;
  /** partition → rows (active parts' rows: exactly count()). */
  partitions: Map<string, number>;
}

async function planTables(
  opts: ToClusterOptions,
): Promise<{ tables: PlannedTable[]; leftBehind: { table: string; rows: number }[] }> {
  const src = databasesOf(opts.source.database);
  const dst = databasesOf(opts.target.database);
  const copied = new Set(Object.keys(DISTRIBUTED_TABLES));
  const tables: PlannedTable[] = [];
  for (const table of copyOrder()) {
    const database = IN_AUDIT.has(table) ? src.audit : src.data;
    const meta = await rows<{ key: string; engine: string }>(
      opts.sourceClient,
      `SELECT partition_key AS key, engine FROM system.tables WHERE database = ${sqlString(database)} AND name = ${sqlString(table)}`,
    );
    if (meta.length === 0) continue; // not on the source: nothing to copy
    const parts = await rows<{ partition: string; rows: number | string }>(
      opts.sourceClient,
      `SELECT partition, sum(rows) AS rows FROM system.parts
        WHERE database = ${sqlString(database)} AND table = ${sqlString(table)} AND active
        GROUP BY partition ORDER BY partition`,
    );
    // Checked here, not only per partition: a table with no parts still has its key in SQL.
    const key = checkPartitionKey(table, meta[0]!.key);
    const partitions = new Map(parts.map((p) => [p.partition, Number(p.rows)]));
    for (const p of partitions.keys()) checkPartition(table, key, p);
    tables.push({
      table,
      database,
      targetDatabase: IN_AUDIT.has(table) ? dst.audit : dst.data,
      key,
      rollup: table in ROLLUPS,
      partitions,
    });
  }
  const others = await rows<{ table: string; rows: number | string }>(
    opts.sourceClient,
    `SELECT table, sum(rows) AS rows FROM system.parts
      WHERE database IN (${sqlString(src.data)}, ${sqlString(src.audit)}) AND active AND table != 'schema_migrations'
      GROUP BY table HAVING rows > 0 ORDER BY table`,
  );
  const leftBehind = others.filter((o) => !copied.has(o.table)).map((o) => ({ table: o.table, rows: Number(o.rows) }));
  return { tables, leftBehind };
}

/** A POST to ClickHouse's HTTP interface: the request to write the body into, and its answer. */
function post(url: URL, e: Endpoint): { req: ClientRequest; answer: Promise<IncomingMessage> } {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const auth = `Basic ${Buffer.from(`${e.user}:${e.password}`).toString('base64')}`;
  // No timeout: a big partition's INSERT answers only once all of it is in.
  const req = send(url, { method: 'POST', headers: { Authorization: auth } });
  const answer = new Promise<IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  return { req, answer };
}

async function textOf(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8').slice(0, 2000);
}

/** Streams the source's partition into the cluster's `_all` table, never holding it in memory. */
async function stream(opts: ToClusterOptions, select: string, insert: string, modern: boolean): Promise<void> {
  const from = new URL(opts.source.url);
  from.searchParams.set('database', 'default');
  const read = post(from, opts.source);
  read.req.end(select);
  const res = await read.answer;
  if (res.statusCode !== 200)
    throw new ToClusterError(`reading the source failed: ${res.statusCode} ${await textOf(res)}`);
  const to = new URL(opts.target.url);
  to.searchParams.set('database', 'default');
  to.searchParams.set('query', insert);
  to.searchParams.set('insert_distributed_sync', '1');
  // Current ClickHouse folds duplicates of a ReplacingMergeTree block as it inserts it:
  // the copy keeps every row the source has (its count is compared).
  if (modern) to.searchParams.set('optimize_on_insert', '0');
  const write = post(to, opts.target);
  // A source that fails half-way ends the body early: the insert then fails on a cut block
  // (or inserts part of the partition, which is not recorded as done and copied again).
  const piped = pipeline(res, write.req);
  const [, put] = await Promise.all([piped, write.answer]);
  const answer = await textOf(put);
  if (put.statusCode !== 200)
    throw new ToClusterError(`inserting into the cluster failed: ${put.statusCode} ${answer}`);
}

/** The cluster's count, polled until it is the source's (a shard's other replica catching up) or the deadline. */
async function countOnCluster(client: ClickHouseClient, sql: string, want: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const n = await one(client, sql, EXACT_READ);
    if (n === want || Date.now() >= deadline) return n;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Runs the move (or with dryRun, only plans it). Throws ToClusterError on a refusal. */
export async function toCluster(opts: ToClusterOptions): Promise<ToClusterReport> {
  const { source, target, sourceClient, targetClient } = opts;
  const cluster = target.cluster;
  if (cluster === '') {
    throw new ToClusterError('the target is not a cluster: set CLICKHOUSE_CLUSTER to the cluster of remote_servers');
  }
  const shards = await one(
    targetClient,
    `SELECT uniqExact(shard_num) AS n FROM system.clusters WHERE cluster = ${sqlString(cluster)}`,
  );
  if (shards === 0) {
    throw new ToClusterError(
      `the target is not a cluster: ${target.url} has no cluster "${cluster}" in remote_servers`,
    );
  }
  const sameUrl = new URL(source.url).host === new URL(target.url).host;
  if (sameUrl && source.database === target.database) {
    throw new ToClusterError(`the source is the target (${sourceName(source)})`);
  }
  const replicated = await one(
    sourceClient,
    `SELECT count() AS n FROM system.tables WHERE database = ${sqlString(source.database)}
      AND (engine LIKE 'Replicated%' OR engine = 'Distributed')`,
  );
  if (replicated > 0) {
    throw new ToClusterError(
      `the source ${sourceName(source)} is a cluster's database (replicated or Distributed tables), not a single server's: is it the target?`,
    );
  }
  const sourceVersion = await schemaVersion(sourceClient, source.database);
  if (sourceVersion === 0) throw new ToClusterError(`the source ${sourceName(source)} has no migrated database`);
  if (!opts.dryRun) await migrate(targetClient, target.database, opts.logger, cluster);
  const targetVersion = opts.dryRun ? sourceVersion : await schemaVersion(targetClient, target.database);
  if (sourceVersion !== targetVersion) {
    throw new ToClusterError(
      `the source's schema version (${sourceVersion}) is not the cluster's (${targetVersion}): run npm run migrate on the source first`,
    );
  }
  const modern = (await detectEngine(targetClient)).modern;
  const from = sourceName(source);
  const { tables, leftBehind } = await planTables(opts);
  const progressAll = `${sqlIdentifier(target.database)}.${sqlIdentifier(`${PROGRESS_TABLE}_all`)}`;
  const done = new Map<string, { sourceRows: number; targetRows: number }>();
  if (!opts.dryRun) {
    for (const sql of progressTableSql(target.database, cluster)) await targetClient.command({ query: sql });
  }
  if (await tableExists(targetClient, target.database, `${PROGRESS_TABLE}_all`)) {
    const recorded = await rows<{ table: string; partition: string; s: string | number; t: string | number }>(
      targetClient,
      `SELECT table, partition, any(source_rows) AS s, any(target_rows) AS t FROM ${progressAll}
        WHERE source = ${sqlString(from)} GROUP BY table, partition`,
      EXACT_READ,
    );
    for (const r of recorded)
      done.set(`${r.table}\u0000${r.partition}`, { sourceRows: Number(r.s), targetRows: Number(r.t) });
  }
  if (!opts.dryRun && !done.has('\u0000')) {
    {
      // A first run: the cluster's tables must be empty (their partitions will be replaced).
      for (const t of tables) {
        const all = `${sqlIdentifier(t.targetDatabase)}.${sqlIdentifier(`${t.table}_all`)}`;
        const n = await one(targetClient, `SELECT count() AS n FROM ${all}`, EXACT_READ);
        if (n > 0) {
          throw new ToClusterError(
            `the cluster's ${t.table} already holds ${n} rows: to-cluster fills an empty cluster`,
          );
        }
      }
      await record(targetClient, progressAll, from, '', '', 0, 0);
    }
  }
  const report: ToClusterReport = {
    source: from,
    target: `${new URL(target.url).host}/${target.database}`,
    cluster,
    shards,
    dryRun: opts.dryRun ?? false,
    complete: false,
    interrupted: false,
    tables: [],
    partitions: [],
    leftBehind,
    mismatches: [],
  };
  const timeoutMs = opts.countTimeoutMs ?? 60_000;
  let copiedNow = 0;
  const limit = opts.maxPartitions ?? 0;
  // Merges stopped on every copied table, on the source and on the cluster, from before the
  // first copy until after the final counts: a ReplacingMergeTree or AggregatingMergeTree
  // merge on either side between a count and the copy, or before the final counts, folds
  // rows and reports a mismatch that is not one.
  const restart: { client: ClickHouseClient; query: string }[] = [];
  let failed = true;
  try {
    if (!opts.dryRun) {
      const stop = mergesSql('STOP', tables, cluster, modern);
      const start = mergesSql('START', tables, cluster, modern);
      const steps = [
        ...stop.source.map((query, i) => ({ client: sourceClient, query, again: start.source[i]! })),
        ...stop.cluster.map((query, i) => ({ client: targetClient, query, again: start.cluster[i]! })),
      ];
      for (const { client, query, again } of steps) {
        restart.push({ client, query: again }); // before: a STOP that fails half-way is undone too
        await client.command({ query });
      }
    }
    outer: for (const t of tables) {
      const summary: TableSummary = {
        table: t.table,
        database: t.targetDatabase,
        rollup: t.rollup,
        partitions: t.partitions.size,
        copied: 0,
        skipped: 0,
        sourceRows: [...t.partitions.values()].reduce((a, b) => a + b, 0),
        targetRows: null,
      };
      report.tables.push(summary);
      const emit = (p: PartitionResult): void => {
        report.partitions.push(p);
        opts.onPartition?.(p);
      };
      if (opts.dryRun) {
        for (const [partition, n] of t.partitions) {
          const before = done.get(`${t.table}\u0000${partition}`);
          emit({ table: t.table, partition, action: before ? 'skipped' : 'planned', sourceRows: n, targetRows: null });
        }
        continue;
      }
      const sqlOf = (partition: string): ReturnType<typeof partitionSql> =>
        partitionSql({
          sourceDb: t.database,
          targetDb: t.targetDatabase,
          table: t.table,
          key: t.key,
          partition,
          cluster,
        });
      if (t.rollup && t.key !== '') {
        // Rollup partitions the copied base rows made that the source's rollup does not have.
        const all = `${sqlIdentifier(t.targetDatabase)}.${sqlIdentifier(`${t.table}_all`)}`;
        const there = await rows<{ p: string | number }>(
          targetClient,
          `SELECT DISTINCT ${t.key} AS p FROM ${all}`,
          EXACT_READ,
        );
        for (const { p } of there) {
          const partition = String(p);
          if (t.partitions.has(partition)) continue;
          await targetClient.command({ query: sqlOf(partition).drop });
          emit({ table: t.table, partition, action: 'dropped', sourceRows: 0, targetRows: 0 });
        }
      }
      for (const partition of t.partitions.keys()) {
        const before = done.get(`${t.table}\u0000${partition}`);
        if (before) {
          summary.skipped++;
          emit({ table: t.table, partition, action: 'skipped', ...before });
          continue;
        }
        if (limit > 0 && copiedNow >= limit) {
          report.interrupted = true;
          break outer;
        }
        const sql = sqlOf(partition);
        await targetClient.command({ query: sql.drop });
        const sourceRows = await one(sourceClient, sql.sourceCount);
        await stream(opts, sql.select, sql.insert, modern);
        const targetRows = await countOnCluster(targetClient, sql.targetCount, sourceRows, timeoutMs);
        if (targetRows !== sourceRows) {
          report.mismatches.push(
            `${t.table} partition ${partition}: ${sourceRows} rows on the source, ${targetRows} on the cluster`,
          );
          emit({ table: t.table, partition, action: 'copied', sourceRows, targetRows });
          break outer;
        }
        await record(targetClient, progressAll, from, t.table, partition, sourceRows, targetRows);
        copiedNow++;
        summary.copied++;
        emit({ table: t.table, partition, action: 'copied', sourceRows, targetRows });
      }
    }
    if (!opts.dryRun && !report.interrupted && report.mismatches.length === 0) {
      // Whole tables, once every partition is done: the same counts on both sides.
      for (const s of report.tables) {
        const t = tables.find((x) => x.table === s.table)!;
        const all = `${sqlIdentifier(t.targetDatabase)}.${sqlIdentifier(`${t.table}_all`)}`;
        s.sourceRows = await one(
          sourceClient,
          `SELECT count() AS n FROM ${sqlIdentifier(t.database)}.${sqlIdentifier(t.table)}`,
        );
        s.targetRows = await countOnCluster(targetClient, `SELECT count() AS n FROM ${all}`, s.sourceRows, timeoutMs);
        if (s.targetRows !== s.sourceRows) {
          report.mismatches.push(`${s.table}: ${s.sourceRows} rows on the source, ${s.targetRows} on the cluster`);
        }
      }
      report.complete = report.mismatches.length === 0;
    }
    failed = false;
  } finally {
    await startMerges(restart, opts.logger, failed);
  }
  return report;
}

/**
 * Runs every START of `restart`, each even when one before it failed. A failure is logged
 * with the statement to run by hand, and thrown unless the move already failed.
 */
async function startMerges(
  restart: readonly { client: ClickHouseClient; query: string }[],
  logger: Logger,
  failed: boolean,
): Promise<void> {
  const notStarted: string[] = [];
  for (const { client, query } of restart) {
    try {
      await client.command({ query });
    } catch (err) {
      notStarted.push(query);
      logger.error(`to-cluster: merges not started again, run by hand: ${query}`, { err: String(err) });
    }
  }
  if (notStarted.length > 0 && !failed) {
    throw new ToClusterError(`merges not started again, run by hand: ${notStarted.join('; ')}`);
  }
}

async function record(
  client: ClickHouseClient,
  progressAll: string,
  source: string,
  table: string,
  partition: string,
  sourceRows: number,
  targetRows: number,
): Promise<void> {
  await client.command({
    query: `INSERT INTO ${progressAll} (source, table, partition, source_rows, target_rows)
      VALUES (${sqlString(source)}, ${sqlString(table)}, ${sqlString(partition)}, ${sqlNumber(sourceRows)}, ${sqlNumber(targetRows)})`,
    clickhouse_settings: { insert_distributed_sync: 1 },
  });
}

/** The report as lines for a terminal: one per table, then what failed or stayed behind. */
export function describeToCluster(r: ToClusterReport): string[] {
  const lines = [
    `${r.dryRun ? 'would copy' : 'copied'} ${r.source} to ${r.target} (cluster ${r.cluster}, ${r.shards} shard${r.shards === 1 ? '' : 's'})`,
    `${'table'.padEnd(20)} ${'partitions'.padStart(10)} ${'copied'.padStart(7)} ${'before'.padStart(7)} ${'source rows'.padStart(12)} ${'cluster rows'.padStart(12)}`,
  ];
  for (const t of r.tables) {
    lines.push(
      `${t.table.padEnd(20)} ${String(t.partitions).padStart(10)} ${String(t.copied).padStart(7)} ${String(t.skipped).padStart(7)} ${String(t.sourceRows).padStart(12)} ${String(t.targetRows ?? '-').padStart(12)}`,
    );
  }
  if (r.dryRun) {
    for (const p of r.partitions) lines.push(`  ${p.action} ${p.table} partition ${p.partition}: ${p.sourceRows} rows`);
  }
  for (const l of r.leftBehind) lines.push(`not copied (no Distributed table): ${l.table}, ${l.rows} rows`);
  for (const m of r.mismatches) lines.push(`MISMATCH ${m}`);
  if (r.interrupted) lines.push('stopped by --max-partitions: run the command again to resume');
  else if (r.complete) lines.push('complete: every partition copied and counted equal');
  return lines;
}
