import { createHash } from 'node:crypto';
import {
  STATUS_FOLLOW_LIMITS,
  toIsoSeconds,
  type SubscriberKind,
  type SubscriberState,
  type SubscriberView,
} from '@telemetry/contract';
import {
  AppError,
  inTransaction,
  type PgClient,
  type PgPool,
  type PgQueryable,
  type SecretBox,
} from '@telemetry/platform';
import { originOf } from '../monitor-secrets.js';
import { registryCall } from '../registry/pg.js';
import { newStatusId } from './notices.js';
import { sealSubscriberWebhook } from './subscription-links.js';

/**
 * A status page's subscribers (`status_subscribers`; docs/console.md, "Subscribers"). An
 * email subscriber is pending until its confirmation link is followed, and forgotten when
 * it is not followed within SUBSCRIPTION_CONFIRM_TTL_SECONDS; a webhook subscriber is
 * active at once (its URL answered the challenge before the row is made). One row per
 * address and page (`address_hash`); unsubscribing deletes it. A page holds at most
 * `maxPerPage` subscribers, pending and active, counted under a lock of the page so the
 * cap holds across replicas.
 */

/** A subscriber as stored, without its sealed webhook. */
export interface SubscriberRecord {
  id: string;
  slug: string;
  tenantId: string;
  kind: SubscriberKind;
  /** The email address (lower case) of an email subscriber. */
  email: string | null;
  /** The scheme, host and port of a webhook subscriber's URL (its path and query are sealed). */
  webhookOrigin: string | null;
  monitorIds: string[];
  state: SubscriberState;
  createdAtMs: number;
  confirmedAtMs: number | null;
}

/** What subscribing an email did: a new pending row, a pending one refreshed (same id), or nothing (active). */
export type EmailSubscribeOutcome = 'new' | 'pending' | 'active';

export interface SubscriberStoreOptions {
  /** SUBSCRIPTION_CONFIRM_TTL_SECONDS: a pending row older than this is forgotten. */
  confirmTtlSeconds: number;
  /** Subscribers of one page at most (tests lower it); default STATUS_FOLLOW_LIMITS.maxSubscribersPerPage. */
  maxPerPage?: number;
}

/** A page of the owner's list: its position is the last row's (created_at in µs, id). */
export type SubscriberCursor = [string, string];

/** `address_hash`: SHA-256 (hex) of the lower-case email, or of the webhook URL as given. */
export function addressHash(kind: SubscriberKind, address: string): string {
  return createHash('sha256')
    .update(kind === 'email' ? address.toLowerCase() : address)
    .digest('hex');
}

/** What the page's owner sees of a subscriber: the email, or the webhook's origin only. */
export function subscriberView(r: SubscriberRecord): SubscriberView {
  return {
    id: r.id,
    kind: r.kind,
    address: r.kind === 'email' ? r.email! : r.webhookOrigin!,
    monitor_ids: r.monitorIds,
    state: r.state,
    created_at: toIsoSeconds(Math.floor(r.createdAtMs / 1000)),
    confirmed_at: r.confirmedAtMs === null ? null : toIsoSeconds(Math.floor(r.confirmedAtMs / 1000)),
  };
}

interface Row {
  subscriber_id: string;
  slug: string;
  tenant_id: string;
  kind: SubscriberKind;
  email: string | null;
  webhook_origin: string | null;
  monitor_ids: string[];
  state: SubscriberState;
  created_ms: string;
  confirmed_ms: string | null;
  created_us: string;
}

const COLUMNS = `subscriber_id, slug, tenant_id, kind, email, webhook_origin, monitor_ids, state,
  (extract(epoch from created_at) * 1000)::bigint AS created_ms,
  (extract(epoch from confirmed_at) * 1000)::bigint AS confirmed_ms,
  (extract(epoch from created_at) * 1000000)::bigint AS created_us`;

function decode(r: Row): SubscriberRecord {
  return {
    id: r.subscriber_id,
    slug: r.slug,
    tenantId: r.tenant_id,
    kind: r.kind,
    email: r.email,
    webhookOrigin: r.webhook_origin,
    monitorIds: r.monitor_ids,
    state: r.state,
    createdAtMs: Number(r.created_ms),
    confirmedAtMs: r.confirmed_ms === null ? null : Number(r.confirmed_ms),
  };
}

export class SubscriberStore {
  private readonly ttlSeconds: number;
  private readonly maxPerPage: number;

