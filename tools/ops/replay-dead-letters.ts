/**
 * npm run dlq:replay -- [--dry-run] [--kind not_json|invalid|too_large|rejected] [--max N]
 *
 * Reads the dead-letter topic as the consumer group `telemetry-dead-letter-replay` and
 * publishes each message's original key and value back to the topic it came from
 * (header x-source-topic), then commits. Fix the cause first (a schema change, a
 * producer bug): a message that is still bad goes back to the dead-letter topic.
 * Needs KAFKA_BROKERS (or the stack `npm start` runs) and DEAD_LETTER_TOPIC.
 *
 * With DATABASE_URL (the registry), an event whose user_id or anonymous_id a deletion
 * suppressed (docs/deletions.md) is skipped, never published again: counted as
 * `suppressed`. Without it a warning says that none could be checked.
 */
import { parseArgs } from 'node:util';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import pg from 'pg';
import { isSuppressedMessage, loadSuppressions, type TenantSuppressions } from '@telemetry/store';
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
// Every tenant's suppressed ids, read once before the replay.
const suppressions = new Map<string, TenantSuppressions>();
if (env.DATABASE_URL) {
  const db = new pg.Pool({ connectionString: env.DATABASE_URL, max: 1 });
  try {
    for (const t of await loadSuppressions(db)) suppressions.set(t.tenantId, t);
  } finally {
    await db.end();
  }
} else {
  process.stderr.write('DATABASE_URL is not set: events of deleted ids (suppressions) are not skipped\n');
}
const isSuppressed = (tenantId: string, user: string | undefined, anon: string | undefined): boolean => {
  const t = suppressions.get(tenantId);
  return !!t && ((user !== undefined && t.userIds.has(user)) || (anon !== undefined && t.anonymousIds.has(anon)));
};
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
let suppressed = 0;
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
        else if (isSuppressedMessage(m.value, isSuppressed)) suppressed++;
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
process.stdout.write(
  `${values['dry-run'] ? 'would replay' : 'replayed'} ${replayed}, skipped ${skipped}, suppressed ${suppressed}\n`,
);
