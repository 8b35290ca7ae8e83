/**
 * npm run analysts -- create --tenant ten_… [--name USER]
 * npm run analysts -- list
 * npm run analysts -- drop USER
 *
 * A ClickHouse user that reads only one tenant's rows of the public tables
 * (docs/analysts.md). Talks to ClickHouse at CLICKHOUSE_URL as CLICKHOUSE_USER (an admin),
 * database CLICKHOUSE_DATABASE (or the stack `npm start` runs):
 * - current ClickHouse: CREATE USER, GRANT SELECT and row policies;
 * - ClickHouse 18.16: the tenant's database of copies, and the user's file in
 *   CLICKHOUSE_USERS_DIR (the server's users.d; the server reloads it within seconds).
 * Prints a new user's password once; the server stores only its SHA-256.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { detectEngine, sqlIdentifier, sqlString, type ClickHouseClient } from '@telemetry/platform';
import {
  analystFileName,
  analystTenant,
  analystUserName,
  analystUsersXml,
  dropRowPolicyStatements,
  dropTenantCopyStatements,
  parseAnalystXml,
  refuseTakenUserName,
  rowPolicyStatements,
  tenantCopyStatements,
  tenantCopyView,
  tenantDatabase,
  tenantPolicyName,
  tenantRefreshStatements,
  TENANT_ANALYST_ROLLUPS,
  TENANT_ANALYST_TABLES,
  viewSelect,
  xmlDefinesUser,
  type AnalystFile,
} from '@telemetry/store';
import { adminFromEnv, runCli } from './cli.js';
import { envWithLocalStack } from './local-env.js';

const out = (s: string): boolean => process.stdout.write(`${s}\n`);

async function rows<T>(ch: ClickHouseClient, query: string): Promise<T[]> {
  const rs = await ch.query({ query, format: 'JSONEachRow' });
  return rs.json<T>();
}

/** Current ClickHouse: the tenant analysts of `data`, from their row policies. */
async function sqlAnalysts(ch: ClickHouseClient, data: string): Promise<{ user: string; tenant: string }[]> {
  const prefix = tenantPolicyName('');
  const found = await rows<{ short_name: string; select_filter: string }>(
    ch,
    `SELECT DISTINCT short_name, select_filter FROM system.row_policies
     WHERE database = ${sqlString(data)} AND startsWith(short_name, ${sqlString(prefix)}) ORDER BY short_name`,
  );
  return found.map((r) => ({
    user: r.short_name.slice(prefix.length),
    tenant: /'(ten_[0-9a-z]+)'/.exec(r.select_filter)?.[1] ?? '?',
  }));
}

/** 18.16: the analysts' files in users.d for `data`. */
function fileAnalysts(dir: string, data: string): AnalystFile[] {
  return readdirSync(dir)
    .filter((f) => f.startsWith('analyst-') && f.endsWith('.xml'))
    .map((f) => parseAnalystXml(readFileSync(join(dir, f), 'utf8')))
    .filter((a): a is AnalystFile => a !== undefined && a.data === data);
}

/**
 * 18.16: whether any users file other than the analyst's own defines `user`: every file of
 * users.d and the server's users.xml next to it. And the analyst `user` is, if its file is one of ours for `data`.
 */
