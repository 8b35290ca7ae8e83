/**
 * The write side of a sharded cluster (docs/clickhouse.md, "On a cluster"), on the
 * ClickHouse part of the cluster harness (two shards of two 18.16 replicas, ZooKeeper; no
 * Kafka of its own) and a Kafka given in KAFKA_BROKERS (the dev stack's):
 *
 *   - migrates a database ON CLUSTER: every data table has its `_all` table with its key on
 *     every server; a second run remakes nothing, an `_all` table of an old key is remade;
 *   - runs the real stream consumer in cluster mode and sends it 3,000 events twice (a
 *     third with a client id, retried later: first-seen times) and 40 monitors' 30 checks
 *     twice: both shards hold events and checks, each event's copies on one shard (and
 *     read once with FINAL), each monitor's checks on one shard, replicas equal,
 *     checks_hourly_all exactly what checks_all says per monitor and hour;
 *   - writes the monitors dimension through monitors_all; runs a deletion (mutations ON
 *     CLUSTER, the rollup recomputed through _all) and 18.16 retention (a partition
 *     dropped on every shard).
 *
 * Prints its figures as JSON and exits non-zero on any problem. Heavy (seven servers):
 *   set -a && . /work/devstack/env && set +a && unset CLICKHOUSE_URL && \
 *     npx tsx --conditions=source test/cluster/shard-writes.ts
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { createClickHouse, createLogger, detectEngine, type ClickHouseClient } from '@telemetry/platform';
import {
  applyRetention,
  CLUSTER_DDL_TIMEOUT_MS,
  deleteEvents,
  DISTRIBUTED_TABLES,
  engineText,
  distributedEngine,
  migrate,
  MonitorDimension,
  retentionRules,
} from '@telemetry/store';
import { loadConsumerConfig, startConsumer } from '@telemetry/stream-consumer';
import { CLUSTER_NAME, startCluster } from '../../tools/devstack/cluster.js';

const logger = createLogger({ service: 'shard-writes', level: 'warn', stream: process.stderr });
const log = (s: string): void => void process.stderr.write(`[shard-writes] ${s}\n`);
const EXACT = { fallback_to_stale_replicas_for_distributed_queries: 0, skip_unavailable_shards: 0 } as const;

async function rows<T>(c: ClickHouseClient, query: string, settings = {}): Promise<T[]> {
  return (await c.query({ query, format: 'JSONEachRow', clickhouse_settings: settings })).json<T>();
}
async function num(c: ClickHouseClient, query: string, settings = {}): Promise<number> {
  return Number(Object.values((await rows<Record<string, string>>(c, query, settings))[0]!)[0]);
}
async function until(what: string, f: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const fig: Record<string, unknown> = {};
const problems: string[] = [];
const check = (ok: boolean, what: string): void => {
  if (!ok) problems.push(what);
};

const brokers = process.env.KAFKA_BROKERS!;
const cluster = await startCluster({ kafka: false, log });
const clients: ClickHouseClient[] = [];
const ch = (url: string, database = 'default'): ClickHouseClient => {
  const c = createClickHouse({
    url,
    database,
    username: 'default',
    password: '',
    requestTimeoutMs: CLUSTER_DDL_TIMEOUT_MS,
  });
  clients.push(c);
  return c;
};
let stopConsumer: (() => Promise<void>) | undefined;
try {
  fig.servers = cluster.clickhouse.map((n) => `s${n.shard}r${n.replica}`);
  const db = `sw_${randomBytes(3).toString('hex')}`;
  const first = cluster.clickhouse[0]!;
  const admin = ch(first.url);
  const t0 = Date.now();
  await migrate(admin, db, logger, CLUSTER_NAME);
  fig.migrateMs = Date.now() - t0;
  // Every _all table, with its key, on every server.
  for (const n of cluster.clickhouse) {
    const c = ch(n.url);
    for (const table of Object.keys(DISTRIBUTED_TABLES)) {
      const database = table === 'audit_log' ? `${db}_audit` : db;
      const [t] = await rows<{ engine_full: string }>(
        c,
        `SELECT engine_full FROM system.tables WHERE database = '${database}' AND name = '${table}_all'`,
      );
      check(
        t !== undefined && engineText(t.engine_full) === engineText(distributedEngine(CLUSTER_NAME, database, table)),
        `s${n.shard}r${n.replica} ${table}_all: ${t?.engine_full}`,
      );
    }
  }
  fig.allTables = Object.keys(DISTRIBUTED_TABLES).length;
  // A second migrate remakes nothing; a table of an old key is remade.
  const mtime = async (): Promise<string> =>
    (
      await rows<{ m: string }>(
        admin,
        `SELECT toString(metadata_modification_time) AS m FROM system.tables WHERE database = '${db}' AND name = 'checks_all'`,
      )
    )[0]!.m;
  const before = await mtime();
  await new Promise((r) => setTimeout(r, 1100));
  await migrate(admin, db, logger, CLUSTER_NAME);
  check((await mtime()) === before, 'a second migrate remade checks_all');
  await admin.command({ query: `DROP TABLE ${db}.checks_all ON CLUSTER ${CLUSTER_NAME}` });
  await admin.command({
    query: `CREATE TABLE ${db}.checks_all ON CLUSTER ${CLUSTER_NAME} AS ${db}.checks ENGINE = Distributed(${CLUSTER_NAME}, ${db}, checks, cityHash64(id))`,
  });
  await migrate(admin, db, logger, CLUSTER_NAME);
  const remade = (
    await rows<{ e: string }>(
      admin,
      `SELECT engine_full AS e FROM system.tables WHERE database = '${db}' AND name = 'checks_all'`,
    )
  )[0]!.e;
  fig.checksAllAfterOldKey = remade;
  check(/cityHash64\(monitor_id\)/.test(remade), `checks_all of the old key not remade: ${remade}`);

  // The consumer, in cluster mode, on server s1r1, on the shared dev Kafka.
  const prefix = `sw-${randomBytes(3).toString('hex')}`;
  const topics = {
    EVENTS_TOPIC: `${prefix}.events`,
    CHECKS_TOPIC: `${prefix}.checks`,
    ALERTS_TOPIC: `${prefix}.alerts`,
    WEBHOOK_DELIVERIES_TOPIC: `${prefix}.deliveries`,
    AUDIT_TOPIC: `${prefix}.audit`,
    SCREENSHOTS_TOPIC: `${prefix}.screenshots`,
    DEAD_LETTER_TOPIC: `${prefix}.dead`,
  };
  const config = loadConsumerConfig({
    KAFKA_BROKERS: brokers,
    CLICKHOUSE_URL: first.url,
    CLICKHOUSE_DATABASE: db,
    CLICKHOUSE_CLUSTER: CLUSTER_NAME,
    AUDIT_CLICKHOUSE_USER: 'default',
    MIGRATE_ON_START: 'true',
    CONSUMER_GROUP_ID: `${prefix}-group`,
    BATCH_MAX_AGE_MS: '200',
    FRESHNESS_INTERVAL_MS: '1000',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
    ...topics,
  });
  const consumer = await startConsumer(config, logger);
  stopConsumer = () => consumer.runner.stop();
  const kafka = new Kafka({ brokers: brokers.split(','), clientId: 'prove', logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const send = async (topic: string, values: object[]): Promise<void> => {
    for (let i = 0; i < values.length; i += 1000)
      await producer.send({
        topic,
        acks: -1,
        messages: values.slice(i, i + 1000).map((v) => ({ value: JSON.stringify(v) })),
      });
  };
  // 3000 events, each sent twice (the second copy a second later); a third carry a
  // client id and no time (their id_time is the first copy's: event_first_seen); 50 of user u-del.
  const N = 3000;
  const now = Date.now();
  const iso = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  const events = Array.from({ length: N }, (_, i) => ({
    v: 1,
    event_id: randomUUID(),
    key_id: 'k',
    source: 'prove',
    category: 'c',
    payload: { i },
    received_at: iso(now - 60_000),
    ...(i % 3 === 0 ? { client_event_id: `cid-${i}-${prefix}` } : {}),
    ...(i < 50 ? { user_id: 'u-del' } : {}),
  }));
  await send(topics.EVENTS_TOPIC, events);
  // The second copies: a client's retry (a client id, received later) or a redelivery (the same message).
  await send(
    topics.EVENTS_TOPIC,
    events.map((e) => ('client_event_id' in e ? { ...e, received_at: iso(now) } : e)),
  );
  // 40 monitors x 30 checks in the last 3 hours, each sent twice; 10 checks 40 days old.
  const M = 40;
  const K = 30;
  const checks = [];
  for (let m = 0; m < M; m++)
    for (let k = 0; k < K; k++)
      checks.push({
        id: `chk-${m}-${k}`,
        monitor_id: `mon-${m}`,
        status: k % 7 === 0 ? 'down' : 'up',
        response_time: 10 + ((m * 31 + k * 17) % 500),
        status_code: k % 7 === 0 ? 500 : 200,
        created_at: iso(now - k * 6 * 60_000),
      });
  const old = Array.from({ length: 10 }, (_, k) => ({
    id: `old-${k}`,
    monitor_id: `mon-old-${k}`,
    status: 'up',
    response_time: 5,
    status_code: 200,
    created_at: iso(now - 40 * 86_400_000),
  }));
  await send(topics.CHECKS_TOPIC, [...checks, ...checks, ...old]);
  await producer.disconnect();

  const t1 = Date.now();
  const diag = async (): Promise<void> => {
    fig.diagAll = await num(admin, `SELECT count() FROM ${db}.events_all`, EXACT);
    fig.diagAllFinal = await num(admin, `SELECT count() FROM ${db}.events_all FINAL`, EXACT);
    fig.diagLocal = await Promise.all(
      cluster.clickhouse.map((n) => num(ch(n.url), `SELECT count() FROM ${db}.events`)),
    );
    fig.diagChecks = await num(admin, `SELECT count() FROM ${db}.checks_all`, EXACT);
    fig.metrics = (await (await fetch(`http://127.0.0.1:${consumer.http.boundPort}/metrics`)).text())
      .split('\n')
      .filter((l) => /insert|dead|rejected|failed/.test(l) && !l.startsWith('#'))
      .slice(0, 30);
  };
  setTimeout(() => void diag().catch(() => undefined), 60_000).unref();
  await until(
    'all events readable through events_all',
    async () => (await num(admin, `SELECT count() FROM ${db}.events_all FINAL`, EXACT)) === N,
  );
  await until(
    'all checks readable through checks_all',
    async () => (await num(admin, `SELECT uniqExact(id) FROM ${db}.checks_all`, EXACT)) === M * K + 10,
  );
  fig.consumedMs = Date.now() - t1;

  // Each shard's replicas in step, then each shard's local tables.
  for (const n of cluster.clickhouse)
    for (const t of ['events', 'checks', 'checks_hourly', 'event_first_seen'])
      await ch(n.url).command({ query: `SYSTEM SYNC REPLICA ${db}.${t}` });
  const shard: Record<string, unknown>[] = [];
  const eventIds: Set<string>[] = [];
  const monitorShards = new Map<string, number[]>();
  for (const [i, nodes] of cluster.shards.entries()) {
    const r1 = ch(nodes[0]!.url);
    const r2 = ch(nodes[1]!.url);
    const f = {
      shard: i + 1,
      events: await num(r1, `SELECT count() FROM ${db}.events`),
      eventsFinal: await num(r1, `SELECT count() FROM ${db}.events FINAL`),
      eventsReplica2: await num(r2, `SELECT count() FROM ${db}.events`),
      firstSeen: await num(r1, `SELECT count() FROM ${db}.event_first_seen`),
      checks: await num(r1, `SELECT count() FROM ${db}.checks`),
      checksFinal: await num(r1, `SELECT count() FROM ${db}.checks FINAL`),
      monitors: await num(r1, `SELECT uniqExact(monitor_id) FROM ${db}.checks`),
      hourlyRows: await num(r1, `SELECT count() FROM ${db}.checks_hourly`),
    };
    shard.push(f);
    check(f.events === f.eventsReplica2, `shard ${i + 1}: replicas differ ${f.events} vs ${f.eventsReplica2}`);
    check(f.eventsFinal > 0 && f.checks > 0, `shard ${i + 1} holds no events or no checks`);
    eventIds.push(
      new Set(
        (await rows<{ id: string }>(r1, `SELECT DISTINCT toString(event_id) AS id FROM ${db}.events`)).map((r) => r.id),
      ),
    );
    for (const r of await rows<{ m: string }>(r1, `SELECT DISTINCT monitor_id AS m FROM ${db}.checks`))
      monitorShards.set(r.m, [...(monitorShards.get(r.m) ?? []), i + 1]);
    // Every event's copies on this shard: stored rows = 2 x distinct ids.
    const copies = await num(
      r1,
      `SELECT countIf(c != 2) FROM (SELECT event_id, count() AS c FROM ${db}.events GROUP BY event_id)`,
    );
    check(copies === 0, `shard ${i + 1}: ${copies} events without both copies here`);
    // Copies share id_time (first-seen) and so merge under FINAL.
    check(f.eventsFinal * 2 === f.events, `shard ${i + 1}: FINAL ${f.eventsFinal}, stored ${f.events}`);
  }
  fig.shards = shard;
  const both = [...eventIds[0]!].filter((id) => eventIds[1]!.has(id)).length;
  fig.eventsOnBothShards = both;
  check(both === 0, `${both} events on both shards`);
  const split = [...monitorShards.values()].filter((s) => s.length > 1).length;
  fig.monitorsOnBothShards = split;
  check(split === 0, `${split} monitors' checks on both shards`);
  fig.eventsAllFinal = await num(admin, `SELECT count() FROM ${db}.events_all FINAL`, EXACT);
  fig.firstSeenAll = await num(admin, `SELECT count() FROM ${db}.event_first_seen_all`, EXACT);
  check(fig.firstSeenAll === N / 3, `first seen ${String(fig.firstSeenAll)}, want ${N / 3}`);
  // checks_hourly through checks_hourly_all: exact against the checks themselves.
  const hourly = await rows<{ monitor_id: string; hour: string; n: string; p50: number }>(
    admin,
    `SELECT monitor_id, toString(hour) AS hour, uniqExactMerge(checks) AS n FROM ${db}.checks_hourly_all
     GROUP BY monitor_id, hour ORDER BY monitor_id, hour`,
    EXACT,
  );
  const direct = await rows<{ monitor_id: string; hour: string; n: string }>(
    admin,
    `SELECT monitor_id, toString(toStartOfHour(created_at)) AS hour, uniqExact(id) AS n FROM ${db}.checks_all
     GROUP BY monitor_id, hour ORDER BY monitor_id, hour`,
    EXACT,
  );
  fig.hourlyGroups = hourly.length;
  fig.hourlyChecks = hourly.reduce((a, r) => a + Number(r.n), 0);
  check(JSON.stringify(hourly) === JSON.stringify(direct), 'checks_hourly_all differs from checks_all');
  fig.freshnessRows = await num(admin, `SELECT count() FROM ${db}.freshness_all FINAL`, EXACT);
  fig.insertFormat = config.insertFormat;

  // The monitors dimension through monitors_all.
  const dim = new MonitorDimension(
    admin,
    db,
    () =>
      Promise.resolve(
        Array.from({ length: 20 }, (_, i) => ({
          tenant_id: 't',
          id: `mon-${i}`,
          name: `m${i}`,
          type: 'http',
          interval_seconds: 60,
          paused: false,
          version: 1,
          created_at: new Date().toISOString(),
          updated_at: new Date().toISOString(),
        })) as never,
      ),
    logger,
    { clickhouseCluster: CLUSTER_NAME },
  );
  await dim.reload();
  await dim.settled();
  for (const n of cluster.clickhouse) await ch(n.url).command({ query: `SYSTEM SYNC REPLICA ${db}.monitors` });
  const perShard = await Promise.all(
    cluster.shards.map((s) => num(ch(s[0]!.url), `SELECT count() FROM ${db}.monitors`)),
  );
  fig.monitorsPerShard = perShard;
  check(
    perShard.reduce((a, n) => a + n, 0) === 20 && perShard.every((n) => n > 0),
    `monitors per shard ${String(perShard)}`,
  );

  // A deletion: ON CLUSTER mutations, planned and checked through _all.
  const engine = await detectEngine(admin);
  const t2 = Date.now();
  const counts = await deleteEvents({
    ch: admin,
    engine,
    database: db,
    target: { tenantId: 'ten_default', userIds: ['u-del'], anonymousIds: [] },
    place: { cluster: CLUSTER_NAME, readSettings: EXACT },
    mutationTimeoutMs: 120_000,
  });
  fig.deletion = { counts, ms: Date.now() - t2 };
  for (const n of cluster.clickhouse)
    check(
      (await num(ch(n.url), `SELECT count() FROM ${db}.events WHERE user_id = 'u-del'`)) === 0,
      `s${n.shard}r${n.replica} keeps u-del`,
    );
  const perMinute = await num(admin, `SELECT uniqExactMerge(events) FROM ${db}.events_per_minute_all`, EXACT);
  fig.eventsPerMinuteAfterDeletion = perMinute;
  check(perMinute === N - 50, `events_per_minute_all counts ${perMinute}, want ${N - 50}`);

  // Retention: the 40-day-old checks' partition goes from every shard.
  const oldBefore = await Promise.all(
    cluster.shards.map((s) => num(ch(s[0]!.url), `SELECT count() FROM ${db}.checks WHERE monitor_id LIKE 'mon-old-%'`)),
  );
  const actions = await applyRetention(
    admin,
    db,
    retentionRules({ events: 0, checks: 30, rollups: 0, screenshots: 0 }).filter((r) => r.table === 'checks'),
    logger,
    engine,
    Date.now(),
    CLUSTER_NAME,
  );
  for (const n of cluster.clickhouse) await ch(n.url).command({ query: `SYSTEM SYNC REPLICA ${db}.checks` });
  const oldAfter = await Promise.all(
    cluster.clickhouse.map((n) => num(ch(n.url), `SELECT count() FROM ${db}.checks WHERE monitor_id LIKE 'mon-old-%'`)),
  );
  fig.retention = { actions, oldPerShardBefore: oldBefore, oldPerServerAfter: oldAfter };
  check(
    oldAfter.every((n) => n === 0),
    'old checks kept somewhere',
  );
  check(
    (await num(admin, `SELECT uniqExact(id) FROM ${db}.checks_all`, EXACT)) === M * K,
    'recent checks lost to retention',
  );
} catch (err) {
  problems.push(`error: ${String(err)}`);
} finally {
  await stopConsumer?.().catch(() => undefined);
  await Promise.all(clients.map((c) => c.close()));
  await cluster.stop();
}
fig.problems = problems;
process.stdout.write(`${JSON.stringify(fig, null, 1)}\n`);
process.exit(problems.length > 0 ? 1 : 0);
