/**
 * PostgreSQL for the dev stack, the tests and CI: Debian's `postgresql` package (installed
 * with apt-get when missing), run as a plain process on a free loopback port with its data
 * under the stack's data directory, as the stack does for ClickHouse. PostgreSQL refuses
 * to run as root: as root the server runs as the `postgres` system user (setpriv).
 *
 * Every role connects with its password (scram-sha-256), the superuser `postgres` too: its
 * password is made with the data and kept beside it (mode 600); the services' roles get
 * theirs from provisionPostgres.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { createLogger, type Logger } from '@telemetry/platform';
import {
  migrateRegistry,
  PG_SERVICE_ROLE_NAMES,
  pgGrantStatements,
  quoteIdent,
  type PgServiceRole,
} from '@telemetry/store';
import { ensurePostgres, run } from './installers.js';
import { freePort } from './ports.js';
import { postgresAnswers } from './probes.js';
import { ManagedProcess } from './process.js';

export interface LocalPostgres {
  /** The superuser's URL (database `postgres`). */
  adminUrl: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** As root: the command run as the `postgres` user (the server refuses root). */
function asPostgres(cmd: string, args: string[]): [string, string[]] {
  if (process.getuid?.() !== 0) return [cmd, args];
  return ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', cmd, ...args]];
}

function ownedByPostgres(dir: string, log: (l: string) => void): void {
  mkdirSync(dir, { recursive: true });
  if (process.getuid?.() !== 0) return;
  // The server's user must pass through the directories above (a mkdtemp dir is 0700):
  // each that others cannot enter gets o+x (enter, not list), and is named in the log.
  for (let up = dirname(dir); up !== dirname(up); up = dirname(up)) {
    const mode = statSync(up).mode;
    if ((mode & 0o001) === 0) {
      chmodSync(up, (mode & 0o7777) | 0o001);
      log(`${up}: o+x, so that the postgres user can reach PostgreSQL's data below it`);
    }
  }
  // uid/gid of the postgres user, as the package made them.
  const { uid, gid } = postgresIds();
  chownSync(dir, uid, gid);
}

let ids: { uid: number; gid: number } | undefined;
function postgresIds(): { uid: number; gid: number } {
  if (ids) return ids;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('there is no postgres system user (the postgresql package makes it)');
  const [, , uid, gid] = line.split(':');
  ids = { uid: Number(uid), gid: Number(gid) };
  return ids;
}

/** Starts (initialising `dir` the first time) a PostgreSQL server on a free loopback port. */
export async function startLocalPostgres(dir: string, log: (l: string) => void): Promise<LocalPostgres> {
  const bin = await ensurePostgres(log);
  mkdirSync(dir, { recursive: true });
  const data = join(dir, 'data');
  const sockets = join(dir, 'run');
  ownedByPostgres(dir, log);
  ownedByPostgres(sockets, log);
  // The superuser's password, made with the data (mode 600): no role, the superuser
  // included, connects without its password, so no other local user can run SQL (or
  // COPY ... TO PROGRAM) as it.
  const passwordFile = join(dir, 'superuser-password');
  if (existsSync(join(data, 'PG_VERSION')) && !existsSync(passwordFile)) {
    log(`${data} was made without a superuser password: made again (development data)`);
    rmSync(data, { recursive: true, force: true });
  }
  if (!existsSync(join(data, 'PG_VERSION'))) {
    ownedByPostgres(data, log);
    writeFileSync(passwordFile, randomBytes(24).toString('hex'), { mode: 0o600 });
    if (process.getuid?.() === 0) chownSync(passwordFile, postgresIds().uid, postgresIds().gid);
    const [cmd, args] = asPostgres(join(bin, 'initdb'), [
      '-D',
      data,
      '-U',
      'postgres',
      `--pwfile=${passwordFile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      '--locale=C',
    ]);
    await run(cmd, args, { maxBuffer: 16 * 1024 * 1024 });
    writeFileSync(
      join(data, 'pg_hba.conf'),
      [
        'local all all scram-sha-256',
        'host all all 127.0.0.1/32 scram-sha-256',
        'host all all ::1/128 scram-sha-256',
        '',
      ].join('\n'),
    );
  }
  const superuserPassword = readFileSync(passwordFile, 'utf8').trim();
  const port = await freePort();
  const [cmd, args] = asPostgres(join(bin, 'postgres'), [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    sockets,
    '-h',
    '127.0.0.1',
    '-c',
    'max_connections=300',
    '-c',
    'fsync=on',
    '-c',
    'shared_buffers=64MB',
    '-c',
    'logging_collector=off',
  ]);
  const server = new ManagedProcess({
    name: 'PostgreSQL',
    command: [cmd, args],
    output: 'file',
    logFile: join(dir, 'server.log'),
  });
  const adminUrl = `postgres://postgres:${superuserPassword}@127.0.0.1:${port}/postgres`;
  const start = (): Promise<void> =>
    server.ensureStarted().waitAnswers('PostgreSQL', () => postgresAnswers(adminUrl), 60_000);
  await start();
  return {
    adminUrl,
    start,
    // SIGINT: PostgreSQL's fast shutdown (ends sessions, checkpoints).
    stop: async () => void (await server.stop('SIGINT')),
  };
}

/** Each service's DATABASE_URL, and the owner's (operators' tools, migrations). */
export type PostgresUrls = Record<PgServiceRole | 'owner', string>;

/** `url` with another database, user and password. */
export function withDatabase(url: string, database: string, user?: string, password?: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  if (user !== undefined) u.username = encodeURIComponent(user);
  if (password !== undefined) u.password = encodeURIComponent(password);
  return u.toString();
}

/**
 * The registry database `database` (made if missing), its migrations, and one role per
 * service with fresh passwords and only its grants. Idempotent.
 */
export async function provisionPostgres(adminUrl: string, database: string, logger?: Logger): Promise<PostgresUrls> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const urls = { owner: withDatabase(adminUrl, database) } as PostgresUrls;
  try {
    const { rows } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (rows.length === 0) await admin.query(`CREATE DATABASE ${quoteIdent(database)}`);
    const pool = new pg.Pool({ connectionString: urls.owner, max: 1 });
    try {
      await migrateRegistry(pool, logger ?? createLogger({ service: 'devstack', level: 'warn' }));
      for (const g of pgGrantStatements(database)) {
        const password = randomBytes(16).toString('hex');
        const exists = (await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [g.role])).rows.length > 0;
        // A role name and a password are not parameters in CREATE ROLE: the name is a
        // checked identifier (pgRoleName), the password hex we made.
        await admin.query(
          `${exists ? 'ALTER' : 'CREATE'} ROLE ${quoteIdent(g.role)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '${password}'`,
        );
        for (const s of g.statements) await pool.query(s);
        urls[g.service] = withDatabase(adminUrl, database, g.role, password);
      }
    } finally {
      await pool.end();
    }
  } finally {
    await admin.end();
  }
  for (const s of PG_SERVICE_ROLE_NAMES) if (!urls[s]) throw new Error(`no role for ${s}`);
  return urls;
}

/** Runs `fn` with a small pool on `url` (the owner's, for set-up steps), then closes it. */
export async function withRegistry<T>(url: string, fn: (db: pg.Pool) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}
