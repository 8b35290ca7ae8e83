import type { NoticeKind, SubscriberKind } from '@telemetry/contract';
import type { PgPool } from '@telemetry/platform';
import { registryCall } from '../registry/pg.js';

/**
 * The deliveries of status-page notices (docs/console.md, "Delivery"): the check runners'
 * deliverer claims due `status_deliveries` rows under a lease (`FOR UPDATE SKIP LOCKED`, so
 * two runners never claim the same row; a runner that dies leaves its lease to expire), with
 * what it needs to send them (the notice, the subscriber, the page), then marks each
 * delivered, reschedules it, or gives it up. Times are the database's clock (one for every
 * runner). A claim is fenced by its lease's end: a runner whose lease ran out and was taken
 * over writes nothing back.
 */

/** A claimed delivery: the row, its notice, its subscriber and its page. */
export interface ClaimedDelivery {
  noticeId: string;
  subscriberId: string;
  /** Attempts made before this one. */
  attempts: number;
  /** The lease's end as the database wrote it: this claim's fence. */
  lease: string;
  slug: string;
  pageTitle: string;
  kind: SubscriberKind;
  /** An email subscriber's address. */
  email: string | null;
  /** A webhook subscriber's sealed URL and secret (openSubscriberWebhook). */
  webhookSealed: string | null;
  notice: {
    kind: NoticeKind;
    title: string;
    body: string;
    /** The webhook's `report`/`update` or `maintenance` (StatusNoticeWebhook). */
    payload: Record<string, unknown>;
    createdAt: string;
  };
}

interface Row {
  notice_id: string;
  subscriber_id: string;
  attempts: number;
  fence: string;
  slug: string;
  page_title: string;
  kind: SubscriberKind;
  email: string | null;
  webhook_sealed: string | null;
  notice_kind: NoticeKind;
  title: string;
  body: string;
  payload: Record<string, unknown>;
  created_at: Date;
}

/** What last_error may hold (the column's limit). */
const MAX_ERROR = 1000;

/** The wait before attempt `attempt + 1` after attempt `attempt` (1 first) failed: doubling from `baseMs`, at most an hour. */
export function deliveryBackoffMs(attempt: number, baseMs: number): number {
  return Math.min(3_600_000, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
}

export class StatusDeliveryStore {
  constructor(private readonly db: PgPool) {}

  /**
   * Claims up to `limit` due deliveries (pending, next_at passed, no live lease) for
   * `leaseSeconds`, oldest due first. Only the delivery rows are locked (the runner may
   * not lock notices or subscribers); a subscriber deleted meanwhile took its rows with it.
   */
  async claimDue(limit: number, leaseSeconds: number): Promise<ClaimedDelivery[]> {
    const { rows } = await registryCall(() =>
      this.db.query<Row>(
        `WITH due AS (
           SELECT notice_id, subscriber_id FROM status_deliveries
           WHERE state = 'pending' AND next_at <= now() AND (lease_until IS NULL OR lease_until < now())
           ORDER BY next_at LIMIT $1 FOR UPDATE SKIP LOCKED
         ), claimed AS (
           UPDATE status_deliveries d SET lease_until = now() + make_interval(secs => $2)
           FROM due WHERE d.notice_id = due.notice_id AND d.subscriber_id = due.subscriber_id
           RETURNING d.notice_id, d.subscriber_id, d.attempts, d.lease_until
         )
         SELECT c.notice_id, c.subscriber_id, c.attempts, c.lease_until::text AS fence,
           s.slug, p.title AS page_title, s.kind, s.email, s.webhook_sealed,
           n.kind AS notice_kind, n.title, n.body, n.payload, n.created_at
         FROM claimed c
         JOIN status_notices n ON n.notice_id = c.notice_id
         JOIN status_subscribers s ON s.subscriber_id = c.subscriber_id
         JOIN status_pages p ON p.slug = s.slug`,
        [limit, leaseSeconds],
      ),
    );
    return rows.map((r) => ({
      noticeId: r.notice_id,
      subscriberId: r.subscriber_id,
      attempts: r.attempts,
      lease: r.fence,
      slug: r.slug,
      pageTitle: r.page_title,
      kind: r.kind,
      email: r.email,
      webhookSealed: r.webhook_sealed,
      notice: {
        kind: r.notice_kind,
        title: r.title,
        body: r.body,
        payload: r.payload,
        createdAt: r.created_at.toISOString(),
      },
    }));
  }

  /** Delivered: done. False when the claim's lease was lost (another runner has the row, or it is gone). */
  delivered(d: ClaimedDelivery): Promise<boolean> {
    return this.end(d, `state = 'delivered', delivered_at = now(), last_error = ''`, []);
  }

  /** Another attempt after `delayMs`; `error` says why this one failed (never a secret: no URL, no address). */
  retry(d: ClaimedDelivery, delayMs: number, error: string): Promise<boolean> {
    return this.end(d, `next_at = now() + make_interval(secs => $4::double precision / 1000), last_error = $5`, [
      delayMs,
      error.slice(0, MAX_ERROR),
    ]);
  }

  /** Given up: never sent again. */
  failed(d: ClaimedDelivery, error: string): Promise<boolean> {
    return this.end(d, `state = 'failed', last_error = $4`, [error.slice(0, MAX_ERROR)]);
  }

  /** Counts the attempt, ends the lease and sets `set`, if the claim still holds. */
  private async end(d: ClaimedDelivery, set: string, params: unknown[]): Promise<boolean> {
    const { rowCount } = await registryCall(() =>
      this.db.query(
        `UPDATE status_deliveries SET attempts = attempts + 1, lease_until = NULL, ${set}
         WHERE notice_id = $1 AND subscriber_id = $2 AND state = 'pending' AND lease_until = $3::timestamptz`,
        [d.noticeId, d.subscriberId, d.lease, ...params],
      ),
    );
    return rowCount === 1;
  }
}
