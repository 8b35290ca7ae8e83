import { Gauge, type Registry } from 'prom-client';
import {
  systemClock,
  type Clock,
  type Component,
  type GroupConsumer,
  type GroupConsumerFactory,
  type Logger,
} from '@telemetry/platform';
import { monitorPartition, type MonitorChange } from '@telemetry/store';

export interface AssignmentDeps {
  /** Builds the group member (serviceKafka(...).groupConsumers in production: KAFKA_CLIENT picks the library). */
  consumers: GroupConsumerFactory;
  /** The topic's partition count now (ServiceKafka.admin.countPartitions in production). */
  countPartitions(topic: string): Promise<number>;
  logger: Logger;
  registry: Registry;
  topic: string;
  groupId: string;
  sessionTimeoutMs: number;
  /**
   * A group besides the location's: `browser` (its members are the runners with Chromium,
   * and own the monitors that need it) or `decide` (every runner, whatever its location:
   * the owners decide the monitors of several locations, decision.ts). Names the
   * component and its gauge apart from the main group's.
   */
  capability?: string;
  /** The help of the group's gauge (runner_owned_<capability>_partitions). */
  gaugeHelp?: string;
  /** A registry change notice arrived for a monitor this runner owns. */
  onNotice: (change: MonitorChange) => void;
  /** The set of owned partitions changed (joined, lost, rebalanced). */
  onChange: () => void;
  clock?: Clock;
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
  readonly name: string;
  private readonly consumer: GroupConsumer;
  private readonly clock: Clock;
  private owned = new Set<number>();
  private partitions = 0;
  private lastContact = 0;
  private readonly ownedGauge: Gauge;

  constructor(private readonly deps: AssignmentDeps) {
    this.clock = deps.clock ?? systemClock;
    const cap = deps.capability;
    this.name = cap ? `runner-group-${cap}` : 'runner-group';
    this.ownedGauge = new Gauge({
      name: cap ? `runner_owned_${cap}_partitions` : 'runner_owned_partitions',
      help:
        deps.gaugeHelp ??
        (cap
          ? `Partitions of the monitor-changes topic (shares of the ${cap} monitors) this runner owns in its ${cap} group`
          : 'Partitions of the monitor-changes topic (shares of the monitors) this runner owns'),
      registers: [deps.registry],
    });
    this.consumer = deps.consumers({
      name: cap ? `runner-group-${cap}-consumer` : 'runner-group-consumer',
      groupId: deps.groupId,
      topics: [deps.topic],
      fromBeginning: false,
      consumer: {
        sessionTimeout: deps.sessionTimeoutMs,
        heartbeatInterval: Math.max(500, Math.floor(deps.sessionTimeoutMs / 10)),
        // Short fetch waits keep the heartbeat loop turning on a quiet topic.
        maxWaitTimeInMs: 250,
        allowAutoTopicCreation: false,
      },
      eachMessage: ({ message }) => {
        try {
          const change = JSON.parse(message.value?.toString('utf8') ?? 'null') as MonitorChange | null;
          if (change && typeof change.id === 'string') this.deps.onNotice(change);
        } catch {
          // Not a notice: the registry's change feed covers whatever it meant.
        }
        return Promise.resolve();
      },
      // Ownership lapses after half a session without a heartbeat; the loop is stalled
      // (and /readyz fails) after a whole one.
      stallAfterMs: deps.sessionTimeoutMs,
      crashMessage: cap ? `runner ${cap} group consumer crashed` : 'runner group consumer crashed',
      onAssigned: (assignment) => {
        this.lastContact = this.clock.now();
        this.set(new Set(assignment[deps.topic] ?? []));
        // Partitions added to the topic since start-up move monitors: recount.
        void this.refreshPartitionCount().catch((err: unknown) =>
          deps.logger.warn('could not recount monitor partitions', { err: String(err) }),
        );
      },
      onHeartbeat: () => {
        const now = this.clock.now();
        // Ownership had lapsed (owns() answered false): a reconcile in that gap dropped
        // these monitors, and set() sees the same partitions, so say it changed back.
        const lapsed = this.owned.size > 0 && now - this.lastContact > deps.sessionTimeoutMs / 2;
        this.lastContact = now;
        if (lapsed) this.deps.onChange();
      },
      // A rebalance (before rejoining, so before anyone else can be given the
      // partition), a stop or a crash.
      onRevoked: () => this.set(new Set()),
    });
  }

  async start(): Promise<void> {
    await this.refreshPartitionCount();
    await this.consumer.start();
  }

  /** Does this runner run `monitorId`'s checks now? */
  owns(monitorId: string): boolean {
    if (this.partitions === 0 || this.owned.size === 0) return false;
    if (this.clock.now() - this.lastContact > this.deps.sessionTimeoutMs / 2) return false;
    return this.owned.has(monitorPartition(monitorId, this.partitions));
  }

  ownedPartitions(): number[] {
    return [...this.owned].sort((a, b) => a - b);
  }

  /** Joined the group, and its loop not stalled while it holds partitions. */
  health(): boolean {
    return this.consumer.joined && this.consumer.health();
  }

  async stop(): Promise<void> {
    this.set(new Set());
    // Leaving the group hands our partitions to the others at once.
    await this.consumer.stop();
  }

  private set(owned: Set<number>): void {
    const before = [...this.owned].sort().join(',');
    this.owned = owned;
    this.ownedGauge.set(owned.size);
    if ([...owned].sort().join(',') !== before) {
      this.deps.logger.info('monitor partitions assigned', {
        partitions: [...owned].sort((a, b) => a - b),
        ...(this.deps.capability ? { capability: this.deps.capability } : {}),
      });
      this.deps.onChange();
    }
  }

  private async refreshPartitionCount(): Promise<void> {
    const count = await this.deps.countPartitions(this.deps.topic);
    if (count !== this.partitions) {
      this.partitions = count;
      this.deps.onChange();
    }
  }
}
