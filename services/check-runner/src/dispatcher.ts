import { setTimeout as sleep } from 'node:timers/promises';
import { Gauge, type Counter, type Registry } from 'prom-client';
import {
  isStateAlert,
  type AcknowledgementAlert,
  type AlertMessage,
  type AnyChannelTarget,
  type StateAlert,
  type Validators,
} from '@telemetry/contract';
import { DurableConsumer, KeyedQueue, OnGroupConsumer, retryDelayMs } from '@telemetry/platform';
import type { DurableBatch, GroupConsumerFactory, Logger } from '@telemetry/platform';
import type { IncidentAlertState, StoredChannel } from '@telemetry/store';
import { StoppedError, type Delivery } from './delivery.js';
import { isSilenced, type AlertingData, type AlertingMonitor, type Notifier } from './notify.js';
import { channelsUpTo, nextDueAt, stepsOf } from './steps.js';

export interface DispatcherDeps {
  /** Builds the group member (serviceKafka(...).groupConsumers in production: KAFKA_CLIENT picks the library). */
  consumers: GroupConsumerFactory;
  logger: Logger;
  registry: Registry;
  validators: Validators;
  topic: string;
  groupId: string;
  /**
   * The monitor's own signed `webhooks` (monitorTargets in targets.ts).
   * NOTE: must not reject: an alert whose targets cannot be found would stay pending
   * and hold every later offset of its partition uncommitted.
   */
  targets: (alert: AlertMessage) => Promise<readonly AnyChannelTarget[]>;
  /** Monitors, policies, channels and incident rows. */
  data: AlertingData;
  /** Queues, retries and records (shared with the escalation clock). */
  delivery: Pick<Delivery, 'send' | 'stop'>;
  /** Addresses notifications to channel objects (shared with the escalation clock). */
  notifier: Pick<Notifier, 'notify' | 'paging'>;
  /** ALERT_MIN_DELAY_SECONDS. */
  minDelaySeconds: number;
  /** Counted when a silenced monitor's notification is not sent (kind: down, up, acknowledged). */
  silenced: Counter<'kind'>;
  /** Alerts read but not yet delivered or given up; reading waits beyond this. */
  maxPending: number;
  /** The wall clock, in ms (Date.now unless a test sets it). */
  now?: () => number;
}

/** Sends decided on for one alert (run after its monitor's next alert may be decided). */
type Send = () => Promise<void>;

/**
 * Reads the alerts topic as its own consumer group and sends what each alert means
 * (docs/alerting.md, "What is sent when"): a monitor's own signed `webhooks` get its down
 * and up alerts as before; its channel objects are notified through its incident's steps
 * (its escalation policy's, or one step of its `channels`): a down opens the incident's row
 * and notifies the first step (the escalation clock does the rest), an up resolves it and
 * tells every channel notified so far that wants it (and every paging channel), an
 * acknowledgement is passed on to the paging channels. A silenced monitor's channels hear
 * nothing. Each alert's sends are tracked as its durable completion (DurableConsumer):
 * offsets are committed in order, up to the oldest alert whose sends are not all delivered
 * or given up, so a runner that dies mid-delivery leaves the alert to be sent again: at
 * least once (every notification's id is stable: webhook receivers de-duplicate on
 * `X-Telemetry-Delivery`, mail on Message-ID, PagerDuty on dedup_key, Opsgenie on alias).
 *
 * NOTE: its component, consumer and metric names still say `webhook`: they are what
 * readiness output, dashboards and alerting rules (deploy/) name.
 */
export class AlertDispatcher extends OnGroupConsumer {
  readonly name = 'webhooks';
  protected readonly consumer: DurableConsumer;
  private stopping = false;
  /** Cuts waits for PostgreSQL short when the runner stops. */
  private readonly stopped = new AbortController();
  private readonly now: () => number;
  /** Each monitor's alerts, one at a time, while their rows are read and written. */
  private readonly states = new KeyedQueue();

  constructor(private readonly deps: DispatcherDeps) {
    super();
    this.now = deps.now ?? Date.now;
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
    this.deps.delivery.stop();
    await this.consumer.stop();
  }

  /**
   * Hands every alert of the batch over without waiting for its sends; each alert's sends
   * are tracked as its durable completion. Reading waits while maxPending alerts are pending.
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

  /** Sends what `alert` means to its monitor's webhooks and channels; resolves once all are delivered or given up. */
  async dispatch(alert: AlertMessage): Promise<void> {
    // Held: a change made during a maintenance window pages nobody (docs/monitors.md).
    if (alert.maintenance) return;
    await Promise.all([this.webhooks(alert), this.channels(alert)]);
  }

  /** The monitor's own signed webhooks: its down and up alerts, as before channels. */
  private async webhooks(alert: AlertMessage): Promise<void> {
    if (!isStateAlert(alert)) return;
    const targets = await this.deps.targets(alert);
    const kind = alert.type === 'monitor.up' ? ('up' as const) : ('down' as const);
    await Promise.all(
      targets.map((target) =>
        this.deps.delivery.send({
          target,
          templates: {},
          name: '',
          // The alert's id: the webhook's X-Telemetry-Delivery, as before channels.
          notification: { id: alert.id, kind, items: [{ kind, alert, monitorLink: '' }] },
        }),
      ),
    );
  }

