/**
 * The admin calls of kafka-types.ts's KafkaAdmin on each client library: kafkajs's admin
 * client, or @platformatic/kafka's Admin (KAFKA_CLIENT=platformatic), so a deployment
 * that picks one library runs every Kafka call on it. Each library gives a few primitive
 * reads and writes (AdminOps); what the calls do with them (retries, the lag sum) is
 * written once. Each call opens a connection and closes it when done.
 */
import { Admin } from '@platformatic/kafka';
import type { Kafka } from 'kafkajs';
import { lagOf, retryUntil, type KafkaAdmin, type PartitionOffsets, type TopicSpec } from './kafka-types.js';

/** What one library must do for KafkaAdmin, on a connection `C` it opens. */
interface AdminOps<C> {
  open(): Promise<C>;
  close(c: C): Promise<void>;
  listTopics(c: C): Promise<string[]>;
  /** Creates `missing` and resolves once their partitions have leaders. */
  createTopics(c: C, missing: TopicSpec[]): Promise<void>;
  /** The partition count of each topic (all exist). */
  partitionCounts(c: C, topics: string[]): Promise<Map<string, number>>;
  /** Per topic (all exist), each partition's low and high watermarks and `groupId`'s committed offset. */
  offsets(c: C, groupId: string, topics: string[]): Promise<Map<string, PartitionOffsets[]>>;
}

function adminOn<C>(ops: AdminOps<C>): KafkaAdmin {
  const withConnection = async <T>(work: (c: C) => Promise<T>): Promise<T> => {
    const c = await ops.open();
    try {
      return await work(c);
    } finally {
      await ops.close(c).catch(() => undefined);
    }
  };
  /** The topics of `topics` that exist. */
  const existing = async (c: C, topics: string[]): Promise<string[]> => {
    const have = new Set(await ops.listTopics(c));
    return topics.filter((t) => have.has(t));
  };
  return {
    ensureTopics: (topics, deadlineMs = 90_000) =>
      withConnection((c) =>
        // Each try lists again: a broker that just restarted can time out a CreateTopics it then completes.
        retryUntil(async () => {
          const have = new Set(await ops.listTopics(c));
          const missing = topics.filter((t) => !have.has(t.topic));
          if (missing.length > 0) await ops.createTopics(c, missing);
        }, deadlineMs),
      ),
    countPartitions: (topic) =>
      withConnection(async (c) => {
        const found = await existing(c, [topic]);
        return found.length === 0 ? 0 : ((await ops.partitionCounts(c, found)).get(topic) ?? 0);
      }),
    groupLags: (groupId, topics) =>
      withConnection(async (c) => {
        const found = await existing(c, topics);
        const offsets =
          found.length === 0 ? new Map<string, PartitionOffsets[]>() : await ops.offsets(c, groupId, found);
        return new Map(topics.map((t) => [t, lagOf(offsets.get(t) ?? [])]));
      }),
  };
}

type KafkajsAdmin = ReturnType<Kafka['admin']>;

/** KafkaAdmin on a kafkajs client. */
export function kafkajsAdmin(kafka: Kafka): KafkaAdmin {
  return adminOn<KafkajsAdmin>({
    open: async () => {
      const admin = kafka.admin();
      await admin.connect();
      return admin;
    },
    close: (admin) => admin.disconnect(),
    listTopics: (admin) => admin.listTopics(),
    createTopics: async (admin, missing) => {
      await admin.createTopics({
        waitForLeaders: true,
        timeout: 30_000,
        topics: missing.map((t) => ({ topic: t.topic, numPartitions: t.numPartitions, replicationFactor: -1 })),
      });
    },
    partitionCounts: async (admin, topics) => {
      const meta = await admin.fetchTopicMetadata({ topics });
      return new Map(meta.topics.map((t) => [t.name, t.partitions.length]));
    },
    offsets: async (admin, groupId, topics) => {
      const [ends, committed] = await Promise.all([
        Promise.all(topics.map((t) => admin.fetchTopicOffsets(t))),
        admin.fetchOffsets({ groupId, topics }),
      ]);
      return new Map(
        topics.map((topic, i) => {
          const parts = committed.find((c) => c.topic === topic)?.partitions ?? [];
          const done = new Map(parts.map((p) => [p.partition, BigInt(p.offset)]));
          return [
            topic,
            ends[i]!.map((p) => ({
              partition: p.partition,
              low: BigInt(p.low),
              high: BigInt(p.high),
              committed: done.get(p.partition) ?? -1n,
            })),
          ];
        }),
      );
    },
  });
}

