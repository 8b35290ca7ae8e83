import { createHash } from 'node:crypto';
import type { Express, Request, RequestHandler, Response } from 'express';
import {
  describeErrors,
  ok,
  parsesAsUrl,
  SUBSCRIBER_ID_PATTERN,
  type StatusFollowValidators,
} from '@telemetry/contract';
import type { ChannelContext, Mailer } from '@telemetry/alerting';
import {
  AppError,
  connectUrl,
  cursorParam,
  encodeCursor,
  limitParam,
  readBody,
  readJsonBody,
  rejectUnknown,
  single,
  type EgressPolicy,
  type Logger,
  type Mirror,
} from '@telemetry/platform';
import {
  RegistryUnavailableError,
  subscriberView,
  type RateBuckets,
  type StatusPageStore,
  type StoredStatusPage,
  type SubscriberCursor,
  type SubscriberStore,
  type SubscriptionLinks,
} from '@telemetry/store';
import { recordChange, type Auditor } from '../access/audit.js';
import { clientAddress } from '../access/throttled.js';
import { keyOf, refuseLimited } from '../registry-objects.js';
import { slugOf, visibleTo } from '../status-pages.route.js';
import { confirmationMail, newWebhookSecret, noticePage, verifyWebhook } from './subscription-messages.js';

/**
 * Subscribing to a status page (docs/api.md, "Subscribers"), without a key: by email (a
 * pending row and a confirmation mail; the same 202 whoever asks, so nobody learns who is
 * subscribed) or by webhook (the URL judged by the egress policy, then one signed challenge;
 * stored only once it answered). Confirmation and one-click unsubscribe (RFC 8058) by the
 * signed links of the mails. The page's owner lists and deletes its subscribers (with a key
 * or a session). Every public route finds its page in the directory (memory): an unknown
 * slug never reaches PostgreSQL, and nothing here touches a monitor.
 */

export interface SubscriberRoutesDeps {
  subscribers: SubscriberStore;
  buckets: RateBuckets;
  links: SubscriptionLinks;
  /** Every tenant's pages by slug (status-pages.route.ts). */
  directory: Mirror<StoredStatusPage>;
  pages: StatusPageStore;
  validators: StatusFollowValidators;
  policy: EgressPolicy;
  /** This service's egress-bound HTTP client (the channels' test sends use it); its timeout is replaced. */
  http: () => ChannelContext;
  mailer: Mailer;
  publicUrl: string;
  auth: { read: RequestHandler; write: RequestHandler };
  audit: Auditor;
  logger: Logger;
  limits: {
    /** SUBSCRIBE_PER_ADDRESS_PER_HOUR, SUBSCRIBE_PER_PAGE_PER_HOUR, SUBSCRIPTION_LINKS_PER_ADDRESS_PER_HOUR. */
    perAddressPerHour: number;
    perPagePerHour: number;
    linksPerAddressPerHour: number;
    /** WEBHOOK_VERIFY_TIMEOUT_MS. */
    verifyTimeoutMs: number;
  };
}

const HOUR = 3600;
const SUBSCRIBER_ID = new RegExp(SUBSCRIBER_ID_PATTERN);
/** The owner's list: subscribers per answer. */
const LIST_PAGE = { fallback: 100, max: 500 };

function isCursor(v: unknown): v is SubscriberCursor {
  return (
    Array.isArray(v) &&
    v.length === 2 &&
    typeof v[0] === 'string' &&
    /^\d{1,20}$/.test(v[0]) &&
    typeof v[1] === 'string' &&
    SUBSCRIBER_ID.test(v[1])
  );
}

function invalid(problems: { path: string; message: string }[]): AppError {
  return new AppError(
    'VALIDATION_FAILED',
    `the subscription is not valid: ${problems[0]?.path} ${problems[0]?.message}`,
    { problems },
  );
}

function linkInvalid(): AppError {
  return new AppError(
    'SUBSCRIPTION_LINK_INVALID',
    'this link is not valid (forged, for another page, expired or used already); subscribe again for a new one',
  );
}

/** Confirmation mails one address may get per hour, all pages together. */
export const CONFIRMATIONS_PER_EMAIL_PER_HOUR = 3;

const emailHash = (email: string): string => createHash('sha256').update(email.trim().toLowerCase()).digest('hex');

