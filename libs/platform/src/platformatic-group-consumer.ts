import { Consumer, type GroupAssignment, type MessagesStream } from '@platformatic/kafka';
import { libraryOptions, toStreamMessage, type PlatformaticMessage } from './platformatic-messages.js';
import type { GroupBatch, GroupConsumer, GroupConsumerFactory, GroupConsumerSpec } from './kafka-group-consumer.js';
import type { CommittableOffset, StreamMessage } from './kafka-types.js';
import { PartitionBatcher } from './partition-batcher.js';
import { systemClock, type Clock } from './lifecycle.js';
import type { Logger } from './logger.js';

type Stream = MessagesStream<Buffer, Buffer, Buffer, Buffer>;

export interface PlatformaticGroupOptions {
  brokers: string[];
  clientId: string;
  /** First wait before a crashed member starts again; doubles up to 10 s. */
  restartDelayMs?: number;
  /** How often the high watermarks behind `offsetLag()` are read. */
  lagIntervalMs?: number;
}

/** The factory of group consumers on @platformatic/kafka (KAFKA_CLIENT=platformatic). */
export function platformaticGroupConsumers(
  options: PlatformaticGroupOptions,
  logger: Logger,
  clock: Clock = systemClock,
): GroupConsumerFactory {
  return (spec) => new PlatformaticGroupConsumer(options, logger, spec, clock);
}

const key = (topic: string, partition: number): string => `${topic}:${partition}`;
const sizeOf = (m: StreamMessage): number => (m.value?.length ?? 0) + (m.key?.length ?? 0) + 64;

/**
 * A group member on @platformatic/kafka with the same contract as KafkaGroupConsumer
 * (kafkajs): batches per partition in offset order, at most
 * `partitionsConsumedConcurrently` partitions handled at once, manual or per-batch
 * commits, and a health that notices a stalled loop.
 *
 * The library hands out a stream of single messages and joins, heartbeats and rejoins
 * by itself. What this adds:
 * - **Batches** (PartitionBatcher): messages are queued per partition as they arrive; a
 *   partition whose previous batch is finished gets everything queued for it as its next
 *   batch. The stream is paused while more than two fetches' worth of bytes wait.
 * - **Generations.** Every rebalance, join, crash or stop starts a new generation:
 *   queued messages are dropped, batches in hand become stale (`isStale()`), messages
 *   the old stream still delivers are dropped, and after a join the member reads through
 *   a new stream that starts at the group's committed offsets, so that no fetch begun
 *   before the rebalance can move its position.
 * - **Restarts.** A stream or group error, stalled heartbeats, or no join within the
 *   rebalance and session timeouts after a rebalance tear the member down and start it
 *   again with a growing delay, as kafkajs restarts a consumer after a retriable crash.
 */
export class PlatformaticGroupConsumer implements GroupConsumer {
  readonly name: string;
  private consumer: Consumer<Buffer, Buffer, Buffer, Buffer> | undefined;
  private stream: Stream | undefined;
  /** The generation the current stream was made for (a swap is due when it is older). */
  private streamGeneration = -1;
  private swapping: Promise<void> = Promise.resolve();
  private closing: Promise<void> = Promise.resolve();
  private readonly batcher: PartitionBatcher<StreamMessage>;
  private userPaused = false;
  private backpressure = false;
  private assignment: GroupAssignment[] = [];
  private readonly epochs = new Map<string, number>();
  private readonly highWatermarks = new Map<string, bigint>();
  private watchTimer: NodeJS.Timeout | undefined;
  private lastLagRead = 0;
  /** When the partitions were taken away with no join since (undefined: none pending). */
  private revokedAt: number | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private restartDelay: number;
  private running = false;
  private stopping = false;
  private joinedGroup = false;
  private lastProgress = 0;

