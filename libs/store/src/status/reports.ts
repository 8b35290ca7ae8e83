import {
  STATUS_FOLLOW_LIMITS as L,
  toIsoSeconds,
  type ReportImpact,
  type ReportState,
  type ReportUpdateView,
  type StatusReportView,
} from '@telemetry/contract';
import { AppError, inTransaction, type PgPool, type PgQueryable } from '@telemetry/platform';
import { registryCall, sqlState } from '../registry/pg.js';
import { insertNotice, newStatusId } from './notices.js';
import { reportNotice, type ReportPageContext } from './report-notices.js';

/**
 * Status reports and their updates (docs/console.md, "Status reports") in `status_reports`
 * and `status_report_updates` (migration 5). Every write of a page's reports runs in one
 * transaction under that page's advisory lock, so its caps (open reports per page, updates
 * per report) still hold at COMMIT, and every write that tells subscribers (a report
 * published, an update of a published one) makes its notice and deliveries
 * (insertNotice) in that same transaction: committed means told.
 */

/** Where a list goes on after: the last row's created_at (microseconds since the epoch) and id. */
export type ReportCursor = [number, string];

/** A report of a list, with the cursor that points after it. */
export interface ListedReport {
  report: StatusReportView;
  cursor: ReportCursor;
}

/** A new report and its first update. */
export interface NewReport {
  title: string;
  impact: ReportImpact;
  monitorIds: readonly string[];
  state: ReportState;
  message: string;
  /** The first update's time (ms). */
  at: number;
  draft: boolean;
  incidentId?: string;
}

/** What a PATCH changes; `publish` makes a draft public (and tells subscribers). */
export interface ReportChange {
  title?: string;
  impact?: ReportImpact;
  monitorIds?: readonly string[];
  publish?: boolean;
}

/** A new update of a report. */
export interface NewUpdate {
  state: ReportState;
  message: string;
  /** Its time (ms). */
  at: number;
}

/** A write's outcome: the report before and after, and the notice it made (none for drafts). */
export interface ReportWrite {
  before: StatusReportView | undefined;
  after: StatusReportView;
  noticeId: string | undefined;
}

/** Which reports a list holds: all of them (the owner's, drafts included) or the published open or resolved ones. */
export type ReportFilter = 'all' | 'open' | 'resolved';

interface ReportRow {
  report_id: string;
  slug: string;
  title: string;
  impact: ReportImpact;
  monitor_ids: string[];
  state: ReportState;
  draft: boolean;
  incident_id: string | null;
  c: string;
  u: string;
  r: string | null;
  c_us: string;
}

interface UpdateRow {
  update_id: string;
  report_id: string;
  state: ReportState;
  message: string;
  a: string;
  c: string;
}

const secondsOf = (column: string): string => `floor(extract(epoch from ${column}))::bigint`;
const REPORT_COLUMNS = `report_id, slug, title, impact, monitor_ids, state, draft, incident_id,
  ${secondsOf('created_at')} AS c, ${secondsOf('updated_at')} AS u, ${secondsOf('resolved_at')} AS r,
  (extract(epoch from created_at) * 1000000)::bigint AS c_us`;
const UPDATE_COLUMNS = `update_id, report_id, state, message, ${secondsOf('at')} AS a, ${secondsOf('created_at')} AS c`;
/** Newest first: by the time each update is about, then by when it was posted. */
const UPDATE_ORDER = 'at DESC, created_at DESC, update_id DESC';
const FILTERS: Record<ReportFilter, string> = {
  all: 'true',
  open: "NOT draft AND state <> 'resolved'",
  resolved: "NOT draft AND state = 'resolved'",
};

const iso = (seconds: string): string => toIsoSeconds(Number(seconds));

async function updatesOf(db: PgQueryable, ids: readonly string[]): Promise<Map<string, ReportUpdateView[]>> {
  const out = new Map<string, ReportUpdateView[]>(ids.map((id) => [id, []]));
  if (ids.length === 0) return out;
  const { rows } = await db.query<UpdateRow>(
    `SELECT ${UPDATE_COLUMNS} FROM status_report_updates WHERE report_id = ANY($1::text[]) ORDER BY ${UPDATE_ORDER}`,
    [ids],
  );
  for (const u of rows) {
    out
      .get(u.report_id)
      ?.push({ id: u.update_id, state: u.state, message: u.message, at: iso(u.a), created_at: iso(u.c) });
  }
  return out;
}

