import { sqlIdentifier } from '@telemetry/platform';

/**
 * Where the tables live (docs/clickhouse.md, "Databases and users"). ClickHouse 18.16
 * grants access per database only (users.xml `allow_databases`), so the tables are
 * split by who needs them, and each service's ClickHouse user is given only its own:
 *
 * - `data`: CLICKHOUSE_DATABASE itself: events, checks, alerts and the rollups, the
 *   tables analysts read;
 * - `registry`: `<data>_registry`: monitors (their secrets sealed);
 * - `keys`: `<data>_keys`: tenants and access keys (hashes);
 * - `audit`: `<data>_audit`: the audit log, which only its writer may INSERT into and
 *   nobody but the operator may ALTER (on 18.16 the consumer's own user, which drops the
 *   data tables' partitions, must not reach it).
 *
 * Migration 5 moved monitors, tenants and access keys out of the data database.
 */
export interface Databases {
  data: string;
  registry: string;
  keys: string;
  audit: string;
}

export type DatabaseRole = keyof Databases;

/** Longest CLICKHOUSE_DATABASE: its `_registry` sibling must still be a plain identifier. */
export const MAX_DATA_DATABASE_LENGTH = 55;

export function databasesOf(data: string): Databases {
  return { data, registry: registryDatabase(data), keys: keysDatabase(data), audit: auditDatabase(data) };
}

export function auditDatabase(data: string): string {
  return `${data}_audit`;
}

export function registryDatabase(data: string): string {
  return `${data}_registry`;
}

export function keysDatabase(data: string): string {
  return `${data}_keys`;
}

/** `db`.`table` in the data database's sibling `role`, quoted for SQL. */
export function tableIn(data: string, role: DatabaseRole, table: string): string {
  return `${sqlIdentifier(databasesOf(data)[role])}.${sqlIdentifier(table)}`;
}

/**
 * What a ClickHouse user may do on a table (the privilege names of current ClickHouse's
 * GRANT). `ALTER DELETE` is what ClickHouse asks of `ALTER TABLE … DROP PARTITION`
 * (retention on 18.16; there is no privilege named ALTER DROP PARTITION), `ALTER TTL` of
 * MODIFY TTL and REMOVE TTL (retention on current ClickHouse; retention.ts).
 */
export type Privilege = 'SELECT' | 'INSERT' | 'ALTER DELETE' | 'ALTER TTL';

/** Privileges on some tables of one database: `'*'` is every table in it, present and future. */
export interface Grant {
  database: DatabaseRole;
  tables: '*' | readonly string[];
  privileges: readonly Privilege[];
}

/**
 * One ClickHouse user per service, with only what it needs (docs/operations.md,
 * "ClickHouse users"): the one definition of who may do what. From it come
 * - deploy/clickhouse/users.sh (current ClickHouse: CREATE USER and these GRANTs;
 *   `npm run docs` writes it, test/unit/grants.test.ts fails when it is stale);
 * - the devstack's users (tools/devstack/users.ts): on 18.16, which grants per database
 *   only, `allow_databases` of every database named here, read-only unless it INSERTs;
 * - test/unit/grants.test.ts, which checks every statement each service sends against it.
 */
export interface ServiceAccess {
  grants: readonly Grant[];
  /**
   * Global privileges (ON *.*) the user needs on a cluster only, granted on current
   * ClickHouse when there is one (18.16 has no SQL grants).
   */
  clusterPrivileges?: readonly string[];
  /** The service (and variable) that uses it. */
  usedBy: string;
}

