import { randomBytes } from 'node:crypto';
import type { NoticeKind } from '@telemetry/contract';
import type { PgQueryable } from '@telemetry/platform';

/**
 * Status-page notices (docs/console.md, "Subscribers"): what subscribers are told, one row
 * of `status_notices` each, and one `status_deliveries` row per subscriber to tell, made in
 * the same transaction as the notice (so a committed notice is delivered: the runners'
 * deliverer claims due rows under a lease). Feeds list the notices themselves.
 */

/** A new id: `prefix_` and 20 lower-case hex digits (rpt_, upd_, sub_, ntc_). */
export function newStatusId(prefix: 'rpt' | 'upd' | 'sub' | 'ntc'): string {
  return `${prefix}_${randomBytes(10).toString('hex')}`;
}

/** A notice to make. */
export interface NoticeDraft {
  slug: string;
  tenantId: string;
  kind: NoticeKind;
  reportId?: string;
  updateId?: string;
  /** The monitors it is about ([]: the page as a whole): subscribers of other monitors only are not told. */
  monitorIds: readonly string[];
  /** Plain text as sent: the email's subject and the feed entry's title. */
  title: string;
  /** Plain text as sent: the email's text and the feed entry's content. */
  body: string;
  /** The webhook's data beside the envelope fields (StatusNoticeWebhook): `report`, `update` or `maintenance`. */
  payload: Record<string, unknown>;
  /** Made once per key (maintenance notices): a second insert with it makes nothing. */
  dedupKey?: string;
}

/**
 * Inserts a notice and a pending delivery to every active subscriber of its page whose
 * monitors it concerns (a subscriber of [] hears of everything; a notice about [] reaches
 * everyone), inside the caller's transaction. Undefined when `dedupKey` was used before.
 */
export async function insertNotice(
  tx: PgQueryable,
  n: NoticeDraft,
): Promise<{ noticeId: string; deliveries: number } | undefined> {
  const noticeId = newStatusId('ntc');
  const { rowCount } = await tx.query(
    `INSERT INTO status_notices (notice_id, slug, tenant_id, kind, report_id, update_id, monitor_ids, title, body, payload, dedup_key)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (dedup_key) DO NOTHING`,
    [
      noticeId,
      n.slug,
      n.tenantId,
      n.kind,
      n.reportId ?? null,
      n.updateId ?? null,
      [...n.monitorIds],
      n.title,
      n.body,
      JSON.stringify(n.payload),
      n.dedupKey ?? null,
    ],
  );
  if (rowCount !== 1) return undefined;
  const fanOut = await tx.query(
    `INSERT INTO status_deliveries (notice_id, subscriber_id)
     SELECT $1, subscriber_id FROM status_subscribers
     WHERE slug = $2 AND state = 'active'
       AND (cardinality(monitor_ids) = 0 OR cardinality($3::text[]) = 0 OR monitor_ids && $3::text[])`,
    [noticeId, n.slug, [...n.monitorIds]],
  );
  return { noticeId, deliveries: fanOut.rowCount ?? 0 };
}
