/**
 * Per-tenant analysts (docs/analysts.md): a ClickHouse user that reads only one tenant's
 * rows of the public tables. The SQL and the users.d XML come from here; the CLI
 * (tools/devstack/analysts-cli.ts) runs them.
 *
 * - Current ClickHouse (SQL access control): CREATE USER, GRANT SELECT on each table of
 *   TENANT_ANALYST_TABLES and a row policy `USING tenant_id = '<tenant>'` for the user.
 *   NOTE: a table with a row policy can hide every row from a user that no policy names
 *   (when the server sets access_control_improvements.users_without_row_policies_can_read_rows
 *   to false): one permissive policy `USING 1 TO ALL EXCEPT <the tenant analysts>` per
 *   table keeps the services and the general `analyst` reading every row, whatever that
 *   setting says. It is rewritten whenever a tenant analyst is made or dropped.
 * - ClickHouse 18.16 (no row policies; access is per database, users.xml
 *   `allow_databases`): a view over the data database is refused to a user allowed only
 *   the view's database (18.16 checks the user's access to every table a view expands
 *   to: "Access denied to database telemetry for user …", verified on 18.16.1). What 18.16
 *   lets such a user read is a table in its own database: so the tenant's database
 *   `<data>_tenant_<tenant>` holds a **copy** of each public table with only the tenant's
 *   rows, kept up to date by a materialized view in the data database (`analyst_<tenant
 *   suffix>_<table>`, filled on every insert by whoever inserts, whose user needs no
 *   access to the tenant's database) and filled once from the existing rows. A rollup's
 *   copy is fed from the raw table with the rollup's own SELECT plus the tenant filter
 *   (18.16 does not pass rows written by one materialized view on to the views of its
 *   target table).
 */
import { TENANT_ID_PATTERN } from '@telemetry/contract';
import { sqlIdentifier, sqlNumber, sqlString } from '@telemetry/platform';
import { DISTRIBUTED_READ_SETTINGS } from './distributed-reads.js';
import { SERVICE_USER_NAMES } from './databases.js';

/**
 * The public tables a tenant's analyst reads (docs/clickhouse.md), all in the data
 * database and all with a `tenant_id` column. One list: a public table added later
 * (as failed_events was) is added here and every tenant analyst made after covers it (those
 * made before: `npm run analysts -- create` again, which is idempotent). Not
 * check_screenshots: images of up to 500 KB, not a public table (copied per tenant on
 * 18.16 they would be stored twice); tenants read them through the API.
 */
export const TENANT_ANALYST_TABLES: readonly string[] = [
  'events',
  'events_per_minute',
  'checks',
  'checks_hourly',
  'alerts',
  'webhook_deliveries',
  'monitors',
  'failed_events',
];

/**
 * Rollups among TENANT_ANALYST_TABLES: on 18.16 their tenant copy is fed from the raw
 * table through the rollup's own view (`view`), filtered on the tenant.
 */
export const TENANT_ANALYST_ROLLUPS: Readonly<Record<string, { view: string; from: string }>> = {
  events_per_minute: { view: 'events_per_minute_mv', from: 'events' },
  checks_hourly: { view: 'checks_hourly_mv', from: 'checks' },
};

const TENANT = new RegExp(TENANT_ID_PATTERN);
const USER_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** The tenant id, or an error that says what a tenant id looks like. */
export function analystTenant(tenant: string): string {
  if (!TENANT.test(tenant)) throw new Error(`not a tenant id: ${JSON.stringify(tenant)} (ten_ and 1-32 of 0-9 a-z)`);
  return tenant;
}

/** The analyst's user name: `--name`, or `<data>_analyst_<tenant>`. */
export function analystUserName(data: string, tenant: string, name?: string): string {
  const user = name ?? `${data}_analyst_${analystTenant(tenant)}`;
  if (!USER_NAME.test(user)) {
    throw new Error(
      `not a user name: ${JSON.stringify(user)} (letters, digits and _, at most 64; give a shorter --name)`,
    );
  }
  return user;
}

/**
 * Names `create` never takes, whatever the server says: ClickHouse's `default`, the admin
 * it runs as, the services' users as deploy/clickhouse/users.sh names them (`consumer`,
 * `analyst`, …) and as the devstack names them (`<data>_consumer`, …).
 */
