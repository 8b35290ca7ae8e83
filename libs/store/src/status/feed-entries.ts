import type { NoticeKind } from '@telemetry/contract';
import type { PgQueryable } from '@telemetry/platform';

/** A notice as a feed shows it (docs/console.md, "Feeds and badges"): one entry of RSS and Atom. */
export interface FeedEntry {
  noticeId: string;
  kind: NoticeKind;
  /** Plain text, as sent to subscribers. */
  title: string;
  body: string;
  /** Milliseconds since the epoch. */
  createdAtMs: number;
  /** The report it is about; null for a maintenance notice. */
  reportId: string | null;
}

/**
 * The newest `limit` notices of a page, newest first (ties by notice id, so two reads list
 * them alike). The tenant is the page's, from the directory: a slug of another tenant's
 * page reads nothing of it.
 */
export async function feedEntries(
  db: PgQueryable,
  slug: string,
  tenantId: string,
  limit: number,
): Promise<FeedEntry[]> {
  const { rows } = await db.query<{
    notice_id: string;
    kind: NoticeKind;
    title: string;
    body: string;
    created_ms: string;
    report_id: string | null;
  }>(
    `SELECT notice_id, kind, title, body, report_id, floor(extract(epoch from created_at) * 1000)::bigint AS created_ms
       FROM status_notices
      WHERE slug = $1 AND tenant_id = $2
      ORDER BY created_at DESC, notice_id DESC
      LIMIT $3`,
    [slug, tenantId, limit],
  );
  return rows.map((r) => ({
    noticeId: r.notice_id,
    kind: r.kind,
    title: r.title,
    body: r.body,
    createdAtMs: Number(r.created_ms),
    reportId: r.report_id,
  }));
}
