import type { Counter, Registry } from 'prom-client';
import type { StatusNoticeWebhook } from '@telemetry/contract';
import { counter, PeriodicJob, type Logger, type SecretBox } from '@telemetry/platform';
import {
  classifyHttp,
  escapeHtml,
  sendHttp,
  signature,
  smtpVerdict,
  type Answer,
  type ChannelContext,
  type ChannelHttp,
  type Mailer,
  type MailMessage,
  type Verdict,
} from '@telemetry/alerting';
import {
  deliveryBackoffMs,
  openSubscriberWebhook,
  type ClaimedDelivery,
  type StatusDeliveryStore,
  type SubscriptionLinks,
} from '@telemetry/store';

export interface StatusDelivererDeps {
  store: Pick<StatusDeliveryStore, 'claimDue' | 'delivered' | 'retry' | 'failed'>;
  /** The operator's mailer (SMTP_URL, MAIL_FROM): subscribers' mail never goes through a tenant's server. */
  mail: Mailer;
  /** The runner's HTTP client bound to its egress policy (webhook channels' own). */
  http: ChannelHttp;
  /** Opens a webhook subscriber's sealed URL and secret (the SECRETS_KEYS ring). */
  box: SecretBox;
  links: Pick<SubscriptionLinks, 'unsubscribeLink' | 'mailHeaders'>;
  /** PUBLIC_URL: the page link of every notice. */
  publicUrl: string;
  logger: Logger;
  registry: Registry;
  userAgent: string;
  /** One webhook attempt fails after this long (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** STATUS_DELIVERY_INTERVAL_MS. */
  intervalMs: number;
  /** STATUS_DELIVERY_ATTEMPTS: the last one failing gives the delivery up. */
  maxAttempts: number;
  /** STATUS_DELIVERY_RETRY_BASE_MS: the wait after the first failure, doubling (at most an hour). */
  retryBaseMs: number;
  /** STATUS_DELIVERY_LEASE_SECONDS: a claimed row is this runner's for this long. */
  leaseSeconds: number;
  /** Rows claimed (and sent at once) per round (20). */
  batch?: number;
  now?: () => number;
}

/** One attempt's answer, its meaning, and (when the answer does not say it) why it failed. */
interface Sent {
  answer: Answer;
  verdict: Verdict;
  reason?: string;
}

/** What one attempt came to, without anything secret: the answer's status or its kind of failure. */
function errorOf(a: Answer): string {
  return a.error === undefined ? `status ${a.statusCode}` : a.error;
}

/**
 * The deliverer of status-page notices (docs/console.md, "Delivery"): every
 * STATUS_DELIVERY_INTERVAL_MS it claims due deliveries under a lease and sends each, at
 * once, to its subscriber: an email through the operator's mail settings, or a signed
 * webhook call through the egress policy. Delivered rows are done; a failure is tried again
 * after a doubling wait, up to STATUS_DELIVERY_ATTEMPTS; a refusal (a 4xx other than 408,
 * 425 and 429, an SMTP 5xx, a target the policy denies) is given up at once. At least once:
 * a runner that dies mid-send leaves its lease to expire and another sends again, with the
 * same `X-Telemetry-Event` (the notice id) and Message-ID.
 */
export class StatusDeliverer extends PeriodicJob {
  private readonly outcomes: Counter<'kind' | 'outcome'>;
  private readonly now: () => number;
  private readonly stopped = new AbortController();
  /** What the webhook channels' sender is given (their HTTP client, bound to the egress policy). */
  private readonly ctx: ChannelContext;

  constructor(private readonly deps: StatusDelivererDeps) {
    super('status-delivery', deps.intervalMs, () => this.round(), deps.logger);
    this.now = deps.now ?? Date.now;
    const { http, mail, userAgent, timeoutMs } = deps;
    this.ctx = { http, mail, userAgent, timeoutMs, signal: this.stopped.signal, now: this.now };
    this.outcomes = counter(
      deps.registry,
      'status_notifications_total',
      'Status-page notice deliveries to subscribers: delivered, retry (tried again later), failed (given up)',
      ['kind', 'outcome'],
    );
  }

  override async stop(): Promise<void> {
    this.stopped.abort();
    await super.stop();
  }

  /** Claims and sends one batch; resolves when each is written back (tests call it; the loop does too). */
  async round(): Promise<number> {
    const claimed = await this.deps.store.claimDue(this.deps.batch ?? 20, this.deps.leaseSeconds);
    await Promise.all(claimed.map((d) => this.deliver(d)));
    return claimed.length;
  }

  /** Sends until nothing is due (tests). */
  async drain(): Promise<void> {
    while ((await this.round()) > 0);
  }