export function reservedUserNames(data: string, admin: string): string[] {
  return [...new Set(['default', admin, ...SERVICE_USER_NAMES, ...SERVICE_USER_NAMES.map((s) => `${data}_${s}`)])];
}

/**
 * 18.16: whether a users.xml or users.d file defines `user` (an element of that name in a
 * `<users>` section, comments aside). May say yes for a name that is only a setting inside
 * a user (`profile`, `networks`): such names are refused too, which is harmless.
 */
export function xmlDefinesUser(text: string, user: string): boolean {
  if (!USER_NAME.test(user)) throw new Error(`not a user name: ${JSON.stringify(user)}`);
  const sections = text.replace(/<!--[\s\S]*?-->/g, '').match(/<users>[\s\S]*?<\/users>/g) ?? [];
  const tag = new RegExp(`<${user}[\\s/>]`);
  return sections.some((s) => tag.test(s));
}

/**
 * Refuses to make `user` for `tenant` unless it is new or already a tenant analyst of this
 * tool for the same tenant (rotation). `exists`: the server (or a users file) knows the
 * name; `analyst`: the tenant analyst of that name `list` shows, if any. Without this,
 * `CREATE USER OR REPLACE` (or a users.d file of the same name) would silently replace a
 * service's user or the general `analyst`.
 */
export function refuseTakenUserName(opts: {
  user: string;
  tenant: string;
  data: string;
  admin: string;
  exists: boolean;
  analyst?: { tenant: string };
}): void {
  if (reservedUserNames(opts.data, opts.admin).includes(opts.user)) {
    throw new Error(
      `${opts.user} is a ClickHouse user of ours (a service, the admin or default): choose another --name`,
    );
  }
  if (opts.analyst && opts.analyst.tenant !== opts.tenant) {
    throw new Error(`${opts.user} exists for another tenant (${opts.analyst.tenant}): drop it first`);
  }
  if (opts.exists && !opts.analyst) {
    throw new Error(`a ClickHouse user ${opts.user} already exists and is not a tenant analyst: choose another --name`);
  }
}

/** 18.16: the tenant's own database, holding its copies of the public tables. */
export function tenantDatabase(data: string, tenant: string): string {
  const name = `${tenantDatabasePrefix(data)}${analystTenant(tenant)}`;
  if (!USER_NAME.test(name)) throw new Error(`the tenant database ${name} is longer than 64 characters`);
  return name;
}

/**
 * 18.16: what every tenant's database of copies starts with (`<data>_tenant_`): a deletion
 * or a retention job that must reach the copies finds them with
 * `SELECT name FROM system.databases WHERE startsWith(name, '<prefix>')`.
 */
export function tenantDatabasePrefix(data: string): string {
  return `${data}_tenant_`;
}

/** 18.16: the view in the data database that copies the tenant's new rows of `table`. */
export function tenantCopyView(tenant: string, table: string): string {
  return `analyst_${analystTenant(tenant).slice('ten_'.length)}_${table}`;
}

/** Current ClickHouse: the row policy that gives `user` its tenant's rows of a table. */
export function tenantPolicyName(user: string): string {
  return `tenant_analyst_${user}`;
}

/** Current ClickHouse: the permissive policy for everyone else (see the module's note). */
export const EVERYONE_POLICY = 'everyone_but_tenant_analysts';

/**
 * Current ClickHouse on a cluster (`cluster` set: CLICKHOUSE_CLUSTER): every statement
 * runs ON CLUSTER, so the user, its policies and grants exist on every server, and each
 * public table's Distributed `<table>_all` gets the same policies and grant as the table.
 * NOTE: a shard applies the policies of the user that runs the query there: set the
 * cluster's `<secret>` in remote_servers, so that shards run a distributed query as its
 * initial user (docs/analysts.md, "On a cluster").
 */
function onCluster(cluster: string | undefined): string {
  return cluster ? ` ON CLUSTER ${sqlIdentifier(cluster)}` : '';
}

