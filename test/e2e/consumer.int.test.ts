import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { Kafka, logLevel, Partitioners, type IHeaders } from 'kafkajs';
import type { ClickHouseClient } from '@telemetry/platform';
import {
  adminClickHouse,
  eventually,
  newKey,
  runConsumer,
  runGateway,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { controllableStack, type ControllableStack } from '../support/faults.js';
import { spawnService } from '../support/processes.js';

function kafkaFor(brokers: string): Kafka {
  return new Kafka({ brokers: brokers.split(','), clientId: 'consumer-test', logLevel: logLevel.NOTHING });
}

function eventValue(source: string, id = randomUUID()): string {
  return JSON.stringify({
    v: 1,
    event_id: id,
    key_id: 'test',
    source,
    category: 'c',
    payload: { id },
    received_at: new Date().toISOString(),
  });
}

async function produceEvents(brokers: string, topic: string, values: string[], partition?: number): Promise<void> {
  const p = kafkaFor(brokers).producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await p.connect();
  try {
    for (let i = 0; i < values.length; i += 2000) {
      await p.send({ topic, acks: -1, messages: values.slice(i, i + 2000).map((value) => ({ value, partition })) });
    }
  } finally {
    await p.disconnect();
  }
}

/** The dead letters keyed `tag`, read from the start of the topic until `n` are there. */
async function deadLetters(tag: string, n: number): Promise<{ value: string; headers: IHeaders }[]> {
  const s = testStack();
  const dead: { value: string; headers: IHeaders }[] = [];
  const c = kafkaFor(s.kafkaBrokers).consumer({ groupId: uid('dlq-reader') });
  await c.connect();
  await c.subscribe({ topic: s.deadLetterTopic, fromBeginning: true });
  await c.run({
    eachMessage: async ({ message }) => {
      if (message.key?.toString() === tag)
        dead.push({ value: message.value!.toString(), headers: message.headers ?? {} });
      await Promise.resolve();
    },
  });
  try {
    await eventually(`${n} dead letters`, () => Promise.resolve(dead.length >= n ? true : undefined));
  } finally {
    await c.disconnect();
  }
  return dead;
}

/** Rows of `source` as stored, and as read through the documented pattern (FINAL). */
async function counts(
  ch: ClickHouseClient,
  db: string,
  source: string,
): Promise<{ stored: number; asRead: number; distinct: number }> {
  const rs = await ch.query({
    query: `SELECT (SELECT count() FROM ${db}.events WHERE source = '${source}') AS stored,
                   (SELECT count() FROM ${db}.events FINAL WHERE source = '${source}') AS asRead,
                   (SELECT uniqExact(event_id) FROM ${db}.events WHERE source = '${source}') AS distinct`,
    format: 'JSONEachRow',
  });
  const r = (await rs.json<Record<string, string>>())[0]!;
  return { stored: Number(r.stored), asRead: Number(r.asRead), distinct: Number(r.distinct) };
}

describe('stream consumer (real Kafka and ClickHouse)', () => {
  let ch: ClickHouseClient;
  const s = () => testStack();

  before(() => {
    ch = adminClickHouse();
  });
  after(async () => {
    await ch.close();
  });

  it('sends poison messages to the dead-letter topic with their origin, and keeps the partition flowing', async () => {
    const consumer = await runConsumer();
    try {
      const source = uid('poison');
      const tag = uid('dl');
      const values = [
        eventValue(source),
        'not json at all',
        eventValue(source),
        JSON.stringify({ v: 1, source }),
        eventValue(source),
      ];
      const p = kafkaFor(s().kafkaBrokers).producer({ createPartitioner: Partitioners.DefaultPartitioner });
      await p.connect();
      await p.send({
        topic: s().eventsTopic,
        acks: -1,
        messages: values.map((value) => ({ key: tag, value, partition: 0 })),
      });
      await p.disconnect();

      await eventually('the 3 valid events', async () =>
        (await counts(ch, s().database, source)).asRead === 3 ? true : undefined,
      );

      const dead = await deadLetters(tag, 2);
      expect(dead.map((d) => d.value)).to.deep.equal([values[1], values[3]]);
      const h = (d: { headers: IHeaders }, k: string): string => String(d.headers[k]);
      expect(h(dead[0]!, 'x-dead-letter-kind')).to.equal('not_json');
      expect(h(dead[1]!, 'x-dead-letter-kind')).to.equal('invalid');
      expect(h(dead[0]!, 'x-source-topic')).to.equal(s().eventsTopic);
      expect(h(dead[0]!, 'x-source-partition')).to.equal('0');
      expect(Number(h(dead[1]!, 'x-source-offset'))).to.be.greaterThan(Number(h(dead[0]!, 'x-source-offset')));
      expect(h(dead[0]!, 'x-dead-letter-reason')).to.match(/^not JSON/);
      const m = await (await fetch(`${consumer.url}/metrics`)).text();
      expect(m).to.match(/consumer_dead_lettered_total\{[^}]*reason="not_json"[^}]*\} [1-9]/);
    } finally {
      await consumer.stop();
    }
  });

  it('writes how far behind each table is to the freshness table and /metrics', async () => {
    const started = Math.floor(Date.now() / 1000);
    const consumer = await runConsumer({ FRESHNESS_INTERVAL_MS: '1000' });
    try {
      const source = uid('fresh');
      await produceEvents(s().kafkaBrokers, s().eventsTopic, [eventValue(source), eventValue(source)]);
      await eventually('the events stored', async () =>
        (await counts(ch, s().database, source)).asRead === 2 ? true : undefined,
      );
      // The query docs/clickhouse.md gives analysts ("How far behind the tables are").
      const row = await eventually('a fresh row for events, caught up', async () => {
        const rs = await ch.query({
          query: `SELECT table_name, max(lag_messages) AS lag, toUnixTimestamp(max(last_insert_at)) AS last_insert
                  FROM ${s().database}.freshness FINAL
                  WHERE updated_at >= now() - 60 GROUP BY table_name ORDER BY table_name`,
          format: 'JSONEachRow',
        });
        const rows = await rs.json<{ table_name: string; lag: string; last_insert: string }>();
        const events = rows.find((r) => r.table_name === 'events');
        return events && Number(events.lag) === 0 && Number(events.last_insert) >= started - 1 ? rows : undefined;
      });
      expect(row.map((r) => r.table_name)).to.include.members(['events', 'checks', 'alerts', 'webhook_deliveries']);
      const m = await (await fetch(`${consumer.url}/metrics`)).text();
      const last = /consumer_table_last_insert_timestamp_seconds\{table="events"[^}]*\} (\d+)/.exec(m);
      expect(Number(last?.[1])).to.be.at.least(started - 1);
      expect(m).to.match(/consumer_partition_lag_messages\{topic="[^"]+",partition="\d+"[^}]*\} 0\n/);
    } finally {
      await consumer.stop();
    }
  });

  it('dead-letters a row ClickHouse rejects (found by bisection), writes the rest of its batch, and keeps flowing', async () => {
    const consumer = await runConsumer();
    try {
      const source = uid('rejected');
      const tag = uid('rj');
      // `urn:uuid:…` passes the message schema (JSON Schema's uuid format) but ClickHouse
      // 18.16 refuses it for the UUID column (Code 376): the whole insert fails.
      const bad = eventValue(source, `urn:uuid:${randomUUID()}`);
      const values = [eventValue(source), eventValue(source), bad, eventValue(source), eventValue(source)];
      const p = kafkaFor(s().kafkaBrokers).producer({ createPartitioner: Partitioners.DefaultPartitioner });
      await p.connect();
      await p.send({
        topic: s().eventsTopic,
        acks: -1,
        messages: values.map((value) => ({ key: tag, value, partition: 1 })),
      });
      await eventually('the 4 good events of the batch', async () =>
        (await counts(ch, s().database, source)).asRead === 4 ? true : undefined,
      );
      // The partition keeps flowing: a later event arrives too.
      await p.send({
        topic: s().eventsTopic,
        acks: -1,
        messages: [{ key: tag, value: eventValue(source), partition: 1 }],
      });
      await p.disconnect();
      await eventually('the event after it', async () =>
        (await counts(ch, s().database, source)).asRead === 5 ? true : undefined,
      );

      const dead = await deadLetters(tag, 1);
      expect(dead).to.have.length(1);
      expect(dead[0]!.value).to.equal(bad);
      const h = (k: string): string => String(dead[0]!.headers[k]);
      expect(h('x-dead-letter-kind')).to.equal('rejected');
      expect(h('x-dead-letter-reason')).to.match(/rejected by ClickHouse .*uuid/i);
      expect(h('x-source-topic')).to.equal(s().eventsTopic);
      expect(h('x-source-partition')).to.equal('1');
      const m = await (await fetch(`${consumer.url}/metrics`)).text();
      expect(m).to.match(/consumer_rows_rejected_total\{[^}]*\} 1/);
    } finally {
      await consumer.stop();
    }
  });

  it('leaves every event exactly once as read after a SIGKILL in the middle of a batch and a restart', async function () {
    this.timeout(180_000);
    const group = uid('killed');
    const env = { CONSUMER_GROUP_ID: group, BATCH_MAX_ROWS: '300', BATCH_MAX_AGE_MS: '300' };
    const source = uid('sigkill');
    const n = 30_000;
    await produceEvents(
      s().kafkaBrokers,
      s().eventsTopic,
      Array.from({ length: n }, () => eventValue(source)),
    );
    const first = await spawnService('stream-consumer', env);
    let atKill = 0;
    try {
      atKill = await eventually(
        'some rows written',
        async () => {
          const c = await counts(ch, s().database, source);
          return c.stored > 0 ? c.stored : undefined;
        },
        60_000,
      );
    } finally {
      await first.kill('SIGKILL');
    }
    expect(atKill, 'killed before the consumer finished').to.be.lessThan(n);
    const second = await spawnService('stream-consumer', env);
    try {
      await eventually(
        'all events after the restart',
        async () => ((await counts(ch, s().database, source)).distinct === n ? true : undefined),
        120_000,
      );
      // Asked again once every id is in: the documented read pattern counts each once.
      const c = await counts(ch, s().database, source);
      expect(c.asRead).to.equal(n);
      expect(c.stored).to.be.at.least(n);
    } finally {
      await second.kill('SIGTERM');
    }
    expect(second.child.exitCode).to.equal(0);
  });

  it('shares the partitions between two consumers, and loses nothing when one leaves while data flows', async function () {
    this.timeout(120_000);
    const group = uid('pair');
    const source = uid('pair');
    const a = await runConsumer({ CONSUMER_GROUP_ID: group });
    const b = await runConsumer({ CONSUMER_GROUP_ID: group });
    try {
      const admin = kafkaFor(s().kafkaBrokers).admin();
      await admin.connect();
      const members = await eventually('two members with partitions', async () => {
        const { groups } = await admin.describeGroups([group]);
        const g = groups[0]!;
        return g.state === 'Stable' && g.members.length === 2 ? g.members.length : undefined;
      });
      await admin.disconnect();
      expect(members).to.equal(2);
      let produced = 0;
      const flowing = (async () => {
        for (let i = 0; i < 20; i++) {
          await produceEvents(
            s().kafkaBrokers,
            s().eventsTopic,
            Array.from({ length: 500 }, () => eventValue(source)),
          );
          produced += 500;
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      await eventually('rows flowing', async () =>
        (await counts(ch, s().database, source)).stored > 0 ? true : undefined,
      );
      await b.stop(); // leaves the group while data flows
      await flowing;
      await eventually(
        'every event',
        async () => ((await counts(ch, s().database, source)).distinct === produced ? true : undefined),
        60_000,
      );
      expect((await counts(ch, s().database, source)).asRead).to.equal(produced);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});

describe('stream consumer while ClickHouse is down (real ClickHouse, stopped for 30 s)', () => {
  let faults: ControllableStack;
  let gateway: Running;
  let consumer: Running;

  before(async () => {
    faults = await controllableStack();
    [gateway, consumer] = await Promise.all([
      runGateway(faults.env),
      runConsumer({ ...faults.env, INSERT_RETRY_MAX_MS: '2000' }),
    ]);
  });

  after(async () => {
    await faults.control.startClickHouse().catch(() => undefined);
    await Promise.all([gateway?.stop(), consumer?.stop()]);
    await faults?.release();
  });

  it('keeps every acknowledged event through the outage and writes it once ClickHouse is back', async function () {
    this.timeout(180_000);
    const key = await newKey({ kind: 'telemetry', name: 'ch down' });
    const source = uid('chdown');
    const acked: string[] = [];
    let failed = 0;
    let seq = 0;
    const post = async (): Promise<void> => {
      const ids = Array.from({ length: 20 }, () => `e${seq++}`);
      const r = await fetch(`${gateway.url}/api/telemetry/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-key': key },
        body: JSON.stringify({ events: ids.map((id) => ({ id, source, category: 'load', payload: {} })) }),
      });
      if (r.status === 200) acked.push(...ids);
      else failed++;
    };
    await eventually('key loaded', async () => {
      await post();
      return acked.length > 0 ? true : undefined;
    });
    failed = 0; // 401s while the new key was loading do not count
    let running = true;
    const load = (async () => {
      while (running) {
        await post();
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await faults.control.stopClickHouse();
    await new Promise((r) => setTimeout(r, 30_000)); // the outage itself is the scenario: 30 s
    const ackedDuringOutage = acked.length;
    await faults.control.startClickHouse();
    await new Promise((r) => setTimeout(r, 1000));
    running = false;
    await load;
    expect(ackedDuringOutage).to.be.greaterThan(0);

    const db = faults.env.CLICKHOUSE_DATABASE ?? testStack().database;
    const ch = (await import('@telemetry/platform')).createClickHouse({
      url: faults.stack.clickhouseUrl,
      username: 'default',
      password: '',
      database: db,
    });
    try {
      await eventually(
        'every acknowledged event',
        async () => ((await counts(ch, db, source)).distinct >= acked.length ? true : undefined),
        90_000,
      );
      const c = await counts(ch, db, source);
      expect(c.asRead).to.equal(acked.length);
      expect(c.distinct).to.equal(acked.length);
      const m = await (await fetch(`${consumer.url}/metrics`)).text();
      // Whichever step met the outage first retried: the insert, or the first-seen look-up before it.
      expect(m).to.match(/consumer_(insert|prepare)_retries_total\{[^}]*\} [1-9]/);
    } finally {
      await ch.close();
    }
    expect(failed, 'the gateway does not need ClickHouse to accept events').to.equal(0);
  });
});
