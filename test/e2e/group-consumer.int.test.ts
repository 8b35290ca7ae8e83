import { expect } from 'chai';
import {
  createKafka,
  createLogger,
  kafkaGroupConsumers,
  kafkajsAdmin,
  platformaticAdmin,
  platformaticGroupConsumers,
  type BatchSpec,
  type GroupBatch,
  type GroupConsumer,
  type GroupConsumerFactory,
} from '@telemetry/platform';
import { eventually, produce, testStack, uid } from '../support/fixtures.js';

/**
 * The platform's GroupConsumer on both client libraries (KAFKA_CLIENT), against the real
 * broker: what the stream consumer and the runners rely on.
 */
const logger = createLogger({ service: 'test', level: 'silent' });

function factories(): Record<'kafkajs' | 'platformatic', GroupConsumerFactory> {
  const brokers = testStack().kafkaBrokers.split(',');
  return {
    kafkajs: kafkaGroupConsumers(createKafka({ brokers, clientId: 'group-test', logger }), logger),
    platformatic: platformaticGroupConsumers({ brokers, clientId: 'group-test' }, logger),
  };
}

async function newTopic(partitions: number): Promise<string> {
  const topic = uid('group-test');
  const admin = createKafka({ brokers: testStack().kafkaBrokers.split(','), clientId: 'group-test', logger }).admin();
  await admin.connect();
  try {
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: partitions }] });
  } finally {
    await admin.disconnect();
  }
  return topic;
}

/** `n` messages `p<partition>-<i>` in each of `partitions` partitions. */
async function fill(topic: string, partitions: number, n: number, from = 0): Promise<void> {
  for (let p = 0; p < partitions; p++) {
    await produce(
      topic,
      Array.from({ length: n }, (_, i) => `p${p}-${from + i}`),
      p,
    );
  }
}

function spec(
  topic: string,
  groupId: string,
  eachBatch: (b: GroupBatch) => Promise<void>,
  over: Partial<BatchSpec> = {},
) {
  return {
    name: 'group-test',
    groupId,
    topics: [topic],
    fromBeginning: true,
    consumer: { sessionTimeout: 10_000, heartbeatInterval: 500, maxWaitTimeInMs: 200 },
    partitionsConsumedConcurrently: 2,
    manualCommit: true as const,
    eachBatch,
    stallAfterMs: 10_000,
    crashMessage: 'group test consumer crashed',
    ...over,
  } satisfies BatchSpec;
}

/** A member that records what it handles and commits each batch it finished, not stale. */
function recorder(topic: string, groupId: string, factory: GroupConsumerFactory) {
  const handled: string[] = [];
  const order = new Map<number, number[]>();
  const busy = new Set<number>();
  let overlapped = false;
  const member: GroupConsumer = factory(
    spec(topic, groupId, async (b) => {
      const { partition, messages } = b.batch;
      if (busy.has(partition)) overlapped = true;
      busy.add(partition);
      try {
        await new Promise((r) => setTimeout(r, 5));
        if (b.isStale()) return;
        for (const m of messages) {
          handled.push(m.value!.toString());
          order.set(partition, [...(order.get(partition) ?? []), Number(m.offset)]);
        }
        b.resolveOffset(b.batch.lastOffset());
        const offset = (BigInt(b.batch.lastOffset()) + 1n).toString();
        await member.commitOffsets([{ topic, partition, offset }]);
      } finally {
        busy.delete(partition);
      }
    }),
  );
  return { member, handled, order, overlapped: () => overlapped };
}

