import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { ensureTopics } from '@telemetry/platform';
import { createDeletion, createTenant } from '@telemetry/store';
import { adminRegistry, eventually, registryOwnerUrl, testStack, uid } from '../support/fixtures.js';

const run = promisify(execFile);

describe('dead-letter replay (npm run dlq:replay, real Kafka)', () => {
  it('publishes dead letters back to the topic they came from, with their key and value', async function () {
    this.timeout(120_000);
    const s = testStack();
    const kafka = new Kafka({ brokers: s.kafkaBrokers.split(','), clientId: 'ops-test', logLevel: logLevel.NOTHING });
    const dlq = `${s.deadLetterTopic}.ops-${uid('t')}`;
    const target = `${s.eventsTopic}.ops-${uid('t')}`;
    await ensureTopics(kafka, [
      { topic: dlq, numPartitions: 2 },
      { topic: target, numPartitions: 1 },
    ]);
    const p = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await p.connect();
    await p.send({
      topic: dlq,
      acks: -1,
      messages: [
        { key: 'k1', value: '{"fixed":1}', headers: { 'x-source-topic': target, 'x-dead-letter-kind': 'invalid' } },
        { key: 'k2', value: 'still not json', headers: { 'x-source-topic': target, 'x-dead-letter-kind': 'not_json' } },
      ],
    });
    await p.disconnect();

    const env = { ...process.env, KAFKA_BROKERS: s.kafkaBrokers, DEAD_LETTER_TOPIC: dlq };
    const dry = await run('npm', ['run', '--silent', 'dlq:replay', '--', '--dry-run'], { env });
    expect(dry.stdout).to.contain('would replay 2, skipped 0');
    const real = await run('npm', ['run', '--silent', 'dlq:replay', '--', '--kind', 'invalid'], { env });
    expect(real.stdout).to.contain('replayed 1, skipped 1');

    const got: { key: string; value: string }[] = [];
    const c = kafka.consumer({ groupId: uid('ops-reader') });
    await c.connect();
    await c.subscribe({ topic: target, fromBeginning: true });
    await c.run({
      eachMessage: ({ message }) => {
        got.push({ key: message.key!.toString(), value: message.value!.toString() });
        return Promise.resolve();
      },
    });
    try {
      await eventually('the replayed message', () => Promise.resolve(got.length >= 1 ? true : undefined));
    } finally {
      await c.disconnect();
    }
    expect(got).to.deep.equal([{ key: 'k1', value: '{"fixed":1}' }]);
  });

  it('skips dead-lettered events of deleted ids (the suppression list), and only those of their tenant', async function () {
    this.timeout(120_000);
    const s = testStack();
    const db = adminRegistry();
    const tenant = (await createTenant(db, `dlq ${uid()}`)).tenant_id;
    const other = (await createTenant(db, `dlq other ${uid()}`)).tenant_id;
    await createDeletion(db, { tenantId: tenant, requestedBy: 'test', userIds: ['gone'], anonymousIds: ['anon-gone'] });
    const kafka = new Kafka({ brokers: s.kafkaBrokers.split(','), clientId: 'ops-test', logLevel: logLevel.NOTHING });
    const dlq = `${s.deadLetterTopic}.ops-${uid('t')}`;
    const target = `${s.eventsTopic}.ops-${uid('t')}`;
    await ensureTopics(kafka, [
      { topic: dlq, numPartitions: 1 },
      { topic: target, numPartitions: 1 },
    ]);
    const headers = { 'x-source-topic': target, 'x-dead-letter-kind': 'invalid' };
    const event = (tenantId: string, ids: object) => JSON.stringify({ tenant_id: tenantId, source: 's', ...ids });
    const p = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await p.connect();
    await p.send({
      topic: dlq,
      acks: -1,
      messages: [
        { key: 'deleted-user', value: event(tenant, { user_id: 'gone' }), headers },
        { key: 'deleted-anon', value: event(tenant, { anonymous_id: 'anon-gone' }), headers },
        { key: 'kept', value: event(tenant, { user_id: 'stays' }), headers },
        { key: 'other-tenant', value: event(other, { user_id: 'gone' }), headers },
      ],
    });
    await p.disconnect();

    const env = {
      ...process.env,
      KAFKA_BROKERS: s.kafkaBrokers,
      DEAD_LETTER_TOPIC: dlq,
      DATABASE_URL: registryOwnerUrl(),
    };
    const real = await run('npm', ['run', '--silent', 'dlq:replay'], { env });
    expect(real.stdout).to.contain('replayed 2, skipped 0, suppressed 2');

    const got: string[] = [];
    const c = kafka.consumer({ groupId: uid('ops-reader') });
    await c.connect();
    await c.subscribe({ topic: target, fromBeginning: true });
    await c.run({
      eachMessage: ({ message }) => {
        got.push(message.key!.toString());
        return Promise.resolve();
      },
    });
    try {
      await eventually('the replayed messages', () => Promise.resolve(got.length >= 2 ? true : undefined));
    } finally {
      await c.disconnect();
    }
    expect(got.sort()).to.deep.equal(['kept', 'other-tenant']);
  });
});