  constructor(
    private readonly options: PlatformaticGroupOptions,
    private readonly logger: Logger,
    private readonly spec: GroupConsumerSpec,
    private readonly clock: Clock = systemClock,
  ) {
    this.name = spec.name;
    this.batcher = new PartitionBatcher<StreamMessage>({
      concurrency: Math.max(1, spec.partitionsConsumedConcurrently ?? 1),
      maxQueuedBytes: 2 * (spec.consumer.maxBytesPerPartition ?? 1_048_576),
      sizeOf,
      handle: (topic, partition, messages, generation) => this.handle(topic, partition, messages, generation),
      backpressure: (on) => {
        this.backpressure = on;
        if (on) this.stream?.pause();
        else if (!this.userPaused) this.stream?.resume();
      },
    });
    this.restartDelay = options.restartDelayMs ?? 1000;
  }

  async start(): Promise<void> {
    this.stopping = false;
    await this.open();
    this.running = true;
    this.progress();
    this.watchTimer = setInterval(() => this.watch(), 1000);
    this.watchTimer.unref();
  }

  get joined(): boolean {
    return this.joinedGroup;
  }

  /** Bumped by every rebalance, join, crash or stop (the batcher's). */
  private get generation(): number {
    return this.batcher.generation;
  }

  health(): boolean {
    if (!this.running) return false;
    if (this.assignedCount() === 0) return true;
    return this.clock.now() - this.lastProgress <= this.spec.stallAfterMs;
  }

