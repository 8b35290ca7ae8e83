/**
 * One ClickHouse user per service (libs/store/src/databases.ts, SERVICE_USERS), made by
 * the stack harness for each database it provisions, so that `npm start`, the tests
 * and the fault suite run every service with only what it needs:
 *
 * - local ClickHouse 18.16: a `users.d/<database>.xml` next to users.xml (ClickHouse
 *   reloads it within seconds), each user limited with `allow_databases`, read-only
 *   users with readonly=2 and the registry writer with allow_ddl=0;
 * - a server that manages users with SQL (current ClickHouse): CREATE USER ... GRANT,
 *   table by table, the statements deploy/clickhouse/users.sh runs.
 *
 * Users are named `<database>_<service>`, so runs on one server do not share them.
 */
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClickHouse, sqlIdentifier, sqlString, type ClickHouseClient } from '@telemetry/platform';
import {
  auditDatabase,
  databaseAccess,
  databasesOf,
  grantStatements,
  SERVICE_USER_NAMES,
  type ServiceUser,
} from '@telemetry/store';
import type { ServiceName } from './commands.js';
import type { PostgresUrls } from './postgres.js';

export interface Credentials {
  user: string;
  password: string;
}

/** Each service's ClickHouse credentials, and (once provisioned) each one's DATABASE_URL. */
export type ServiceUsers = Record<ServiceUser, Credentials> & { postgres?: PostgresUrls };

function newCredentials(database: string): ServiceUsers {
  return Object.fromEntries(
    SERVICE_USER_NAMES.map((s) => [s, { user: `${database}_${s}`, password: randomBytes(12).toString('hex') }]),
  ) as unknown as ServiceUsers;
}

/** Every service as one user (a server on which we cannot create users). */
export function sameUserForAll(c: Credentials): ServiceUsers {
  return Object.fromEntries(SERVICE_USER_NAMES.map((s) => [s, c])) as unknown as ServiceUsers;
}

/** One user of a users.d file (ClickHouse 18.16): its password's SHA-256, profile and databases. */
export interface UserEntry {
  name: string;
  password: string;
  /** `svc_reader` (readonly=2), `svc_writer` (allow_ddl=0) or `default` (DDL allowed): server-config.ts. */
  profile: 'svc_reader' | 'svc_writer' | 'default';
  /** allow_databases: never empty (18.16 lets a user with none use every database). */
  databases: string[];
}

/** `name` itself, once sqlIdentifier found it a plain name (nothing else enters the XML). */
function plainName(name: string): string {
  sqlIdentifier(name);
  return name;
}

/** A users.d file declaring `entries`, passwords stored hashed (`password_sha256_hex`). */
export function usersXml(entries: UserEntry[]): string {
  const users = entries.map((u) => {
    plainName(u.name);
    if (u.databases.length === 0) throw new Error(`user ${u.name}: no databases (18.16 would allow them all)`);
    const allowed = u.databases.map((d) => `<database>${plainName(d)}</database>`).join('');
    const hash = createHash('sha256').update(u.password).digest('hex');
    return `    <${u.name}><password_sha256_hex>${hash}</password_sha256_hex><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>${u.profile}</profile><quota>default</quota><allow_databases>${allowed}</allow_databases></${u.name}>`;
  });
  return `<?xml version="1.0"?>
<yandex>
  <users>
${users.join('\n')}
  </users>
</yandex>
`;
}

/** The services' users of data database `database`, as 18.16 states their grants. */
export function serviceUserEntries(database: string, creds: ServiceUsers): UserEntry[] {
  const dbs = databasesOf(database);
  return SERVICE_USER_NAMES.map((s) => {
    const access = databaseAccess(s);
    return {
      name: creds[s].user,
      password: creds[s].password,
      profile: access.write ? (access.ddl ? 'default' : 'svc_writer') : 'svc_reader',
      databases: access.databases.map((d) => dbs[d]),
    };
  });
}

/** users.d/<database>.xml for ClickHouse 18.16, which has no SQL for users. */
export function writeUsersFile(usersDir: string, database: string): ServiceUsers {
  sqlIdentifier(database);
  const creds = newCredentials(database);
  writeFileSync(join(usersDir, `${database}.xml`), usersXml(serviceUserEntries(database, creds)));
  return creds;
}

/**
 * On a cluster, the services' users and the one that migrates: it runs the migrations'
 * DDL ON CLUSTER (every server's distributed DDL worker then applies it), so it may run
 * DDL, on the data database, its siblings and `default` (the empty database it connects
 * to before the others exist), and nothing else.
 */
export type ClusterUsers = ServiceUsers & { migrator: Credentials };

export function newClusterUsers(database: string): ClusterUsers {
  sqlIdentifier(database);
  return {
    ...newCredentials(database),
    migrator: { user: `${database}_migrator`, password: randomBytes(12).toString('hex') },
  };
}

