import { execFile } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { createClickHouse, type ClickHouseClient } from '@telemetry/platform';
import {
  analystFileName,
  auditDatabase,
  dropRowPolicyStatements,
  keysDatabase,
  registryDatabase,
  rowPolicyStatements,
  TENANT_ANALYST_TABLES,
  tenantDatabase,
} from '@telemetry/store';
import { startChdbServer, type ChdbServer } from '../../tools/devstack/chdb.js';
import { adminClickHouse, eventually, selectCount, selectRows, testStack } from '../support/fixtures.js';

const run = promisify(execFile);

/**
 * The 18.16 server's users.d: the stack's in local mode (CI), else the one the external
 * servers' CLICKHOUSE_USERS_DIR names (the shared development stack).
 */
function usersDir(): string {
  const dir = testStack().usersDir || process.env.CLICKHOUSE_USERS_DIR;
  if (!dir)
    throw new Error('no users.d of the 18.16 server: local stack, or CLICKHOUSE_USERS_DIR with external servers');
  return dir;
}

/** `npm run analysts` (tools/devstack/analysts-cli.ts) as a child process against the run's ClickHouse, as its admin. */
async function analysts(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const s = testStack();
  try {
    const { stdout, stderr } = await run(
      'npx',
      ['tsx', '--conditions=source', 'tools/devstack/analysts-cli.ts', ...args],
      {
        env: {
          ...process.env,
          CLICKHOUSE_URL: s.clickhouseUrl,
          CLICKHOUSE_DATABASE: s.database,
          CLICKHOUSE_USER: 'default',
          CLICKHOUSE_PASSWORD: '',
          CLICKHOUSE_USERS_DIR: usersDir(),
          // never the developer's own `npm start` stack
          DEVSTACK_ENV_FILE: join(usersDir(), 'no-such-env'),
        },
        timeout: 60_000,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const newTenant = (): string => `ten_${randomBytes(5).toString('hex')}`;
const ts = (secondsAgo = 0): string =>
  new Date(Date.now() - secondsAgo * 1000).toISOString().slice(0, 19).replace('T', ' ');

/** Events and checks of `tenant`, inserted as the stream consumer's own ClickHouse user. */
async function insertRows(ch: ClickHouseClient, db: string, tenant: string, events: number, checks: number) {
  if (events) {
    await ch.insert({
      table: `${db}.events`,
      format: 'JSONEachRow',
      values: Array.from({ length: events }, (_, i) => ({
        tenant_id: tenant,
        event_id: randomUUID(),
        key_id: 'k1',
        source: 'shop',
        category: 'page_view',
        payload: '{}',
        client_event_id: '',
        id_time: ts(i),
        event_time: ts(i),
        received_at: ts(i),
      })),
    });
  }
  // One alert, one monitor (the dimension table) and one failed event per call: every public table has rows of both tenants.
  await ch.insert({
    table: `${db}.alerts`,
    format: 'JSONEachRow',
    values: [
      {
        tenant_id: tenant,
        id: randomUUID(),
        monitor_id: 'mon_1',
        incident_id: randomUUID(),
        type: 'monitor.down',
        created_at: ts(),
        inserted_at: ts(),
      },
    ],
  });
  await ch.insert({
    table: `${db}.monitors`,
    format: 'JSONEachRow',
    values: [
      {
        tenant_id: tenant,
        id: `mon_${randomBytes(4).toString('hex')}`,
        name: 'api',
        type: 'http',
        interval_seconds: 60,
        version: 1,
        created_at: ts(),
        updated_at: ts(),
      },
    ],
  });
  await ch.insert({
    table: `${db}.failed_events`,
    format: 'JSONEachRow',
    values: [
      {
        tenant_id: tenant,
        event_id: randomUUID(),
        source: 'shop',
        category: 'order',
        schema_id: 'sch_1',
        schema_version: 1,
        violations: '[]',
        raw: '{}',
        received_at: ts(),
        failed_at: ts(),
        replay_state: 'failed',
        inserted_at: ts(),
        row_version: Date.now(),
      },
    ],
  });
  if (checks) {
    await ch.insert({
      table: `${db}.checks`,
      format: 'JSONEachRow',
      values: Array.from({ length: checks }, (_, i) => ({
        tenant_id: tenant,
        monitor_id: 'mon_1',
        created_at: ts(i),
        id: randomUUID(),
        status: 'up',
        response_time: 10 + i,
        status_code: 200,
        error: '',
      })),
    });
  }
}

describe('per-tenant analysts on ClickHouse 18.16: npm run analysts makes a user that reads one tenant only', function () {
  this.timeout(120_000);
  let consumer: ClickHouseClient;
  let query: ClickHouseClient;
  let admin: ClickHouseClient;

  before(() => {
    const s = testStack();
    const as = (c: { user: string; password: string }) =>
      createClickHouse({ url: s.clickhouseUrl, username: c.user, password: c.password, database: s.database });
    consumer = as(s.users.consumer);
    query = as(s.users.query);
    admin = adminClickHouse();
  });
  after(async () => {
    await Promise.all([consumer?.close(), query?.close(), admin?.close()]);
  });

  it("reads its tenant's events, checks and rollups (rows before and after it was made), none of another's; cannot write or reach other databases; drop removes it", async () => {
    const s = testStack();
    const db = s.database;
    const [a, b] = [newTenant(), newTenant()];
    await insertRows(consumer, db, a, 3, 2);
    await insertRows(consumer, db, b, 4, 1);

    const made = await analysts('create', '--tenant', a);
    expect(made.code, made.stderr).to.equal(0);
    const user = /^user: +(\S+)$/m.exec(made.stdout)?.[1];
    const password = /^password: (\S+)$/m.exec(made.stdout)?.[1];
    expect(user).to.equal(`${db}_analyst_${a}`);
    expect(password, made.stdout).to.match(/^[A-Za-z0-9_-]{24}$/);
    const tdb = tenantDatabase(db, a);
    expect(made.stdout).to.contain(`database: ${tdb}`);

    // Rows after the analyst was made reach its copies, through the consumer's own user.
    await insertRows(consumer, db, a, 2, 1);
    await insertRows(consumer, db, b, 1, 1);

    const analyst = createClickHouse({ url: s.clickhouseUrl, username: user!, password: password!, database: tdb });
    try {
      // 18.16 reloads users.d within seconds.
      await eventually('the server accepts the analyst', () =>
        analyst.command({ query: 'SELECT 1' }).then(
          () => true,
          () => undefined,
        ),
      );
      const expected = {
        events: await selectCount(query, `SELECT count() AS n FROM ${db}.events FINAL WHERE tenant_id = '${a}'`),
        checks: await selectCount(query, `SELECT count() AS n FROM ${db}.checks FINAL WHERE tenant_id = '${a}'`),
      };
      expect(expected).to.deep.equal({ events: 5, checks: 3 });
      expect(await selectCount(analyst, `SELECT count() AS n FROM ${tdb}.events FINAL`)).to.equal(expected.events);
      expect(await selectCount(analyst, `SELECT count() AS n FROM ${tdb}.checks FINAL`)).to.equal(expected.checks);
      expect(
        await selectCount(
          analyst,
          `SELECT sum(e) AS n FROM (SELECT uniqExactMerge(events) AS e FROM ${tdb}.events_per_minute GROUP BY minute)`,
        ),
      ).to.equal(expected.events);
      expect(
        await selectCount(
          analyst,
          `SELECT sum(c) AS n FROM (SELECT uniqExactMerge(checks) AS c FROM ${tdb}.checks_hourly GROUP BY hour)`,
        ),
      ).to.equal(expected.checks);
      expect(await selectCount(analyst, `SELECT count() AS n FROM ${tdb}.alerts FINAL`)).to.equal(
        await selectCount(query, `SELECT count() AS n FROM ${db}.alerts FINAL WHERE tenant_id = '${a}'`),
      );
      expect(await selectCount(analyst, `SELECT count() AS n FROM ${tdb}.monitors FINAL`)).to.equal(2);
      expect(await selectCount(analyst, `SELECT count() AS n FROM ${tdb}.failed_events FINAL`)).to.equal(2);
      for (const t of TENANT_ANALYST_TABLES) {
        const tenants = await selectRows<{ tenant_id: string }>(analyst, `SELECT DISTINCT tenant_id FROM ${tdb}.${t}`);
        expect(
          tenants.map((r) => r.tenant_id),
          t,
        ).to.satisfy((l: string[]) => l.every((x) => x === a));
        expect(await selectCount(analyst, `SELECT count() AS n FROM ${tdb}.${t} WHERE tenant_id = '${b}'`), t).to.equal(
          0,
        );
      }
      // The base tables, the other databases, writes and table functions are refused.
      const refused = async (sql: string): Promise<string> =>
        analyst.command({ query: sql }).then(
          () => expect.fail(`accepted: ${sql}`),
          (err: unknown) => String(err),
        );
      expect(await refused(`SELECT count() FROM ${db}.events`)).to.match(/Access denied to database/);
      for (const other of [auditDatabase(db), keysDatabase(db), registryDatabase(db), tenantDatabase(db, b)]) {
        expect(await refused(`SELECT count() FROM ${other}.audit_log`)).to.match(/Access denied|doesn't exist/);
      }
      expect(await refused(`SELECT count() FROM ${auditDatabase(db)}.audit_log`)).to.match(/Access denied to database/);
      expect(await refused(`INSERT INTO ${tdb}.checks (tenant_id) VALUES ('${b}')`)).to.match(/readonly/);
      expect(await refused(`CREATE TABLE ${tdb}.x (a UInt8) ENGINE = Memory`)).to.match(/readonly/);
      expect(await refused(`SELECT count() FROM remote('127.0.0.1', ${db}, events)`)).to.match(/readonly/);
      // The services still read every tenant.
      expect(await selectCount(query, `SELECT count() AS n FROM ${db}.events FINAL WHERE tenant_id = '${b}'`)).to.equal(
        5,
      );

      const list = await analysts('list');
      expect(list.stdout).to.contain(`${user}\t${a}`);

      // A deletion in the data tables reaches the copies with `refresh` (the consumer's user cannot reach them).
      await admin.command({
        query: `ALTER TABLE ${db}.events DELETE WHERE tenant_id = '${a}' AND received_at < now() - 1`,
      });
      const remaining = await eventually('the mutation is done', async () => {
        const left = await selectCount(
          admin,
          `SELECT count() AS n FROM system.mutations WHERE database = '${db}' AND NOT is_done`,
        );
        return left === 0
          ? selectCount(query, `SELECT count() AS n FROM ${db}.events FINAL WHERE tenant_id = '${a}'`)
          : undefined;
      });
      expect(remaining).to.be.below(expected.events);
      expect(await selectCount(analyst, `SELECT count() AS n FROM ${tdb}.events FINAL`)).to.equal(expected.events);
      const refreshed = await analysts('refresh', '--tenant', a);
      expect(refreshed.code, refreshed.stderr).to.equal(0);
      expect(refreshed.stdout).to.contain(`refreshed ${tdb}`);
      expect(await selectCount(analyst, `SELECT count() AS n FROM ${tdb}.events FINAL`)).to.equal(remaining);
      expect(await selectCount(analyst, `SELECT count() AS n FROM ${tdb}.checks FINAL`)).to.equal(expected.checks);

      // Rotation: create again prints a new password; the old one is refused from then on.
      const again = await analysts('create', '--tenant', a);
      expect(again.code, again.stderr).to.equal(0);
      const rotated = /^password: (\S+)$/m.exec(again.stdout)?.[1];
      expect(rotated).to.be.a('string').and.not.equal(password);
      const renewed = createClickHouse({ url: s.clickhouseUrl, username: user!, password: rotated!, database: tdb });
      try {
        await eventually('the new password works', () =>
          selectCount(renewed, `SELECT count() AS n FROM ${tdb}.checks FINAL`).then(
            (n) => n,
            () => undefined,
          ),
        ).then((n) => expect(n).to.equal(expected.checks));
        expect(await analyst.command({ query: 'SELECT 1' }).then(() => 'accepted', String)).to.match(
          /password|Authentication/i,
        );
      } finally {
        await renewed.close();
      }

      const dropped = await analysts('drop', user!);
      expect(dropped.code, dropped.stderr).to.equal(0);
      expect(existsSync(join(usersDir(), analystFileName(user!)))).to.equal(false);
      await eventually('the server forgets the analyst', () =>
        analyst.command({ query: 'SELECT 1' }).then(
          () => undefined,
          (err: unknown) => String(err),
        ),
      );
      expect(await selectCount(admin, `SELECT count() AS n FROM system.databases WHERE name = '${tdb}'`)).to.equal(0);
      // Inserts go on without the copies' views.
      await insertRows(consumer, db, a, 1, 0);
      expect((await analysts('list')).stdout).not.to.contain(user!);
    } finally {
      await analyst.close();
    }
  });

  it('refuses a name that is already a user (a service user, the general analyst, default), changing nothing', async () => {
    const s = testStack();
    const dir = usersDir();
    const names = [s.users.consumer.user, s.users.analyst.user, 'analyst', 'consumer', 'default'];
    // This run's users file and any analyst file of those names (other runs share users.d).
    const ours = (): Record<string, string> =>
      Object.fromEntries(
        readdirSync(dir)
          .filter((f) => f === `${s.database}.xml` || names.some((n) => f === analystFileName(n)))
          .map((f) => [f, readFileSync(join(dir, f), 'utf8')]),
      );
    const before = ours();
    expect(Object.keys(before)).to.deep.equal([`${s.database}.xml`]);
    const tenant = newTenant();
    for (const name of names) {
      const r = await analysts('create', '--tenant', tenant, '--name', name);
      expect(r.code, name).to.equal(1);
      expect(r.stderr, name).to.match(/user of ours|already exists/);
      expect(r.stdout, name).not.to.match(/password/);
    }
    expect(ours()).to.deep.equal(before);
    expect(
      await selectCount(
        admin,
        `SELECT count() AS n FROM system.databases WHERE name = '${tenantDatabase(s.database, tenant)}'`,
      ),
    ).to.equal(0);
    // The consumer's own user still works with its own password.
    const consumer = createClickHouse({
      url: s.clickhouseUrl,
      username: s.users.consumer.user,
      password: s.users.consumer.password,
      database: s.database,
    });
    try {
      expect(await selectCount(consumer, 'SELECT 1 AS n')).to.equal(1);
    } finally {
      await consumer.close();
    }
  });

  it('refuses an invalid tenant id and an invalid name, making nothing', async () => {
    const s = testStack();
    for (const args of [
      ['create', '--tenant', "ten_x'; DROP DATABASE x; --"],
      ['create', '--tenant', 'TEN_A'],
      ['create', '--tenant', newTenant(), '--name', 'a-b<c>'],
    ]) {
      const r = await analysts(...args);
      expect(r.code, args.join(' ')).to.equal(1);
      expect(r.stderr).to.match(/not a (tenant id|user name)/);
    }
    expect(
      await selectCount(admin, `SELECT count() AS n FROM system.databases WHERE name LIKE '${s.database}_tenant_%'`),
    ).to.equal(0);
  });
});

/**
 * The current-engine lane (docs/clickhouse.md, "Two engines"): chDB 26.x, the engine
 * the lane has, parses every statement the CLI sends to current ClickHouse. NOTE: chDB
 * runs without access control (its default user cannot CREATE USER, and EXECUTE AS is
 * off), so the row policies' effect is not exercised here (docs/analysts.md says so).
 */
describe('per-tenant analysts on current ClickHouse: the row-policy SQL parses on the current engine (chDB)', function () {
  this.timeout(300_000);
  let chdb: ChdbServer;
  let ch: ClickHouseClient;
  before(async () => {
    chdb = await startChdbServer();
    ch = createClickHouse({ url: chdb.url, username: 'default', password: '', database: 'default' });
  });
  after(async () => {
    await ch?.close();
    await chdb?.stop();
  });

  it('CREATE USER, the row policies, the grants and the drop statements all parse, with the tenant filter', async () => {
    const statements = [
      ...rowPolicyStatements({
        data: 'telemetry',
        tenant: 'ten_a1',
        user: 'ana',
        passwordSha256: createHash('sha256').update('pw').digest('hex'),
        others: ['bob'],
      }),
      ...dropRowPolicyStatements({ data: 'telemetry', user: 'ana', others: ['ana', 'bob'] }),
      ...dropRowPolicyStatements({ data: 'telemetry', user: 'ana', others: ['ana'] }),
    ];
    // On a cluster: ON CLUSTER, and the `_all` tables covered too.
    const onCluster = [
      ...rowPolicyStatements({
        data: 'telemetry',
        tenant: 'ten_a1',
        user: 'ana',
        passwordSha256: createHash('sha256').update('pw').digest('hex'),
        others: ['bob'],
        cluster: 'telemetry',
      }),
      ...dropRowPolicyStatements({ data: 'telemetry', user: 'ana', others: ['ana', 'bob'], cluster: 'telemetry' }),
      ...dropRowPolicyStatements({ data: 'telemetry', user: 'ana', others: ['ana'], cluster: 'telemetry' }),
    ];
    expect(onCluster.filter((q) => q.includes('`events_all`')).length).to.be.greaterThan(0);
    for (const sql of [...statements, ...onCluster]) {
      const [ast] = await selectRows<{ explain: string }>(ch, `EXPLAIN AST ${sql}`);
      expect(ast?.explain, sql).to.match(/query/i);
    }
    const [formatted] = await selectRows<{ q: string }>(
      ch,
      `SELECT formatQuery('${statements[1]!.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}') AS q`,
    );
    expect(formatted!.q).to.contain("USING tenant_id = 'ten_a1' TO ana");
    // Only the hash is sent: the current engine parses it as a sha256_hash user.
    const [user] = await selectRows<{ explain: string }>(ch, `EXPLAIN AST ${statements[0]!}`);
    expect(statements[0]).to.match(/IDENTIFIED WITH sha256_hash BY '[0-9a-f]{64}'/);
    expect(user?.explain).to.match(/CreateUserQuery/i);
  });
});
