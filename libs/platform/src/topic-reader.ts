import { Consumer, type fetchV17 } from '@platformatic/kafka';
import { sleepOn, systemClock, type Clock, type Component } from './lifecycle.js';
import type { Logger } from './logger.js';

/** One record of the topic, as the reader hands it on. */
export interface TopicRecord {
  offset: number;
  value: Buffer | null;
}

export interface TopicReaderOptions {
  brokers: string[];
  clientId: string;
  topic: string;
  /**
   * The consumer group whose committed offsets `committedOffsets()` reads. The reader
   * never joins it, never commits, and reads every partition itself.
   */
  groupId: string;
  logger: Logger;
  /**
   * Where to start, per partition, once the topic is found (and again after its
   * partition count changed). Called with the reader; it may read offsets through it.
   */
  startAt: (reader: TopicReader, partitions: number) => Promise<number[]>;
  /** Records of one partition, in offset order, each offset once (until the next start). */
  onRecords: (partition: number, records: TopicRecord[]) => void;
  /** Reading (re)started at these offsets: whatever was read before no longer continues. */
  onStart: (offsets: readonly number[]) => void;
  /** Longest wait of one fetch for new records. */
  maxWaitMs?: number;
  clock?: Clock;
}

type FetchResponse = fetchV17.FetchResponse;

// Kafka's OFFSET_OUT_OF_RANGE: the offset we asked for is gone (retention) or not there yet.
const OFFSET_OUT_OF_RANGE = 1;
const METADATA_EVERY_MS = 30_000;

/**
 * Reads every partition of one topic from offsets it is given, without a consumer group:
 * a broadcast reader, as each query-service replica needs the whole check-results topic
 * (a group would split the partitions between replicas). It fetches straight from each
 * partition's leader with @platformatic/kafka's `fetch`, keeps its own positions, and
 * never commits. An offset that retention removed restarts the partition at its earliest
 * offset, reported through `onStart`. Never essential: readiness does not wait for it.
 */