export const SERVICE_USERS = {
  ingest: {
    // Since the registry moved to PostgreSQL the gateway reads no ClickHouse table; its
    // user keeps read access to the old keys table only, so that it has one database
    // (on 18.16 a user with no allow_databases may use every database).
    grants: [{ database: 'keys', tables: ['access_keys'], privileges: ['SELECT'] }],
    usedBy:
      'ingest gateway (CLICKHOUSE_USER): reads no ClickHouse table (events go to Kafka, keys come from PostgreSQL), only the old keys table so that it has one database',
  },
  consumer: {
    // Inserting into events and checks feeds the rollups their views write; retention
    // drops partitions (18.16) or sets the tables' TTL (current ClickHouse).
    grants: [{ database: 'data', tables: '*', privileges: ['SELECT', 'INSERT', 'ALTER DELETE', 'ALTER TTL'] }],
    // On a cluster, retention and deletions wait for their mutations on every server by
    // reading cluster('<cluster>', system, mutations) and (…, parts): the cluster table
    // function needs REMOTE.
    clusterPrivileges: ['REMOTE'],
    usedBy: 'stream consumer (CLICKHOUSE_USER): writes the data tables and applies their retention',
  },
  // Its own user, with no ALTER (allow_ddl=0 on 18.16): the audit log is append-only.
  audit: {
    grants: [{ database: 'audit', tables: ['audit_log'], privileges: ['INSERT'] }],
    usedBy:
      'stream consumer (AUDIT_CLICKHOUSE_USER): inserts audit entries into audit_log and nothing else, never alters or deletes',
  },
  query: {
    grants: [
      { database: 'data', tables: '*', privileges: ['SELECT'] },
      { database: 'audit', tables: ['audit_log'], privileges: ['SELECT'] },
    ],
    usedBy: 'query service (CLICKHOUSE_USER): reads the data tables and the audit log, never writes',
  },
  registry: {
    grants: [{ database: 'data', tables: ['monitors'], privileges: ['SELECT', 'INSERT'] }],
    usedBy:
      'query service (REGISTRY_CLICKHOUSE_USER): writes the monitors dimension table from the registry (and nothing else)',
  },
  runner: {
    // Its checks: the last alert of each monitor it takes on, the last call of a heartbeat
    // monitor, and the other locations' checks of a slot (its monitors come from PostgreSQL).
    grants: [{ database: 'data', tables: ['alerts', 'checks'], privileges: ['SELECT'] }],
    usedBy: 'check runner (CLICKHOUSE_USER): reads the last alerts and checks',
  },
  analyst: {
    grants: [
      { database: 'data', tables: '*', privileges: ['SELECT'] },
      { database: 'audit', tables: ['audit_log'], privileges: ['SELECT'] },
    ],
    usedBy:
      'people and dashboards reading the data tables (docs/clickhouse.md), the monitors dimension table and the audit log included, never keys or secrets',
  },
} as const satisfies Record<string, ServiceAccess>;

export type ServiceUser = keyof typeof SERVICE_USERS;

export const SERVICE_USER_NAMES = Object.keys(SERVICE_USERS) as ServiceUser[];

/**
 * A user's grants as 18.16 can state them (users.xml): the databases it may use, in the
 * order of its grants, and whether it writes (INSERT) or alters (ALTER ...) anything.
 */
export function databaseAccess(user: ServiceUser): { databases: DatabaseRole[]; write: boolean; ddl: boolean } {
  const grants: readonly Grant[] = SERVICE_USERS[user].grants;
  const privileges = new Set(grants.flatMap((g) => g.privileges));
  return {
    databases: [...new Set(grants.map((g) => g.database))],
    write: privileges.has('INSERT'),
    ddl: [...privileges].some((p) => p.startsWith('ALTER')),
  };
}

/**
 * The tables a grant on `tables` of database `database` covers by name: each one and,
 * in the data and audit databases, its Distributed table `<table>_all` (layout.ts: on a
 * cluster the services read and write through it). A grant on a Distributed table that
 * does not exist is harmless (ClickHouse keeps grants by name), so every named table there
 * gets its `_all` twin; the legacy registry and keys databases are never sharded.
 */
export function grantedTables(database: DatabaseRole, tables: readonly string[]): string[] {
  const sharded = database === 'data' || database === 'audit';
  return tables.flatMap((t) => (sharded ? [t, `${t}_all`] : [t]));
}

/** Does `user` hold `privilege` on `table` (or its `_all` table) of database `database`? */
export function isGranted(user: ServiceUser, database: DatabaseRole, table: string, privilege: Privilege): boolean {
  const grants: readonly Grant[] = SERVICE_USERS[user].grants;
  return grants.some(
    (g) =>
      g.database === database &&
      (g.tables === '*' || grantedTables(g.database, g.tables).includes(table)) &&
      g.privileges.includes(privilege),
  );
}