/** The tables the policies cover: each public table, and its `_all` table on a cluster. */
function policyTables(tables: readonly string[], cluster: string | undefined): string[] {
  return cluster ? tables.flatMap((t) => [t, `${t}_all`]) : [...tables];
}

/**
 * Current ClickHouse: the statements that make (or remake) `user`, reading `tenant`'s rows.
 * `others` are the tenant analysts already on the server (kept out of EVERYONE_POLICY).
 * Order matters: policies first, the grants last, so the user can read nothing before
 * its policy holds.
 */
export function rowPolicyStatements(opts: {
  data: string;
  tenant: string;
  user: string;
  /** The password's SHA-256 (64 hex digits): the password itself never leaves the CLI. */
  passwordSha256: string;
  others: readonly string[];
  tables?: readonly string[];
  /** CLICKHOUSE_CLUSTER: ON CLUSTER, and the `_all` tables too. */
  cluster?: string;
}): string[] {
  const tenant = analystTenant(opts.tenant);
  if (!/^[0-9a-f]{64}$/.test(opts.passwordSha256)) throw new Error('passwordSha256 is 64 hex digits');
  const user = sqlIdentifier(opts.user);
  const db = sqlIdentifier(opts.data);
  const on = onCluster(opts.cluster);
  const tables = policyTables(opts.tables ?? TENANT_ANALYST_TABLES, opts.cluster);
  const analysts = [...new Set([...opts.others, opts.user])].sort();
  // On a cluster the user reads `_all` with the exact-read settings as its own (readonly = 1
  // refuses settings sent with a query).
  const exact = opts.cluster
    ? Object.entries(DISTRIBUTED_READ_SETTINGS)
        .map(([k, v]) => `, ${k} = ${typeof v === 'number' ? sqlNumber(v) : sqlString(v)}`)
        .join('')
    : '';
  return [
    `CREATE USER OR REPLACE ${user}${on} IDENTIFIED WITH sha256_hash BY ${sqlString(opts.passwordSha256)} SETTINGS readonly = 1${exact}`,
    ...tables.flatMap((t) => {
      const table = `${db}.${sqlIdentifier(t)}`;
      return [
        `CREATE ROW POLICY OR REPLACE ${sqlIdentifier(tenantPolicyName(opts.user))}${on} ON ${table} AS permissive FOR SELECT USING tenant_id = ${sqlString(tenant)} TO ${user}`,
        everyonePolicy(table, analysts, on),
      ];
    }),
    ...tables.map((t) => `GRANT${on} SELECT ON ${db}.${sqlIdentifier(t)} TO ${user}`),
  ];
}

function everyonePolicy(table: string, analysts: readonly string[], on = ''): string {
  const except = analysts.length ? ` EXCEPT ${analysts.map(sqlIdentifier).join(', ')}` : '';
  return `CREATE ROW POLICY OR REPLACE ${sqlIdentifier(EVERYONE_POLICY)}${on} ON ${table} AS permissive FOR SELECT USING 1 TO ALL${except}`;
}

/** Current ClickHouse: drop `user` and its policies; `others` are the tenant analysts that stay. */
export function dropRowPolicyStatements(opts: {
  data: string;
  user: string;
  others: readonly string[];
  tables?: readonly string[];
  /** CLICKHOUSE_CLUSTER: ON CLUSTER, and the `_all` tables too. */
  cluster?: string;
}): string[] {
  const db = sqlIdentifier(opts.data);
  const on = onCluster(opts.cluster);
  const tables = policyTables(opts.tables ?? TENANT_ANALYST_TABLES, opts.cluster);
  const others = opts.others.filter((u) => u !== opts.user).sort();
  return [
    `DROP USER IF EXISTS ${sqlIdentifier(opts.user)}${on}`,
    ...tables.flatMap((t) => {
      const table = `${db}.${sqlIdentifier(t)}`;
      return [
        `DROP ROW POLICY IF EXISTS ${sqlIdentifier(tenantPolicyName(opts.user))}${on} ON ${table}`,
        others.length
          ? everyonePolicy(table, others, on)
          : `DROP ROW POLICY IF EXISTS ${sqlIdentifier(EVERYONE_POLICY)}${on} ON ${table}`,
      ];
    }),
  ];
}

