import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Counter, Gauge, type Registry } from 'prom-client';
import {
  isStateAlert,
  type AlertMessage,
  AnyChannelTarget,
  WebhookDeliveryMessage,
  ChannelTarget,
  ChannelType,
  Validators,
} from '@telemetry/contract';
import { counter, DurableConsumer, KeyedQueue, OnGroupConsumer } from '@telemetry/platform';
import type { DurableBatch, GroupConsumerFactory, Logger } from '@telemetry/platform';
import {
  channelFor,
  type Answer,
  type ChannelContext,
  type ChannelHttp,
  type ChannelRegistry,
  type Mailer,
} from '@telemetry/alerting';

export interface DispatcherDeps {
  /** Builds the group member (serviceKafka(...).groupConsumers in production: KAFKA_CLIENT picks the library). */
  consumers: GroupConsumerFactory;
  logger: Logger;
  registry: Registry;
  validators: Validators;
  topic: string;
  groupId: string;
  /**
   * Where an alert goes (monitorTargets in targets.ts: its monitor's targets).
   * NOTE: must not reject: an alert whose targets cannot be found would stay pending
   * and hold every later offset of its partition uncommitted.
   */
  targets: (alert: AlertMessage) => Promise<readonly AnyChannelTarget[]>;
  /** The channel of each target type (CHANNELS in production). */
  channels: ChannelRegistry;
  /** The runner's HTTP client, bound to the egress policy every delivery's connection is judged by. */
  http: ChannelHttp;
  /** Sends mail (email channels). */
  mail: Mailer;
  userAgent: string;
  timeoutMs: number;
  maxAttempts: number;
  retryBaseMs: number;
  /** Alerts read but not yet delivered or given up; reading waits beyond this. */
  maxPending: number;
  /** Publishes the record of one delivery attempt (to the webhook-deliveries topic); resolves once it is in Kafka. */
  record: (attempt: WebhookDeliveryMessage) => Promise<void>;
  /** The wall clock, in ms (Date.now unless a test sets it). */
  now?: () => number;
}

/**
 * Delivers each alert to its targets through their channels (channels/), the same way
 * for every channel. It reads the alerts topic as its own consumer group. Deliveries
 * queue per endpoint (the channel's `endpoint`: a webhook's origin): one endpoint's
 * deliveries go in order, one at a time, retried with doubling waits
 * (WEBHOOK_MAX_ATTEMPTS), and a dead endpoint delays only its own. Each alert's delivery
 * is tracked as its durable completion (DurableConsumer): offsets are committed in order,
 * up to the oldest alert whose targets are not all delivered or given up, so a
 * runner that dies mid-delivery leaves the alert to be delivered again: at least once
 * (a webhook receiver de-duplicates on `X-Telemetry-Delivery`, the alert id).
 *
 * NOTE: its component, consumer and metric names still say `webhook`: they are what
 * readiness output, dashboards and alerting rules (deploy/) name.
 */
export class AlertDispatcher extends OnGroupConsumer {
  readonly name = 'webhooks';
  protected readonly consumer: DurableConsumer;
  private stopping = false;
  /** Cuts retry waits short when the runner stops. */
  private readonly stopped = new AbortController();
  private readonly deliveries: Counter<'outcome' | 'channel'>;
  private readonly now: () => number;
  private readonly unrecorded: Counter;
  private readonly queues = new KeyedQueue();

