import { expect } from 'chai';
import {
  DISTRIBUTED_READ_SETTINGS,
  LOCAL_LAYOUT,
  MAX_REPLICA_DELAY_SECONDS,
  auditLogSql,
  checksSql,
  dropRowPolicyStatements,
  rowPolicyStatements,
  TENANT_ANALYST_TABLES,
  dailyCountsSql,
  eventsPerMinuteSql,
  failedEventsSql,
  incidentByIdSql,
  incidentSpansSql,
  incidentsSql,
  lastAlertsSql,
  lastChecksSql,
  layoutOf,
  openIncidentsSql,
  readSettingsOf,
  screenshotSql,
  summarySql,
  webhookDeliveriesSql,
  type TableLayout,
} from '@telemetry/store';

const SHARDED: TableLayout = layoutOf({ clickhouseCluster: 'telemetry' });

/** Every read of a data table the services make, as (what it reads, its SQL) for `layout`. */
function reads(layout: TableLayout): [string, string][] {
  const q = { tenantId: 'ten_a', monitorId: 'mon_a' };
  const ids = ['mon_a', 'mon_b'];
  const checks = { ...q, limit: 10, order: 'desc' as const, from: 0, to: 1, statuses: [], cursor: { t: 1, id: 'c' } };
  const summary = summarySql('telemetry', layout, { ...q, interval: 'day', from: 0, to: 86_400 });
  return [
    ['checks', checksSql('telemetry', layout, checks)],
    ['checks', checksSql('telemetry', layout, { ...checks, ids: ['chk_a'], locations: ['eu'], limit: null })],
    ['checks', lastChecksSql('telemetry', layout, 'ten_a', ids)],
    ['checks_hourly', summary.counts],
    ['checks_hourly', summary.quantiles],
    ['checks_hourly', dailyCountsSql('telemetry', layout, 'ten_a', ids, 0, 86_400)],
    ['alerts', incidentsSql('telemetry', layout, 'ten_a', 'mon_a', 10, 'open')],
    ['alerts', incidentSpansSql('telemetry', layout, 'ten_a', 'mon_a', 0, 1)],
    ['alerts', lastAlertsSql('telemetry', layout, ids, 'ten_a')],
    ['alerts', openIncidentsSql('telemetry', layout, 'ten_a', ids)],
    ['alerts', incidentByIdSql('telemetry', layout, 'ten_a', 'inc_a')],
    ['events_per_minute', eventsPerMinuteSql('telemetry', layout, 'ten_a', 0, 60, 10, 'exclude')],
    ['webhook_deliveries', webhookDeliveriesSql('telemetry', layout, { ...q, limit: 10, cursor: { ms: 1, id: 'd' } })],
    ['failed_events', failedEventsSql('telemetry', layout, { tenantId: 'ten_a', eventIds: ['e'], limit: 10 })],
    ['check_screenshots', screenshotSql('telemetry', layout, { ...q, checkId: 'chk_a' })],
    ['audit_log', auditLogSql('telemetry', layout, { tenantId: 'ten_a', limit: 10, action: 'monitor.' })],
  ];
}

/** The database a table lives in (the audit log has its own). */
const dbOf = (table: string): string => (table === 'audit_log' ? 'telemetry_audit' : 'telemetry');