async function viewsOf(db: PgQueryable, rows: readonly ReportRow[]): Promise<ListedReport[]> {
  const updates = await updatesOf(
    db,
    rows.map((r) => r.report_id),
  );
  return rows.map((r) => ({
    report: {
      id: r.report_id,
      slug: r.slug,
      title: r.title,
      impact: r.impact,
      monitor_ids: r.monitor_ids,
      state: r.state,
      draft: r.draft,
      incident_id: r.incident_id,
      created_at: iso(r.c),
      updated_at: iso(r.u),
      resolved_at: r.r === null ? null : iso(r.r),
      updates: updates.get(r.report_id) ?? [],
    },
    cursor: [Number(r.c_us), r.report_id],
  }));
}

async function read(
  db: PgQueryable,
  tenantId: string,
  slug: string,
  id: string,
): Promise<StatusReportView | undefined> {
  const { rows } = await db.query<ReportRow>(
    `SELECT ${REPORT_COLUMNS} FROM status_reports WHERE report_id = $1 AND slug = $2 AND tenant_id = $3`,
    [id, slug, tenantId],
  );
  return (await viewsOf(db, rows))[0]?.report;
}

function quota(what: string, max: number): AppError {
  return new AppError('QUOTA_EXCEEDED', `${what} ${max}`, { quota: max });
}

/** 403 QUOTA_EXCEEDED when the page has its maximum of reports not resolved (`except` one of them). */
async function refuseOpenPastCap(tx: PgQueryable, slug: string, except = ''): Promise<void> {
  const { rows } = await tx.query<{ n: string }>(
    "SELECT count(*) AS n FROM status_reports WHERE slug = $1 AND state <> 'resolved' AND report_id <> $2",
    [slug, except],
  );
  if (Number(rows[0]!.n) >= L.maxOpenReportsPerPage)
    throw quota(
      'a status page may have this many reports that are not resolved (drafts included):',
      L.maxOpenReportsPerPage,
    );
}

async function insertUpdate(tx: PgQueryable, reportId: string, u: NewUpdate, by: string): Promise<string> {
  const id = newStatusId('upd');
  await tx.query(
    `INSERT INTO status_report_updates (update_id, report_id, state, message, at, created_by)
     VALUES ($1, $2, $3, $4, to_timestamp($5::double precision / 1000), $6)`,
    [id, reportId, u.state, u.message, u.at, by],
  );
  return id;
}

/** The reports of status pages, their updates, and the notices they make. */
export class ReportStore {
  constructor(private readonly db: PgPool) {}

  async get(tenantId: string, slug: string, id: string): Promise<StatusReportView | undefined> {
    return registryCall(() => read(this.db, tenantId, slug, id));
  }

  /** Up to `limit` + 1 reports of the page, newest first (by creation), after `after`. */
  async list(
    tenantId: string,
    slug: string,
    filter: ReportFilter,
    limit: number,
    after?: ReportCursor,
  ): Promise<ListedReport[]> {
    return registryCall(async () => {
      const { rows } = await this.db.query<ReportRow>(
        `SELECT ${REPORT_COLUMNS} FROM status_reports
         WHERE slug = $1 AND tenant_id = $2 AND ${FILTERS[filter]}
           AND ($3::bigint IS NULL OR (created_at, report_id) < (timestamptz 'epoch' + $3::bigint * interval '1 microsecond', $4))
         ORDER BY created_at DESC, report_id DESC LIMIT $5`,
        [slug, tenantId, after?.[0] ?? null, after?.[1] ?? '', limit + 1],
      );
      return viewsOf(this.db, rows);
    });
  }

  /** Makes a report and its first update; tells subscribers unless it is a draft. */
  async create(page: ReportPageContext, r: NewReport, by: string): Promise<ReportWrite> {
    return this.write(page.slug, async (tx) => {
      if (r.state !== 'resolved') await refuseOpenPastCap(tx, page.slug);
      const id = newStatusId('rpt');
      await tx.query(
        `INSERT INTO status_reports (report_id, slug, tenant_id, title, impact, monitor_ids, state, draft, incident_id, created_by, resolved_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
           CASE WHEN $7 = 'resolved' THEN to_timestamp($11::double precision / 1000) END)`,
        [
          id,
          page.slug,
          page.tenantId,
          r.title,
          r.impact,
          [...r.monitorIds],
          r.state,
          r.draft,
          r.incidentId ?? null,
          by,
          r.at,
        ],
      );
      const updateId = await insertUpdate(tx, id, r, by);
      return this.told(tx, page, undefined, id, r.draft ? undefined : ['report_opened', updateId]);
    });
  }

