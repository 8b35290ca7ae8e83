import { expect } from 'chai';
import { clusterDdl } from '@telemetry/platform';
import { MIGRATIONS } from '@telemetry/store';

describe('migrations on a cluster: clusterDdl (unit)', () => {
  it('leaves every statement alone without a cluster', () => {
    const sql = 'CREATE TABLE IF NOT EXISTS `db`.t (a String) ENGINE = MergeTree() ORDER BY a';
    expect(clusterDdl(sql, '', 'v1')).to.equal(sql);
  });

  it('runs DDL ON CLUSTER and replicates every MergeTree family engine under a path per table and migration', () => {
    const c = 'telemetry';
    expect(
      clusterDdl(
        'CREATE TABLE IF NOT EXISTS `db`.checks (\n a String\n) ENGINE = ReplacingMergeTree(inserted_at)\nORDER BY a',
        c,
        'v4',
      ),
    ).to.equal(
      "CREATE TABLE IF NOT EXISTS `db`.checks ON CLUSTER `telemetry` (\n a String\n) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/db.checks/v4', '{replica}', inserted_at)\nORDER BY a",
    );
    expect(
      clusterDdl('CREATE TABLE IF NOT EXISTS `db`.r (a String) ENGINE = AggregatingMergeTree() ORDER BY a', c, 'v2'),
    ).to.equal(
      "CREATE TABLE IF NOT EXISTS `db`.r ON CLUSTER `telemetry` (a String) ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/db.r/v2', '{replica}') ORDER BY a",
    );
    const cases: [string, string][] = [
      ['CREATE DATABASE IF NOT EXISTS `db`', 'CREATE DATABASE IF NOT EXISTS `db` ON CLUSTER `telemetry`'],
      [
        'CREATE MATERIALIZED VIEW IF NOT EXISTS `db`.mv TO `db`.t AS SELECT 1',
        'CREATE MATERIALIZED VIEW IF NOT EXISTS `db`.mv ON CLUSTER `telemetry` TO `db`.t AS SELECT 1',
      ],
      ['DROP TABLE IF EXISTS `db`.mv', 'DROP TABLE IF EXISTS `db`.mv ON CLUSTER `telemetry`'],
      ['DROP TABLE `db`.`t__old`', 'DROP TABLE `db`.`t__old` ON CLUSTER `telemetry`'],
      [
        'ALTER TABLE `db`.`checks` ADD COLUMN `location` String',
        'ALTER TABLE `db`.`checks` ON CLUSTER `telemetry` ADD COLUMN `location` String',
      ],
      ['RENAME TABLE `db`.`a` TO `db_keys`.`a`', 'RENAME TABLE `db`.`a` TO `db_keys`.`a` ON CLUSTER `telemetry`'],
      // Not DDL: as it is (an INSERT on one replica reaches the others by replication).
      ['INSERT INTO `db`.t SELECT * FROM `db`.u', 'INSERT INTO `db`.t SELECT * FROM `db`.u'],
    ];
    for (const [sql, want] of cases) expect(clusterDdl(sql, c, 'v1'), sql).to.equal(want);
    // The cluster name must be a plain identifier (it is quoted, never pasted).
    expect(() => clusterDdl('DROP TABLE IF EXISTS `db`.x', 'a`b', 'v1')).to.throw(/plain identifier/);
  });

  it('refuses DDL of a form it cannot run ON CLUSTER, rather than run it on one server', () => {
    for (const sql of ['CREATE TABLE `db`.t (a String) ENGINE = Log', 'TRUNCATE TABLE `db`.t', 'DETACH TABLE `db`.t']) {
      expect(() => clusterDdl(sql, 'telemetry', 'v1'), sql).to.throw(/ON CLUSTER/);
    }
  });

  for (const engine of [
    { version: '18.16.1', modern: false },
    { version: '25.8.1', modern: true },
  ]) {
    it(`runs every migration's DDL ON CLUSTER and replicates every table (ClickHouse ${engine.version})`, () => {
      for (const m of MIGRATIONS) {
        for (const st of m.statements('`db`', 'db', engine)) {
          if (typeof st !== 'string') continue;
          // Throws for DDL it cannot run ON CLUSTER.
          const out = clusterDdl(st, 'telemetry', `v${m.version}`);
          if (!/ENGINE\s*=/.test(st)) continue;
          expect(out, st).to.match(/ON CLUSTER `telemetry`/);
          expect(out, st).to.match(/ENGINE = Replicated\w*MergeTree\('\/clickhouse\/tables\/\{shard\}\//);
        }
      }
    });
  }
});
