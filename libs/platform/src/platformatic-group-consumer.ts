import { Consumer, type GroupAssignment, type Message, type MessagesStream } from '@platformatic/kafka';
import type { KafkaMessage } from 'kafkajs';
import type {
  CommittableOffset,
  GroupBatch,
  GroupConsumer,
  GroupConsumerFactory,
  GroupConsumerSpec,
} from './kafka-group-consumer.js';
import { systemClock, type Clock } from './lifecycle.js';
import type { Logger } from './logger.js';

type Stream = MessagesStream<Buffer, Buffer, Buffer, Buffer>;
type PlatformaticMessage = Message<Buffer, Buffer, Buffer, Buffer>;

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

/** The messages of one partition read and not yet handed to the user. */
interface PartitionQueue {
  topic: string;
  partition: number;
  messages: KafkaMessage[];
  bytes: number;
}

const key = (topic: string, partition: number): string => `${topic}:${partition}`;
const sizeOf = (m: KafkaMessage): number => (m.value?.length ?? 0) + (m.key?.length ?? 0) + 64;

/**
 * The group protocol kafkajs's members offer (its RoundRobinAssigner): members of both
 * libraries then form one group, so a rolling change of KAFKA_CLIENT (or an upgrade from a
 * kafkajs consumer) needs no stop. Both encode the standard consumer-protocol metadata.
 */
const GROUP_PROTOCOLS = [{ name: 'RoundRobinAssigner', version: 0 }];

