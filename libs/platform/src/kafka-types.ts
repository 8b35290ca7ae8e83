/**
 * Our own Kafka types: what services read from a topic, what they hand a producer, and
 * the consumer settings they may choose. Both client libraries (KAFKA_CLIENT: kafkajs or
 * @platformatic/kafka) are adapted to these in libs/platform, so no service imports a
 * Kafka library. The shapes are kafkajs's (its messages fit them without a copy on the
 * hot path); @platformatic/kafka's are converted where they are read and sent.
 */

/** A header's value as read: a string or bytes (repeated headers as a list). */
export type HeaderValue = Buffer | string | (Buffer | string)[] | undefined;

/** One message read from a partition. */
export interface StreamMessage {
  key: Buffer | null;
  value: Buffer | null;
  /** The message's offset in its partition (a decimal string: offsets outgrow 2^53). */
  offset: string;
  /** The producer's or broker's time, ms since the epoch, as a decimal string. */
  timestamp: string;
  headers?: Record<string, HeaderValue>;
}

/** One message handed to a producer. */
export interface ProducerMessage {
  /** Picks the partition (the partitioner hashes it); copies of one event share it. */
  key?: Buffer | string | null;
  value: Buffer | string | null;
  /** Sends to this partition instead of the key's. */
  partition?: number;
  headers?: Record<string, HeaderValue>;
  timestamp?: string;
}

/** Group member settings a user may choose (the rest are the platform's). */
export interface ConsumerSettings {
  sessionTimeout?: number;
  heartbeatInterval?: number;
  rebalanceTimeout?: number;
  /** Bytes fetched from one partition per request at most. */
  maxBytesPerPartition?: number;
  maxWaitTimeInMs?: number;
  /** Off for every user of ours: topics are made by ensureTopics with their partition count. */
  allowAutoTopicCreation?: boolean;
}

/** A partition's offset to commit: the offset of the next message to read. */
export interface CommittableOffset {
  topic: string;
  partition: number;
  offset: string;
}

/** A topic to make if missing, with its partition count. */
export interface TopicSpec {
  topic: string;
  numPartitions: number;
}

/**
 * The admin calls services make, on the library KAFKA_CLIENT names (kafka-admin.ts).
 * Each call connects, works and disconnects: none is on a hot path.
 */
export interface KafkaAdmin {
  /**
   * Creates missing topics; never changes existing ones (adding partitions is an operator
   * step). Retries for up to `deadlineMs`: a broker that just restarted can time out a
   * CreateTopics request that it then completes, so each try starts by listing topics.
   */
  ensureTopics(topics: TopicSpec[], deadlineMs?: number): Promise<void>;
  /** How many partitions `topic` has now (0 when it does not exist). */
  countPartitions(topic: string): Promise<number>;
  /**
   * Per topic, how many messages the group has not yet committed past: each partition's
   * high watermark minus the committed offset (the low watermark when none is
   * committed), summed. A group that commits only after writing (the stream consumer)
   * thereby counts what is read but not yet written too.
   */
  groupLags(groupId: string, topics: string[]): Promise<Map<string, number>>;
}

/** A partition's low and high watermarks and the group's committed offset (-1: none). */
export interface PartitionOffsets {
  partition: number;
  low: bigint;
  high: bigint;
  committed: bigint;
}

/** groupLags's sum over partitions: what `KafkaAdmin.groupLags` documents, for both libraries. */
export function lagOf(partitions: readonly PartitionOffsets[]): number {
  let lag = 0n;
  for (const p of partitions) {
    const from = p.committed >= 0n ? p.committed : p.low;
    if (p.high > from) lag += p.high - from;
  }
  return Number(lag);
}

/** Retries `step` once a second until it succeeds or `deadlineMs` passed (then its error). */
export async function retryUntil<T>(step: () => Promise<T>, deadlineMs: number): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await step();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
