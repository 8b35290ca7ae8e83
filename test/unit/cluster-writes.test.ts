import { expect } from 'chai';
import type { ClickHouseClient } from '@clickhouse/client';
import { createLogger } from '@telemetry/platform';
import {
  applyRetention,
  deleteSql,
  DISTRIBUTED_INSERT_SETTINGS,
  DISTRIBUTED_TABLES,
  distributedEngine,
  engineText,
  insertSettingsOf,
  LOCAL_LAYOUT,
  MIGRATIONS,
  mutationSql,
  mutationsOf,
  retentionRules,
  streamTables,
} from '@telemetry/store';

const silent = createLogger({ service: 'test', level: 'silent' });
const CLUSTER = 'telemetry';
const SHARDED = { sharded: true };
const ENGINES = [
  { version: '18.16.1', modern: false },
  { version: '25.8.1', modern: true },
];

/**
 * The tables of the data database (and its `_audit` sibling) after every migration, each
 * with the text of its last CREATE: followed through creations, moves (to `_keys`,
 * `_registry`) and drops.
 */
function dataTables(modern: boolean): Map<string, string> {
  const tables = new Map<string, string>();
  for (const m of MIGRATIONS) {
    for (const st of m.statements('`db`', 'db', { version: modern ? '25.8.1' : '18.16.1', modern })) {
      if (typeof st !== 'string') {
        if ('moveTable' in st) tables.delete(st.moveTable.table);
        continue;
      }
      const created = /^\s*CREATE TABLE IF NOT EXISTS (`db`|`db_audit`)\.(\w+)/.exec(st);
      if (created) tables.set(created[2]!, st);
      const dropped = /^\s*DROP TABLE (?:IF EXISTS )?`db`\.(\w+)/.exec(st);
      if (dropped) tables.delete(dropped[1]!);
    }
  }
  return tables;
}