  /**
   * What an alert changes in its incident's row is decided one alert of a monitor at a
   * time, in the order read (a down and its up in one batch must not race: an up that
   * found no row yet would leave the down to open one after the recovery); the sends it
   * decides on then go on without holding the monitor's next alert.
   */
  private async channels(alert: AlertMessage): Promise<void> {
    const send = await this.states.run(alert.monitor_id, async (): Promise<Send | undefined> => {
      const monitor = await this.persist(() => this.deps.data.monitor(alert.monitor_id));
      // A monitor deleted since: its incident is nobody's any more.
      if (!monitor) return undefined;
      if (alert.type === 'monitor.down') return this.down(alert, monitor);
      if (alert.type === 'monitor.up') return this.up(alert, monitor);
      if (alert.type === 'incident.acknowledged') return this.acknowledged(alert, monitor);
      // incident.unacknowledged: nothing is sent; the escalation clock resumes from the row.
      return undefined;
    });
    if (send) await send();
  }

  /** True (and logged, counted) when the monitor's channels must hear nothing now. */
  private silenced(monitor: AlertingMonitor, alert: AlertMessage, kind: string): boolean {
    if (!isSilenced(monitor, this.now())) return false;
    this.deps.silenced.inc({ kind });
    this.deps.logger.info('notifications silenced', {
      monitor_id: monitor.id,
      incident_id: alert.incident_id,
      kind,
      silenced_until: monitor.silenced_until,
    });
    return true;
  }

  /**
   * Opens the incident's row and, when this call made it, notifies its first step. A down
   * read again (a runner died before committing it) finds the row: its first step is sent
   * again while the row shows nothing happened since (step 0, no reminder, neither
   * acknowledged nor resolved), since the first send may never have gone out; the ids are
   * the same, so providers with idempotency keys see it once, and others may see it twice.
   */
  private async down(alert: StateAlert, monitor: AlertingMonitor): Promise<Send | undefined> {
    const { data } = this.deps;
    const policy = monitor.escalation_policy
      ? await this.persist(() => data.policy(monitor.tenant_id, monitor.escalation_policy!))
      : undefined;
    const steps = stepsOf(monitor.channels, policy);
    const first = steps[0] ? await this.persist(() => data.channels(monitor.tenant_id, steps[0]!.channels)) : [];
    const opened = Date.parse(alert.created_at);
    const row = { steps, step: 0, step_at: opened, reminders: {}, opened_at: opened };
    const nextDue = nextDueAt(row, byId(first), this.deps.minDelaySeconds);
    const { state, created } = await this.persist(() =>
      data.incidents.open({
        incident_id: alert.incident_id,
        tenant_id: monitor.tenant_id,
        monitor_id: monitor.id,
        opened_at: opened,
        alert,
        steps,
        next_due_at: nextDue,
      }),
    );
    if (first.length === 0 || !(created || untouched(state))) return undefined;
    if (this.silenced(monitor, alert, 'down')) return undefined;
    return () => this.deps.notifier.notify(first, { kind: 'down', alert });
  }

  /** Resolves the incident's row; `up` to each channel notified so far that wants it, and to every paging channel. */
  private async up(alert: StateAlert, monitor: AlertingMonitor): Promise<Send | undefined> {
    const row = await this.persist(() => this.deps.data.incidents.resolve(alert.incident_id, this.now()));
    if (!row || row.tenant_id !== monitor.tenant_id) return undefined;
    const notified = await this.notified(row);
    // A silence holds chat and mail; a paging service is still told, or its incident stays open there.
    const silenced = isSilenced(monitor, this.now());
    const to = notified.filter((c) => this.deps.notifier.paging(c) || (c.send_resolved && !silenced));
    if (silenced) this.silenced(monitor, alert, 'up');
    if (to.length === 0) return undefined;
    return () => this.deps.notifier.notify(to, { kind: 'up', alert, opening: row.alert });
  }

  /** Passes an acknowledgement on to the paging channels notified so far (PagerDuty's and Opsgenie's own). */
  private async acknowledged(alert: AcknowledgementAlert, monitor: AlertingMonitor): Promise<Send | undefined> {
    const row = await this.persist(() => this.deps.data.incidents.get(alert.incident_id));
    if (!row || row.tenant_id !== monitor.tenant_id) return undefined;
    // Paging services only, silenced or not: their incident would otherwise go on paging there.
    const to = (await this.notified(row)).filter((c) => this.deps.notifier.paging(c));
    if (to.length === 0) return undefined;
    return () =>
      this.deps.notifier.notify(to, {
        kind: 'acknowledged',
        alert: row.alert,
        acknowledgement: alert,
        ...(alert.actor === undefined ? {} : { acknowledged_by: alert.actor }),
      });
  }

  /** The channels of the steps notified so far (steps 0..row.step). */
  private notified(row: IncidentAlertState): Promise<StoredChannel[]> {
    const ids = channelsUpTo(row.steps, row.step);
    return ids.length === 0 ? Promise.resolve([]) : this.persist(() => this.deps.data.channels(row.tenant_id, ids));
  }

  /**
   * Runs a registry read or write until it succeeds (PostgreSQL away for a while must not
   * lose a page), waiting longer each time; a stop ends the waiting (the alert is then not
   * committed, and whoever reads it next sends it).
   */
  private async persist<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (this.stopping) throw new StoppedError();
        this.deps.logger.warn('registry unavailable for alerting; retrying', { err: String(err) });
        try {
          await sleep(retryDelayMs(attempt, 10_000), undefined, { signal: this.stopped.signal });
        } catch {
          throw new StoppedError();
        }
      }
    }
  }
}

/** Channels by id. */
function byId(channels: readonly StoredChannel[]): Map<string, StoredChannel> {
  return new Map(channels.map((c) => [c.id, c] as const));
}

/** Nothing happened on the row since it opened: its first step may never have been sent. */
function untouched(s: IncidentAlertState): boolean {
  return s.step === 0 && Object.keys(s.reminders).length === 0 && s.acknowledged_at === null && s.resolved_at === null;
}
