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

export async function runMigrations(
  client: ClickHouseClient,
  database: string,
  migrations: readonly Migration[],
  logger: Logger,
): Promise<number[]> {
  const db = sqlIdentifier(database);
  await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${db}` });
  await client.command({
    query: `CREATE TABLE IF NOT EXISTS ${db}.schema_migrations (
      version UInt32, name String, applied_at DateTime('UTC')
    ) ENGINE = ReplacingMergeTree() ORDER BY version`,
  });
  const rs = await client.query({
    query: `SELECT DISTINCT version FROM ${db}.schema_migrations`,
    format: 'JSONEachRow',
  });
  const done = new Set((await rs.json<{ version: number }>()).map((r) => Number(r.version)));
  const applied: number[] = [];
  const engine = await detectEngine(client);
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    for (const statement of m.statements(db, database, engine)) {
      if (typeof statement === 'string') await client.command({ query: statement });
      else if ('addColumn' in statement) await addColumn(client, database, statement.addColumn);
      else if ('setAside' in statement) await setAside(client, database, statement.setAside, logger);
      else if ('copyBack' in statement) await copyBack(client, database, statement.copyBack, logger);
      else await moveTable(client, database, statement.moveTable, logger);
    }
    await client.command({
      query: `INSERT INTO ${db}.schema_migrations (version, name, applied_at) VALUES (${sqlNumber(m.version)}, ${sqlString(m.name)}, now())`,
    });
    applied.push(m.version);
    logger.info('migration applied', { version: m.version, name: m.name });
  }
  return applied;
}

async function tableExists(client: ClickHouseClient, database: string, table: string): Promise<boolean> {
  const rs = await client.query({
    query: `SELECT count() AS n FROM system.tables WHERE database = ${sqlString(database)} AND name = ${sqlString(table)}`,
    format: 'JSONEachRow',
  });
  return Number((await rs.json<{ n: number | string }>())[0]?.n ?? 0) > 0;
}

async function setAside(client: ClickHouseClient, database: string, s: SetAside, logger: Logger): Promise<void> {
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
  await client.command({
    query: `RENAME TABLE ${db}.${sqlIdentifier(s.table)} TO ${db}.${sqlIdentifier(asideName(s.table))}`,
  });
  logger.info('migration set a table aside to rebuild it', { table: s.table, aside: asideName(s.table) });
}

async function copyBack(client: ClickHouseClient, database: string, c: CopyBack, logger: Logger): Promise<void> {
  const aside = asideName(c.table);
  if (!(await tableExists(client, database, aside))) return;
  const from = `${sqlIdentifier(database)}.${sqlIdentifier(aside)}`;
  await client.command({ query: c.sql(from) });
  await client.command({ query: `DROP TABLE ${from}` });
  logger.info('migration copied a rebuilt table back', { table: c.table });
}

async function moveTable(client: ClickHouseClient, database: string, m: MoveTable, logger: Logger): Promise<void> {
  const here = await tableExists(client, database, m.table);
  const there = await tableExists(client, m.to, m.table);
  if (!here) return;
  if (there) {
    throw new Error(`${m.table} exists in both ${database} and ${m.to}; see docs/operations.md`);
  }
  await client.command({
    query: `RENAME TABLE ${sqlIdentifier(database)}.${sqlIdentifier(m.table)} TO ${sqlIdentifier(m.to)}.${sqlIdentifier(m.table)}`,
  });
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
  database: string,
  c: { table: string; column: string; type: string },
): Promise<void> {
  if (await columnExists(client, database, c.table, c.column)) return;
  const target = `${sqlIdentifier(database)}.${sqlIdentifier(c.table)}`;
  try {
    await client.command({ query: `ALTER TABLE ${target} ADD COLUMN ${sqlIdentifier(c.column)} ${c.type}` });
  } catch (err) {
    // Another service migrating at the same moment added it first.
    if (!(await columnExists(client, database, c.table, c.column))) throw err;
  }
}
