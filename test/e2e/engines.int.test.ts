import { expect } from 'chai';
import {
  createClickHouse,
  createKafka,
  createLogger,
  detectEngine,
  groupLags,
  runMigrations,
  sqlIdentifier,
} from '@telemetry/platform';
import type { ClickHouseClient } from '@telemetry/platform';
import { DEFAULT_TENANT, type IngestRequest } from '@telemetry/contract';
import { toMessages } from '@telemetry/ingest-gateway';
import { databasesOf, migrate, MIGRATIONS, parseKey } from '@telemetry/store';
import { startChdbServer, type ChdbServer } from '../../tools/devstack/chdb.js';
import {
  adminClickHouse,
  eventually,
  newKey,
  produce,
  runConsumer,
  runGateway,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';

const logger = createLogger({ service: 'test', level: 'silent' });

/** One SQL engine under test: the 18.16 server, or current ClickHouse (chDB). */
interface Engine {
  name: string;
  url: string;
  ch: ClickHouseClient;
}

/**
 * The current-engine lane (issue 15, docs/clickhouse.md "Two engines"): our migrations
 * and SQL on the ClickHouse 18.16 server and on a current ClickHouse engine (chDB 26.x,
 * behind tools/devstack/chdb-server.ts, fetched into the cache on first use), with the
 * same data and the same expected answers.
 */
describe('two engines: ClickHouse 18.16 and current ClickHouse (chDB)', function () {
  this.timeout(300_000);
  let chdb: ChdbServer;
  let engines: Engine[];

  before(async () => {
    chdb = await startChdbServer();
    engines = [
      { name: '18.16', url: testStack().clickhouseUrl, ch: adminClickHouse() },
      {
        name: 'current',
        url: chdb.url,
        ch: createClickHouse({ url: chdb.url, username: 'default', password: '', database: 'default' }),
      },
    ];
  });
  after(async () => {
    for (const e of engines ?? []) await e.ch.close();
    await chdb?.stop();
  });

  async function rows<T>(e: Engine, sql: string): Promise<T[]> {
    return (await e.ch.query({ query: sql, format: 'JSONEachRow' })).json<T>();
  }
  const count = async (e: Engine, sql: string): Promise<number> => Number((await rows<{ n: string }>(e, sql))[0]!.n);

  /** How many events every documented pattern reads for `where` (docs/clickhouse.md). */
  async function patterns(e: Engine, db: string, where: string, source: string) {
    return {
      final: await count(e, `SELECT count() AS n FROM ${db}.events FINAL WHERE ${where}`),
      limitBy: await count(
        e,
        `SELECT count() AS n FROM (SELECT event_id FROM ${db}.events WHERE ${where} LIMIT 1 BY event_id)`,
      ),
      rollup: await count(
        e,
        `SELECT sum(n) AS n FROM (SELECT uniqExactMerge(events) AS n FROM ${db}.events_per_minute
           WHERE source = '${source}' GROUP BY tenant_id, minute, source, category)`,
      ),
    };
  }

  it('tells the engines apart on SELECT version(): 18.16 takes the plain shapes, current the modern ones', async () => {
    const [legacy, modern] = await Promise.all(engines.map((e) => detectEngine(e.ch)));
    expect(legacy!.version).to.match(/^18\.16\./);
    expect(legacy!.modern).to.equal(false);
    expect(Number(modern!.version.split('.')[0])).to.be.at.least(24);
    expect(modern!.modern).to.equal(true);
    const types = async (e: Engine, db: string) =>
      Object.fromEntries(
        (
          await rows<{ name: string; type: string }>(
            e,
            `SELECT name, type FROM system.columns WHERE database = '${db}' AND table = 'events'`,
          )
        ).map((r) => [r.name, r.type]),
      );
    const db = uid('shape').replace(/-/g, '_');
    for (const e of engines) await migrate(e.ch, db, logger);
    const [old, cur] = [await types(engines[0]!, db), await types(engines[1]!, db)];
    expect([old.source, old.received_at, old.id_time]).to.deep.equal(['String', "DateTime('UTC')", "DateTime('UTC')"]);
    expect([cur.source, cur.received_at, cur.id_time]).to.deep.equal([
      'LowCardinality(String)',
      "DateTime64(3, 'UTC')",
      "DateTime64(3, 'UTC')",
    ]);
    for (const e of engines) await dropDatabases(e, db);
  });

  async function dropDatabases(e: Engine, database: string): Promise<void> {
    const { data, registry, keys } = databasesOf(database);
    for (const d of [data, registry, keys])
      await e.ch.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(d)}` });
  }

  it('migration 7 keeps every event of a version-6 database once, copies included, on both engines', async () => {
    const t = Math.floor(Date.now() / 1000) - 3 * 86_400;
    const v7 = `${(BigInt(t) * 1000n + 123n)
      .toString(16)
      .padStart(12, '0')
      .replace(/^(.{8})(.{4})$/, '$1-$2')}-7abc-8def-0123456789ab`;
    for (const e of engines) {
      const database = uid('mig7').replace(/-/g, '_');
      const db = sqlIdentifier(database);
      await runMigrations(
        e.ch,
        database,
        MIGRATIONS.filter((m) => m.version <= 6),
        logger,
      );
      const row = (eventId: string, clientId: string, clientTs: number | null, receivedAt: number) => ({
        tenant_id: DEFAULT_TENANT,
        event_id: eventId,
        key_id: 'k1',
        source: 'mig7',
        category: 'view',
        payload: '{"a":1}',
        client_event_id: clientId,
        event_time: clientTs ?? receivedAt,
        client_ts: clientTs,
        sent_at: null,
        received_at: receivedAt,
        inserted_at: receivedAt,
      });
      const id = (n: number): string => `0f8e1c4a-1111-4b8e-8a00-00000000000${n}`;
      await e.ch.insert({
        table: `${db}.events`,
        format: 'JSONEachRow',
        values: [
          // A client id without a time: the retry a day later, across the day boundary.
          row(id(1), 'order-1', null, t),
          row(id(1), 'order-1', null, t + 86_400),
          // A UUIDv7 id, retried 2 s later; a client timestamp, retried 5 s later.
          row(id(2), v7, null, t),
          row(id(2), v7, null, t + 2),
          row(id(3), 'order-3', t - 60, t),
          row(id(3), 'order-3', t - 60, t + 5),
          // No client id: an event of its own, delivered twice by Kafka (same receive time).
          row(id(4), '', null, t),
          row(id(4), '', null, t),
        ],
      });
      expect(await migrate(e.ch, database, logger), e.name).to.deep.equal([7]);
      const where = `source = 'mig7'`;
      expect(await patterns(e, db, where, 'mig7'), e.name).to.deep.equal({ final: 4, limitBy: 4, rollup: 4 });
      await e.ch.command({ query: `OPTIMIZE TABLE ${db}.events FINAL` });
      expect(await count(e, `SELECT count() AS n FROM ${db}.events WHERE ${where}`), e.name).to.equal(4);
      // The client id without a time keeps its first copy's time, for retries after the migration too.
      const seen = await rows<{ id: string; s: string }>(
        e,
        `SELECT toString(event_id) AS id, toString(toUnixTimestamp(toDateTime(id_time))) AS s FROM ${db}.event_first_seen`,
      );
      expect(seen, e.name).to.deep.equal([{ id: id(1), s: String(t) }]);
      const idTimes = await rows<{ id: string; s: string }>(
        e,
        `SELECT toString(event_id) AS id, toString(toUnixTimestamp(toDateTime(id_time))) AS s FROM ${db}.events ORDER BY id`,
      );
      expect(
        idTimes.map((r) => r.s),
        e.name,
      ).to.deep.equal([String(t), String(t), String(t - 60), String(t)]);
      expect(
        await count(e, `SELECT count() AS n FROM system.tables WHERE database = '${database}' AND name LIKE '%__old'`),
      ).to.equal(0);
      await dropDatabases(e, database);
    }
  });

  describe('copies of an event, from every source, are read once on both engines', () => {
    let gateway: Running;
    const consumers: Running[] = [];
    let key: string;
    let modernDb: string;
    const groups = [uid('dedup-legacy'), uid('dedup-current')];

    before(async () => {
      modernDb = uid('dedup').replace(/-/g, '_');
      await migrate(engines[1]!.ch, modernDb, logger);
      gateway = await runGateway({ RATE_LIMIT_PER_SECOND: '0' });
      consumers.push(
        await runConsumer({ CONSUMER_GROUP_ID: groups[0]! }),
        await runConsumer({ CLICKHOUSE_URL: chdb.url, CLICKHOUSE_DATABASE: modernDb, CONSUMER_GROUP_ID: groups[1]! }),
      );
      key = await newKey({ kind: 'telemetry', name: 'dedup' });
    });
    after(async () => {
      await Promise.all([gateway?.stop(), ...consumers.map((c) => c.stop())]);
      await dropDatabases(engines[1]!, modernDb);
    });

    /**
     * Until `group` has committed every events message in Kafka: the consumer commits
     * only after the rows are inserted. (Counting rows would not do: merges remove copies.)
     */
    async function drained(group: string): Promise<void> {
      const topic = testStack().eventsTopic;
      const kafka = createKafka({ brokers: testStack().kafkaBrokers.split(','), clientId: 'engines-test', logger });
      await eventually(
        `${group} has read every event`,
        async () => ((await groupLags(kafka, group, [topic])).get(topic) === 0 ? true : undefined),
        60_000,
      );
    }

    const post = (body: IngestRequest): Promise<Response> =>
      fetch(`${gateway.url}/api/telemetry/events?return=ids`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-key': key },
        body: JSON.stringify(body),
      });

    it('a retry 1.5 s later, a retry after the day boundary, a message delivered twice, a replay', async () => {
      const source = uid('dedup');
      const v7 = `${Date.now()
        .toString(16)
        .padStart(12, '0')
        .replace(/^(.{8})(.{4})$/, '$1-$2')}-7abc-8def-0123456789ab`;
      const request: IngestRequest = {
        events: [
          // The case: client ids, no timestamps.
          { source, category: 'order', payload: { n: 1 }, id: 'ord-1' },
          { source, category: 'order', payload: { n: 2 }, id: 'ord-2' },
          { source, category: 'view', payload: { n: 3 }, id: v7 },
          { source, category: 'view', payload: { n: 4 }, id: 'view-4', timestamp: new Date().toISOString() },
        ],
      };
      // Keys are reloaded every 200 ms in tests.
      const first = await eventually('the key loaded and the request accepted', async () => {
        const r = await post(request);
        return r.status === 200 ? r : undefined;
      });
      const ids = ((await first.json()) as { data: string[] }).data;
      const sentAt = Date.now();
      const db = (e: Engine): string => (e.name === '18.16' ? testStack().database : modernDb);
      const where = `source = '${source}'`;
      for (const g of groups) await drained(g);
      // The client's retry after a timeout: 1.5 s later, so its receive time differs.
      await eventually('1.5 s passed', () => (Date.now() - sentAt >= 1500 ? true : undefined), 5000);
      const retry = await post(request);
      expect(retry.status).to.equal(200);
      expect(((await retry.json()) as { data: string[] }).data).to.deep.equal(ids);
      // A retry after the UTC day boundary, days later: the gateway's own messages for the
      // request, received at a controlled time (toMessages takes the receive time).
      const { keyId } = parseKey(key)!;
      const nextDay = new Date(Math.ceil(Date.now() / 86_400_000) * 86_400_000 + 2 * 86_400_000 + 1000).toISOString();
      const later = toMessages(request, { keyId, tenantId: DEFAULT_TENANT }, nextDay, 1_000_000);
      // The same messages twice: Kafka delivering a message twice.
      await produce(
        testStack().eventsTopic,
        [...later, ...later].map((m) => JSON.parse(String(m.value)) as object),
      );
      for (const g of groups) await drained(g);
      // A consumer replaying after a crash: a new group reads the topic from its start, on both engines.
      const replays = [uid('replay-legacy'), uid('replay-current')];
      const again = [
        await runConsumer({ CONSUMER_GROUP_ID: replays[0]! }),
        await runConsumer({ CLICKHOUSE_URL: chdb.url, CLICKHOUSE_DATABASE: modernDb, CONSUMER_GROUP_ID: replays[1]! }),
      ];
      try {
        for (const g of replays) await drained(g);
      } finally {
        await Promise.all(again.map((c) => c.stop()));
      }
      for (const e of engines) {
        const read = await patterns(e, db(e), where, source);
        expect(read, e.name).to.deep.equal({ final: 4, limitBy: 4, rollup: 4 });
        await e.ch.command({ query: `OPTIMIZE TABLE ${db(e)}.events FINAL` });
        expect(await count(e, `SELECT count() AS n FROM ${db(e)}.events WHERE ${where}`), e.name).to.equal(4);
        const stored = await rows<{ id: string }>(
          e,
          `SELECT toString(event_id) AS id FROM ${db(e)}.events FINAL WHERE ${where} ORDER BY id`,
        );
        expect(
          stored.map((r) => r.id),
          e.name,
        ).to.deep.equal([...ids].sort());
      }
    });
  });
});