describe('writes on a cluster: the Distributed tables and what goes through them (unit)', () => {
  for (const engine of ENGINES) {
    it(`gives every data table an _all table, keyed by columns it has (ClickHouse ${engine.version})`, () => {
      const tables = dataTables(engine.modern);
      expect([...tables.keys()].sort()).to.deep.equal(Object.keys(DISTRIBUTED_TABLES).sort());
      for (const [table, key] of Object.entries(DISTRIBUTED_TABLES)) {
        const columns = /\(([^]*?)\)\s*ENGINE/.exec(tables.get(table)!)![1]!;
        const used = /^cityHash64\((.*)\)$/
          .exec(key)![1]!
          .replace(/toString\((\w+)\)/g, '$1')
          .split(/,\s*/);
        for (const c of used) expect(columns, `${table}: ${c}`).to.match(new RegExp(`\\b${c}\\s`));
      }
    });
  }

  it('lands rows that dedup or merge together on one shard: an event by its id, a monitor’s rows by the monitor', () => {
    expect(DISTRIBUTED_TABLES.events).to.equal('cityHash64(toString(event_id))');
    // The first-seen time of an event with its copies (and the same shard as the event).
    expect(DISTRIBUTED_TABLES.event_first_seen).to.equal(DISTRIBUTED_TABLES.events);
    for (const t of ['checks', 'checks_hourly', 'check_screenshots', 'alerts'])
      expect(DISTRIBUTED_TABLES[t], t).to.equal('cityHash64(monitor_id)');
    // The rest by what identifies a row in their ReplacingMergeTree's key.
    expect(DISTRIBUTED_TABLES.webhook_deliveries).to.equal('cityHash64(id)');
    expect(DISTRIBUTED_TABLES.audit_log).to.equal('cityHash64(id)');
    expect(DISTRIBUTED_TABLES.monitors).to.equal('cityHash64(id)');
    expect(DISTRIBUTED_TABLES.failed_events).to.equal('cityHash64(event_id)');
    expect(DISTRIBUTED_TABLES.freshness).to.equal('cityHash64(table_name, consumer)');
    // 18.16's cityHash64 takes no UUID: the events' ids (UUID columns) are hashed as text.
    for (const t of ['events', 'event_first_seen']) expect(DISTRIBUTED_TABLES[t]).to.contain('toString(event_id)');
  });

  it('knows an _all table’s engine as 18.16 and current ClickHouse print it, and tells a changed key', () => {
    const want = distributedEngine(CLUSTER, 'db', 'checks');
    expect(want).to.equal('Distributed(`telemetry`, `db`, `checks`, cityHash64(monitor_id))');
    expect(engineText('Distributed(telemetry, db, checks, cityHash64(monitor_id))')).to.equal(engineText(want));
    expect(engineText("Distributed('telemetry', 'db', 'checks', cityHash64(monitor_id))")).to.equal(engineText(want));
    expect(engineText('Distributed(telemetry, db, checks, cityHash64(id))')).not.to.equal(engineText(want));
    expect(() => distributedEngine(CLUSTER, 'db', 'nope')).to.throw(/no Distributed table/);
  });

  it('inserts synchronously through _all on a cluster, with no setting on one server', () => {
    expect(insertSettingsOf(SHARDED)).to.deep.equal({ insert_distributed_sync: 1 });
    expect(insertSettingsOf(LOCAL_LAYOUT)).to.deep.equal({});
    expect(DISTRIBUTED_INSERT_SETTINGS).to.be.frozen;
  });

  it('names the consumer’s tables as the layout reaches them', () => {
    const all = streamTables('db', SHARDED);
    expect(all.events).to.equal('`db`.`events_all`');
    expect(all.check_screenshots).to.equal('`db`.`check_screenshots_all`');
    expect(all.audit_log).to.equal('`db_audit`.`audit_log_all`');
    expect(streamTables('db', LOCAL_LAYOUT).checks).to.equal('`db`.`checks`');
  });

  it('runs mutations on the local tables ON CLUSTER, never through _all', () => {
    expect(mutationSql('ALTER TABLE `db`.`events` DROP PARTITION 202611', CLUSTER)).to.equal(
      'ALTER TABLE `db`.`events` ON CLUSTER `telemetry` DROP PARTITION 202611',
    );
    expect(mutationSql('ALTER TABLE `db`.`events` DROP PARTITION 202611', '')).to.equal(
      'ALTER TABLE `db`.`events` DROP PARTITION 202611',
    );
    expect(deleteSql(ENGINES[0]!, 'db', 'events', "tenant_id = 't'", CLUSTER)).to.equal(
      "ALTER TABLE `db`.`events` ON CLUSTER `telemetry` DELETE WHERE tenant_id = 't'",
    );
    expect(deleteSql(ENGINES[1]!, 'db', 'events', "tenant_id = 't'", CLUSTER)).to.equal(
      "DELETE FROM `db`.`events` ON CLUSTER `telemetry` WHERE tenant_id = 't'",
    );
    expect(deleteSql(ENGINES[1]!, 'db', 'events', "tenant_id = 't'", '')).to.equal(
      "DELETE FROM `db`.`events` WHERE tenant_id = 't'",
    );
    expect(mutationsOf(CLUSTER)).to.equal("cluster('telemetry', system, mutations)");
    expect(mutationsOf('')).to.equal('system.mutations');
    expect(() => mutationSql('INSERT INTO `db`.t VALUES (1)', CLUSTER)).to.throw(/not a mutation/);
  });

  for (const engine of ENGINES) {
    it(`plans retention over every shard and runs it ON CLUSTER (ClickHouse ${engine.version})`, async () => {
      const sent: string[] = [];
      const client = {
        query: ({ query }: { query: string }) => {
          sent.push(query);
          const rows = /system\.tables/.test(query)
            ? [{ engine_full: 'ReplicatedMergeTree ORDER BY id' }]
            : [{ partition: '202601', newest: 1 }];
          return Promise.resolve({ json: () => Promise.resolve(rows) });
        },
        command: ({ query }: { query: string }) => {
          sent.push(query);
          return Promise.resolve({});
        },
      } as unknown as ClickHouseClient;
      const rules = retentionRules({ events: 30, checks: 0, rollups: 0, screenshots: 0 }).filter(
        (r) => r.table === 'events',
      );
      await applyRetention(client, 'db', rules, silent, engine, Date.now(), CLUSTER);
      const commands = sent.filter((q) => /^ALTER/.test(q));
      expect(commands).to.have.length(1);
      expect(commands[0]).to.match(/^ALTER TABLE `db`\.`events` ON CLUSTER `telemetry` /);
      if (!engine.modern) {
        expect(sent[0]).to.contain("FROM cluster('telemetry', system, parts)");
        expect(commands[0]).to.match(/DROP PARTITION 202601$/);
      } else {
        expect(commands[0]).to.match(/MODIFY TTL/);
      }
    });
  }
});
