import { createHmac, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { AlertMessage, CheckError, Validators, WebhookDeliveryMessage } from '@telemetry/contract';
import { counter, KeyedQueue, OnGroupConsumer } from '@telemetry/platform';
import type { GroupBatch, GroupConsumer, GroupConsumerFactory, Logger } from '@telemetry/platform';
import { maskWebhookUrl, originOf, type StoredMonitor } from '@telemetry/store';
import { httpCall, HttpCallError } from './http-client.js';
import type { EgressPolicy } from '@telemetry/platform';

/**
 * `X-Telemetry-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` with
 * the monitor's webhook secret (the scheme Stripe uses): receivers recompute it and
 * reject old timestamps to stop replays.
 */
export function signature(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/** A delivery attempt's answer: retry it, or not. */
export function retriable(statusCode: number): boolean {
  return statusCode === 408 || statusCode === 425 || statusCode === 429 || statusCode >= 500;
}

export interface DispatcherDeps {
  /** Builds the group member (serviceKafka(...).groupConsumers in production: KAFKA_CLIENT picks the library). */
  consumers: GroupConsumerFactory;
  logger: Logger;
  registry: Registry;
  validators: Validators;
  topic: string;
  groupId: string;
  monitors: { get(id: string): StoredMonitor | undefined; reload(id: string): Promise<void> };
  userAgent: string;
  timeoutMs: number;
  maxAttempts: number;
  retryBaseMs: number;
  /** Alerts read but not yet delivered or given up; reading waits beyond this. */
  maxPending: number;
  /** The egress policy every delivery's connection is judged by. */
  policy: EgressPolicy;
  /** Publishes the record of one delivery attempt (to the webhook-deliveries topic); resolves once it is in Kafka. */
  record: (attempt: WebhookDeliveryMessage) => Promise<void>;
}

/**
 * Which offsets of each partition are still being worked on, so that work finished out
 * of order is committed in order: the committable offset of a partition is its oldest
 * unfinished message, or the one after the newest seen when none is unfinished.
 */
export class OffsetWatermarks {
  private readonly parts = new Map<string, { pending: number[]; next: number }>();

  private static key(topic: string, partition: number): string {
    return `${topic}\u0000${partition}`;
  }

  add(topic: string, partition: number, offset: number): void {
    const k = OffsetWatermarks.key(topic, partition);
    const p = this.parts.get(k) ?? { pending: [], next: offset };
    p.pending.push(offset); // offsets arrive in ascending order per partition
    p.next = offset + 1;
    this.parts.set(k, p);
  }

  /** Marks `offset` finished; the partition's committable offset (undefined: a partition no longer tracked). */
  done(topic: string, partition: number, offset: number): number | undefined {
    const p = this.parts.get(OffsetWatermarks.key(topic, partition));
    if (!p) return undefined;
    const i = p.pending.indexOf(offset);
    if (i >= 0) p.pending.splice(i, 1);
    return p.pending[0] ?? p.next;
  }

  /** Unfinished messages over every partition. */
  size(): number {
    let n = 0;
    for (const p of this.parts.values()) n += p.pending.length;
    return n;
  }

  /** The partitions were taken away: whoever gets them resumes from the last commit. */
  clear(): void {
    this.parts.clear();
  }
}

/** A promise and the function that resolves it. */
function latch(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Delivers each alert to its monitor's webhooks. It reads the alerts topic as its own
 * consumer group. Deliveries queue per endpoint (origin): one endpoint's deliveries go in
 * order, one at a time, retried with doubling waits (WEBHOOK_MAX_ATTEMPTS), and a dead
 * endpoint delays only its own. Offsets are committed in order, up to the oldest alert
 * whose webhooks are not all delivered or given up, so a runner that dies mid-delivery
 * leaves the alert to be delivered again: at least once, de-duplicate on
 * `X-Telemetry-Delivery` (the alert id).
 */
export class WebhookDispatcher extends OnGroupConsumer {
  readonly name = 'webhooks';
  protected readonly consumer: GroupConsumer;
  private stopping = false;
  /** Cuts retry waits short when the runner stops. */
  private readonly stopped = new AbortController();
  private readonly deliveries: Counter<'outcome'>;
  private readonly unrecorded: Counter;
  private readonly watermarks = new OffsetWatermarks();
  private readonly queues = new KeyedQueue();
  /** Commits run one at a time, so a later offset is never overtaken by an earlier one. */
  private committing: Promise<void> = Promise.resolve();
  /** Resolved when an alert finishes (reading waits on it while maxPending are pending). */
  private finished = latch();

  constructor(private readonly deps: DispatcherDeps) {
    super();
    // outcome: delivered, retried, failed (given up)
    this.deliveries = counter(deps.registry, 'runner_webhook_deliveries_total', 'Webhook delivery attempts', [
      'outcome',
    ]);
    this.unrecorded = counter(
      deps.registry,
      'runner_webhook_records_failed_total',
      'Webhook delivery attempts whose record could not be published (missing from the delivery log)',
    );
    const watermarks = this.watermarks;
    new Gauge({
      name: 'runner_webhook_alerts_pending',
      help: 'Alerts read whose webhooks are not all delivered or given up',
      registers: [deps.registry],
      collect(this: Gauge) {
        this.set(watermarks.size());
      },
    });
    this.consumer = deps.consumers({
      name: 'webhooks-group-consumer',
      groupId: deps.groupId,
      topics: [deps.topic],
      fromBeginning: false,
      consumer: { sessionTimeout: 30_000, heartbeatInterval: 3000, allowAutoTopicCreation: false },
      manualCommit: true,
      eachBatch: (batch) => this.eachBatch(batch),
      onRevoked: () => this.watermarks.clear(),
      stallAfterMs: 30_000,
      // kafkajs restarts it after retriable errors (a broker still loading its groups).
      crashMessage: 'webhook consumer crashed',
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    this.finished.resolve();
    await this.consumer.stop();
  }

  /** Hands every alert of the batch to the endpoint queues without waiting for deliveries. */
  private async eachBatch(b: GroupBatch): Promise<void> {
    const { topic, partition } = b.batch;
    for (const message of b.batch.messages) {
      while (this.watermarks.size() >= this.deps.maxPending && b.isRunning() && !this.stopping) {
        await Promise.race([this.finished.promise, sleep(3000)]);
        await b.heartbeat();
      }
      if (!b.isRunning() || b.isStale() || this.stopping) return;
      const offset = Number(message.offset);
      this.watermarks.add(topic, partition, offset);
      b.resolveOffset(message.offset);
      void this.handle(message.value).then(
        () => this.finish(topic, partition, offset),
        // Stopping: not committed, so whoever reads the alerts next delivers it again.
        () => undefined,
      );
    }
  }

  private finish(topic: string, partition: number, offset: number): void {
    const next = this.watermarks.done(topic, partition, offset);
    this.finished.resolve();
    this.finished = latch();
    if (next === undefined || this.stopping) return;
    this.committing = this.committing.then(() =>
      this.consumer.commitOffsets([{ topic, partition, offset: String(next) }]).catch((err: unknown) => {
        // A rebalance took the partition: its new owner resumes from the last commit.
        this.deps.logger.debug('webhook offset not committed', { topic, partition, err: String(err) });
      }),
    );
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

  /** Delivers `alert` to every webhook of its monitor, each through its endpoint's queue. */
  async dispatch(alert: AlertMessage): Promise<void> {
    // Held: a change made during a maintenance window pages nobody (docs/monitors.md).
    if (alert.maintenance) return;
    let m = this.deps.monitors.get(alert.monitor_id);
    if (!m) {
      await this.deps.monitors.reload(alert.monitor_id).catch(() => undefined);
      m = this.deps.monitors.get(alert.monitor_id);
    }
    if (!m || m.webhooks.length === 0) return;
    const secret = m.webhook_secret;
    // The alert is finished (its offset committable) once every attempt's record is in Kafka too.
    const records: Promise<void>[] = [];
    try {
      await Promise.all(
        m.webhooks.map((url) =>
          this.queues.run(
            originOf(url), // deliveries to one endpoint (origin) wait for each other only
            () => this.deliver(url, secret, alert, records),
          ),
        ),
      );
    } finally {
      await Promise.all(records);
    }
  }

  /** Publishes the record of one attempt; a record that cannot be published is logged and counted, never retried by re-delivering. */
  private record(alert: AlertMessage, url: string, attempt: number, started: Start, outcome: Outcome): Promise<void> {
    const message: WebhookDeliveryMessage = {
      id: randomUUID(),
      monitor_id: alert.monitor_id,
      ...(alert.tenant_id === undefined ? {} : { tenant_id: alert.tenant_id }),
      alert_id: alert.id,
      alert_type: alert.type,
      url: maskWebhookUrl(url),
      attempt,
      status: outcome.status,
      status_code: outcome.statusCode,
      duration_ms: Math.max(0, Math.round(performance.now() - started.t)),
      ...(outcome.error === undefined ? {} : { error: outcome.error }),
      attempted_at: new Date(started.at).toISOString(),
    };
    return this.deps.record(message).catch((err: unknown) => {
      this.unrecorded.inc();
      this.deps.logger.warn('webhook delivery attempt not recorded', { alert_id: alert.id, err: String(err) });
    });
  }

  private async deliver(url: string, secret: string, alert: AlertMessage, records: Promise<void>[]): Promise<void> {
    const body = JSON.stringify(alert);
    const last = (attempt: number): boolean => attempt >= this.deps.maxAttempts;
    for (let attempt = 1; ; attempt++) {
      let outcome: string;
      const started: Start = { at: Date.now(), t: performance.now() };
      try {
        const answer = await httpCall({
          url,
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            'User-Agent': this.deps.userAgent,
            'X-Telemetry-Event': alert.type,
            'X-Telemetry-Delivery': alert.id,
            'X-Telemetry-Attempt': String(attempt),
            'X-Telemetry-Signature': signature(secret, body, Math.floor(Date.now() / 1000)),
          },
          body,
          timeoutMs: this.deps.timeoutMs,
          maxRedirects: 0,
          maxBodyBytes: 1024,
          policy: this.deps.policy,
        });
        const statusCode = answer.statusCode;
        const ok = statusCode >= 200 && statusCode < 300;
        const status = ok ? 'delivered' : retriable(statusCode) && !last(attempt) ? 'retrying' : 'failed';
        records.push(this.record(alert, url, attempt, started, { status, statusCode }));
        if (ok) {
          this.deliveries.inc({ outcome: 'delivered' });
          this.deps.logger.info('webhook delivered', { alert_id: alert.id, url: maskWebhookUrl(url), attempt });
          return;
        }
        if (!retriable(statusCode)) {
          this.deliveries.inc({ outcome: 'failed' });
          this.deps.logger.warn('webhook refused; not retried', {
            alert_id: alert.id,
            url: maskWebhookUrl(url),
            status_code: statusCode,
          });
          return;
        }
        outcome = `status ${statusCode}`;
      } catch (err) {
        const error: CheckError = err instanceof HttpCallError ? err.kind : 'network';
        const status = error === 'target_not_allowed' || last(attempt) ? 'failed' : 'retrying';
        records.push(this.record(alert, url, attempt, started, { status, statusCode: 0, error }));
        if (error === 'target_not_allowed') {
          this.deliveries.inc({ outcome: 'failed' });
          this.deps.logger.warn('webhook target not allowed by the egress policy; not retried', {
            alert_id: alert.id,
            url: maskWebhookUrl(url),
          });
          return;
        }
        outcome = String(err);
      }
      // The last attempt is given up even while stopping: its record says `failed`, so
      // it must not be delivered again.
      if (last(attempt)) {
        this.deliveries.inc({ outcome: 'failed' });
        this.deps.logger.warn('webhook given up', { alert_id: alert.id, url: maskWebhookUrl(url), attempt, outcome });
        return;
      }
      if (this.stopping) {
        // Not committed: whoever reads the alerts next delivers it again.
        throw new Error('stopping during a webhook delivery');
      }
      this.deliveries.inc({ outcome: 'retried' });
      try {
        await sleep(Math.min(60_000, this.deps.retryBaseMs * 2 ** (attempt - 1)), undefined, {
          signal: this.stopped.signal,
        });
      } catch {
        // Stopping: not committed, so whoever reads the alerts next delivers it again.
        throw new Error('stopping during a webhook delivery');
      }
    }
  }
}

/** When an attempt started: wall clock (its record's time) and monotonic (its duration). */
interface Start {
  at: number;
  t: number;
}

/** How one attempt ended, as its record says. */
interface Outcome {
  status: WebhookDeliveryMessage['status'];
  statusCode: number;
  error?: CheckError;
}
