import pg from 'pg';
import type { ConfigSpec } from './config.js';
import { v } from './config.js';
import type { Component } from './lifecycle.js';
import type { Logger } from './logger.js';

/**
 * PostgreSQL, through node-postgres (`pg`, MIT: the most used client, with LISTEN/NOTIFY
 * on a plain connection and parameters always sent apart from the SQL text). Nothing here
 * knows what the tables hold: the registry's tables are libs/store's.
 */
export type PgPool = pg.Pool;
export type PgClient = pg.PoolClient;
/** What runs a query: the pool, or one connection inside a transaction. */
export type PgQueryable = Pick<pg.Pool, 'query'>;

/** postgres:// or postgresql:// with a host and a database. */
export function checkPostgresUrl(raw: string): void {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error('must be a URL, postgres://user:password@host:port/database');
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new Error('must be a postgres:// URL');
  if (u.hostname === '' || u.pathname.length < 2) throw new Error('needs a host and a database name');
}

export const postgresSpec = {
  databaseUrl: v.secret(
    'DATABASE_URL',
    undefined,
    'PostgreSQL of the registry, postgres://role:password@host:port/database; each service its own role (docs/operations.md, "PostgreSQL roles"); a session connection, not a transaction-mode PgBouncer (LISTEN needs one)',
    checkPostgresUrl,
  ),
  databasePoolMax: v.int(
    'DATABASE_POOL_MAX',
    4,
    'PostgreSQL connections a replica keeps at most (besides its LISTEN connection)',
    1,
    100,
  ),
  databaseTimeoutMs: v.int(
    'DATABASE_TIMEOUT_MS',
    5000,
    'longest a PostgreSQL statement or connection attempt may take; past it, a write answers 503 REGISTRY_UNAVAILABLE',
    100,
    600_000,
  ),
  registryCatchUpMs: v.int(
    'REGISTRY_CATCH_UP_MS',
    5000,
    'how often a replica asks PostgreSQL for registry changes it was not notified of (LISTEN brings them at once); one small indexed query',
    100,
    600_000,
  ),
} satisfies ConfigSpec;

export interface PostgresConfig {
  databaseUrl: string;
  databasePoolMax: number;
  databaseTimeoutMs: number;
}

/** node-postgres's option object for `url` (connection and statement timeouts bounded). */
function clientConfig(url: string, timeoutMs: number, applicationName: string): pg.ClientConfig {
  return {
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    statement_timeout: timeoutMs,
    query_timeout: timeoutMs + 1000,
    application_name: applicationName,
    keepAlive: true,
  };
}

/** A pool of connections to the registry. Its errors (an idle connection dropped) are logged, never thrown. */
export function createPostgres(config: PostgresConfig, logger: Logger, applicationName: string): PgPool {
  const pool = new pg.Pool({
    ...clientConfig(config.databaseUrl, config.databaseTimeoutMs, applicationName),
    max: config.databasePoolMax,
    idleTimeoutMillis: 30_000,
  });
  pool.on('error', (err) => logger.warn('idle PostgreSQL connection failed', { err: String(err) }));
  // A connection checked out of the pool (a transaction) has no listener of pg-pool's: an
  // error on it (the server restarted, the backend was ended) would be an uncaught
  // 'error' event and end the process. The query in flight rejects on its own.
  pool.on('connect', (client) => {
    client.on('error', (err) => logger.warn('PostgreSQL connection failed', { err: String(err) }));
  });
  return pool;
}

/** The pool as a component: it ends (closing every connection) when the service stops. */
export class PostgresComponent implements Component {
  readonly name = 'postgres';
  // The registry's copies keep a service working while PostgreSQL is away: the change
  // feed's health says whether they are current.
  readonly essential = false;

  constructor(readonly pool: PgPool) {}

  start(): Promise<void> {
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    await this.pool.end();
  }

  health(): boolean {
    return true;
  }
}

/**
 * Runs `fn` in one transaction on one connection: COMMIT when it resolves, ROLLBACK when
 * it throws (and the error goes on).
 */
export async function inTransaction<T>(
  pool: PgPool,
  fn: (tx: PgClient) => Promise<T>,
  /** The statement that starts it (e.g. `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`). */
  begin = 'BEGIN',
): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query(begin);
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw err;
  } finally {
    client.release(broken);
  }
}

/** One versioned migration: statements run in one transaction. */
export interface PgMigration {
  version: number;
  name: string;
  statements: readonly string[];
}

/**
 * Applies the migrations not yet recorded in `schema_migrations`, in version order, each
 * in its own transaction, under an advisory lock so that replicas starting together
 * apply each once. Returns the versions applied.
 */
export async function migratePostgres(
  pool: PgPool,
  migrations: readonly PgMigration[],
  logger: Logger,
): Promise<number[]> {
  const client = await pool.connect();
  const applied: number[] = [];
  try {
    // An arbitrary constant: "telemetry migrations".
    await client.query('SELECT pg_advisory_lock(7300001)');
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
    );
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        for (const s of m.statements) await client.query(s);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`PostgreSQL migration ${m.version} (${m.name}) failed: ${String(err)}`);
      }
      applied.push(m.version);
      logger.info('PostgreSQL migration applied', { version: m.version, name: m.name });
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock(7300001)').catch(() => undefined);
    client.release();
  }
  return applied;
}

/** A dedicated connection that LISTENs on `channel` (never from the pool: LISTEN is per session). */
export async function listenOn(
  config: PostgresConfig,
  channel: string,
  applicationName: string,
  onNotify: (payload: string) => void,
  onLost: (err: Error) => void,
): Promise<pg.Client> {
  const client = new pg.Client({
    ...clientConfig(config.databaseUrl, config.databaseTimeoutMs, applicationName),
    // LISTEN waits for ever: no statement timeout on this connection.
    statement_timeout: undefined,
    query_timeout: undefined,
  });
  // A channel is an identifier: only ours, checked here.
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new Error(`bad channel name ${channel}`);
  // onLost is for a connection that was listening: one that never got there is the
  // caller's rejection alone (pg also emits 'end' after a failed connect).
  let listening = false;
  let lost = false;
  const lose = (err: Error): void => {
    if (lost || !listening) return;
    lost = true;
    onLost(err);
  };
  client.on('error', lose);
  client.on('end', () => lose(new Error('the LISTEN connection ended')));
  client.on('notification', (n) => {
    if (n.channel === channel) onNotify(n.payload ?? '');
  });
  try {
    await client.connect();
    await client.query(`LISTEN ${channel}`);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  listening = true;
  return client;
}