export function subscriberRoutes(app: Express, deps: SubscriberRoutesDeps): void {
  const body = (req: Request): Promise<unknown> => readJsonBody(req, { maxBytes: 64 * 1024, maxRatio: 100 }, 4);

  /** A public route's page, from memory only. */
  const publicPage = (req: Request): StoredStatusPage => {
    const slug = slugOf(req);
    if (!deps.directory.loaded) throw new RegistryUnavailableError('the status pages are not loaded yet; retry');
    const page = deps.directory.get(slug);
    if (!page) throw new AppError('STATUS_PAGE_NOT_FOUND', `there is no status page ${slug}`);
    return page;
  };

  /** Counts a request in `bucket`; 429 RATE_LIMITED with Retry-After past `limit` an hour. */
  const limited = async (bucket: string, limit: number, name: string): Promise<void> => {
    const verdict = await deps.buckets.hit(bucket, limit, HOUR);
    if (verdict.allowed) return;
    const wait = verdict.retryAfterSeconds;
    throw new AppError(
      'RATE_LIMITED',
      `too many subscription requests (${name}: ${limit} an hour); try again in ${wait} s`,
      { limit: name, retry_after: wait },
      { 'Retry-After': String(wait) },
    );
  };

  /** The monitors a subscriber asked for must be monitors of the page (400 at `/monitor_ids/N`). */
  const refuseOtherMonitors = (page: StoredStatusPage, ids: readonly string[]): void => {
    const onPage = new Set(page.monitor_ids);
    const problems = ids.flatMap((id, i) =>
      onPage.has(id) ? [] : [{ path: `/monitor_ids/${i}`, message: 'is not a monitor of this status page' }],
    );
    if (problems.length > 0) throw invalid(problems);
  };

  app.post('/api/status/:slug/subscribers', async (req, res) => {
    rejectUnknown(req, new Set());
    const page = publicPage(req);
    // Per address first: one address over its limit does not use up the page's; and the
    // page's counts valid requests only, so bodies that are refused cannot close it.
    await limited(`subscribe:address:${clientAddress(req)}`, deps.limits.perAddressPerHour, 'perAddress');
    const given = await body(req);
    if (!deps.validators.subscribe(given)) throw invalid(describeErrors(deps.validators.subscribe.errors));
    const monitorIds = given.monitor_ids ?? [];
    refuseOtherMonitors(page, monitorIds);
    await limited(`subscribe:page:${page.slug}`, deps.limits.perPagePerHour, 'perPage');
    const about = noticePage(deps.publicUrl, page.slug, page.title);
    res.setHeader('Cache-Control', 'no-store');

    if (given.email !== undefined) {
      const done = await deps.subscribers.subscribeEmail({
        slug: page.slug,
        tenantId: page.tenant_id,
        email: given.email,
        monitorIds,
      });
      const { subscriber, outcome } = done;
      deps.logger.info('status subscription asked', { request_id: req.id, slug: page.slug, outcome });
      // At most CONFIRMATIONS_PER_EMAIL_PER_HOUR confirmation mails to one address, all pages
      // together: nobody can aim our mail at someone's inbox. The answer is the same either way.
      const mailable =
        outcome !== 'active' &&
        (await deps.buckets.hit(`subscribe:email:${emailHash(given.email)}`, CONFIRMATIONS_PER_EMAIL_PER_HOUR, HOUR))
          .allowed;
      if (mailable) {
        // Not awaited: the answer takes as long whether a mail goes out or not (no timing
        // tells an active subscriber from a new one). Subscribing again sends it again.
        const mail = confirmationMail(deps.links, about, {
          id: subscriber.id,
          email: subscriber.email!,
          expiresAtMs: done.expiresAtMs,
        });
        void deps.mailer.send(mail).then((answer) => {
          if (answer.error === undefined && answer.statusCode >= 200 && answer.statusCode < 300) return;
          // Never the address: the subscriber's id says which.
          deps.logger.warn('subscription confirmation mail not sent', {
            slug: page.slug,
            subscriber_id: subscriber.id,
            status_code: answer.statusCode,
            error: answer.error,
          });
        });
      }
      res.status(202).json(ok({ state: 'confirmation_sent' }));
      return;
    }

    const url = given.webhook;
    if (!parsesAsUrl(url)) throw invalid([{ path: '/webhook', message: 'is not a URL' }]);
    // An address the policy denies is refused before anything is sent anywhere.
    const verdict = deps.policy.checkUrl(connectUrl(new URL(url)));
    if (verdict && !verdict.allowed) throw targetNotAllowed(verdict.reason);
    await deps.subscribers.refuseIfFull(page.slug);
    const secret = newWebhookSecret();
    const ctx: ChannelContext = {
      ...deps.http(),
      timeoutMs: deps.limits.verifyTimeoutMs,
      userAgent: 'telemetry-query-service/0.1 (subscription verification)',
    };
    const failure = await verifyWebhook(ctx, url, secret, about);
    if (failure === 'target_not_allowed') throw targetNotAllowed('its address is not one this service may reach');
    if (failure) {
      deps.logger.info('webhook subscription not verified', { request_id: req.id, slug: page.slug, ...failure });
      throw new AppError(
        'WEBHOOK_VERIFICATION_FAILED',
        `the webhook URL did not answer the verification request with its challenge (${failure.reason})`,
        failure,
      );
    }
    const subscriber = await deps.subscribers.addWebhook({
      slug: page.slug,
      tenantId: page.tenant_id,
      url,
      secret,
      monitorIds,
    });
    deps.logger.info('webhook subscription verified', { request_id: req.id, slug: page.slug, id: subscriber.id });
    res.status(201).json(ok({ id: subscriber.id, kind: 'webhook', monitor_ids: subscriber.monitorIds, secret }));
  });

  /** The token of a confirmation or unsubscribe request: a per-address limit, then its shape. */
  const linkRequest = async (req: Request): Promise<string> => {
    await limited(`links:address:${clientAddress(req)}`, deps.limits.linksPerAddressPerHour, 'linksPerAddress');
    const query = single(req, 'token');
    if (query !== undefined) {
      // RFC 8058: the mail client POSTs `List-Unsubscribe=One-Click` (form-encoded or
      // multipart) to the URL of the header; the token in the URL is what counts.
      await readBody(req, { maxBytes: 4096, maxRatio: 1 });
      return query;
    }
    const given = await body(req);
    if (!deps.validators.subscriptionToken(given))
      throw invalid(describeErrors(deps.validators.subscriptionToken.errors));
    return given.token;
  };

  app.post('/api/status/:slug/subscribers/confirm', async (req, res) => {
    rejectUnknown(req, new Set());
    const page = publicPage(req);
    const token = await linkRequest(req);
    const id = deps.links.verify('confirm', token, page.slug);
    const confirmed = id === undefined ? undefined : await deps.subscribers.confirm(page.slug, id);
    if (!confirmed) throw linkInvalid();
    deps.logger.info('status subscription confirmed', { request_id: req.id, slug: page.slug, id });
    res.setHeader('Cache-Control', 'no-store');
    res.json(ok({ kind: 'email', monitor_ids: confirmed.monitorIds }));
  });

  app.post('/api/status/:slug/unsubscribe', async (req, res) => {
    rejectUnknown(req, new Set(['token']));
    const page = publicPage(req);
    const token = await linkRequest(req);
    const id = deps.links.verify('unsubscribe', token, page.slug);
    if (id === undefined) throw linkInvalid();
    // Gone already: the same answer (a second click, or the owner deleted it).
    const removed = await deps.subscribers.remove(page.slug, id);
    deps.logger.info('status subscription ended', { request_id: req.id, slug: page.slug, id, removed });
    res.setHeader('Cache-Control', 'no-store');
    res.json(ok({ state: 'unsubscribed' }));
  });

  // The owner's: a key limited to monitors sees the subscribers of the pages it sees, and deletes none.
  const ownPage = async (req: Request, res: Response): Promise<StoredStatusPage> => {
    const slug = slugOf(req);
    const page = await deps.pages.get(slug);
    if (!page || !visibleTo(keyOf(res), page))
      throw new AppError('STATUS_PAGE_NOT_FOUND', `there is no status page ${slug}`);
    return page;
  };

  app.get('/api/status-pages/:slug/subscribers', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set(['cursor', 'limit']));
    const limit = limitParam(req, LIST_PAGE.max, LIST_PAGE.fallback);
    const cursor = cursorParam(req, isCursor);
    const page = await ownPage(req, res);
    const { subscribers, next } = await deps.subscribers.list(page.slug, page.tenant_id, limit, cursor);
    res.setHeader('Cache-Control', 'no-store');
    res.json({
      success: true,
      data: subscribers.map(subscriberView),
      next_cursor: next === undefined ? null : encodeCursor(next),
    });
  });

  app.delete('/api/status-pages/:slug/subscribers/:id', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'status page subscribers');
    const page = await ownPage(req, res);
    const id = String(req.params.id);
    const gone = SUBSCRIBER_ID.test(id)
      ? await deps.subscribers.removeOfPage(page.slug, page.tenant_id, id)
      : undefined;
    if (!gone) throw new AppError('SUBSCRIBER_NOT_FOUND', `the status page ${page.slug} has no subscriber ${id}`);
    const target = { type: 'status_subscriber', id };
    await recordChange(deps.audit, req, res, 'status_subscriber.delete', target, subscriberView(gone), undefined);
    res.json(ok(null));
  });
}

function targetNotAllowed(reason: string): AppError {
  return new AppError('TARGET_NOT_ALLOWED', `/webhook: ${reason}`, {
    path: '/webhook',
    problems: [{ path: '/webhook', message: reason }],
  });
}
