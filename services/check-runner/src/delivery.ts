import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Counter, Registry } from 'prom-client';
import type { AnyChannelTarget, ChannelTarget, ChannelType, WebhookDeliveryMessage } from '@telemetry/contract';
import { counter, KeyedQueue, type Logger } from '@telemetry/platform';
import {
  channelFor,
  type Answer,
  type ChannelContext,
  type ChannelHttp,
  type ChannelRegistry,
  type Mailer,
  type Notification,
  type Templates,
} from '@telemetry/alerting';

/** One notification to one target, as the dispatcher and the escalation clock hand it over. */
export interface Job {
  target: AnyChannelTarget;
  /** The channel object's id (/api/channels); absent for a monitor's own `webhooks`. */
  channelId?: string;
  /** Its templates and name (a monitor's own webhook: none). */
  templates: Templates;
  name: string;
  /** Everything but the attempt number, which delivery counts. */
  notification: Omit<Notification, 'attempt'>;
}

export interface DeliveryDeps {
  logger: Logger;
  registry: Registry;
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
  /** Publishes the record of one delivery attempt (to the webhook-deliveries topic); resolves once it is in Kafka. */
  record: (attempt: WebhookDeliveryMessage) => Promise<void>;
  /** The wall clock, in ms (Date.now unless a test sets it). */
  now?: () => number;
}

/** Thrown when a stop cuts a delivery short: not committed (or not finished), so it is sent again by whoever reads next. */
export class StoppedError extends Error {
  constructor() {
    super('stopping during a delivery');
  }
}

/** The longest a delivery of one job can take with `d`'s settings (its attempts, timeouts and waits), ms. */
export function longestDeliveryMs(d: Pick<DeliveryDeps, 'timeoutMs' | 'maxAttempts' | 'retryBaseMs'>): number {
  let waits = 0;
  for (let attempt = 1; attempt < d.maxAttempts; attempt++) waits += retryWaitMs(d.retryBaseMs, attempt);
  return d.maxAttempts * d.timeoutMs + waits;
}

/** The wait after attempt `attempt` failed: doubling from `base`, at most 60 s. */
function retryWaitMs(base: number, attempt: number): number {
  return Math.min(60_000, base * 2 ** (attempt - 1));
}

/**
 * Delivers jobs the same way for every channel (docs/alerting.md, "Delivery"). Jobs queue
 * per endpoint (the channel's `endpoint`, with its type): one endpoint's jobs go in order,
 * one at a time, and a dead endpoint delays only its own. A `retry` verdict is tried again
 * after a doubling wait, or the provider's Retry-After when that is longer, up to
 * WEBHOOK_MAX_ATTEMPTS; `give_up` (a provider's bad request, a target the egress policy
 * refuses) is recorded failed at once. Every attempt is recorded (the delivery log);
 * `send` resolves once the job is delivered or given up and its records are in Kafka.
 */
export class Delivery {
  private stopping = false;
  /** Cuts retry waits short when the runner stops. */
  private readonly stopped = new AbortController();
  private readonly deliveries: Counter<'outcome' | 'channel'>;
  private readonly unrecorded: Counter;
  private readonly queues = new KeyedQueue();
  private readonly now: () => number;

  constructor(private readonly deps: DeliveryDeps) {
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
  }

  stop(): void {
    this.stopping = true;
    this.stopped.abort();
  }

  /** Delivers `job` through its endpoint's queue; rejects (StoppedError) only when a stop cut it short. */
  async send(job: Job): Promise<void> {
    const channel = channelFor(this.deps.channels, job.target);
    // deliveries to one endpoint wait for each other only
    const key = `${job.target.type}\u0000${channel.endpoint(job.target.config)}`;
    const records: Promise<void>[] = [];
    try {
      await this.queues.run(key, () => this.attempts(job.target, job, records));
    } finally {
      await Promise.all(records);
    }
  }

  /** Publishes the records of one attempt (one per incident of the notification); never rejects. */
  private record(
    job: Job,
    shown: string,
    attempt: number,
    started: Start,
    status: WebhookDeliveryMessage['status'],
    answer: Answer,
  ): Promise<void> {
    const type = job.target.type;
    const duration = Math.max(0, Math.round(performance.now() - started.t));
    const sent = job.notification.items.map((item) => {
      const alert = item.acknowledgement ?? item.alert;
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
        duration_ms: duration,
        ...(answer.error === undefined ? {} : { error: answer.error }),
        attempted_at: new Date(started.at).toISOString(),
        // A monitor's own webhook's record leaves `channel` out (it reads as webhook): a
        // stream consumer older than channels, whose schema does not know the field, still takes it.
        ...(job.channelId === undefined && type === 'webhook'
          ? {}
          : { channel: type, kind: item.kind, ...(job.channelId === undefined ? {} : { channel_id: job.channelId }) }),
      };
      return this.deps.record(message).catch((err: unknown) => {
        this.unrecorded.inc();
        this.deps.logger.warn(`${type} delivery attempt not recorded`, { alert_id: alert.id, err: String(err) });
      });
    });
    return Promise.all(sent).then(() => undefined);
  }

  private async attempts<T extends ChannelType>(
    target: ChannelTarget<T>,
    job: Job,
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
    const fields = {
      notification_id: job.notification.id,
      kind: job.notification.kind,
      channel: type,
      url: shown,
      ...(job.channelId === undefined ? {} : { channel_id: job.channelId }),
    };
    for (let attempt = 1; ; attempt++) {
      const started: Start = { at: this.now(), t: performance.now() };
      const notification: Notification = { ...job.notification, attempt };
      const rendered = channel.render(notification, target.config, {
        templates: job.templates,
        name: job.name,
        now: started.at,
      });
      const answer = await channel.send(rendered, target.config, ctx);
      const verdict = channel.classify(answer);
      const status =
        verdict === 'delivered' ? 'delivered' : verdict === 'retry' && !last(attempt) ? 'retrying' : 'failed';
      records.push(this.record(job, shown, attempt, started, status, answer));
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
            // The provider's reason (a bad request's body); providers never echo secrets.
            ...(answer.response ? { response: answer.response.slice(0, 300) } : {}),
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
      if (this.stopping) throw new StoppedError();
      this.deliveries.inc({ outcome: 'retried', channel: type });
      // A 429's Retry-After is honoured when it asks for longer than our own backoff.
      const wait = Math.max(retryWaitMs(this.deps.retryBaseMs, attempt), answer.retryAfterMs ?? 0);
      try {
        await sleep(wait, undefined, { signal: this.stopped.signal });
      } catch {
        throw new StoppedError();
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