export class TopicReader implements Component {
  readonly name = 'topic-reader';
  readonly essential = false;
  private consumer: Consumer<Buffer, Buffer, Buffer, Buffer> | undefined;
  private next: number[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;
  private healthy = false;
  private readonly clock: Clock;

  constructor(private readonly options: TopicReaderOptions) {
    this.clock = options.clock ?? systemClock;
  }

  start(): Promise<void> {
    this.consumer = new Consumer<Buffer, Buffer, Buffer, Buffer>({
      clientId: this.options.clientId,
      bootstrapBrokers: this.options.brokers,
      groupId: this.options.groupId,
      connectTimeout: 3000,
      timeout: 10_000,
      retries: 1,
      retryDelay: 200,
    });
    this.consumer.topics.track(this.options.topic);
    this.loop = this.run(this.consumer);
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    // The reader never joined a group: closing leaves nothing behind at the broker.
    await this.consumer?.close(true).catch(() => undefined);
  }

  health(): boolean {
    return this.healthy;
  }

  /** The next offset to read per partition (empty until the topic was found). */
  positions(): readonly number[] {
    return this.next;
  }

  /** The group's committed offset per partition; -1 where it has none. */
  async committedOffsets(partitions: number): Promise<number[]> {
    const consumer = this.requireConsumer();
    const all = Array.from({ length: partitions }, (_, i) => i);
    const committed = await consumer.listCommittedOffsets({
      topics: [{ topic: this.options.topic, partitions: all }],
    });
    const got = committed.get(this.options.topic) ?? [];
    return all.map((p) => Number(got[p] ?? -1n));
  }

  /** The earliest offset still kept, per partition. */
  async earliestOffsets(): Promise<number[]> {
    const consumer = this.requireConsumer();
    const offsets = await consumer.listOffsets({ topics: [this.options.topic], timestamp: -2n });
    return (offsets.get(this.options.topic) ?? []).map(Number);
  }

  /** The end of each partition (the offset the next record will get): to read only what comes from now on. */
  async latestOffsets(): Promise<number[]> {
    const consumer = this.requireConsumer();
    const offsets = await consumer.listOffsets({ topics: [this.options.topic], timestamp: -1n });
    return (offsets.get(this.options.topic) ?? []).map(Number);
  }

  private requireConsumer(): Consumer<Buffer, Buffer, Buffer, Buffer> {
    if (!this.consumer) throw new Error('the topic reader has not started');
    return this.consumer;
  }

  private async run(consumer: Consumer<Buffer, Buffer, Buffer, Buffer>): Promise<void> {
    const { topic, logger } = this.options;
    let failures = 0;
    let metadataAt = -Infinity;
    let leaders: number[] = [];
    let topicId = '';
    while (!this.stopped) {
      try {
        if (this.clock.now() - metadataAt > METADATA_EVERY_MS || leaders.length === 0) {
          const md = await consumer.metadata({ topics: [topic], forceUpdate: true });
          const t = md.topics.get(topic);
          if (!t) throw new Error(`topic ${topic} not found`);
          topicId = t.id;
          leaders = t.partitions.map((p) => p.leader);
          metadataAt = this.clock.now();
          if (leaders.length !== this.next.length) {
            // First start, or partitions were added: positions start again from scratch.
            this.next = await this.options.startAt(this, leaders.length);
            this.options.onStart(this.next);
          }
        }
        await this.fetchOnce(consumer, topicId, leaders);
        failures = 0;
        this.healthy = true;
      } catch (err) {
        if (this.stopped) break;
        failures++;
        this.healthy = false;
        metadataAt = -Infinity;
        // Every try logs at first, then every 30th: an absent topic or broker must not flood the log.
        if (failures <= 3 || failures % 30 === 0) {
          logger.warn('topic reader failed; retrying', { topic, failures, err: String(err) });
        }
        await sleepOn(this.clock, Math.min(5000, 200 * 2 ** Math.min(failures, 5)));
      }
    }
  }

  /** One fetch from each leader, in parallel; every partition's records handed on in order. */
  private async fetchOnce(
    consumer: Consumer<Buffer, Buffer, Buffer, Buffer>,
    topicId: string,
    leaders: number[],
  ): Promise<void> {
    const byLeader = new Map<number, number[]>();
    leaders.forEach((node, p) => byLeader.set(node, [...(byLeader.get(node) ?? []), p]));
    const answers = await Promise.all(
      [...byLeader].map(async ([node, partitions]) => {
        try {
          return await consumer.fetch({
            node,
            maxWaitTime: this.options.maxWaitMs ?? 200,
            minBytes: 1,
            maxBytes: 8 * 1024 * 1024,
            topics: [
              {
                topicId,
                partitions: partitions.map((p) => ({
                  partition: p,
                  fetchOffset: BigInt(this.next[p]!),
                  currentLeaderEpoch: -1,
                  lastFetchedEpoch: -1,
                  partitionMaxBytes: 1024 * 1024,
                })),
              },
            ],
          });
        } catch (err) {
          // A partition-level error still carries the whole answer: use what came.
          const response = (err as { response?: FetchResponse }).response;
          if (response?.responses) return response;
          throw err;
        }
      }),
    );
    let retry: Error | undefined;
    for (const answer of answers) {
      for (const t of answer.responses) {
        for (const part of t.partitions) {
          const p = part.partitionIndex;
          if (part.errorCode === OFFSET_OUT_OF_RANGE) {
            const earliest = (await this.earliestOffsets())[p] ?? 0;
            this.options.logger.warn('topic reader offset out of range; starting the partition at its earliest', {
              topic: this.options.topic,
              partition: p,
              offset: this.next[p],
              earliest,
            });
            this.next[p] = earliest;
            this.options.onStart(this.next);
            continue;
          }
          if (part.errorCode !== 0) {
            retry = new Error(`fetch error ${part.errorCode} on partition ${p}`);
            continue;
          }
          const records: TopicRecord[] = [];
          for (const batch of part.records ?? []) {
            const first = Number(batch.firstOffset);
            for (const r of batch.records) {
              const offset = first + r.offsetDelta;
              // A fetch may answer from the start of the batch that holds the asked offset.
              if (offset >= this.next[p]!) records.push({ offset, value: r.value });
            }
          }
          if (records.length > 0) {
            this.next[p] = records[records.length - 1]!.offset + 1;
            this.options.onRecords(p, records);
          }
        }
      }
    }
    if (retry) throw retry;
  }
}