  private async deliver(d: ClaimedDelivery): Promise<void> {
    const fields = { notice_id: d.noticeId, subscriber_id: d.subscriberId, kind: d.kind, attempt: d.attempts + 1 };
    try {
      const sent = d.kind === 'email' ? await this.email(d) : await this.webhook(d);
      await this.settle(d, sent, fields);
    } catch (err) {
      // A registry failure: the lease expires and the row is claimed again.
      this.deps.logger.warn('status notice not settled', { ...fields, err: String(err) });
    }
  }

  private async settle(d: ClaimedDelivery, sent: Sent, fields: Record<string, unknown>): Promise<void> {
    const { store, logger } = this.deps;
    const { answer, verdict } = sent;
    const kind = d.kind;
    const attempt = d.attempts + 1;
    if (verdict === 'delivered') {
      await store.delivered(d);
      this.outcomes.inc({ kind, outcome: 'delivered' });
      logger.info('status notice delivered', fields);
      return;
    }
    const error = sent.reason ?? errorOf(answer);
    if (verdict === 'give_up' || attempt >= this.deps.maxAttempts) {
      await store.failed(d, error);
      this.outcomes.inc({ kind, outcome: 'failed' });
      logger.warn('status notice given up', { ...fields, error });
      return;
    }
    const wait = Math.max(deliveryBackoffMs(attempt, this.deps.retryBaseMs), answer.retryAfterMs ?? 0);
    await store.retry(d, wait, error);
    this.outcomes.inc({ kind, outcome: 'retry' });
    logger.info('status notice to be tried again', { ...fields, error, wait_ms: wait });
  }

  private pageUrl(slug: string): string {
    return `${this.deps.publicUrl.replace(/\/+$/, '')}/status/${slug}`;
  }

  /** The notice's mail to an email subscriber (RFC 8058 one-click unsubscribe headers, the link in the text). */
  message(d: ClaimedDelivery): MailMessage {
    const page = this.pageUrl(d.slug);
    const unsubscribe = this.deps.links.unsubscribeLink(d.slug, d.subscriberId);
    const text = `${d.notice.body}\n\n${d.pageTitle}: ${page}\n\nUnsubscribe: ${unsubscribe}\n`;
    const a = (href: string, label: string): string => `<a href="${escapeHtml(href)}">${escapeHtml(label)}</a>`;
    const html = [
      '<!DOCTYPE html><html><head><meta charset="utf-8"></head>',
      '<body style="font-family:-apple-system,\'Segoe UI\',Helvetica,Arial,sans-serif;color:#1f2328">',
      `<div style="white-space:pre-wrap">${escapeHtml(d.notice.body)}</div>`,
      `<p>${a(page, d.pageTitle)}</p>`,
      `<p style="font-size:12px;color:#656d76">${a(unsubscribe, 'Unsubscribe')}</p>`,
      '</body></html>',
    ].join('');
    return {
      to: d.email ?? '',
      // One line, as a Subject must be.
      subject: d.notice.title.replace(/\s+/g, ' ').slice(0, 200),
      text,
      html,
      // Stable per notice and subscriber: a second copy is recognisably the same message.
      messageId: `<${d.noticeId}.${d.subscriberId}@telemetry>`,
      headers: this.deps.links.mailHeaders(d.slug, d.subscriberId),
    };
  }

  private async email(d: ClaimedDelivery): Promise<Sent> {
    const answer = await this.deps.mail.send(this.message(d));
    return { answer, verdict: smtpVerdict(answer) };
  }

  /** The notice's webhook body (StatusNoticeWebhook). */
  body(d: ClaimedDelivery): string {
    const { report, update, maintenance } = d.notice.payload as Partial<StatusNoticeWebhook>;
    // Only the payload's documented fields, after ours: a payload never replaces the envelope.
    const body: StatusNoticeWebhook = {
      id: d.noticeId,
      type: d.notice.kind,
      created_at: d.notice.createdAt,
      page: { slug: d.slug, title: d.pageTitle, url: this.pageUrl(d.slug) },
      title: d.notice.title,
      body: d.notice.body,
      ...(report === undefined ? {} : { report }),
      ...(update === undefined ? {} : { update }),
      ...(maintenance === undefined ? {} : { maintenance }),
    };
    return JSON.stringify(body);
  }

  private async webhook(d: ClaimedDelivery): Promise<Sent> {
    let target: { url: string; secret: string };
    try {
      target = openSubscriberWebhook(this.deps.box, d.subscriberId, d.webhookSealed ?? '');
    } catch {
      // Sealed under a key no longer in the ring: no attempt can succeed.
      return { answer: { statusCode: 0 }, verdict: 'give_up', reason: 'its sealed URL could not be opened' };
    }
    const body = this.body(d);
    const now = this.now();
    const answer = await sendHttp(
      {
        url: target.url,
        body,
        headers: {
          'X-Telemetry-Event': d.noticeId,
          'X-Telemetry-Attempt': String(d.attempts + 1),
          'X-Telemetry-Signature': signature(target.secret, body, Math.floor(now / 1000)),
        },
      },
      this.ctx,
    );
    return { answer, verdict: classifyHttp(answer) };
  }
}
