import { createHmac } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Counter, type Registry } from 'prom-client';
import type { AlertMessage, Validators } from '@telemetry/contract';
import { counter, OnGroupConsumer } from '@telemetry/platform';
import type { GroupConsumer, GroupConsumerFactory, GroupMessage, Logger } from '@telemetry/platform';
import type { StoredMonitor } from '@telemetry/store';
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
  /** Builds the group member (kafkaGroupConsumers(kafka, logger) in production). */
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
  /** The egress policy every delivery's connection is judged by. */
  policy: EgressPolicy;
}

/**
 * Delivers each alert to its monitor's webhooks. It reads the alerts topic as its own
 * consumer group and commits an alert only after every webhook of it was delivered or
 * given up (WEBHOOK_MAX_ATTEMPTS attempts with doubling waits), so a runner that dies
 * mid-delivery leaves the alert to be delivered again: at least once, de-duplicate on
 * `X-Telemetry-Delivery` (the alert id).
 */
export class WebhookDispatcher extends OnGroupConsumer {
  readonly name = 'webhooks';
  protected readonly consumer: GroupConsumer;
  private stopping = false;
  /** Cuts retry waits short when the runner stops. */
  private readonly stopped = new AbortController();
  private readonly deliveries: Counter<'outcome'>;

  constructor(private readonly deps: DispatcherDeps) {
    super();
    // outcome: delivered, retried, failed (given up)
    this.deliveries = counter(deps.registry, 'runner_webhook_deliveries_total', 'Webhook delivery attempts', [
      'outcome',
    ]);
    this.consumer = deps.consumers({
      name: 'webhooks-group-consumer',
      groupId: deps.groupId,
      topics: [deps.topic],
      fromBeginning: false,
      consumer: { sessionTimeout: 30_000, heartbeatInterval: 3000, allowAutoTopicCreation: false },
      partitionsConsumedConcurrently: 4,
      // kafkajs commits an alert once this resolves: after every webhook of it was
      // delivered or given up. It throws when stopping, so the alert stays uncommitted.
      eachMessage: (payload) => this.eachMessage(payload),
      // A delivery heartbeats every 3 s while it waits: a session without one is a stall.
      stallAfterMs: 30_000,
      // kafkajs restarts it after retriable errors (a broker still loading its groups).
      crashMessage: 'webhook consumer crashed',
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    await this.consumer.stop();
  }

  private async eachMessage(payload: GroupMessage): Promise<void> {
    const { message } = payload;
    let alert: unknown;
    try {
      alert = JSON.parse(message.value?.toString('utf8') ?? 'null');
    } catch {
      alert = undefined;
    }
    if (!this.deps.validators.alertMessage(alert)) {
      this.deps.logger.warn('alert message skipped: invalid', { offset: message.offset });
      return;
    }
    const beat = setInterval(() => void payload.heartbeat().catch(() => undefined), 3000);
    try {
      await this.dispatch(alert);
    } finally {
      clearInterval(beat);
    }
  }

  async dispatch(alert: AlertMessage): Promise<void> {
    let m = this.deps.monitors.get(alert.monitor_id);
    if (!m) {
      await this.deps.monitors.reload(alert.monitor_id).catch(() => undefined);
      m = this.deps.monitors.get(alert.monitor_id);
    }
    if (!m || m.webhooks.length === 0) return;
    const secret = m.webhook_secret;
    await Promise.all(m.webhooks.map((url) => this.deliver(url, secret, alert)));
  }

  private async deliver(url: string, secret: string, alert: AlertMessage): Promise<void> {
    const body = JSON.stringify(alert);
    for (let attempt = 1; ; attempt++) {
      let outcome: string;
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
        if (answer.statusCode >= 200 && answer.statusCode < 300) {
          this.deliveries.inc({ outcome: 'delivered' });
          this.deps.logger.info('webhook delivered', { alert_id: alert.id, url: redactUrl(url), attempt });
          return;
        }
        if (!retriable(answer.statusCode)) {
          this.deliveries.inc({ outcome: 'failed' });
          this.deps.logger.warn('webhook refused; not retried', {
            alert_id: alert.id,
            url: redactUrl(url),
            status_code: answer.statusCode,
          });
          return;
        }
        outcome = `status ${answer.statusCode}`;
      } catch (err) {
        if (err instanceof HttpCallError && err.kind === 'target_not_allowed') {
          this.deliveries.inc({ outcome: 'failed' });
          this.deps.logger.warn('webhook target not allowed by the egress policy; not retried', {
            alert_id: alert.id,
            url: redactUrl(url),
          });
          return;
        }
        outcome = String(err);
      }
      if (this.stopping) {
        // Not committed: whoever reads the alerts next delivers it again.
        throw new Error('stopping during a webhook delivery');
      }
      if (attempt >= this.deps.maxAttempts) {
        this.deliveries.inc({ outcome: 'failed' });
        this.deps.logger.warn('webhook given up', { alert_id: alert.id, url: redactUrl(url), attempt, outcome });
        return;
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

/** A webhook URL for logs: no query string or credentials (they often hold tokens). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(invalid url)';
  }
}