  constructor(private readonly deps: DispatcherDeps) {
    super();
    this.now = deps.now ?? Date.now;
    // outcome: delivered, retried, failed (given up); channel: the target's type
    this.deliveries = counter(deps.registry, 'runner_webhook_deliveries_total', 'Alert delivery attempts', [
      'outcome',
      'channel',
    ]);
    this.unrecorded = counter(
      deps.registry,
      'runner_webhook_records_failed_total',
      'Delivery attempts whose record could not be published (missing from the delivery log)',
    );
    this.consumer = new DurableConsumer(
      deps.consumers,
      {
        name: 'webhooks-group-consumer',
        groupId: deps.groupId,
        topics: [deps.topic],
        fromBeginning: false,
        consumer: { sessionTimeout: 30_000, heartbeatInterval: 3000, allowAutoTopicCreation: false },
        eachBatch: (batch) => this.eachBatch(batch),
        maxPending: deps.maxPending,
        stallAfterMs: 30_000,
        // Both libraries restart it after retriable errors (a broker still loading its groups).
        crashMessage: 'webhook consumer crashed',
      },
      deps.logger,
    );
    const consumer = this.consumer;
    new Gauge({
      name: 'runner_webhook_alerts_pending',
      help: 'Alerts read whose targets are not all delivered or given up',
      registers: [deps.registry],
      collect(this: Gauge) {
        this.set(consumer.pending);
      },
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    await this.consumer.stop();
  }

  /**
   * Hands every alert of the batch to the endpoint queues without waiting for deliveries;
   * each delivery is tracked as its alert's durable completion. Reading waits while
   * maxPending alerts are pending.
   */
  private async eachBatch(b: DurableBatch): Promise<void> {
    for (const message of b.messages) {
      if (!(await b.room()) || this.stopping) return;
      // A delivery cut short by a stop rejects: never committed, so whoever reads the
      // alerts next delivers it again.
      b.track(message.offset, this.handle(message.value));
    }
  }

  private async handle(value: Buffer | null): Promise<void> {
    let alert: unknown;
    try {
      alert = JSON.parse(value?.toString('utf8') ?? 'null');
    } catch {
      alert = undefined;
    }
    if (!this.deps.validators.alertMessage(alert)) {
      this.deps.logger.warn('alert message skipped: invalid');
      return;
    }
    await this.dispatch(alert);
  }

  /** Delivers `alert` to each of its targets, each through its endpoint's queue. */
  async dispatch(alert: AlertMessage): Promise<void> {
    // Held: a change made during a maintenance window pages nobody (docs/monitors.md).
    if (alert.maintenance || !isStateAlert(alert)) return;
    const targets = await this.deps.targets(alert);
    if (targets.length === 0) return;
    // The alert is finished (its offset committable) once every attempt's record is in Kafka too.
    const records: Promise<void>[] = [];
    try {
      await Promise.all(
        targets.map((target) =>
          this.queues.run(
            // deliveries to one endpoint wait for each other only
            `${target.type}\u0000${channelFor(this.deps.channels, target).endpoint(target.config)}`,
            () => this.deliver(target, alert, records),
          ),
        ),
      );
    } finally {
      await Promise.all(records);
    }
  }

  /** Publishes the record of one attempt; a record that cannot be published is logged and counted, never retried by re-delivering. */
  private record(
    alert: AlertMessage,
    channel: ChannelType,
    shown: string,
    attempt: number,
    started: Start,
    status: WebhookDeliveryMessage['status'],
    answer: Answer,
  ): Promise<void> {
    const message: WebhookDeliveryMessage = {
      id: randomUUID(),
      monitor_id: alert.monitor_id,
      ...(alert.tenant_id === undefined ? {} : { tenant_id: alert.tenant_id }),
      alert_id: alert.id,
      alert_type: alert.type,
      url: shown,
      attempt,
      status,
      status_code: answer.statusCode,
      duration_ms: Math.max(0, Math.round(performance.now() - started.t)),
      ...(answer.error === undefined ? {} : { error: answer.error }),
      attempted_at: new Date(started.at).toISOString(),
      // A webhook's record leaves `channel` out (it reads as webhook): a stream consumer
      // older than channels, whose schema does not know the field, still takes it.
      ...(channel === 'webhook' ? {} : { channel }),
    };
    return this.deps.record(message).catch((err: unknown) => {
      this.unrecorded.inc();
      this.deps.logger.warn(`${channel} delivery attempt not recorded`, { alert_id: alert.id, err: String(err) });
    });
  }

  private async deliver<T extends ChannelType>(
    target: ChannelTarget<T>,
    alert: AlertMessage,
    records: Promise<void>[],
  ): Promise<void> {
    const channel = channelFor(this.deps.channels, target);
    const type = target.type;
    const shown = channel.shown(target.config);
    const ctx: ChannelContext = {
      http: this.deps.http,
      mail: this.deps.mail,
      userAgent: this.deps.userAgent,
      timeoutMs: this.deps.timeoutMs,
      signal: this.stopped.signal,
      now: this.now,
    };
    const last = (attempt: number): boolean => attempt >= this.deps.maxAttempts;
    // Log lines name the channel (`webhook delivered`); fields never hold more than `shown`.
    const fields = { alert_id: alert.id, channel: type, url: shown };
    for (let attempt = 1; ; attempt++) {
      const started: Start = { at: this.now(), t: performance.now() };
      if (!isStateAlert(alert)) return;
      const notification = {
        id: alert.id,
        kind: alert.type === 'monitor.up' ? ('up' as const) : ('down' as const),
        items: [{ kind: alert.type === 'monitor.up' ? ('up' as const) : ('down' as const), alert, monitorLink: '' }],
        attempt,
      };
      const rendered = channel.render(notification, target.config, { templates: {}, name: '', now: started.at });
      const answer = await channel.send(rendered, target.config, ctx);
      const verdict = channel.classify(answer);
      const status =
        verdict === 'delivered' ? 'delivered' : verdict === 'retry' && !last(attempt) ? 'retrying' : 'failed';
      records.push(this.record(alert, type, shown, attempt, started, status, answer));
      if (verdict === 'delivered') {
        this.deliveries.inc({ outcome: 'delivered', channel: type });
        this.deps.logger.info(`${type} delivered`, { ...fields, attempt });
        return;
      }
      if (verdict === 'give_up') {
        this.deliveries.inc({ outcome: 'failed', channel: type });
        if (answer.error === 'target_not_allowed') {
          this.deps.logger.warn(`${type} target not allowed by the egress policy; not retried`, fields);
        } else {
          this.deps.logger.warn(`${type} refused; not retried`, {
            ...fields,
            status_code: answer.statusCode,
            ...(answer.error === undefined ? {} : { error: answer.error }),
          });
        }
        return;
      }
      // The last attempt is given up even while stopping: its record says `failed`, so
      // it must not be delivered again.
      if (last(attempt)) {
        this.deliveries.inc({ outcome: 'failed', channel: type });
        this.deps.logger.warn(`${type} given up`, { ...fields, attempt, outcome: outcomeOf(answer) });
        return;
      }
      if (this.stopping) {
        // Not committed: whoever reads the alerts next delivers it again.
        throw new Error('stopping during a delivery');
      }
      this.deliveries.inc({ outcome: 'retried', channel: type });
      try {
        await sleep(Math.min(60_000, this.deps.retryBaseMs * 2 ** (attempt - 1)), undefined, {
          signal: this.stopped.signal,
        });
      } catch {
        // Stopping: not committed, so whoever reads the alerts next delivers it again.
        throw new Error('stopping during a delivery');
      }
    }
  }
}

/** An answer in words, for the log line of a delivery given up. */
function outcomeOf(a: Answer): string {
  return a.error === undefined ? `status ${a.statusCode}` : (a.detail ?? a.error);
}

/** When an attempt started: wall clock (its record's time) and monotonic (its duration). */
interface Start {
  at: number;
  t: number;
}