function fileUserTaken(dir: string, data: string, user: string): { exists: boolean; analyst?: AnalystFile } {
  const own = analystFileName(user);
  const ownPath = join(dir, own);
  const parsed = existsSync(ownPath) ? parseAnalystXml(readFileSync(ownPath, 'utf8')) : undefined;
  const analyst = parsed?.data === data && parsed.user === user ? parsed : undefined;
  const files = [
    ...readdirSync(dir)
      .filter((f) => f.endsWith('.xml') && (f !== own || !analyst))
      .map((f) => join(dir, f)),
    join(dirname(dir), 'users.xml'),
  ];
  const exists = files.some((f) => existsSync(f) && xmlDefinesUser(readFileSync(f, 'utf8'), user));
  return { exists: exists || (existsSync(ownPath) && !analyst), analyst };
}

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { tenant: { type: 'string' }, name: { type: 'string' } },
  });
  const [cmd, arg] = positionals;
  if (cmd !== 'create' && cmd !== 'list' && cmd !== 'drop' && cmd !== 'refresh') {
    process.stderr.write(
      'usage: analysts create --tenant TENANT_ID [--name USER]\n       analysts list\n       analysts drop USER\n       analysts refresh [--tenant TENANT_ID]   (18.16: the copies anew, after deletions and retention)\n',
    );
    return 2;
  }
  // Checked before anything is sent anywhere.
  const tenant =
    cmd === 'create' || (cmd === 'refresh' && values.tenant !== undefined) ? analystTenant(values.tenant ?? '') : '';
  const admin = adminFromEnv();
  if (!admin) return 2;
  const { client: ch, database: data } = admin;
  if (cmd === 'create') analystUserName(data, tenant, values.name);
  const usersDir = envWithLocalStack().CLICKHOUSE_USERS_DIR;
  // On a cluster (current ClickHouse) the user and policies go ON CLUSTER and cover the `_all` tables.
  const cluster = envWithLocalStack().CLICKHOUSE_CLUSTER || undefined;
  try {
    const { modern } = await detectEngine(ch);
    if (!modern && cluster && cmd === 'create') {
      // The copies' views fire only where an insert lands, and would be made on one server only.
      throw new Error(
        'tenant analysts on a ClickHouse 18.16 cluster are not supported: the copies would miss rows (docs/analysts.md, "On a cluster")',
      );
    }
    if (!modern && !usersDir) {
      throw new Error(
        'ClickHouse 18.16 has no SQL for users: set CLICKHOUSE_USERS_DIR to its users.d directory (docs/analysts.md)',
      );
    }
    if (cmd === 'list') {
      const list = modern ? await sqlAnalysts(ch, data) : fileAnalysts(usersDir!, data);
      for (const a of list) out(`${a.user}\t${a.tenant}`);
      return 0;
    }
    if (cmd === 'refresh') {
      if (modern) {
        out('current ClickHouse: the row policies filter the tables themselves, there are no copies to refresh');
        return 0;
      }
      const tenants = tenant ? [tenant] : [...new Set(fileAnalysts(usersDir!, data).map((a) => a.tenant))];
      for (const t of tenants) {
        const tdb = tenantDatabase(data, t);
        // The copy's own columns: it may predate a column the data table has now.
        const columns = await rows<{ table: string; name: string }>(
          ch,
          `SELECT table, name FROM system.columns WHERE database = ${sqlString(tdb)}
             AND default_kind NOT IN ('MATERIALIZED', 'ALIAS')`,
        );
        const tables = TENANT_ANALYST_TABLES.filter((x) => columns.some((c) => c.table === x));
        if (!tables.length) throw new Error(`no copies for ${t}: npm run analysts -- create --tenant ${t}`);
        const statements = tenantRefreshStatements({
          data,
          tenant: t,
          tables,
          columns: (x) => columns.filter((c) => c.table === x).map((c) => c.name),
        });
        for (const query of statements) await ch.command({ query });
        out(`refreshed ${tdb}`);
      }
      return 0;
    }
    if (cmd === 'drop') {
      if (!arg) throw new Error('drop USER');
      if (modern) {
        const others = (await sqlAnalysts(ch, data)).map((a) => a.user);
        if (!others.includes(arg)) throw new Error(`no tenant analyst ${arg}`);
        for (const query of dropRowPolicyStatements({ data, user: arg, others, cluster })) await ch.command({ query });
      } else {
        const all = fileAnalysts(usersDir!, data);
        const mine = all.find((a) => a.user === arg);
        if (!mine) throw new Error(`no tenant analyst ${arg}`);
        // The user first: the server forgets it within seconds of the file going.
        rmSync(join(usersDir!, analystFileName(arg)));
        if (!all.some((a) => a.user !== arg && a.tenant === mine.tenant)) {
          for (const query of dropTenantCopyStatements({ data, tenant: mine.tenant })) await ch.command({ query });
        }
      }
      out(`dropped ${arg}`);
      return 0;
    }
    const user = analystUserName(data, tenant, values.name);
    const adminUser = envWithLocalStack().CLICKHOUSE_USER ?? 'default';
    const password = randomBytes(18).toString('base64url');
    // Only the SHA-256 leaves this process (the server stores nothing else).
    const hash = createHash('sha256').update(password).digest('hex');
    if (modern) {
      const analysts = await sqlAnalysts(ch, data);
      const [taken] = await rows<{ n: string | number }>(
        ch,
        `SELECT count() AS n FROM system.users WHERE name = ${sqlString(user)}`,
      );
      // Checked before anything is sent: an existing user is never replaced unless it is a tenant analyst of this tool.
      refuseTakenUserName({
        user,
        tenant,
        data,
        admin: adminUser,
        exists: Number(taken?.n ?? 0) > 0,
        analyst: analysts.find((a) => a.user === user),
      });
      const others = analysts.map((a) => a.user);
      for (const query of rowPolicyStatements({ data, tenant, user, passwordSha256: hash, others, cluster })) {
        await ch.command({ query });
      }
    } else {
      refuseTakenUserName({ user, tenant, data, admin: adminUser, ...fileUserTaken(usersDir!, data, user) });
      const tdb = tenantDatabase(data, tenant);
      // Tables whose copy is not fed yet: all of them the first time, a table added to
      // TENANT_ANALYST_TABLES since, or what an interrupted create left (its rows copied
      // again are folded by the tables' engines like redeliveries).
      const fed = new Set(
        (
          await rows<{ name: string }>(
            ch,
            `SELECT name FROM system.tables WHERE database = ${sqlString(data)} AND startsWith(name, ${sqlString(tenantCopyView(tenant, ''))})`,
          )
        ).map((r) => r.name),
      );
      const missing = TENANT_ANALYST_TABLES.filter((t) => !fed.has(tenantCopyView(tenant, t)));
      const selects: Record<string, string> = {};
      for (const [t, r] of Object.entries(TENANT_ANALYST_ROLLUPS)) {
        const [show] = await rows<{ statement: string }>(
          ch,
          `SHOW CREATE TABLE ${sqlIdentifier(data)}.${sqlIdentifier(r.view)}`,
        );
        if (!show) throw new Error(`no view ${data}.${r.view}: run the migrations first`);
        selects[t] = viewSelect(show.statement);
      }
      const columns = await rows<{ table: string; name: string }>(
        ch,
        `SELECT table, name FROM system.columns WHERE database = ${sqlString(data)}
           AND default_kind NOT IN ('MATERIALIZED', 'ALIAS')`,
      );
      const { create, fill } = tenantCopyStatements({
        data,
        tenant,
        rollupSelect: (t) => selects[t]!,
        columns: (t) => columns.filter((c) => c.table === t).map((c) => c.name),
        tables: missing,
      });
      if (missing.length) {
        for (const query of create) await ch.command({ query });
        for (const query of fill) await ch.command({ query });
      }
      const file = join(usersDir!, analystFileName(user));
      writeFileSync(file, analystUsersXml({ user, tenant, data, passwordSha256: hash }), { mode: 0o640 });
      out(`database: ${tdb}`);
    }
    out(`user:     ${user}`);
    out(`tenant:   ${tenant}`);
    out(`password: ${password}`);
    out('(the password is shown once; the server stores only its SHA-256)');
    return 0;
  } finally {
    await ch.close();
  }
}

runCli('analysts', main);
