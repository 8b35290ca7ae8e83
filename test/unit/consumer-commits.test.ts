import { expect } from 'chai';
import type { ProducerMessage } from '@telemetry/platform';
import { Registry } from 'prom-client';
import { createValidators } from '@telemetry/contract';
import { LOCAL_LAYOUT, NO_ENRICHMENT, streamTables } from '@telemetry/store';
import { KafkaToClickHouse, type RowWriter } from '../../services/stream-consumer/src/consumer.js';
import { fakeBatch, fakeGroupConsumers, settle, silentLogger, type FakeGroupConsumer } from './support/fakes.js';

/** A writer whose inserts the test finishes (or fails) one by one. */
class ControlledWriter implements RowWriter {
  readonly writes: { table: string; rows: readonly object[]; resolve(): void; reject(err: Error): void }[] = [];
  drained = false;
  write(table: string, rows: readonly object[]): Promise<void> {
    return new Promise((resolve, reject) => this.writes.push({ table, rows, resolve, reject }));
  }
  waitForRoom(): Promise<boolean> {
    return Promise.resolve(true);
  }
  pendingRowsOf(): number {
    return 0;
  }
  drain(): void {
    this.drained = true;
  }
}

function event(n: number): string {
  return JSON.stringify({
    v: 1,
    event_id: `6f1b5a8e-0000-4000-8000-${String(n).padStart(12, '0')}`,
    key_id: 'k',
    source: 's',
    category: 'c',
    payload: { n },
    received_at: '2026-11-22T10:00:00.123Z',
  });
}

function setup(): {
  consumer: KafkaToClickHouse;
  group: FakeGroupConsumer;
  writer: ControlledWriter;
  deadLetters: { topic: string; messages: ProducerMessage[] }[];
} {
  const { factory, built } = fakeGroupConsumers();
  const writer = new ControlledWriter();
  const deadLetters: { topic: string; messages: ProducerMessage[] }[] = [];
  const consumer = new KafkaToClickHouse({
    consumers: factory,
    writer,
    deadLetters: {
      send: (topic, messages) => {
        deadLetters.push({ topic, messages });
        return Promise.resolve();
      },
    },
    validators: createValidators(),
    logger: silentLogger,
    registry: new Registry(),
    groupId: 'g',
    enricher: NO_ENRICHMENT,
    eventsTopic: 'events',
    checksTopic: 'checks',
    alertsTopic: 'alerts',
    webhookDeliveriesTopic: 'webhook-deliveries',
    auditTopic: 'audit',
    screenshotsTopic: 'screenshots',
    maxBufferedScreenshots: 4,
    deadLetterTopic: 'dlq',
    tables: streamTables('db', LOCAL_LAYOUT),
    maxMessageBytes: 1_000_000,
    fetchBytesPerPartition: 512 * 1024,
    partitionsConcurrently: 2,
    sessionTimeoutMs: 30_000,
    maxBufferedRows: 1000,
    modernEvents: false,
    firstSeen: { resolve: () => Promise.resolve() },
    retryMaxMs: 100,
  });
  return { consumer, group: built[0]!, writer, deadLetters };
}

function eachBatch(group: FakeGroupConsumer): (b: ReturnType<typeof fakeBatch>) => Promise<void> {
  const spec = group.spec;
  if (!('eachBatch' in spec)) throw new Error('the stream consumer reads batches');
  return (b) => spec.eachBatch(b);
}

