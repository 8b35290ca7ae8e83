/**
 * The one consumer contract of our services (PostHog's, nodejs/src/kafka/consumer.ts): a
 * handler gets a batch of one partition, hands each piece of its work back as a promise
 * of durable completion (`track`), and returns as soon as the next batch may be read;
 * the platform commits offsets in order as the promises resolve (InOrderCommits) and
 * holds reading while too much work is pending. Built on any GroupConsumer, so both
 * client libraries (KAFKA_CLIENT) get it.
 */
import { InOrderCommits } from './in-order-commits.js';
import type { GroupBatch, GroupConsumer, GroupConsumerFactory, SpecBase } from './kafka-group-consumer.js';
import type { StreamMessage } from './kafka-types.js';
import type { Component } from './lifecycle.js';
import type { Logger } from './logger.js';

/** How long a batch waits for room before it is handed back to be read again. */
export const ROOM_WAIT_MS = 1000;
/** Heartbeats while a handler waits for room (within every session timeout of ours). */
export const HEARTBEAT_MS = 3000;

/** One batch of one partition, as a DurableSpec handler gets it. */
export interface DurableBatch {
  topic: string;
  partition: number;
  messages: StreamMessage[];
  lastOffset(): string;
  /** Messages behind the partition's high watermark after this batch. */
  offsetLag(): string;
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping. */
  isRunning(): boolean;
  /** True once the partition was taken away while the batch was handled. */
  isStale(): boolean;
  /**
   * The work on this batch's messages up to `offset` (inclusive) is durable once `done`
   * resolves (`units`: how much work it counts for against maxPending, 1 by default).
   * Messages not covered by a tracked offset when the handler returns are read again.
   */
  track(offset: string, done: Promise<void>, units?: number): void;
  /** Waits, heartbeating, for room below maxPending; false once the batch is stale or the consumer stops. */
  room(): Promise<boolean>;
}

export interface DurableSpec extends SpecBase {
  eachBatch(batch: DurableBatch): Promise<void>;
  /**
   * Units of tracked work pending at most per topic (work of partitions taken away
   * included, until it finishes): past it, a batch of the topic waits up to ROOM_WAIT_MS
   * for room before its handler is called, else it is handed back to be read again, so
   * a stuck dependency bounds memory rather than growing it, and holds its own topic only.
   */
  maxPending: number;
}

/** A group member with in-order commits of durable work: a Component. */
export class DurableConsumer implements Component {
  readonly name: string;
  private readonly inner: GroupConsumer;
  private readonly commits: InOrderCommits;
  private stopping = false;

  constructor(factory: GroupConsumerFactory, spec: DurableSpec, logger: Logger) {
    this.name = spec.name;
    this.commits = new InOrderCommits({
      commit: (offsets) => this.inner.commitOffsets(offsets),
      maxPending: spec.maxPending,
      logger,
    });
    this.inner = factory({
      ...spec,
      manualCommit: true,
      eachBatch: (payload) => this.eachBatch(spec, payload),
      onRevoked: () => {
        this.commits.revoke();
        spec.onRevoked?.();
      },
    });
  }

  /** Units of tracked work not yet finished. */
  get pending(): number {
    return this.commits.pending;
  }

  get joined(): boolean {
    return this.inner.joined;
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  health(): boolean {
    return this.inner.health();
  }

  /** Stops fetching (the first step of a shutdown); handlers see isRunning() false. */
  pause(): void {
    this.stopping = true;
    this.commits.stopping();
    this.inner.pause();
  }

  /** Resolves once all tracked work finished and what it made committable is committed. */
  settle(): Promise<void> {
    return this.commits.settle();
  }

  /** Leaves the group (work still pending is not committed: its messages are read again). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.commits.stopping();
    await this.inner.stop();
  }

  private async eachBatch(spec: DurableSpec, payload: GroupBatch): Promise<void> {
    const live = (): boolean => !this.stopping && payload.isRunning() && !payload.isStale();
    if (payload.batch.messages.length === 0 || !live()) return;
    const { topic, partition, messages } = payload.batch;
    // Within ROOM_WAIT_MS, well below every session timeout: no heartbeat needed.
    if (!(await this.commits.waitForRoom(topic, ROOM_WAIT_MS)) || !live()) return; // handed back: read again
    await spec.eachBatch({
      topic,
      partition,
      messages,
      lastOffset: () => payload.batch.lastOffset(),
      offsetLag: () => payload.batch.offsetLag(),
      heartbeat: () => payload.heartbeat(),
      isRunning: () => !this.stopping && payload.isRunning(),
      isStale: () => payload.isStale(),
      track: (offset, done, units) => {
        payload.resolveOffset(offset);
        this.commits.track(topic, partition, offset, done, units);
      },
      room: async () => {
        while (!this.commits.hasRoom(topic) && live()) {
          await this.commits.waitForRoom(topic, HEARTBEAT_MS);
          await payload.heartbeat().catch(() => undefined);
        }
        return live();
      },
    });
  }
}
