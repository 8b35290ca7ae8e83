import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from './logger.js';
import { sqlIdentifier, sqlNumber, sqlString } from './sql.js';

/**
 * The migration runner: applies versioned migrations in order and records each in
 * `schema_migrations`. The migrations themselves (the domain's tables) live in
 * libs/store. Every statement must be idempotent (IF NOT EXISTS), so two services
 * migrating at once is harmless.
 */
export interface Migration {
  version: number;
  name: string;
  /**
   * `db` is the database quoted for SQL, `name` the same unquoted, `engine` the server's
   * version (some tables take a richer shape on current ClickHouse).
   */
  statements(db: string, name: string, engine: Engine): Statement[];
}

/**
 * Which ClickHouse runs the SQL, decided on `SELECT version()`: `modern` from 22.3 on
 * (LowCardinality, DateTime64, codecs, TTL and JSONExtract are all mature there); older
 * servers such as 18.16 get the plain shapes.
 */
export interface Engine {
  version: string;
  modern: boolean;
}

/** The first version whose tables take the modern shape. */
const MODERN_FROM = [22, 3];

export function engineOf(version: string): Engine {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const modern = major > MODERN_FROM[0]! || (major === MODERN_FROM[0] && minor >= MODERN_FROM[1]!);
  return { version, modern };
}

/** The engine `client` talks to. */
export async function detectEngine(client: ClickHouseClient): Promise<Engine> {
  const rs = await client.query({ query: 'SELECT version() AS v', format: 'JSONEachRow' });
  return engineOf(String((await rs.json<{ v: string }>())[0]?.v ?? '0'));
}

/**
 * SQL, or a column to add. ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS, so
 * migrate() adds a column only when system.columns does not list it yet.
 */
export type Statement =
  | string
  | { addColumn: { table: string; column: string; type: string } }
  | { setAside: SetAside }
  | { copyBack: CopyBack }
  | { moveTable: MoveTable };

/**
 * Moves `table` to the database `to` (RENAME TABLE), while it is still in the migrated
 * database and not yet in `to`. Both existing is an error a person must look at.
 */
export interface MoveTable {
  table: string;
  to: string;
}

/**
 * The first half of rebuilding a table whose sort key changes (ClickHouse can only
 * append new columns to a sort key): while `table` lacks the column `marker`, it is
 * renamed to `<table>__old`, so the next statement can create the new shape under the
 * old name. Writers see the table missing for that moment, and retry.
 */
export interface SetAside {
  table: string;
  /** Set aside while the table lacks this column (its new shape has it)... */
  marker?: string;
  /**
   * ...or while this other table is being rebuilt (its aside exists): for a table whose
   * shape follows another's, such as a rollup fed from the rebuilt table. Copy this
   * one back after the other, so a resumed run never sets the new one aside.
   */
  whileRebuilding?: string;
}

/**
 * The second half: while `<table>__old` exists, `sql(from)` copies its rows into the
 * new table (`from` is the old table, quoted), then the old table is dropped. A run
 * that stopped between the two steps resumes here.
 */
export interface CopyBack {
  table: string;
  sql: (from: string) => string;
}

/** The name a table is set aside under while it is rebuilt. */
export function asideName(table: string): string {
  return `${table}__old`;
}

/** One table family's statements, by the migration version that applies them. */
export type MigrationsByVersion = Record<number, (db: string, name: string, engine: Engine) => Statement[]>;

/**
 * A DDL statement as it runs on the cluster `cluster` (CLICKHOUSE_CLUSTER; docs/clickhouse.md,
 * "On a cluster"): `ON CLUSTER` after the object it creates, alters, drops or renames, so
 * every server of the cluster runs it (ClickHouse's distributed DDL queue in ZooKeeper),
 * and every MergeTree family engine replicated: `ReplacingMergeTree(v)` becomes
 * `ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/<db>.<table>/<tag>', '{replica}', v)`.
 * `tag` (the migration) makes the ZooKeeper path of a table rebuilt under its old name a
 * new one. Other statements (INSERT, SELECT) are returned as they are. Without a
 * cluster, the statement is returned as it is.
 */