/** KafkaAdmin on @platformatic/kafka. */
export function platformaticAdmin(options: { brokers: string[]; clientId: string }): KafkaAdmin {
  const partitionCounts = async (admin: Admin, topics: string[]): Promise<Map<string, number>> => {
    const meta = await admin.metadata({ topics, forceUpdate: true });
    return new Map([...meta.topics].map(([name, t]) => [name, t.partitionsCount]));
  };
  return adminOn<Admin>({
    open: () =>
      Promise.resolve(
        new Admin({
          clientId: options.clientId,
          bootstrapBrokers: options.brokers,
          connectTimeout: 3000,
          timeout: 30_000,
          retries: 3,
        }),
      ),
    close: (admin) => admin.close(),
    listTopics: (admin) => admin.listTopics(),
    createTopics: async (admin, missing) => {
      try {
        await admin.createTopics({
          topics: missing.map((t) => ({ topic: t.topic, partitions: t.numPartitions, replicas: -1 })),
        });
      } catch (err) {
        // Another process made them meanwhile (TOPIC_ALREADY_EXISTS), as kafkajs ignores it.
        const have = new Set(await admin.listTopics());
        if (!missing.every((t) => have.has(t.topic))) throw err;
      }
      // As kafkajs's waitForLeaders: done once every partition of every new topic has a leader.
      await retryUntil(async () => {
        const meta = await admin.metadata({ topics: missing.map((t) => t.topic), forceUpdate: true });
        const notYet = missing.filter((t) => {
          const parts = meta.topics.get(t.topic)?.partitions ?? [];
          return parts.length !== t.numPartitions || parts.some((p) => p.leader < 0);
        });
        if (notYet.length > 0) throw new Error(`topics without leaders yet: ${notYet.map((t) => t.topic).join()}`);
      }, 30_000);
    },
    partitionCounts,
    offsets: async (admin, groupId, topics) => {
      const counts = await partitionCounts(admin, topics);
      // Timestamps -2 and -1 ask for the earliest and the latest offsets.
      const request = (timestamp: bigint) =>
        [...counts].map(([name, n]) => ({
          name,
          partitions: Array.from({ length: n }, (_, partitionIndex) => ({ partitionIndex, timestamp })),
        }));
      const [lows, highs, groups] = await Promise.all([
        admin.listOffsets({ topics: request(-2n) }),
        admin.listOffsets({ topics: request(-1n) }),
        admin.listConsumerGroupOffsets({ groups: [groupId] }),
      ]);
      const byPartition =
        (list: readonly { name: string; partitions: { partitionIndex: number; offset: bigint }[] }[]) =>
        (topic: string) =>
          new Map((list.find((t) => t.name === topic)?.partitions ?? []).map((p) => [p.partitionIndex, p.offset]));
      const [low, high] = [byPartition(lows), byPartition(highs)];
      const committedTopics = groups.find((g) => g.groupId === groupId)?.topics ?? [];
      return new Map(
        topics.map((topic) => {
          const lowOf = low(topic);
          const committed = new Map(
            (committedTopics.find((t) => t.name === topic)?.partitions ?? []).map((p) => [
              p.partitionIndex,
              p.committedOffset,
            ]),
          );
          return [
            topic,
            [...high(topic)].map(([partition, h]) => ({
              partition,
              low: lowOf.get(partition) ?? 0n,
              high: h,
              committed: committed.get(partition) ?? -1n,
            })),
          ];
        }),
      );
    },
  });
}