describe('distributed reads (CLICKHOUSE_CLUSTER set)', () => {
  it('the exact-read settings: no shard skipped, one replica per shard, merged states, no stale replica', () => {
    expect(DISTRIBUTED_READ_SETTINGS).to.deep.equal({
      skip_unavailable_shards: 0,
      max_parallel_replicas: 1,
      distributed_group_by_no_merge: 0,
      fallback_to_stale_replicas_for_distributed_queries: 0,
      max_replica_delay_for_distributed_queries: MAX_REPLICA_DELAY_SECONDS,
      distributed_product_mode: 'deny',
    });
    // Below ClickHouse's default (300 s), above normal replication lag.
    expect(MAX_REPLICA_DELAY_SECONDS).to.be.within(5, 299);
    expect(Object.isFrozen(DISTRIBUTED_READ_SETTINGS)).to.equal(true);
  });

  it('are sent in cluster mode only', () => {
    expect(layoutOf({})).to.deep.equal(LOCAL_LAYOUT);
    expect(layoutOf({ clickhouseCluster: '' })).to.deep.equal(LOCAL_LAYOUT);
    expect(readSettingsOf(LOCAL_LAYOUT)).to.deep.equal({});
    expect(readSettingsOf(SHARDED)).to.deep.equal(DISTRIBUTED_READ_SETTINGS);
    // A copy: a caller that adds its own settings cannot change the constant.
    readSettingsOf(SHARDED).skip_unavailable_shards = 1;
    expect(DISTRIBUTED_READ_SETTINGS.skip_unavailable_shards).to.equal(0);
  });

  it('every read names the Distributed `_all` table on a cluster, and only it', () => {
    for (const [table, sql] of reads(SHARDED)) {
      const all = `\`${dbOf(table)}\`.\`${table}_all\``;
      expect(sql, table).to.include(`FROM ${all}`);
      // No other table of the database is read (a local table would hold one shard's rows).
      const named = [...sql.matchAll(/FROM\s+(`[^`]+`\.`[^`]+`)/g)].map((m) => m[1]);
      expect(named, table).to.deep.equal(named.map(() => all));
    }
  });

  it('every read names the table itself on one server', () => {
    for (const [table, sql] of reads(LOCAL_LAYOUT)) {
      expect(sql, table).to.include(`FROM \`${dbOf(table)}\`.\`${table}\``);
      expect(sql, table).not.to.include('_all');
    }
  });

  it('no read has a subquery that 18.16 would refuse over `_all` (distributed_product_mode = deny)', () => {
    for (const [table, sql] of reads(SHARDED)) {
      // An IN or JOIN over another Distributed table must say GLOBAL; none of ours needs one.
      expect(sql, table).not.to.match(/\bIN\s*\(\s*SELECT/i);
      expect(sql, table).not.to.match(/\bJOIN\b/i);
      // Page reads wrap the read in one FROM subquery (pageRead); its outer SELECT reads no table.
      expect(sql.match(/\bSELECT\b/g) ?? [], table).to.have.length(/^SELECT \* FROM \(/.test(sql) ? 2 : 1);
      expect(sql.match(/\bFROM\s+`/g) ?? [], table).to.have.length(1);
    }
  });

  it('the reads that fold copies of a row do it where the copies meet: by the id the sharding key hashes', () => {
    // FINAL / LIMIT 1 BY over `_all` read each row once because every copy of a row lands
    // on one shard (DISTRIBUTED_TABLES' keys); the initiator folds again across shards.
    const sql = (table: string): string => reads(SHARDED).find(([t]) => t === table)![1];
    expect(sql('checks')).to.include('LIMIT 1 BY id');
    expect(sql('webhook_deliveries')).to.include('LIMIT 1 BY id');
    expect(sql('audit_log')).to.include('LIMIT 1 BY id');
    expect(sql('failed_events')).to.include('failed_events_all` FINAL');
    // 18.16 limits each shard before LIMIT BY: each shard runs the whole page (its LIMIT 1 BY
    // id first, copies identical or not), and the initiator pages the shards' pages again.
    for (const t of ['checks', 'webhook_deliveries', 'audit_log']) {
      const s = sql(t);
      expect(s, t).to.match(/^SELECT \* FROM \(\s*SELECT id,/);
      expect(s, t).to.match(/LIMIT 1 BY id\s+LIMIT \d+\s+SETTINGS distributed_group_by_no_merge = 1\s+\)/);
      expect(s, t).to.match(/\)\s+ORDER BY [a-z_]+ (ASC|DESC), id (ASC|DESC)\s+LIMIT 1 BY id\s+LIMIT \d+$/);
      expect(s, t).not.to.include('DISTINCT');
    }
    const local = (table: string): string => reads(LOCAL_LAYOUT).find(([t]) => t === table)![1];
    for (const t of ['checks', 'webhook_deliveries', 'audit_log']) {
      expect(local(t), t).not.to.include('distributed_group_by_no_merge');
      expect(local(t), t).to.match(/^SELECT id,/);
    }
    // An export (no limit) has no preliminary limit to fold before.
    const exportSql = reads(SHARDED).filter(([t]) => t === 'checks')[1]![1];
    expect(exportSql).not.to.include('distributed_group_by_no_merge');
    expect(exportSql).to.match(/^SELECT id,/);
  });

  it('tenant analysts (current ClickHouse): on a cluster every statement runs ON CLUSTER and the `_all` tables get the same policies and grant', () => {
    const hash = 'a'.repeat(64);
    const make = rowPolicyStatements({
      data: 'telemetry',
      tenant: 'ten_a',
      user: 'ana',
      passwordSha256: hash,
      others: [],
      cluster: 'telemetry',
    });
    expect(
      make.every((q) => q.includes(' ON CLUSTER `telemetry`')),
      make.join('\n'),
    ).to.equal(true);
    // Read-only users cannot send settings: the exact-read ones are the user's own.
    expect(make[0]).to.include(
      "SETTINGS readonly = 1, skip_unavailable_shards = 0, max_parallel_replicas = 1, distributed_group_by_no_merge = 0, fallback_to_stale_replicas_for_distributed_queries = 0, max_replica_delay_for_distributed_queries = 30, distributed_product_mode = 'deny'",
    );
    for (const t of TENANT_ANALYST_TABLES) {
      for (const name of [t, `${t}_all`]) {
        const on = `ON \`telemetry\`.\`${name}\``;
        expect(
          make.filter((q) => q.includes(`tenant_analyst_ana\` ON CLUSTER \`telemetry\` ${on} `)),
          name,
        ).to.have.length(1);
        expect(make, name).to.include(`GRANT ON CLUSTER \`telemetry\` SELECT ${on} TO \`ana\``);
      }
    }
    // The grants stay last: the user reads nothing before its policies hold.
    const firstGrant = make.findIndex((q) => q.startsWith('GRANT'));
    expect(make.slice(firstGrant).every((q) => q.startsWith('GRANT'))).to.equal(true);
    const drop = dropRowPolicyStatements({ data: 'telemetry', user: 'ana', others: [], cluster: 'telemetry' });
    expect(drop.filter((q) => q.includes('_all`'))).to.have.length(2 * TENANT_ANALYST_TABLES.length);
    // One server: as before, no `_all` and no ON CLUSTER.
    const local = rowPolicyStatements({
      data: 'telemetry',
      tenant: 'ten_a',
      user: 'ana',
      passwordSha256: hash,
      others: [],
    });
    expect(local.some((q) => q.includes('_all') || q.includes('ON CLUSTER'))).to.equal(false);
  });
});