export function clusterDdl(sql: string, cluster: string, tag: string): string {
  if (cluster === '') return sql;
  const on = ` ON CLUSTER ${sqlIdentifier(cluster)}`;
  const name = '((?:`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)(?:\\.(?:`[^`]+`|[A-Za-z_][A-Za-z0-9_]*))?)';
  const head = new RegExp(
    `^(\\s*(?:CREATE\\s+(?:TABLE|DATABASE|MATERIALIZED\\s+VIEW|VIEW)\\s+IF\\s+NOT\\s+EXISTS|DROP\\s+TABLE\\s+IF\\s+EXISTS|DROP\\s+TABLE|ALTER\\s+TABLE)\\s+)${name}`,
    'i',
  );
  let out: string;
  const rename = new RegExp(`^(\\s*RENAME\\s+TABLE\\s+${name}\\s+TO\\s+${name})`, 'i');
  if (head.test(sql)) {
    out = sql.replace(head, (_m, verb: string, object: string) => `${verb}${object}${on}`);
  } else if (rename.test(sql)) {
    out = sql.replace(rename, (m: string) => `${m}${on}`);
  } else if (/^\s*(CREATE|ALTER|DROP|RENAME|TRUNCATE|EXCHANGE|ATTACH|DETACH)\b/i.test(sql)) {
    // DDL of a form not handled here would run on one server only: refuse it.
    throw new Error(`clusterDdl: cannot run this statement ON CLUSTER: ${sql.slice(0, 80)}`);
  } else {
    return sql;
  }
  const table = head.exec(sql)?.[2] ?? '';
  const path = `/clickhouse/tables/{shard}/${table.replace(/`/g, '')}/${tag}`;
  return out.replace(
    /ENGINE\s*=\s*(Replacing|Summing|Aggregating|Collapsing|)MergeTree\s*\(([^)]*)\)/,
    (_m, kind: string, args: string) =>
      `ENGINE = Replicated${kind}MergeTree(${[sqlString(path), "'{replica}'", ...(args.trim() ? [args.trim()] : [])].join(', ')})`,
  );
}

/** The migration runner's options: the cluster its DDL runs on ('' or absent: this server only). */
export interface MigrationOptions {
  cluster?: string;
}

export async function runMigrations(
  client: ClickHouseClient,
  database: string,
  migrations: readonly Migration[],
  logger: Logger,
  options: MigrationOptions = {},
): Promise<number[]> {
  const cluster = options.cluster ?? '';
  const ddl = (sql: string, tag: string): Promise<unknown> => client.command({ query: clusterDdl(sql, cluster, tag) });
  const db = sqlIdentifier(database);
  // Only when missing: on a cluster, DDL waits for every server (a replica that is down
  // would hold up every start of a service that migrates).
  if (!(await databaseExists(client, database))) await ddl(`CREATE DATABASE IF NOT EXISTS ${db}`, 'v0');
  if (!(await tableExists(client, database, 'schema_migrations'))) {
    await ddl(
      `CREATE TABLE IF NOT EXISTS ${db}.schema_migrations (
        version UInt32, name String, applied_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree() ORDER BY version`,
      'v0',
    );
  }
  const rs = await client.query({
    query: `SELECT DISTINCT version FROM ${db}.schema_migrations`,
    format: 'JSONEachRow',
  });
  const done = new Set((await rs.json<{ version: number }>()).map((r) => Number(r.version)));
  const applied: number[] = [];
  const engine = await detectEngine(client);
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    const run = (sql: string): Promise<unknown> => ddl(sql, `v${m.version}`);
    for (const statement of m.statements(db, database, engine)) {
      if (typeof statement === 'string') await runAddingColumn(client, run, database, statement, cluster);
      else if ('addColumn' in statement) await addColumn(client, run, database, statement.addColumn);
      else if ('setAside' in statement) await setAside(client, run, database, statement.setAside, logger);
      else if ('copyBack' in statement) await copyBack(client, run, database, statement.copyBack, logger);
      else await moveTable(client, run, database, statement.moveTable, logger);
    }
    await client.command({
      query: `INSERT INTO ${db}.schema_migrations (version, name, applied_at) VALUES (${sqlNumber(m.version)}, ${sqlString(m.name)}, now())`,
    });
    applied.push(m.version);
    logger.info('migration applied', { version: m.version, name: m.name });
  }
  return applied;
}

/** `ALTER TABLE <db>.<table> ADD COLUMN <column> …` as a migration writes it: the table and the column. */
const ADD_COLUMN = /^\s*ALTER\s+TABLE\s+`?\w+`?\.`?(\w+)`?\s+ADD\s+COLUMN\s+`?(\w+)`?/i;

/** The table and column an `ALTER TABLE … ADD COLUMN` statement adds, or undefined for any other statement. */
export function addedColumn(statement: string): { table: string; column: string } | undefined {
  const m = ADD_COLUMN.exec(statement);
  return m ? { table: m[1]!, column: m[2]! } : undefined;
}

/**
 * Runs a migration's statement. On a cluster, an `ADD COLUMN` that fails is taken as done
 * when the column is there: ClickHouse 18.16's distributed DDL lets both replicas of a
 * shard run the ALTER of a replicated table now and then (one gets "column already
 * exists" and the task never finishes on it, distributed_ddl_task_timeout later), while
 * replication has already added the column everywhere. Seen once in the cluster suite.
 */
async function runAddingColumn(
  client: ClickHouseClient,
  run: Ddl,
  database: string,
  statement: string,
  cluster: string,
): Promise<void> {
  try {
    await run(statement);
  } catch (err) {
    const added = cluster === '' ? undefined : addedColumn(statement);
    if (!added || !(await columnExists(client, database, added.table, added.column))) throw err;
  }
}

async function databaseExists(client: ClickHouseClient, database: string): Promise<boolean> {
  const rs = await client.query({
    query: `SELECT count() AS n FROM system.databases WHERE name = ${sqlString(database)}`,
    format: 'JSONEachRow',
  });
  return Number((await rs.json<{ n: number | string }>())[0]?.n ?? 0) > 0;
}

/** The columns of a table, in order ('' when it does not exist). */
export async function columnsOf(client: ClickHouseClient, database: string, table: string): Promise<string> {
  const rs = await client.query({
    query: `SELECT name, type FROM system.columns WHERE database = ${sqlString(database)} AND table = ${sqlString(table)}`,
    format: 'JSONEachRow',
  });
  return (await rs.json<{ name: string; type: string }>()).map((c) => `${c.name} ${c.type}`).join(', ');
}

export async function tableExists(client: ClickHouseClient, database: string, table: string): Promise<boolean> {
  const rs = await client.query({
    query: `SELECT count() AS n FROM system.tables WHERE database = ${sqlString(database)} AND name = ${sqlString(table)}`,
    format: 'JSONEachRow',
  });
  return Number((await rs.json<{ n: number | string }>())[0]?.n ?? 0) > 0;
}

/** Runs DDL (on the cluster, when there is one). */
type Ddl = (sql: string) => Promise<unknown>;

async function setAside(
  client: ClickHouseClient,
  ddl: Ddl,
  database: string,
  s: SetAside,
  logger: Logger,
): Promise<void> {
  if (!(await tableExists(client, database, s.table))) return;
  if (s.marker !== undefined && (await columnExists(client, database, s.table, s.marker))) return;
  if (s.whileRebuilding !== undefined) {
    if (!(await tableExists(client, database, asideName(s.whileRebuilding)))) return;
    if (await tableExists(client, database, asideName(s.table))) return; // already aside: resuming
  }
  const db = sqlIdentifier(database);
  if (await tableExists(client, database, asideName(s.table))) {
    throw new Error(
      `${database}.${s.table} has the old shape but ${asideName(s.table)} exists too; see docs/operations.md`,
    );
  }
  await ddl(`RENAME TABLE ${db}.${sqlIdentifier(s.table)} TO ${db}.${sqlIdentifier(asideName(s.table))}`);
  logger.info('migration set a table aside to rebuild it', { table: s.table, aside: asideName(s.table) });
}

async function copyBack(
  client: ClickHouseClient,
  ddl: Ddl,
  database: string,
  c: CopyBack,
  logger: Logger,
): Promise<void> {
  const aside = asideName(c.table);
  if (!(await tableExists(client, database, aside))) return;
  const from = `${sqlIdentifier(database)}.${sqlIdentifier(aside)}`;
  await client.command({ query: c.sql(from) });
  await ddl(`DROP TABLE ${from}`);
  logger.info('migration copied a rebuilt table back', { table: c.table });
}

async function moveTable(
  client: ClickHouseClient,
  ddl: Ddl,
  database: string,
  m: MoveTable,
  logger: Logger,
): Promise<void> {
  const here = await tableExists(client, database, m.table);
  const there = await tableExists(client, m.to, m.table);
  if (!here) return;
  if (there) {
    throw new Error(`${m.table} exists in both ${database} and ${m.to}; see docs/operations.md`);
  }
  await ddl(
    `RENAME TABLE ${sqlIdentifier(database)}.${sqlIdentifier(m.table)} TO ${sqlIdentifier(m.to)}.${sqlIdentifier(m.table)}`,
  );
  logger.info('migration moved a table', { table: m.table, from: database, to: m.to });
}

async function columnExists(
  client: ClickHouseClient,
  database: string,
  table: string,
  column: string,
): Promise<boolean> {
  const rs = await client.query({
    query: `SELECT count() AS n FROM system.columns WHERE database = ${sqlString(database)} AND table = ${sqlString(table)} AND name = ${sqlString(column)}`,
    format: 'JSONEachRow',
  });
  return Number((await rs.json<{ n: number | string }>())[0]?.n ?? 0) > 0;
}

async function addColumn(
  client: ClickHouseClient,
  ddl: Ddl,
  database: string,
  c: { table: string; column: string; type: string },
): Promise<void> {
  if (await columnExists(client, database, c.table, c.column)) return;
  const target = `${sqlIdentifier(database)}.${sqlIdentifier(c.table)}`;
  try {
    await ddl(`ALTER TABLE ${target} ADD COLUMN ${sqlIdentifier(c.column)} ${c.type}`);
  } catch (err) {
    // Another service migrating at the same moment added it first.
    if (!(await columnExists(client, database, c.table, c.column))) throw err;
  }
}
