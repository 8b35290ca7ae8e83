import type { Consumer, Kafka } from 'kafkajs';
import { Gauge, type Registry } from 'prom-client';
import { type Component, type Logger } from '@telemetry/platform';
import { monitorPartition, type MonitorChange } from '@telemetry/store';

export interface AssignmentDeps {
  kafka: Kafka;
  logger: Logger;
  registry: Registry;
  topic: string;
  groupId: string;
  sessionTimeoutMs: number;
  /** A registry change notice arrived for a monitor this runner owns. */
  onNotice: (change: MonitorChange) => void;
  /** The set of owned partitions changed (joined, lost, rebalanced). */
  onChange: () => void;
}

/**
 * Which monitors this runner owns. Every runner is a member of one Kafka consumer group
 * over the monitor-changes topic; a monitor belongs to the runner that owns partition
 * monitorPartition(id) of it. Kafka's group protocol gives each partition to exactly
 * one member and moves it when a member joins, leaves or stops heartbeating.
 *
 * Ownership is dropped the moment kafkajs reports a rebalance (before it rejoins, so
 * before anyone else can be given the partition), a crash, or a stop; and it lapses by
 * itself when no heartbeat has succeeded for half the session timeout, so a runner cut
 * off from Kafka stops checking before the group gives its monitors to another.
 */
export class GroupAssignment implements Component {
  readonly name = 'runner-group';
  private readonly consumer: Consumer;
  private owned = new Set<number>();
  private partitions = 0;
  private lastContact = 0;
  private joined = false;
  private readonly ownedGauge: Gauge;

  constructor(private readonly deps: AssignmentDeps) {
    this.consumer = deps.kafka.consumer({
      groupId: deps.groupId,
      sessionTimeout: deps.sessionTimeoutMs,
      heartbeatInterval: Math.max(500, Math.floor(deps.sessionTimeoutMs / 10)),
      // Short fetch waits keep the heartbeat loop turning on a quiet topic.
      maxWaitTimeInMs: 250,
      allowAutoTopicCreation: false,
    });
    this.ownedGauge = new Gauge({
      name: 'runner_owned_partitions',
      help: 'Partitions of the monitor-changes topic (shares of the monitors) this runner owns',
      registers: [deps.registry],
    });
    const c = this.consumer;
    c.on(c.events.GROUP_JOIN, (e) => {
      const mine = e.payload.memberAssignment[deps.topic] ?? [];
      this.lastContact = Date.now();
      this.joined = true;
      this.set(new Set(mine));
      // Partitions added to the topic since start-up move monitors: recount.
      void this.refreshPartitionCount().catch((err: unknown) =>
        deps.logger.warn('could not recount monitor partitions', { err: String(err) }),
      );
    });
    c.on(c.events.HEARTBEAT, () => {
      this.lastContact = Date.now();
    });
    c.on(c.events.REBALANCING, () => this.set(new Set()));
    c.on(c.events.STOP, () => this.set(new Set()));
    c.on(c.events.CRASH, (e) => {
      deps.logger.log(e.payload.restart ? 'warn' : 'error', 'runner group consumer crashed', {
        err: String(e.payload.error),
        restart: e.payload.restart,
      });
      this.set(new Set());
      if (!e.payload.restart) this.joined = false;
    });
  }

  async start(): Promise<void> {
    await this.refreshPartitionCount();
    await this.consumer.connect();
    await this.consumer.subscribe({ topics: [this.deps.topic], fromBeginning: false });
    await this.consumer.run({
      eachMessage: async ({ message }) => {
        try {
          const change = JSON.parse(message.value?.toString('utf8') ?? 'null') as MonitorChange | null;
          if (change && typeof change.id === 'string') this.deps.onNotice(change);
        } catch {
          // Not a notice: the periodic registry reload covers whatever it meant.
        }
        return Promise.resolve();
      },
    });
  }

  /** Does this runner run `monitorId`'s checks now? */
  owns(monitorId: string): boolean {
    if (this.partitions === 0 || this.owned.size === 0) return false;
    if (Date.now() - this.lastContact > this.deps.sessionTimeoutMs / 2) return false;
    return this.owned.has(monitorPartition(monitorId, this.partitions));
  }

  ownedPartitions(): number[] {
    return [...this.owned].sort((a, b) => a - b);
  }

  health(): boolean {
    return this.joined;
  }

  async stop(): Promise<void> {
    this.set(new Set());
    // Leaving the group hands our partitions to the others at once.
    await this.consumer.disconnect();
    this.joined = false;
  }

  private set(owned: Set<number>): void {
    const before = [...this.owned].sort().join(',');
    this.owned = owned;
    this.ownedGauge.set(owned.size);
    if ([...owned].sort().join(',') !== before) {
      this.deps.logger.info('monitor partitions assigned', { partitions: [...owned].sort((a, b) => a - b) });
      this.deps.onChange();
    }
  }

  private async refreshPartitionCount(): Promise<void> {
    const admin = this.deps.kafka.admin();
    await admin.connect();
    try {
      const meta = await admin.fetchTopicMetadata({ topics: [this.deps.topic] });
      const count = meta.topics[0]?.partitions.length ?? 0;
      if (count !== this.partitions) {
        this.partitions = count;
        this.deps.onChange();
      }
    } finally {
      await admin.disconnect();
    }
  }
}
