/**
 * npm run dlq:replay -- [--dry-run] [--kind not_json|invalid|too_large|rejected] [--max N]
 *
 * Reads the dead-letter topic as the consumer group `telemetry-dead-letter-replay` and
 * publishes each message's original key and value back to the topic it came from
 * (header x-source-topic), then commits. Fix the cause first (a schema change, a
 * producer bug): a message that is still bad goes back to the dead-letter topic.
 * Needs KAFKA_BROKERS (or the stack `npm start` runs) and DEAD_LETTER_TOPIC.
 */
import { parseArgs } from 'node:util';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { envWithLocalStack } from '../devstack/local-env.js';

const { values } = parseArgs({
  options: { 'dry-run': { type: 'boolean' }, kind: { type: 'string' }, max: { type: 'string' } },
});
const env = envWithLocalStack();
if (!env.KAFKA_BROKERS) {
  process.stderr.write('KAFKA_BROKERS is not set\n');
  process.exit(2);
}
const topic = env.DEAD_LETTER_TOPIC ?? 'telemetry.dead-letter';
const max = Number(values.max ?? Infinity);
const kafka = new Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'dlq-replay', logLevel: logLevel.WARN });
const admin = kafka.admin();
await admin.connect();
const ends = await admin.fetchTopicOffsets(topic);
await admin.disconnect();
const remaining = new Map(ends.map((p) => [p.partition, BigInt(p.high)]));

const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
const consumer = kafka.consumer({ groupId: 'telemetry-dead-letter-replay' });
await Promise.all([producer.connect(), consumer.connect()]);
await consumer.subscribe({ topic, fromBeginning: true });
let replayed = 0;
let skipped = 0;
const done = new Promise<void>((resolve) => {
  void consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async (payload) => {
      const { batch } = payload;
      for (const m of batch.messages) {
        const source = m.headers?.['x-source-topic']?.toString();
        const kind = m.headers?.['x-dead-letter-kind']?.toString();
        if (!source || (values.kind && kind !== values.kind) || replayed >= max) skipped++;
        else {
          if (!values['dry-run'])
            await producer.send({ topic: source, acks: -1, messages: [{ key: m.key, value: m.value }] });
          replayed++;
        }
        payload.resolveOffset(m.offset);
        if (!values['dry-run']) {
          await consumer.commitOffsets([
            { topic, partition: batch.partition, offset: (BigInt(m.offset) + 1n).toString() },
          ]);
        }
      }
      remaining.set(batch.partition, BigInt(batch.highWatermark) - BigInt(batch.lastOffset()) - 1n);
      if ([...remaining.values()].every((r) => r <= 0n)) resolve();
    },
  });
  if ([...remaining.values()].every((r) => r === 0n)) resolve();
});
await done;
await Promise.all([consumer.disconnect(), producer.disconnect()]);
process.stdout.write(`${values['dry-run'] ? 'would replay' : 'replayed'} ${replayed}, skipped ${skipped}\n`);