/**
 * 18.16: the tenant's database and copies. `rollupSelect(table)` is the rollup's own
 * SELECT as the server shows it (SHOW CREATE TABLE of its view); the tenant filter goes
 * before its GROUP BY. Copies are made once: a table that exists is left as it is.
 * Returns `create` (the database, tables and views) and `fill` (the existing rows; run
 * after `create`, so no row inserted in between is missed: one inserted while both run
 * may be copied twice, which the tables' engines fold as they fold Kafka's redeliveries).
 */
export function tenantCopyStatements(opts: {
  data: string;
  tenant: string;
  rollupSelect: (table: string) => string;
  /** The columns of a table in the data database now (system.columns, in order, no MATERIALIZED or ALIAS). */
  columns: (table: string) => readonly string[];
  tables?: readonly string[];
}): { create: string[]; fill: string[] } {
  const tenant = sqlString(analystTenant(opts.tenant));
  const data = sqlIdentifier(opts.data);
  const tdb = sqlIdentifier(tenantDatabase(opts.data, opts.tenant));
  const tables = opts.tables ?? TENANT_ANALYST_TABLES;
  const create = [`CREATE DATABASE IF NOT EXISTS ${tdb}`];
  const fill: string[] = [];
  for (const t of tables) {
    const src = `${data}.${sqlIdentifier(t)}`;
    const dst = `${tdb}.${sqlIdentifier(t)}`;
    const view = `${data}.${sqlIdentifier(tenantCopyView(opts.tenant, t))}`;
    create.push(`CREATE TABLE IF NOT EXISTS ${dst} AS ${src}`);
    // NOTE: named columns, never `*`: 18.16 expands a view's `*` at every insert, so a
    // column a later migration adds to the data table would make every insert into it
    // fail (the copy lacks it). The copy keeps the columns it was made with.
    const columns = opts.columns(t).map(sqlIdentifier).join(', ');
    if (!columns) throw new Error(`no table ${opts.data}.${t}: run the migrations first`);
    const rollup = TENANT_ANALYST_ROLLUPS[t];
    const select = rollup
      ? withTenantFilter(opts.rollupSelect(t), `${data}.${sqlIdentifier(rollup.from)}`, opts.data, rollup.from, tenant)
      : `SELECT ${columns} FROM ${src} WHERE tenant_id = ${tenant}`;
    create.push(`CREATE MATERIALIZED VIEW IF NOT EXISTS ${view} TO ${dst} AS ${select}`);
    fill.push(`INSERT INTO ${dst} (${columns}) SELECT ${columns} FROM ${src} WHERE tenant_id = ${tenant}`);
  }
  return { create, fill };
}

/**
 * 18.16: the tenant's copies made anew from what the data tables hold now, so that a
 * deletion or the retention of the data tables (which cannot reach the copies) reaches
 * them too (`npm run analysts -- refresh`). The views keep feeding the copies meanwhile:
 * a row inserted while this runs may be copied twice, and is folded like a redelivery.
 */
export function tenantRefreshStatements(opts: {
  data: string;
  tenant: string;
  columns: (table: string) => readonly string[];
  tables?: readonly string[];
}): string[] {
  const tenant = sqlString(analystTenant(opts.tenant));
  const data = sqlIdentifier(opts.data);
  const tdb = sqlIdentifier(tenantDatabase(opts.data, opts.tenant));
  return (opts.tables ?? TENANT_ANALYST_TABLES).flatMap((t) => {
    const columns = opts.columns(t).map(sqlIdentifier).join(', ');
    if (!columns) throw new Error(`no table ${opts.data}.${t}: run the migrations first`);
    const dst = `${tdb}.${sqlIdentifier(t)}`;
    return [
      `TRUNCATE TABLE IF EXISTS ${dst}`,
      `INSERT INTO ${dst} (${columns}) SELECT ${columns} FROM ${data}.${sqlIdentifier(t)} WHERE tenant_id = ${tenant}`,
    ];
  });
}

/**
 * A rollup view's SELECT (`… FROM db.events GROUP BY …`, as SHOW CREATE TABLE prints it)
 * with `WHERE tenant_id = …` before its GROUP BY. Refuses any other shape rather than guess.
 */
