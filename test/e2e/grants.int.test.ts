import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { createClickHouse, sqlIdentifier, sqlString, type ClickHouseClient } from '@telemetry/platform';
import { databasesOf, grantStatements } from '@telemetry/store';
import { startChdbServer, type ChdbServer } from '../../tools/devstack/chdb.js';

/**
 * The SQL of deploy/clickhouse/users.sh, as the shell hands it to clickhouse-client
 * (database `telemetry`; with CLICKHOUSE_CLUSTER=`cluster`, every statement ON CLUSTER).
 */
function usersScriptStatements(cluster?: string): string[] {
  const script = readFileSync('deploy/clickhouse/users.sh', 'utf8');
  const blocks = [...script.matchAll(/<<SQL\n([\s\S]*?)\nSQL\n/g)].map((m) => m[1]!);
  // The second block runs only when CLICKHOUSE_CLUSTER is set.
  expect(blocks.length).to.equal(2);
  expect(script).to.match(/\nif \[\[ -n \$on_cluster \]\]; then\n {2}client <<SQL\n/);
  const sql = cluster ? blocks.join(';\n') : blocks[0]!;
  return sql
    .replace(/\$\{db\}/g, 'telemetry')
    .replace(/\$\{on_cluster\}/g, cluster ? ` ON CLUSTER ${cluster}` : '')
    .replace(/\$\{[A-Z]+_PASSWORD\}/g, 'a-password')
    .replace(/^\s*--.*$/gm, '')
    .split(';')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * The users and grants on current ClickHouse (chDB 26.x, the parser of the server that
 * runs users.sh): every statement of users.sh, and those the development stack sends on
 * such a server, is valid SQL there. chDB has no user directory to create them in, so
 * this checks the statements, and test/unit/grants.test.ts what they grant.
 */
describe('ClickHouse users and grants on current ClickHouse (chDB)', function () {
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

  const parse = async (statement: string): Promise<string> => {
    const rs = await ch.query({ query: `SELECT formatQuery(${sqlString(statement)}) AS q`, format: 'JSONEachRow' });
    return (await rs.json<{ q: string }>())[0]!.q;
  };

  it('refuses a privilege ClickHouse does not have (the check is real)', async () => {
    const err = await parse('GRANT SELECT, ALTER DROP PARTITION ON telemetry.* TO consumer').then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).to.match(/Syntax error/);
  });

  it('parses every statement of deploy/clickhouse/users.sh', async () => {
    const statements = usersScriptStatements();
    expect(statements.filter((s) => s.startsWith('GRANT ')).length).to.be.greaterThan(6);
    for (const s of statements)
      expect(await parse(s), s)
        .to.be.a('string')
        .and.not.equal('');
  });

  it('parses every statement of deploy/clickhouse/users.sh with CLICKHOUSE_CLUSTER (ON CLUSTER), _all tables granted', async () => {
    const statements = usersScriptStatements('telemetry');
    expect(
      statements.every((s) => s.includes(' ON CLUSTER telemetry')),
      'every statement ON CLUSTER',
    ).to.equal(true);
    expect(statements).to.include('GRANT ON CLUSTER telemetry SELECT ON telemetry.checks_all TO runner');
    // Retention and deletions read cluster('telemetry', system, …) as the consumer.
    expect(statements).to.include('GRANT ON CLUSTER telemetry REMOTE ON *.* TO consumer');
    expect(
      usersScriptStatements().filter((s) => s.includes('REMOTE')),
      'not without a cluster',
    ).to.deep.equal([]);
    for (const s of statements) expect(await parse(s), s).to.match(/ON CLUSTER telemetry/);
  });

  it('parses the statements the development stack sends on current ClickHouse', async () => {
    const dbs = databasesOf('telemetry');
    const users = grantStatements({
      db: (role) => sqlIdentifier(dbs[role]),
      name: (u) => sqlIdentifier(`telemetry_${u}`),
      password: () => sqlString('a-password'),
      host: 'HOST LOCAL',
    });
    for (const s of users.flatMap((u) => u.statements)) expect(await parse(s), s).to.be.a('string');
    const onCluster = grantStatements({
      db: (role) => sqlIdentifier(dbs[role]),
      name: (u) => sqlIdentifier(`telemetry_${u}`),
      password: () => sqlString('a-password'),
      onCluster: ` ON CLUSTER ${sqlIdentifier('telemetry')}`,
    });
    for (const s of onCluster.flatMap((u) => u.statements)) expect(await parse(s), s).to.match(/ON CLUSTER/);
  });
});