describe('group consumers on both Kafka client libraries (real Kafka)', function () {
  this.timeout(120_000);

  for (const library of ['kafkajs', 'platformatic'] as const) {
    it(`${library}: hands every message once, in offset order per partition, one batch per partition at a time; a new member resumes after the last commit`, async () => {
      const topic = await newTopic(3);
      const group = uid('group');
      await fill(topic, 3, 100);
      const first = recorder(topic, group, factories()[library]);
      await first.member.start();
      try {
        await eventually('300 messages handled', () => (first.handled.length >= 300 ? true : undefined), 60_000);
      } finally {
        await first.member.stop();
      }
      expect(new Set(first.handled).size).to.equal(300);
      expect(first.handled.length).to.equal(300);
      for (const offsets of first.order.values()) expect(offsets).to.deep.equal([...offsets].sort((a, b) => a - b));
      expect(first.overlapped()).to.equal(false);

      await fill(topic, 3, 10, 100);
      const second = recorder(topic, group, factories()[library]);
      await second.member.start();
      try {
        await eventually('30 new messages handled', () => (second.handled.length >= 30 ? true : undefined), 60_000);
        // Nothing from before the commit comes back.
        await new Promise((r) => setTimeout(r, 500));
      } finally {
        await second.member.stop();
      }
      expect(second.handled.sort()).to.deep.equal(
        [0, 1, 2].flatMap((p) => Array.from({ length: 10 }, (_, i) => `p${p}-${100 + i}`)).sort(),
      );
    });
  }

  it('a kafkajs member and a platformatic member form one group and handle every message between them (a rolling change of KAFKA_CLIENT)', async () => {
    const topic = await newTopic(4);
    const group = uid('group');
    const f = factories();
    const old = recorder(topic, group, f.kafkajs);
    const next = recorder(topic, group, f.platformatic);
    const admin = createKafka({ brokers: testStack().kafkaBrokers.split(','), clientId: 'group-test', logger }).admin();
    await admin.connect();
    try {
      await old.member.start();
      await next.member.start();
      await eventually(
        'the group stable with both members',
        async () => {
          const g = (await admin.describeGroups([group])).groups[0];
          return g?.state === 'Stable' && g.members.length === 2 ? true : undefined;
        },
        60_000,
      );
      await fill(topic, 4, 50);
      const all = () => new Set([...old.handled, ...next.handled]);
      await eventually('200 messages handled', () => (all().size >= 200 ? true : undefined), 60_000);
    } finally {
      await admin.disconnect();
      await next.member.stop();
      await old.member.stop();
    }
    expect(old.handled.length).to.be.greaterThan(0);
    expect(next.handled.length).to.be.greaterThan(0);
    expect(old.handled.length + next.handled.length).to.equal(200);
  });

  it('platformatic: a batch in hand when a second member joins turns stale, and the two members handle every message between them', async () => {
    const topic = await newTopic(4);
    const group = uid('group');
    await fill(topic, 4, 50);
    const f = factories().platformatic;
    let held: GroupBatch | undefined;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const a = recorder(topic, group, f);
    const holder = f(
      spec(topic, group, async (b) => {
        if (!held) {
          held = b;
          await released;
        }
        b.resolveOffset(b.batch.lastOffset());
      }),
    );
    // `holder` holds its first batch and commits nothing; `a` then joins.
    await holder.start();
    try {
      await eventually('a batch held', () => held);
      expect(held!.isStale()).to.equal(false);
      await a.member.start();
      await eventually('the held batch turns stale', () => (held!.isStale() ? true : undefined), 60_000);
      release();
      await holder.stop();
      // Everything, including the held batch's messages, is handled by `a` once `holder` left.
      await eventually('200 messages handled', () => (new Set(a.handled).size >= 200 ? true : undefined), 60_000);
    } finally {
      release();
      await holder.stop();
      await a.member.stop();
    }
    expect(new Set(a.handled).size).to.equal(200);
  });

  it('platformatic: hands a batch back from its first unresolved message, as kafkajs seeks back to it', async () => {
    const topic = await newTopic(1);
    await fill(topic, 1, 10);
    const firsts: string[] = [];
    const member = factories().platformatic(
      spec(topic, uid('group'), (b) => {
        const { messages } = b.batch;
        firsts.push(messages[0]!.offset);
        b.resolveOffset(firsts.length === 1 ? messages[0]!.offset : b.batch.lastOffset());
        return Promise.resolve();
      }),
    );
    await member.start();
    try {
      await eventually('a second batch', () => (firsts.length >= 2 ? true : undefined));
    } finally {
      await member.stop();
    }
    expect(firsts.slice(0, 2)).to.deep.equal(['0', '1']);
  });

  it('platformatic: fails health while a batch is held past stallAfterMs without a heartbeat, and recovers once it finishes', async () => {
    const topic = await newTopic(1);
    await fill(topic, 1, 5);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let started = false;
    const member = factories().platformatic(
      spec(
        topic,
        uid('group'),
        async () => {
          started = true;
          await released;
        },
        { stallAfterMs: 1500 },
      ),
    );
    await member.start();
    try {
      await eventually('a batch started', () => (started ? true : undefined));
      expect(member.health()).to.equal(true);
      await eventually('health fails', () => (member.health() ? undefined : true), 10_000);
      release();
      await eventually('health recovers', () => (member.health() ? true : undefined), 10_000);
    } finally {
      release();
      await member.stop();
    }
  });
});

describe('admin calls on both Kafka client libraries (real Kafka)', function () {
  this.timeout(120_000);

  for (const library of ['kafkajs', 'platformatic'] as const) {
    it(`${library}: makes missing topics with their partition count, counts partitions, and reads a group's lag`, async () => {
      const brokers = testStack().kafkaBrokers.split(',');
      const admin =
        library === 'kafkajs'
          ? kafkajsAdmin(createKafka({ brokers, clientId: 'admin-test', logger }))
          : platformaticAdmin({ brokers, clientId: 'admin-test' });
      const [a, b] = [uid(`admin-${library}`), uid(`admin-${library}`)];
      expect(await admin.countPartitions(a)).to.equal(0);
      await admin.ensureTopics([
        { topic: a, numPartitions: 3 },
        { topic: b, numPartitions: 1 },
      ]);
      // Idempotent: an existing topic is left as it is.
      await admin.ensureTopics([{ topic: a, numPartitions: 5 }]);
      expect([await admin.countPartitions(a), await admin.countPartitions(b)]).to.deep.equal([3, 1]);

      await fill(a, 3, 4); // 12 messages, 4 per partition
      const group = uid('admin-group');
      expect(await admin.groupLags(group, [a, b])).to.deep.equal(
        new Map([
          [a, 12],
          [b, 0],
        ]),
      );
      // A member commits past 3 messages of partition 0 and all of partition 1: 5 left.
      const member = factories()[library](spec(a, group, () => Promise.resolve()));
      await member.start();
      try {
        await eventually('joined', () => (member.joined ? true : undefined), 60_000);
        await member.commitOffsets([
          { topic: a, partition: 0, offset: '3' },
          { topic: a, partition: 1, offset: '4' },
        ]);
        await eventually('lag 5', async () => ((await admin.groupLags(group, [a])).get(a) === 5 ? true : undefined));
      } finally {
        await member.stop();
      }
    });
  }
});