export function withTenantFilter(
  select: string,
  quotedFrom: string,
  data: string,
  from: string,
  tenant: string,
): string {
  const forms = [quotedFrom, `${data}.${from}`];
  const at = /^\s*SELECT\s/i.test(select) ? forms.map((f) => select.indexOf(`FROM ${f} `)).find((i) => i >= 0) : -1;
  const groupBy = select.search(/\sGROUP BY\s/);
  if (at === undefined || at < 0 || groupBy < at || /\sWHERE\s/i.test(select)) {
    throw new Error(`unexpected rollup view SELECT: ${select}`);
  }
  return `${select.slice(0, groupBy)} WHERE tenant_id = ${tenant}${select.slice(groupBy)}`;
}

/** The SELECT of a view out of SHOW CREATE TABLE's text. */
export function viewSelect(createQuery: string): string {
  const i = createQuery.search(/\sAS\s+SELECT\s/i);
  if (i < 0) throw new Error(`not a view: ${createQuery}`);
  return createQuery
    .slice(i)
    .replace(/^\s*AS\s+/i, '')
    .trim();
}

/** 18.16: drop the tenant's copies (when its last analyst goes). */
export function dropTenantCopyStatements(opts: { data: string; tenant: string; tables?: readonly string[] }): string[] {
  const data = sqlIdentifier(opts.data);
  const tables = opts.tables ?? TENANT_ANALYST_TABLES;
  return [
    // The views first: nothing is copied into a table being dropped.
    ...tables.map((t) => `DROP TABLE IF EXISTS ${data}.${sqlIdentifier(tenantCopyView(opts.tenant, t))}`),
    `DROP DATABASE IF EXISTS ${sqlIdentifier(tenantDatabase(opts.data, opts.tenant))}`,
  ];
}

function xml(s: string): string {
  return s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** What a users.d file of an analyst says about it (in a comment the CLI reads back). */
export interface AnalystFile {
  user: string;
  tenant: string;
  data: string;
}

export const ANALYST_PROFILE = 'tenant_analyst';

/**
 * 18.16: the users.d file of one analyst: allowed only its tenant's database, read-only
 * with no settings changes (readonly=1: no table functions either), its password's SHA-256.
 */
export function analystUsersXml(opts: AnalystFile & { passwordSha256: string; networks?: readonly string[] }): string {
  analystTenant(opts.tenant);
  analystUserName(opts.data, opts.tenant, opts.user);
  if (!/^[0-9a-f]{64}$/.test(opts.passwordSha256)) throw new Error('passwordSha256 is 64 hex digits');
  const networks = (opts.networks ?? ['::/0']).map((n) => `<ip>${xml(n)}</ip>`).join('');
  const meta = JSON.stringify({ user: opts.user, tenant: opts.tenant, data: opts.data });
  return `<?xml version="1.0"?>
<!-- analyst ${meta} -->
<yandex>
  <profiles><${ANALYST_PROFILE}><readonly>1</readonly></${ANALYST_PROFILE}></profiles>
  <users>
    <${opts.user}><password_sha256_hex>${opts.passwordSha256}</password_sha256_hex><networks>${networks}</networks><profile>${ANALYST_PROFILE}</profile><quota>default</quota><allow_databases><database>${xml(tenantDatabase(opts.data, opts.tenant))}</database></allow_databases></${opts.user}>
  </users>
</yandex>
`;
}

/** The analyst a users.d file describes, or undefined for any other file. */
export function parseAnalystXml(text: string): AnalystFile | undefined {
  const m = /^<!-- analyst (\{.*\}) -->$/m.exec(text);
  if (!m) return undefined;
  const v = JSON.parse(m[1]!) as Partial<AnalystFile>;
  return typeof v.user === 'string' && typeof v.tenant === 'string' && typeof v.data === 'string'
    ? { user: v.user, tenant: v.tenant, data: v.data }
    : undefined;
}

/** The users.d file name of an analyst. */
export function analystFileName(user: string): string {
  if (!USER_NAME.test(user)) throw new Error(`not a user name: ${JSON.stringify(user)}`);
  return `analyst-${user}.xml`;
}
