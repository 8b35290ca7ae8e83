import { expect } from 'chai';
import type { ClickHouseClient } from '@clickhouse/client';
import { createLogger, engineOf } from '@telemetry/platform';
import {
  checkPartitionKey,
  copyOrder,
  DISTRIBUTED_TABLES,
  mergesSql,
  MIGRATIONS,
  partitionSql,
  partitionWhere,
  progressTableSql,
  ROLLUPS,
  toCluster,
  ToClusterError,
} from '@telemetry/store';

describe('to-cluster: the plan and its SQL (unit)', () => {
  it('copies every base table before any rollup, and a rollup only after the table that feeds it', () => {
    const order = copyOrder(['events', 'checks_hourly', 'events_per_minute', 'checks', 'alerts']);
    expect(order).to.deep.equal(['events', 'checks', 'alerts', 'checks_hourly', 'events_per_minute']);
    const full = copyOrder();
    expect(full).to.have.members(Object.keys(DISTRIBUTED_TABLES));
    const firstRollup = full.findIndex((t) => t in ROLLUPS);
    if (firstRollup >= 0) expect(full.slice(firstRollup).every((t) => t in ROLLUPS)).to.equal(true);
    for (const [rollup, base] of Object.entries(ROLLUPS)) {
      if (full.includes(rollup)) expect(full.indexOf(base)).to.be.lessThan(full.indexOf(rollup));
    }
  });

  it('knows every rollup the migrations fill through a materialized view', () => {
    for (const engine of [engineOf('18.16.1'), engineOf('24.8.1')]) {
      const sql = MIGRATIONS.flatMap((m) => m.statements('`db`', 'db', engine)).filter(
        (s): s is string => typeof s === 'string',
      );
      const views = new Map<string, string>();
      for (const s of sql) {
        const m = /CREATE MATERIALIZED VIEW IF NOT EXISTS `db`\.\w+ TO `db`\.(\w+) AS[\s\S]*?FROM `db`\.(\w+)/.exec(s);
        if (m) views.set(m[1]!, m[2]!);
      }
      expect(Object.fromEntries(views), engine.version).to.deep.equal(ROLLUPS);
    }
  });

  it('selects, drops and counts one partition, the copy going through the Distributed table', () => {
    const sql = partitionSql({
      sourceDb: 'single',
      targetDb: 'telemetry',
      table: 'checks',
      key: 'toYYYYMM(created_at)',
      partition: '202611',
      cluster: 'telemetry',
    });
    expect(sql).to.deep.equal({
      select: 'SELECT * FROM `single`.`checks` WHERE toYYYYMM(created_at) = 202611 FORMAT Native',
      insert: 'INSERT INTO `telemetry`.`checks_all` FORMAT Native',
      drop: 'ALTER TABLE `telemetry`.`checks` ON CLUSTER `telemetry` DROP PARTITION 202611',
      sourceCount: 'SELECT count() AS n FROM `single`.`checks` WHERE toYYYYMM(created_at) = 202611',
      targetCount: 'SELECT count() AS n FROM `telemetry`.`checks_all` WHERE toYYYYMM(created_at) = 202611',
    });
    const whole = partitionSql({
      sourceDb: 's',
      targetDb: 't',
      table: 'monitors',
      key: '',
      partition: 'tuple()',
      cluster: 'c',
    });
    expect(whole.select).to.equal('SELECT * FROM `s`.`monitors` WHERE 1 FORMAT Native');
    expect(whole.drop).to.equal('ALTER TABLE `t`.`monitors` ON CLUSTER `c` DROP PARTITION tuple()');
  });

  it('refuses partition keys and values it cannot state safely', () => {
    expect(() => partitionWhere('events', 'toYYYYMMDD(received_at)', '1; DROP TABLE x')).to.throw(ToClusterError);
    expect(() => partitionWhere('events', 'sipHash64(x) % 4', '1')).to.throw(ToClusterError, /partition key/);
    expect(() => partitionWhere('events', 'toYYYYMM(x)', 'tuple()')).to.throw(ToClusterError);
    expect(() => partitionWhere('events', '', '202611')).to.throw(ToClusterError);
    expect(partitionWhere('events', 'toYYYYMMDD(received_at)', '20261127')).to.equal(
      'toYYYYMMDD(received_at) = 20261127',
    );
  });

  it("checks a table's partition key even when the source has no part of it (no key reaches SQL unchecked)", async () => {
    expect(() => checkPartitionKey('events', 'toYYYYMM(id_time)) OR 1 = 1 --')).to.throw(
      ToClusterError,
      /partition key/,
    );
    expect(checkPartitionKey('checks', 'toYYYYMM(created_at)')).to.equal('toYYYYMM(created_at)');
    expect(checkPartitionKey('monitors', '')).to.equal('');
    // A source whose events table has a key to-cluster cannot state, and no parts at all.
    const seen: string[] = [];
    const answer = (query: string): object[] => {
      seen.push(query);
      if (query.includes('uniqExact(shard_num)')) return [{ n: 2 }];
      if (query.includes('version()')) return [{ v: '18.16.1' }];
      if (query.includes('max(version)')) return [{ n: 20 }];
      if (query.includes('partition_key AS key')) return [{ key: 'toYYYYMM(id_time)) OR 1 = 1 --', engine: 'x' }];
      if (query.includes('system.parts')) return [];
      if (query.includes('system.tables')) return [{ n: query.includes('schema_migrations') ? 1 : 0 }];
      return [];
    };
    const fake = {
      query: ({ query }: { query: string }) => Promise.resolve({ json: () => Promise.resolve(answer(query)) }),
      command: ({ query }: { query: string }) => Promise.resolve(void seen.push(query)),
    } as unknown as ClickHouseClient;
    const endpoint = { url: 'http://127.0.0.1:1', user: 'u', password: '', database: 'single' };
    const run = toCluster({
      source: endpoint,
      target: { ...endpoint, database: 'moved', cluster: 'c' },
      sourceClient: fake,
      targetClient: fake,
      logger: createLogger({ service: 'test', level: 'silent' }),
      dryRun: true,
    });
    let refused: unknown;
    await run.catch((err: unknown) => (refused = err));
    expect(refused).to.be.instanceOf(ToClusterError);
    expect(String(refused)).to.match(/events: partition key/);
    expect(seen.filter((q) => q.includes('OR 1 = 1') && !q.includes('system.'))).to.deep.equal([]);
  });

  it("stops merges on every copied table, the source's and the cluster's (ON CLUSTER where the server has it)", () => {
    const tables = [
      { table: 'events', database: 'single', targetDatabase: 'moved' },
      { table: 'audit_log', database: 'single_audit', targetDatabase: 'moved_audit' },
    ];
    expect(mergesSql('STOP', tables, 'c', true)).to.deep.equal({
      source: ['SYSTEM STOP MERGES `single`.`events`', 'SYSTEM STOP MERGES `single_audit`.`audit_log`'],
      cluster: [
        'SYSTEM STOP MERGES ON CLUSTER `c` `moved`.`events`',
        'SYSTEM STOP MERGES ON CLUSTER `c` `moved_audit`.`audit_log`',
      ],
    });
    expect(mergesSql('START', tables, 'c', true).cluster[1]).to.equal(
      'SYSTEM START MERGES ON CLUSTER `c` `moved_audit`.`audit_log`',
    );
    // 18.16's SYSTEM has no ON CLUSTER: the source's only (docs/clickhouse.md, "Limits").
    expect(mergesSql('STOP', tables, 'c', false).cluster).to.deep.equal([]);
  });

  it('keeps its progress in a replicated table on the cluster, read and written through its Distributed table', () => {
    const [local, all] = progressTableSql('telemetry', 'telemetry');
    expect(local).to.match(/^CREATE TABLE IF NOT EXISTS `telemetry`\.`to_cluster_progress` ON CLUSTER `telemetry`/);
    expect(local).to.contain("ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/telemetry.to_cluster_progress/");
    expect(all).to.contain('ON CLUSTER `telemetry`');
    expect(all).to.contain('ENGINE = Distributed(`telemetry`, `telemetry`, `to_cluster_progress`, 0)');
  });
});
