import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import type { ClickHouseClient } from '@telemetry/platform';
import { checksSql, type TableLayout } from '@telemetry/store';
import { adminClickHouse, selectRows, testStack } from '../support/fixtures.js';

const SHARDED: TableLayout = { sharded: true };

/**
 * The stack's ClickHouse 18.16 TCP port (its config.xml beside users.d): remote() over two
 * addresses of the one server makes a two-shard distributed read, each shard with every row.
 */
function tcpPort(): number {
  // As analysts.int.test.ts: the local stack's, or CLICKHOUSE_USERS_DIR with external servers.
  const usersDir = testStack().usersDir || process.env.CLICKHOUSE_USERS_DIR || '';
  expect(usersDir, 'the 18.16 server’s users.d (local stack, or CLICKHOUSE_USERS_DIR)').to.not.equal('');
  const port = /<tcp_port>(\d+)<\/tcp_port>/.exec(readFileSync(join(dirname(usersDir), 'config.xml'), 'utf8'));
  expect(port, 'tcp_port in the server’s config.xml').to.not.equal(null);
  return Number(port![1]);
}

/**
 * Page reads through `_all` on ClickHouse 18.16, which runs a shard's LIMIT before its
 * LIMIT 1 BY id: two copies of a check that differ (run twice at a hand-over: same id,
 * other timings and status code) must not make a page short (pageRead).
 */
describe('page reads through a distributed table on ClickHouse 18.16 (two shards)', function () {
  this.timeout(60_000);
  let ch: ClickHouseClient;
  before(() => {
    ch = adminClickHouse();
  });
  after(() => ch?.close());

  it('a page of a monitor’s checks is full when a check has two different copies', async () => {
    const { database } = testStack();
    const monitorId = `mon_pages_${Date.now().toString(16)}`;
    const row = (s: number, id: string, rt: number, code: number, ins: number) => ({
      tenant_id: 't_pages',
      monitor_id: monitorId,
      created_at: `2026-01-01 00:00:0${s}`,
      id,
      status: 'up',
      response_time: rt,
      status_code: code,
      inserted_at: `2026-01-01 00:01:0${ins}`,
    });
    await ch.insert({
      table: `${database}.checks`,
      format: 'JSONEachRow',
      values: [row(1, 'c1', 1, 200, 0), row(2, 'c2', 1, 200, 0), row(3, 'c3', 1, 200, 0), row(4, 'c4', 1, 200, 0)],
    });
    // The hand-over's second run of c3 and c4: other timings and status code, later inserted.
    await ch.insert({
      table: `${database}.checks`,
      format: 'JSONEachRow',
      values: [row(3, 'c3', 2, 503, 5), row(4, 'c4', 2, 503, 5)],
    });
    const port = tcpPort();
    const sql = checksSql(database, SHARDED, {
      tenantId: 't_pages',
      monitorId,
      limit: 2,
      order: 'desc',
      from: undefined,
      to: undefined,
      statuses: [],
      cursor: undefined,
    }).replace(
      `\`${database}\`.\`checks_all\``,
      `remote('127.0.0.1:${port},localhost:${port}', \`${database}\`, checks)`,
    );
    expect(sql).to.include('remote(');
    const page = await selectRows<{ id: string }>(ch, sql);
    // A page of 2 asks for 3 (the third says a next page exists): c4, c3, c2.
    expect(page.map((r) => r.id)).to.deep.equal(['c4', 'c3', 'c2']);
  });
});