  async commitOffsets(offsets: CommittableOffset[]): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) throw new Error(`${this.name}: not a group member`);
    // Only what this member owns now: a partition given to another member is theirs to commit.
    const owned = offsets.filter((o) => this.owns(o.topic, o.partition));
    if (owned.length === 0) return;
    await consumer.commit({
      offsets: owned.map((o) => ({
        topic: o.topic,
        partition: o.partition,
        offset: BigInt(o.offset),
        leaderEpoch: this.epochs.get(key(o.topic, o.partition)) ?? -1,
      })),
    });
  }

  pause(): void {
    this.userPaused = true;
    this.batcher.pause();
    this.stream?.pause();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.batcher.pause();
    clearTimeout(this.restartTimer);
    clearInterval(this.watchTimer);
    this.newGeneration();
    // Batches in hand see isRunning() false and finish; then leave the group, which
    // hands our partitions to the other members at once (also after a crash's close).
    await this.batcher.settled();
    await this.close();
    await this.closing;
    this.running = false;
    this.joinedGroup = false;
  }

  /**
   * Once a second: a member that lost its partitions and has not joined again within the
   * rebalance timeout starts again (the library rejoins after a failed commit without
   * telling anyone when that fails); and the high watermarks behind offsetLag().
   */
  private watch(): void {
    const c = this.spec.consumer;
    const limit = (c.rebalanceTimeout ?? 60_000) + (c.sessionTimeout ?? 30_000);
    if (this.revokedAt !== undefined && this.clock.now() - this.revokedAt > limit) {
      this.crash(new Error(`no join within ${limit} ms of a rebalance`));
      return;
    }
    const lagEvery = this.options.lagIntervalMs ?? 5000;
    if ('eachBatch' in this.spec && this.clock.now() - this.lastLagRead >= lagEvery) {
      this.lastLagRead = this.clock.now();
      void this.readHighWatermarks();
    }
  }

  /** Builds the library's consumer, joins the group and starts reading. */
  private async open(): Promise<void> {
    const consumer = new Consumer<Buffer, Buffer, Buffer, Buffer>(libraryOptions(this.options, this.spec));
    this.consumer = consumer;
    consumer.on('consumer:group:join', (p) => {
      if (this.consumer !== consumer) return;
      this.newGeneration();
      this.revokedAt = undefined;
      this.assignment = p.assignments ?? [];
      this.joinedGroup = true;
      this.progress();
      const byTopic: Record<string, number[]> = {};
      for (const a of this.assignment) byTopic[a.topic] = [...a.partitions];
      this.spec.onAssigned?.(byTopic);
      // The first stream is made after the first join (consume joins first).
      if (this.stream) this.swapStream();
    });
    const revoke = () => {
      if (this.consumer !== consumer) return;
      this.newGeneration();
      this.revokedAt ??= this.clock.now();
      this.assignment = [];
    };
    consumer.on('consumer:group:rebalance', revoke);
    consumer.on('consumer:group:leave', revoke);
    consumer.on('consumer:heartbeat:end', () => {
      if (this.consumer !== consumer) return;
      this.spec.onHeartbeat?.();
    });
    consumer.on('consumer:heartbeat:stalled', () => {
      if (this.consumer === consumer) this.crash(new Error('no heartbeat reached the group coordinator in time'));
    });
    consumer.on('error', (err: Error) => {
      if (this.consumer === consumer) this.crash(err);
    });
    try {
      const stream = await consumer.consume(this.consumeOptions());
      this.attach(stream, this.generation);
    } catch (err) {
      this.consumer = undefined;
      await consumer.close(true).catch(() => undefined);
      throw err;
    }
  }

  private consumeOptions() {
    return {
      topics: this.spec.topics,
      mode: 'committed' as const,
      fallbackMode: this.spec.fromBeginning ? ('earliest' as const) : ('latest' as const),
      autocommit: false,
    };
  }

  /** Makes `stream` the one this member reads, for `generation`. */
  private attach(stream: Stream, generation: number): void {
    this.stream = stream;
    this.streamGeneration = generation;
    stream.on('data', (m: PlatformaticMessage) => {
      // Nothing from before a rebalance: after one, only the next join's new stream counts.
      if (generation === this.generation && this.stream === stream) {
        this.epochs.set(key(m.topic, m.partition), m.leaderEpoch);
        this.batcher.enqueue(m.topic, m.partition, toStreamMessage(m));
      }
    });
    stream.on('fetch', () => {
      if (this.stream === stream && this.batcher.handling === 0) this.progress();
    });
    stream.on('error', (err: Error) => {
      if (this.stream === stream) this.crash(err);
    });
    stream.on('close', () => {
      if (this.stream === stream && !this.stopping) this.crash(new Error('the message stream closed'));
    });
    if (this.userPaused || this.backpressure) stream.pause();
  }

  /**
   * After a join: a new stream from the group's committed offsets, then the old one
   * closed (in that order, so the library never sees the topics unsubscribed).
   */
  private swapStream(): void {
    this.swapping = this.swapping.then(async () => {
      const consumer = this.consumer;
      const old = this.stream;
      if (!consumer || !old || this.stopping || this.streamGeneration === this.generation) return;
      old.pause();
      // Stamped with the generation it was made for: a join while it is being made
      // leaves it stale, and the next swap in the chain replaces it too.
      const generation = this.generation;
      let next: Stream;
      try {
        next = await consumer.consume(this.consumeOptions());
      } catch (err) {
        if (this.consumer === consumer) this.crash(err as Error);
        return;
      }
      if (this.consumer !== consumer || this.stopping) {
        // Closed (a crash or a stop) while it was being made: it must not outlive its consumer.
        await next.close().catch(() => undefined);
        return;
      }
      this.attach(next, generation);
      await old.close().catch(() => undefined);
    });
  }

  private async handle(topic: string, partition: number, messages: StreamMessage[], generation: number): Promise<void> {
    const stale = () => generation !== this.generation;
    const isRunning = () => this.running && !this.stopping;
    const heartbeat = () => {
      this.progress();
      return Promise.resolve();
    };
    this.progress();
    try {
      if ('eachBatch' in this.spec) {
        let resolved: string | undefined;
        const last = messages[messages.length - 1]!.offset;
        await this.spec.eachBatch({
          batch: {
            topic,
            partition,
            messages,
            lastOffset: () => last,
            offsetLag: () => this.offsetLag(topic, partition, last),
          },
          resolveOffset: (offset) => {
            if (resolved === undefined || BigInt(offset) > BigInt(resolved)) resolved = offset;
          },
          heartbeat,
          isRunning,
          isStale: stale,
        } satisfies GroupBatch);
        // What the user left unresolved is read again, as kafkajs seeks back to it.
        const rest = resolved === undefined ? messages : messages.filter((m) => BigInt(m.offset) > BigInt(resolved!));
        if (rest.length > 0 && !stale() && isRunning()) this.batcher.requeue(topic, partition, rest);
      } else {
        const spec = this.spec;
        for (const message of messages) {
          if (stale() || !isRunning()) return;
          await spec.eachMessage({ topic, partition, message, heartbeat });
        }
        if (!stale()) {
          const next = (BigInt(messages[messages.length - 1]!.offset) + 1n).toString();
          await this.commitOffsets([{ topic, partition, offset: next }]).catch((err: unknown) =>
            this.logger.debug('offset not committed', { topic, partition, err: String(err) }),
          );
        }
      }
    } catch (err) {
      if (!stale()) this.crash(err as Error);
    } finally {
      this.progress();
    }
  }

  /** Drops what was queued and makes every batch in hand stale. */
  private newGeneration(): void {
    this.batcher.newGeneration();
    this.spec.onRevoked?.();
  }

  /** Logs the crash, leaves the group and starts again after a delay (growing). */
  private crash(err: Error): void {
    if (this.stopping || !this.consumer) return;
    this.logger.warn(this.spec.crashMessage, { err: String(err), restart: true });
    this.newGeneration();
    this.revokedAt = undefined;
    this.assignment = [];
    this.spec.onCrash?.(true);
    void this.close().then(() => this.scheduleRestart());
  }

  /** Opens again after the current delay (1 s, doubling up to 10 s until an open succeeds). */
  private scheduleRestart(): void {
    if (this.stopping) return;
    const delay = this.restartDelay;
    this.restartDelay = Math.min(10_000, delay * 2);
    this.restartTimer = setTimeout(() => {
      if (this.stopping) return;
      this.open().then(
        () => {
          this.restartDelay = this.options.restartDelayMs ?? 1000;
        },
        (err: unknown) => {
          this.logger.warn(this.spec.crashMessage, { err: String(err), restart: true });
          this.scheduleRestart();
        },
      );
    }, delay);
  }

  /** Closes the stream and the library's consumer (leaving the group). */
  private close(): Promise<void> {
    const consumer = this.consumer;
    this.consumer = undefined;
    this.assignment = [];
    const closed = (async () => {
      // A swap in progress sees the consumer gone and closes what it made.
      await this.swapping.catch(() => undefined);
      const stream = this.stream;
      this.stream = undefined;
      if (stream) await stream.close().catch(() => undefined);
      if (consumer) {
        await consumer
          .close(true)
          .catch((err: unknown) => this.logger.debug('group consumer close failed', { err: String(err) }));
      }
    })();
    this.closing = this.closing.then(() => closed);
    return closed;
  }

  private owns(topic: string, partition: number): boolean {
    return this.assignment.some((a) => a.topic === topic && a.partitions.includes(partition));
  }

  private assignedCount(): number {
    return this.assignment.reduce((n, a) => n + a.partitions.length, 0);
  }

  private offsetLag(topic: string, partition: number, last: string): string {
    const high = this.highWatermarks.get(key(topic, partition));
    if (high === undefined) return '0';
    const lag = high - BigInt(last) - 1n;
    return (lag > 0n ? lag : 0n).toString();
  }

  private async readHighWatermarks(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer || this.assignedCount() === 0) return;
    try {
      const offsets = await consumer.listOffsets({ topics: this.spec.topics });
      for (const [topic, partitions] of offsets) {
        partitions.forEach((o, partition) => this.highWatermarks.set(key(topic, partition), o));
      }
    } catch {
      // The next tick tries again; the lag figure is a gauge, not a decision.
    }
  }

  private progress(): void {
    this.lastProgress = this.clock.now();
  }
}