describe('stream consumer insert-then-commit (unit)', () => {
  it('reads its six topics with manual commits, from the beginning for a new group', () => {
    const { group } = setup();
    expect(group.spec.topics).to.deep.equal([
      'events',
      'checks',
      'alerts',
      'webhook-deliveries',
      'audit',
      'screenshots',
    ]);
    expect(group.spec.fromBeginning).to.equal(true);
    // FETCH_BYTES_PER_PARTITION reaches the group member's fetches.
    expect(group.spec.consumer.maxBytesPerPartition).to.equal(512 * 1024);
    expect('manualCommit' in group.spec && group.spec.manualCommit).to.equal(true);
  });

  it('commits a batch’s next offset only after its rows are inserted', async () => {
    const { group, writer } = setup();
    const b = fakeBatch('events', 0, 10, [event(1), event(2), event(3)]);
    await eachBatch(group)(b);
    expect(writer.writes).to.have.length(1);
    expect(writer.writes[0]!.table).to.equal('`db`.`events`');
    expect(writer.writes[0]!.rows).to.have.length(3);
    expect(b.resolved).to.deep.equal(['12']);
    await settle();
    expect(group.commits, 'nothing committed before the insert').to.deep.equal([]);
    writer.writes[0]!.resolve();
    await settle();
    expect(group.commits).to.deep.equal([[{ topic: 'events', partition: 0, offset: '13' }]]);
  });

  it('commits a partition in offset order: a later insert that ends first waits for the earlier one', async () => {
    const { group, writer } = setup();
    await eachBatch(group)(fakeBatch('events', 1, 0, [event(1)]));
    await eachBatch(group)(fakeBatch('events', 1, 1, [event(2)]));
    writer.writes[1]!.resolve();
    await settle();
    expect(group.commits, 'offset 2 waits for offset 0').to.deep.equal([]);
    writer.writes[0]!.resolve();
    await settle();
    const committed = group.commits.flat().map((o) => Number(o.offset));
    expect(committed.length).to.be.greaterThan(0);
    expect(committed, 'never backwards').to.deep.equal([...committed].sort((a, b) => a - b));
    expect(committed[committed.length - 1]).to.equal(2);
  });

  it('does not hold one partition’s commit behind another partition’s insert', async () => {
    const { group, writer } = setup();
    await eachBatch(group)(fakeBatch('events', 0, 0, [event(1)]));
    await eachBatch(group)(fakeBatch('checks', 3, 7, ['{"not":"a check"}', null]));
    // The checks batch has no valid rows: both went to the dead-letter topic.
    writer.writes[1]!.resolve();
    await settle();
    expect(group.commits).to.deep.equal([[{ topic: 'checks', partition: 3, offset: '9' }]]);
  });

  it('commits nothing for a batch whose insert failed', async () => {
    const { group, writer } = setup();
    await eachBatch(group)(fakeBatch('events', 2, 5, [event(1), event(2)]));
    expect(writer.writes[0]!.rows).to.have.length(2);
    writer.writes[0]!.reject(new Error('writer stopped'));
    await settle();
    await settle();
    expect(group.commits).to.deep.equal([]);
  });

  it('dead-letters undecodable messages (acknowledged) before their offsets can be committed', async () => {
    const { group, writer, deadLetters } = setup();
    await eachBatch(group)(fakeBatch('events', 0, 0, ['{nope', event(1), null]));
    expect(deadLetters).to.have.length(1);
    expect(deadLetters[0]!.topic).to.equal('dlq');
    expect(deadLetters[0]!.messages.map((m) => m.headers?.['x-source-offset'])).to.deep.equal(['0', '2']);
    expect(deadLetters[0]!.messages[0]!.headers?.['x-dead-letter-kind']).to.equal('not_json');
    expect(writer.writes[0]!.rows).to.have.length(1);
  });

  it('writes and resolves nothing for a batch whose partition was revoked meanwhile', async () => {
    const { group, writer } = setup();
    const b = fakeBatch('events', 0, 0, [event(1)]);
    b.stale = true;
    await eachBatch(group)(b);
    expect(writer.writes).to.deep.equal([]);
    expect(b.resolved).to.deep.equal([]);
  });

  it('keeps committing after a failed commit (the offsets are read again, never lost)', async () => {
    const { group, writer } = setup();
    group.commitError = new Error('coordinator moved');
    await eachBatch(group)(fakeBatch('events', 0, 0, [event(1)]));
    writer.writes[0]!.resolve();
    await settle();
    expect(group.commits).to.deep.equal([]);
    group.commitError = undefined;
    await eachBatch(group)(fakeBatch('events', 0, 1, [event(2)]));
    writer.writes[1]!.resolve();
    await settle();
    expect(group.commits).to.deep.equal([[{ topic: 'events', partition: 0, offset: '2' }]]);
  });

  it('stops in order: pause fetching, flush the writer, wait for inserts and their commits, then leave', async () => {
    const { consumer, group, writer } = setup();
    await consumer.start();
    await eachBatch(group)(fakeBatch('events', 0, 0, [event(1)]));
    let stopped = false;
    const stopping = consumer.stop().then(() => (stopped = true));
    await settle();
    expect(group.calls).to.deep.equal(['start', 'pause']);
    expect(writer.drained).to.equal(true);
    expect(stopped, 'waits for the insert').to.equal(false);
    writer.writes[0]!.resolve();
    await stopping;
    expect(group.calls).to.deep.equal(['start', 'pause', 'commit', 'stop']);
    expect(group.commits).to.deep.equal([[{ topic: 'events', partition: 0, offset: '1' }]]);
    // Batches fetched after the stop began are left to the next owner.
    await eachBatch(group)(fakeBatch('events', 0, 1, [event(2)]));
    expect(writer.writes).to.have.length(1);
  });

  it('reports the group consumer’s health (a stalled loop fails it)', () => {
    const { consumer, group } = setup();
    expect(consumer.health()).to.equal(true);
    group.healthy = false;
    expect(consumer.health()).to.equal(false);
  });
});