  /** Changes a report's title, impact or monitors, or publishes a draft (telling subscribers); undefined: no such report. */
  async change(page: ReportPageContext, id: string, c: ReportChange): Promise<ReportWrite | undefined> {
    return this.write(page.slug, async (tx) => {
      const before = await read(tx, page.tenantId, page.slug, id);
      if (!before) return undefined;
      await tx.query(
        `UPDATE status_reports SET title = coalesce($2, title), impact = coalesce($3, impact),
           monitor_ids = coalesce($4, monitor_ids), draft = draft AND NOT $5, updated_at = now(), version = version + 1
         WHERE report_id = $1`,
        [id, c.title ?? null, c.impact ?? null, c.monitorIds ? [...c.monitorIds] : null, c.publish === true],
      );
      const publishing = before.draft && c.publish === true;
      return this.told(tx, page, before, id, publishing ? ['report_opened', before.updates[0]!.id] : undefined);
    });
  }

  /** Deletes a report, its updates and its notices (their feed entries and pending deliveries go with them). */
  async remove(tenantId: string, slug: string, id: string): Promise<StatusReportView | undefined> {
    return this.write(slug, async (tx) => {
      const before = await read(tx, tenantId, slug, id);
      if (before) await tx.query('DELETE FROM status_reports WHERE report_id = $1', [id]);
      return before;
    });
  }

  /**
   * Adds an update. The report's state is its newest update's (by time): `resolved` sets
   * resolved_at (that update's time), anything later reopens it (resolved_at null, and the
   * page's cap of open reports applies). A published report's update tells subscribers.
   */
  async addUpdate(page: ReportPageContext, id: string, u: NewUpdate, by: string): Promise<ReportWrite | undefined> {
    return this.write(page.slug, async (tx) => {
      const before = await read(tx, page.tenantId, page.slug, id);
      if (!before) return undefined;
      if (before.updates.length >= L.maxUpdatesPerReport)
        throw quota('a status report may have this many updates:', L.maxUpdatesPerReport);
      const updateId = await insertUpdate(tx, id, u, by);
      const { rows } = await tx.query<{ state: ReportState }>(
        `UPDATE status_reports r SET state = n.state, resolved_at = CASE WHEN n.state = 'resolved' THEN n.at END,
           updated_at = now(), version = version + 1
         FROM (SELECT state, at FROM status_report_updates WHERE report_id = $1 ORDER BY ${UPDATE_ORDER} LIMIT 1) n
         WHERE r.report_id = $1 RETURNING r.state`,
        [id],
      );
      if (before.state === 'resolved' && rows[0]!.state !== 'resolved') await refuseOpenPastCap(tx, page.slug, id);
      return this.told(tx, page, before, id, before.draft ? undefined : ['report_updated', updateId]);
    });
  }

  /** Reads the report back in the write's transaction and makes its notice, if any. */
  private async told(
    tx: PgQueryable,
    page: ReportPageContext,
    before: StatusReportView | undefined,
    id: string,
    notice: ['report_opened' | 'report_updated', string] | undefined,
  ): Promise<ReportWrite> {
    const after = (await read(tx, page.tenantId, page.slug, id))!;
    const made = notice ? await insertNotice(tx, reportNotice(page, notice[0], after, notice[1])) : undefined;
    return { before, after, noticeId: made?.noticeId };
  }

  /** One transaction under the page's lock (not the registry's: reports are in no change feed). */
  private write<T>(slug: string, fn: (tx: PgQueryable) => Promise<T>): Promise<T> {
    return registryCall(async () => {
      try {
        return await inTransaction(this.db, async (tx) => {
          await tx.query("SELECT pg_advisory_xact_lock(hashtext('status_reports:' || $1))", [slug]);
          return fn(tx);
        });
      } catch (err) {
        // The page went while this was written.
        if (sqlState(err) === '23503') throw new AppError('STATUS_PAGE_NOT_FOUND', `there is no status page ${slug}`);
        throw err;
      }
    });
  }
}