  constructor(
    private readonly pool: PgPool,
    private readonly box: SecretBox,
    options: SubscriberStoreOptions,
  ) {
    this.ttlSeconds = options.confirmTtlSeconds;
    this.maxPerPage = options.maxPerPage ?? STATUS_FOLLOW_LIMITS.maxSubscribersPerPage;
  }

  /**
   * One change of a page's subscribers: under the page's lock, its expired pending rows
   * forgotten first (so they count for nothing), then `fn`.
   */
  private inPage<T>(slug: string, fn: (tx: PgClient) => Promise<T>): Promise<T> {
    return registryCall(() =>
      inTransaction(this.pool, async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`status_subscribers:${slug}`]);
        await tx.query(
          `DELETE FROM status_subscribers
           WHERE slug = $1 AND state = 'pending' AND created_at < now() - make_interval(secs => $2::int)`,
          [slug, this.ttlSeconds],
        );
        return fn(tx);
      }),
    );
  }

  /** 403 QUOTA_EXCEEDED when the page holds maxPerPage subscribers (inside inPage). */
  private async refuseFull(tx: PgQueryable, slug: string): Promise<void> {
    const { rows } = await tx.query<{ n: string }>('SELECT count(*) AS n FROM status_subscribers WHERE slug = $1', [
      slug,
    ]);
    if (Number(rows[0]!.n) >= this.maxPerPage)
      throw new AppError('QUOTA_EXCEEDED', `a status page has at most ${this.maxPerPage} subscribers`, {
        quota: 'maxSubscribersPerPage',
        limit: this.maxPerPage,
      });
  }

  /**
   * 403 QUOTA_EXCEEDED when the page is full already: asked before a webhook's challenge is
   * sent, so a full page sends nothing (addWebhook counts again under the lock).
   */
  refuseIfFull(slug: string): Promise<void> {
    return registryCall(() => this.refuseFull(this.pool, slug));
  }

  /**
   * Subscribes an email to a page: a new pending row; a pending one refreshed (its monitors
   * the ones asked now, its confirmation time started again; same id); an active one left
   * as it is. A full page refuses every email alike (QUOTA_EXCEEDED), known or not, so the
   * refusal says nothing of who subscribed. `expiresAtMs`: when a link made now expires.
   */
  subscribeEmail(s: {
    slug: string;
    tenantId: string;
    email: string;
    monitorIds: readonly string[];
  }): Promise<{ outcome: EmailSubscribeOutcome; subscriber: SubscriberRecord; expiresAtMs: number }> {
    const email = s.email.toLowerCase();
    const hash = addressHash('email', email);
    return this.inPage(s.slug, async (tx) => {
      await this.refuseFull(tx, s.slug);
      const refreshed = await tx.query<Row>(
        `UPDATE status_subscribers SET monitor_ids = CASE WHEN state = 'pending' THEN $4 ELSE monitor_ids END,
           created_at = CASE WHEN state = 'pending' THEN now() ELSE created_at END
         WHERE slug = $1 AND kind = 'email' AND address_hash = $2 AND tenant_id = $3
         RETURNING ${COLUMNS}`,
        [s.slug, hash, s.tenantId, [...s.monitorIds]],
      );
      const found = refreshed.rows[0];
      const { rows } = found
        ? { rows: [found] }
        : await tx.query<Row>(
            `INSERT INTO status_subscribers (subscriber_id, slug, tenant_id, kind, address_hash, email, monitor_ids, state)
             VALUES ($1, $2, $3, 'email', $4, $5, $6, 'pending') RETURNING ${COLUMNS}`,
            [newStatusId('sub'), s.slug, s.tenantId, hash, email, [...s.monitorIds]],
          );
      const subscriber = decode(rows[0]!);
      const outcome: EmailSubscribeOutcome = !found ? 'new' : subscriber.state === 'active' ? 'active' : 'pending';
      return { outcome, subscriber, expiresAtMs: subscriber.createdAtMs + this.ttlSeconds * 1000 };
    });
  }

  /**
   * A webhook subscriber whose URL answered its challenge: active at once, its URL and
   * signing secret sealed. The same URL on the page again keeps its row (and id) and takes
   * the new secret and monitors: whoever answers at that URL asked for them.
   */
  addWebhook(s: {
    slug: string;
    tenantId: string;
    url: string;
    secret: string;
    monitorIds: readonly string[];
  }): Promise<SubscriberRecord> {
    const hash = addressHash('webhook', s.url);
    return this.inPage(s.slug, async (tx) => {
      const existing = await tx.query<{ subscriber_id: string }>(
        `SELECT subscriber_id FROM status_subscribers WHERE slug = $1 AND kind = 'webhook' AND address_hash = $2`,
        [s.slug, hash],
      );
      const id = existing.rows[0]?.subscriber_id;
      if (id === undefined) await this.refuseFull(tx, s.slug);
      const subscriberId = id ?? newStatusId('sub');
      const sealed = sealSubscriberWebhook(this.box, subscriberId, { url: s.url, secret: s.secret });
      const { rows } = await tx.query<Row>(
        id === undefined
          ? `INSERT INTO status_subscribers
               (subscriber_id, slug, tenant_id, kind, address_hash, webhook_sealed, webhook_origin, monitor_ids, state, confirmed_at)
             VALUES ($1, $2, $3, 'webhook', $4, $5, $6, $7, 'active', now()) RETURNING ${COLUMNS}`
          : `UPDATE status_subscribers SET webhook_sealed = $5, webhook_origin = $6, monitor_ids = $7, confirmed_at = now()
             WHERE subscriber_id = $1 AND slug = $2 AND tenant_id = $3 AND address_hash = $4 RETURNING ${COLUMNS}`,
        [subscriberId, s.slug, s.tenantId, hash, sealed, originOf(s.url), [...s.monitorIds]],
      );
      return decode(rows[0]!);
    });
  }

  /**
   * Confirms a pending email subscriber of the page: active from now. Undefined when there is
   * no such pending row (never made, forgotten, unsubscribed, or confirmed already: a link
   * works once).
   */
  async confirm(slug: string, id: string): Promise<SubscriberRecord | undefined> {
    const { rows } = await registryCall(() =>
      this.pool.query<Row>(
        `UPDATE status_subscribers SET state = 'active', confirmed_at = now()
         WHERE subscriber_id = $1 AND slug = $2 AND state = 'pending'
           AND created_at >= now() - make_interval(secs => $3::int)
         RETURNING ${COLUMNS}`,
        [id, slug, this.ttlSeconds],
      ),
    );
    return rows[0] && decode(rows[0]);
  }

  /** Unsubscribes (deletes the row and its deliveries); false when it was gone already. */
  async remove(slug: string, id: string): Promise<boolean> {
    const { rowCount } = await registryCall(() =>
      this.pool.query('DELETE FROM status_subscribers WHERE subscriber_id = $1 AND slug = $2', [id, slug]),
    );
    return (rowCount ?? 0) > 0;
  }

  /** The owner's deletion: the row as it was, or undefined when the page has no such subscriber. */
  async removeOfPage(slug: string, tenantId: string, id: string): Promise<SubscriberRecord | undefined> {
    const { rows } = await registryCall(() =>
      this.pool.query<Row>(
        `DELETE FROM status_subscribers WHERE subscriber_id = $1 AND slug = $2 AND tenant_id = $3 RETURNING ${COLUMNS}`,
        [id, slug, tenantId],
      ),
    );
    return rows[0] && decode(rows[0]);
  }

  /** The page's subscribers, newest first, `limit` at a time after `cursor`; `next` when there are more. */
  async list(
    slug: string,
    tenantId: string,
    limit: number,
    cursor?: SubscriberCursor,
  ): Promise<{ subscribers: SubscriberRecord[]; next: SubscriberCursor | undefined }> {
    const after = cursor
      ? `AND ((extract(epoch from created_at) * 1000000)::bigint, subscriber_id) < ($4::bigint, $5)`
      : '';
    const { rows } = await registryCall(() =>
      this.pool.query<Row>(
        `SELECT ${COLUMNS} FROM status_subscribers WHERE slug = $1 AND tenant_id = $2 ${after}
         ORDER BY created_us DESC, subscriber_id DESC LIMIT $3`,
        [slug, tenantId, limit + 1, ...(cursor ?? [])],
      ),
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      subscribers: page.map(decode),
      next: rows.length > limit && last ? [last.created_us, last.subscriber_id] : undefined,
    };
  }

  /** Forgets every page's pending subscribers whose confirmation expired (a periodic job; subscribing does it per page too). */
  async forgetExpired(): Promise<number> {
    const { rowCount } = await registryCall(() =>
      this.pool.query(
        `DELETE FROM status_subscribers WHERE state = 'pending' AND created_at < now() - make_interval(secs => $1::int)`,
        [this.ttlSeconds],
      ),
    );
    return rowCount ?? 0;
  }
}