/**
 * A group member on @platformatic/kafka with the same contract as KafkaGroupConsumer
 * (kafkajs): batches per partition in offset order, at most
 * `partitionsConsumedConcurrently` partitions handled at once, manual or per-batch
 * commits, and a health that notices a stalled loop.
 *
 * The library hands out a stream of single messages and joins, heartbeats and rejoins
 * by itself. What this adds:
 * - **Batches.** Messages are queued per partition as they arrive; a partition whose
 *   previous batch is finished gets everything queued for it as its next batch. The
 *   stream is paused while more than two fetches' worth of bytes wait (bounded memory).
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
  private generation = 0;
  private swapping: Promise<void> = Promise.resolve();
  private closing: Promise<void> = Promise.resolve();
  private readonly queues = new Map<string, PartitionQueue>();
  /** Partitions with a batch in hand (of any generation): one batch per partition at a time. */
  private readonly busy = new Set<string>();
  private queuedBytes = 0;
  private handling = 0;
  private readonly inFlight = new Set<Promise<void>>();
  private dispatchScheduled = false;
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
  private readonly concurrency: number;
  private readonly maxQueuedBytes: number;

  constructor(
    private readonly options: PlatformaticGroupOptions,
    private readonly logger: Logger,
    private readonly spec: GroupConsumerSpec,
    private readonly clock: Clock = systemClock,
  ) {
    this.name = spec.name;
    this.concurrency = Math.max(1, spec.partitionsConsumedConcurrently ?? 1);
    this.maxQueuedBytes = 2 * (spec.consumer.maxBytesPerPartition ?? 1_048_576);
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
    this.stream?.pause();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    clearInterval(this.watchTimer);
    this.newGeneration();
    // Batches in hand see isRunning() false and finish; then leave the group, which
    // hands our partitions to the other members at once (also after a crash's close).
    await Promise.allSettled([...this.inFlight]);
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
    const c = this.spec.consumer;
    const consumer = new Consumer<Buffer, Buffer, Buffer, Buffer>({
      clientId: this.options.clientId,
      bootstrapBrokers: this.options.brokers,
      groupId: this.spec.groupId,
      sessionTimeout: c.sessionTimeout ?? 30_000,
      heartbeatInterval: c.heartbeatInterval ?? 3000,
      rebalanceTimeout: c.rebalanceTimeout ?? 60_000,
      maxBytesPerPartition: c.maxBytesPerPartition ?? 1_048_576,
      maxWaitTime: c.maxWaitTimeInMs ?? 5000,
      autocommit: false,
      connectTimeout: 3000,
      timeout: 10_000,
      retries: 5,
      retryDelay: 500,
      protocols: GROUP_PROTOCOLS,
    });
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
      if (generation === this.generation && this.stream === stream) this.enqueue(m);
    });
    stream.on('fetch', () => {
      if (this.stream === stream && this.handling === 0) this.progress();
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

  private enqueue(m: PlatformaticMessage): void {
    const k = key(m.topic, m.partition);
    let q = this.queues.get(k);
    if (!q) {
      q = { topic: m.topic, partition: m.partition, messages: [], bytes: 0 };
      this.queues.set(k, q);
    }
    const message = toKafkaMessage(m);
    q.messages.push(message);
    this.epochs.set(k, m.leaderEpoch);
    this.queued(q, sizeOf(message));
    this.scheduleDispatch();
  }

  /** Counts `bytes` more in `q`, pausing the stream past the bound. */
  private queued(q: PartitionQueue, bytes: number): void {
    q.bytes += bytes;
    this.queuedBytes += bytes;
    if (this.queuedBytes > this.maxQueuedBytes && !this.backpressure) {
      this.backpressure = true;
      this.stream?.pause();
    }
  }

  private scheduleDispatch(): void {
    if (this.dispatchScheduled) return;
    this.dispatchScheduled = true;
    // After the rest of the fetch response is pushed: one batch per partition per fetch.
    setImmediate(() => {
      this.dispatchScheduled = false;
      this.dispatch();
    });
  }

  /**
   * Hands queued partitions to the user up to the concurrency, in turn: a partition
   * handed a batch goes to the back of the line.
   */
  private dispatch(): void {
    if (this.userPaused || this.stopping) return;
    for (const [k, q] of [...this.queues]) {
      if (this.handling >= this.concurrency) break;
      if (this.busy.has(k) || q.messages.length === 0) continue;
      const messages = q.messages;
      q.messages = [];
      this.queuedBytes -= q.bytes;
      q.bytes = 0;
      this.queues.delete(k);
      this.queues.set(k, q);
      this.busy.add(k);
      this.handling++;
      const done = this.handle(q, messages, this.generation).finally(() => {
        this.busy.delete(k);
        this.handling--;
        this.inFlight.delete(done);
        this.relieve();
        // On the next turn of the event loop: a batch handed back unresolved must not
        // come round again in the same microtask queue (it would starve the loop).
        this.scheduleDispatch();
      });
      this.inFlight.add(done);
    }
    this.relieve();
  }

  /** Resumes reading once the queues are below half their bound. */
  private relieve(): void {
    if (this.backpressure && this.queuedBytes <= this.maxQueuedBytes / 2) {
      this.backpressure = false;
      if (!this.userPaused) this.stream?.resume();
    }
  }

  private async handle(q: PartitionQueue, messages: KafkaMessage[], generation: number): Promise<void> {
    const { topic, partition } = q;
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
        if (rest.length > 0 && !stale() && isRunning()) this.requeue(q, rest);
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

  private requeue(q: PartitionQueue, rest: KafkaMessage[]): void {
    const k = key(q.topic, q.partition);
    // The queue of this generation (a new one if the partition's was dropped meanwhile).
    const now = this.queues.get(k) ?? q;
    this.queues.set(k, now);
    now.messages = [...rest, ...now.messages];
    this.queued(
      now,
      rest.reduce((n, m) => n + sizeOf(m), 0),
    );
  }

  /** Drops what was queued and makes every batch in hand stale. */
  private newGeneration(): void {
    this.generation++;
    this.queues.clear();
    this.queuedBytes = 0;
    this.relieve();
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

/** The library's message in kafkajs's shape, which our users read (value, key, offset). */
function toKafkaMessage(m: PlatformaticMessage): KafkaMessage {
  const headers: Record<string, Buffer> = {};
  for (const [k, v] of m.headers) headers[k.toString()] = v;
  return {
    key: m.key ?? null,
    value: m.value ?? null,
    timestamp: m.timestamp.toString(),
    attributes: 0,
    offset: m.offset.toString(),
    headers,
  };
}