/**
 * CREATE USER and GRANT statements for every user, on current ClickHouse. `db` is the
 * data database's name as the SQL should hold it (a shell `${db}` in users.sh, a quoted
 * identifier elsewhere), `password(user)` the password's SQL string literal and `name(user)`
 * the user's name in SQL. A grant naming tables covers their `_all` tables too
 * (grantedTables). `onCluster` (e.g. `` ON CLUSTER `telemetry` ``, or a shell `${on_cluster}`)
 * follows the user's name in CREATE USER and GRANT in every statement, so each server of
 * the cluster gets the users (each keeps its own, unless the servers share a replicated
 * access storage). `clusterOnly` lists the statements for a cluster only (a user's
 * clusterPrivileges, ON *.*): with `onCluster` given, they are in `statements` too.
 */
export function grantStatements(opts: {
  db: (role: DatabaseRole) => string;
  name: (user: ServiceUser) => string;
  password: (user: ServiceUser) => string;
  /** e.g. `HOST LOCAL` */
  host?: string;
  /** ` ON CLUSTER <cluster>` as the SQL holds it, or nothing. */
  onCluster?: string;
}): { user: ServiceUser; usedBy: string; statements: string[]; clusterOnly: string[] }[] {
  const onCluster = opts.onCluster ?? '';
  return SERVICE_USER_NAMES.map((user) => {
    const access: ServiceAccess = SERVICE_USERS[user];
    const { grants, usedBy } = access;
    const name = opts.name(user);
    const readonly = databaseAccess(user).write ? '' : ' SETTINGS readonly = 2';
    const statements = [
      `CREATE USER OR REPLACE ${name}${onCluster} IDENTIFIED WITH sha256_password BY ${opts.password(user)}${opts.host ? ` ${opts.host}` : ''}${readonly}`,
      ...grants.flatMap((g) =>
        (g.tables === '*' ? ['*'] : grantedTables(g.database, g.tables)).map(
          (t) => `GRANT${onCluster} ${g.privileges.join(', ')} ON ${opts.db(g.database)}.${t} TO ${name}`,
        ),
      ),
    ];
    const clusterOnly = (access.clusterPrivileges ?? []).map((p) => `GRANT${onCluster} ${p} ON *.* TO ${name}`);
    return { user, usedBy, statements: onCluster ? [...statements, ...clusterOnly] : statements, clusterOnly };
  });
}

/**
 * The users section of deploy/clickhouse/users.sh (`npm run docs` writes it); `clusterOnly`
 * the grants it sends only when CLICKHOUSE_CLUSTER is set.
 */
export function usersScriptSql(): string {
  return usersScriptSections().users;
}

export function usersScriptSections(): { users: string; clusterOnly: string } {
  // NOTE: a usedBy text becomes a `--` comment there: no semicolon, which a reader
  // splitting the script on statements would take for the end of one.
  for (const u of SERVICE_USER_NAMES) {
    if (SERVICE_USERS[u].usedBy.includes(';')) throw new Error(`usedBy of ${u}: no semicolon`);
  }
  const shellDb = (role: DatabaseRole): string => (role === 'data' ? '${db}' : `\${db}_${role}`);
  const users = grantStatements({
    db: shellDb,
    name: (u) => u,
    password: (u) => `'\${${u.toUpperCase()}_PASSWORD}'`,
    // Empty, or ` ON CLUSTER <CLICKHOUSE_CLUSTER>`: users.sh sets it.
    onCluster: '${on_cluster}',
  });
  return {
    users: users
      .map(({ usedBy, statements, clusterOnly }) =>
        [`-- ${usedBy}`, ...statements.filter((s) => !clusterOnly.includes(s)).map((s) => `${s};`)].join('\n'),
      )
      .join('\n\n'),
    clusterOnly: users
      .filter((u) => u.clusterOnly.length > 0)
      .map(({ usedBy, clusterOnly }) => [`-- ${usedBy}`, ...clusterOnly.map((s) => `${s};`)].join('\n'))
      .join('\n\n'),
  };
}
