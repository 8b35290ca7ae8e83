import type { Consumer, Kafka } from 'kafkajs';
import type { CommittableOffset, ConsumerSettings, StreamMessage } from './kafka-types.js';
import { systemClock, type Clock, type Component } from './lifecycle.js';
import type { Logger } from './logger.js';

/**
 * One fetched batch, as a group consumer hands it to its user (kafkajs's EachBatchPayload
 * fits it; @platformatic/kafka's messages are adapted; unit tests pass their own).
 */
export interface GroupBatch {
  batch: {
    topic: string;
    partition: number;
    messages: StreamMessage[];
    lastOffset(): string;
    offsetLag(): string;
  };
  resolveOffset(offset: string): void;
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping. */
  isRunning(): boolean;
  /** True once the partition was revoked (a rebalance) while the batch was handled. */
  isStale(): boolean;
}

/** One message, as the group consumer hands it to its user (kafkajs's EachMessagePayload fits it). */
export interface GroupMessage {
  topic: string;
  partition: number;
  message: StreamMessage;
  heartbeat(): Promise<void>;
}

export interface SpecBase {
  /** The component's name (health details). */
  name: string;
  groupId: string;
  topics: string[];
  /** Where a new group starts; existing groups resume from their commits. */
  fromBeginning: boolean;
  /** Group member settings (session timeout, heartbeat interval, fetch sizes...). */
  consumer: ConsumerSettings;
  partitionsConsumedConcurrently?: number;
  /**
   * The loop counts as stalled, and health() fails, when partitions are assigned and
   * neither a heartbeat nor a batch/message started or finished for this long.
   */
  stallAfterMs: number;
  /** Log message of a crash (kafkajs restarts the consumer after retriable ones). */
  crashMessage: string;
  /** Partitions this member was given (kafkajs GROUP_JOIN), by topic. */
  onAssigned?(assignment: Readonly<Record<string, readonly number[]>>): void;
  /** Partitions are being taken away: a rebalance began, the consumer stopped or crashed. */
  onRevoked?(): void;
  /** A heartbeat reached the group coordinator. */
  onHeartbeat?(): void;
  /** After the crash was logged; `restart`: kafkajs restarts the consumer itself. */
  onCrash?(restart: boolean): void;
}

/** Batches with manual offsets: resolve and commit exactly what was written. */
export interface BatchSpec extends SpecBase {
  eachBatch(batch: GroupBatch): Promise<void>;
  /** kafkajs's autoCommit and eachBatchAutoResolve are both off. */
  manualCommit: true;
}

/** One message at a time; kafkajs commits a message once eachMessage resolved. */
export interface MessageSpec extends SpecBase {
  eachMessage(message: GroupMessage): Promise<void>;
}

export type GroupConsumerSpec = BatchSpec | MessageSpec;

/** A running group member: a Component, plus what its users need of the group. */
export interface GroupConsumer extends Component {
  /** Commits offsets (manual-commit users). */
  commitOffsets(offsets: CommittableOffset[]): Promise<void>;
  /** Stops fetching every subscribed topic (the first step of a shutdown). */
  pause(): void;
  /** True once the member has joined its group (and not crashed for good or stopped since). */
  readonly joined: boolean;
}

/** Builds group consumers: KafkaGroupConsumer in production, a fake in unit tests. */
export type GroupConsumerFactory = (spec: GroupConsumerSpec) => GroupConsumer;

/** The factory of real group consumers on `kafka`. */
export function kafkaGroupConsumers(kafka: Kafka, logger: Logger, clock: Clock = systemClock): GroupConsumerFactory {
  return (spec) => new KafkaGroupConsumer(kafka, logger, spec, clock);
}

/**
 * One kafkajs group member with what every user of ours repeated: connect, subscribe,
 * run, crash logging, stop, and a health that notices a stalled loop (not only a
 * `running` flag: a handler stuck on a dependency keeps the flag up while nothing moves).
 */
export class KafkaGroupConsumer implements GroupConsumer {
  readonly name: string;
  private readonly consumer: Consumer;
  private running = false;
  private joinedGroup = false;
  private assigned = 0;
  private lastProgress = 0;

  constructor(
    kafka: Kafka,
    private readonly logger: Logger,
    private readonly spec: GroupConsumerSpec,
    private readonly clock: Clock = systemClock,
  ) {
    this.name = spec.name;
    this.consumer = kafka.consumer({ ...spec.consumer, groupId: spec.groupId });
    const c = this.consumer;
    c.on(c.events.GROUP_JOIN, (e) => {
      const assignment = e.payload.memberAssignment;
      this.assigned = Object.values(assignment).reduce((n, ps) => n + ps.length, 0);
      this.joinedGroup = true;
      this.progress();
      spec.onAssigned?.(assignment);
    });
    c.on(c.events.HEARTBEAT, () => {
      this.progress();
      spec.onHeartbeat?.();
    });
    c.on(c.events.REBALANCING, () => this.revoked());
    c.on(c.events.STOP, () => this.revoked());
    c.on(c.events.CRASH, (e) => {
      const { error, restart } = e.payload;
      logger.log(restart ? 'warn' : 'error', spec.crashMessage, { err: String(error), restart });
      this.revoked();
      if (!restart) {
        this.running = false;
        this.joinedGroup = false;
      }
      spec.onCrash?.(restart);
    });
  }

  async start(): Promise<void> {
    const spec = this.spec;
    await this.consumer.connect();
    await this.consumer.subscribe({ topics: spec.topics, fromBeginning: spec.fromBeginning });
    if ('eachBatch' in spec) {
      await this.consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: spec.partitionsConsumedConcurrently,
        eachBatch: (payload) => this.track(() => spec.eachBatch(payload)),
      });
    } else {
      await this.consumer.run({
        partitionsConsumedConcurrently: spec.partitionsConsumedConcurrently,
        eachMessage: (payload) => this.track(() => spec.eachMessage(payload)),
      });
    }
    this.running = true;
    this.progress();
  }

  get joined(): boolean {
    return this.joinedGroup;
  }

  health(): boolean {
    if (!this.running) return false;
    if (this.assigned === 0) return true;
    return this.clock.now() - this.lastProgress <= this.spec.stallAfterMs;
  }

  commitOffsets(offsets: CommittableOffset[]): Promise<void> {
    return this.consumer.commitOffsets(offsets);
  }

  pause(): void {
    this.consumer.pause(this.spec.topics.map((topic) => ({ topic })));
  }

  async stop(): Promise<void> {
    // Leaving the group hands our partitions to the other members at once.
    await this.consumer.disconnect();
    this.running = false;
    this.joinedGroup = false;
  }

  private async track(handle: () => Promise<void>): Promise<void> {
    this.progress();
    try {
      await handle();
    } finally {
      this.progress();
    }
  }

  private progress(): void {
    this.lastProgress = this.clock.now();
  }

  private revoked(): void {
    this.assigned = 0;
    this.spec.onRevoked?.();
  }
}

/**
 * A component whose work loop is a group consumer (it builds it in its constructor):
 * starting it starts the consumer, and it is healthy while the consumer runs and its
 * loop is not stalled. Each subclass says how it stops.
 */
export abstract class OnGroupConsumer implements Component {
  abstract readonly name: string;
  protected abstract readonly consumer: Pick<GroupConsumer, 'start' | 'health'>;

  start(): Promise<void> {
    return this.consumer.start();
  }

  health(): boolean {
    return this.consumer.health();
  }

  abstract stop(): Promise<void>;
}