/** users.d/<database>.xml of every server of a cluster: the services' users and the migrator. */
export function clusterUsersXml(database: string, creds: ClusterUsers): string {
  const dbs = databasesOf(database);
  return usersXml([
    ...serviceUserEntries(database, creds),
    {
      name: creds.migrator.user,
      password: creds.migrator.password,
      profile: 'default',
      databases: ['default', dbs.data, dbs.registry, dbs.keys, dbs.audit],
    },
  ]);
}

/**
 * The user a cluster's servers send the shards' part of a distributed query as (18.16
 * has no interserver `<secret>`: remote_servers names a user and password per replica):
 * the Distributed tables' reads and inserts (insert_distributed_sync) on the data and
 * audit databases of `databases`, which hold the tables and their `_all` tables; no DDL
 * (allow_ddl=0), no registry, no keys. With no database yet it may use `system` only.
 */
export function interserverUsersXml(user: Credentials, databases: string[]): string {
  const allowed = databases.flatMap((d) => [d, auditDatabase(d)]);
  return usersXml([
    {
      name: user.user,
      password: user.password,
      profile: 'svc_writer',
      databases: allowed.length > 0 ? allowed : ['system'],
    },
  ]);
}

/** CREATE USER ... GRANT, on a server that manages users with SQL. */
export async function createUsersWithSql(admin: ClickHouseClient, database: string): Promise<ServiceUsers> {
  const creds = newCredentials(database);
  const dbs = databasesOf(database);
  const users = grantStatements({
    db: (role) => sqlIdentifier(dbs[role]),
    name: (u) => sqlIdentifier(creds[u].user),
    password: (u) => sqlString(creds[u].password),
    host: 'HOST LOCAL',
  });
  for (const { statements } of users) {
    for (const query of statements) await admin.command({ query });
  }
  return creds;
}

/** Polls until every user can use its first database (18.16 reloads users.d within seconds). */
export async function waitForUsers(
  url: string,
  database: string,
  users: ServiceUsers,
  timeoutMs = 30_000,
): Promise<void> {
  const dbs = databasesOf(database);
  const deadline = Date.now() + timeoutMs;
  for (const s of SERVICE_USER_NAMES) {
    const first = dbs[databaseAccess(s).databases[0]!];
    const c = createClickHouse({ url, username: users[s].user, password: users[s].password, database: first });
    try {
      while (
        !(await c.command({ query: 'SELECT 1' }).then(
          () => true,
          () => false,
        ))
      ) {
        if (Date.now() > deadline) throw new Error(`ClickHouse did not accept the user ${users[s].user} in time`);
        await new Promise((r) => setTimeout(r, 250));
      }
    } finally {
      await c.close();
    }
  }
}

/** The services' users in a local 18.16 server's users.d `dir`, once the server accepts them. */
export async function usersInDir(dir: string, url: string, database: string): Promise<ServiceUsers> {
  const users = writeUsersFile(dir, database);
  await waitForUsers(url, database, users);
  return users;
}

/** The services' users on a server that manages users with SQL; else (18.16) `default` for all, if allowed. */
export async function usersWithSql(url: string, database: string, fallBack: boolean): Promise<ServiceUsers> {
  const admin = createClickHouse({ url, username: 'default', password: '', database: 'default' });
  try {
    const users = await createUsersWithSql(admin, database);
    await waitForUsers(url, database, users);
    return users;
  } catch (err) {
    if (!fallBack) throw err;
    process.stderr.write(`[stack] no per-service ClickHouse users (${String(err).split('\n')[0]}): all use default\n`);
    return sameUserForAll({ user: 'default', password: '' });
  } finally {
    await admin.close();
  }
}

/**
 * A service's store variables: its ClickHouse users (the query service has two) and,
 * when provisioned, the DATABASE_URL of its own PostgreSQL role.
 */
export function storeEnv(users: ServiceUsers, service: ServiceName): Record<string, string> {
  const as = (c: Credentials, prefix = ''): Record<string, string> => ({
    [`${prefix}CLICKHOUSE_USER`]: c.user,
    [`${prefix}CLICKHOUSE_PASSWORD`]: c.password,
  });
  const pg = users.postgres;
  switch (service) {
    case 'ingest-gateway':
      return { ...as(users.ingest), ...(pg ? { DATABASE_URL: pg.ingest } : {}) };
    case 'stream-consumer':
      // Its PostgreSQL role runs deletion requests (docs/deletions.md).
      return { ...as(users.consumer), ...as(users.audit, 'AUDIT_'), ...(pg ? { DATABASE_URL: pg.consumer } : {}) };
    case 'query-service':
      return { ...as(users.query), ...as(users.registry, 'REGISTRY_'), ...(pg ? { DATABASE_URL: pg.query } : {}) };
    case 'check-runner':
      return { ...as(users.runner), ...(pg ? { DATABASE_URL: pg.runner } : {}) };
  }
}
