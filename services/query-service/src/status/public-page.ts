import type { Express, Request, Response } from 'express';
import {
  maintenanceOccurrences,
  STATUS_FOLLOW_LIMITS as L,
  toIsoSeconds,
  type MaintenanceWindow,
  type PublicMaintenance,
  type PublicReport,
  type StatusReportView,
} from '@telemetry/contract';
import {
  AppError,
  cursorParam,
  limitParam,
  rejectUnknown,
  sendPage,
  type Logger,
  type Mirror,
} from '@telemetry/platform';
import {
  publicReportOf,
  RegistryUnavailableError,
  type MonitorStore,
  type ListedReport,
  type ReportCursor,
  type ReportStore,
  type StoredStatusPage,
} from '@telemetry/store';
import { isTimeIdCursor, storeCall } from '../params.js';

/**
 * The public status page's reports, maintenance and history (docs/console.md, "Status
 * reports"): what anyone may see of them, without a key. Names of the page's monitors,
 * never the tenant's other data.
 */

const DAY_MS = 86_400_000;

/**
 * Maintenance of the page's monitors in progress or starting within
 * STATUS_FOLLOW_LIMITS.maintenanceDaysShown days of `now` (ms), soonest first.
 */
export function publicMaintenanceOf(
  monitors: readonly { id: string; name: string; maintenance_windows: readonly MaintenanceWindow[] }[],
  now: number,
): PublicMaintenance[] {
  return monitors
    .flatMap((m) =>
      maintenanceOccurrences(m.maintenance_windows, now, now + L.maintenanceDaysShown * DAY_MS).map((o) => ({
        o,
        shown: {
          monitor: { id: m.id, name: m.name },
          starts_at: toIsoSeconds(Math.floor(o.start / 1000)),
          ends_at: toIsoSeconds(Math.floor(o.end / 1000)),
          in_progress: o.start <= now,
          message: o.window.message ?? null,
        },
      })),
    )
    .sort((a, b) => a.o.start - b.o.start || a.o.end - b.o.end)
    .map((x) => x.shown);
}

/** The page's published reports that are not resolved, newest first, as anyone sees them. */
export async function openReportsOf(
  reports: ReportStore,
  page: StoredStatusPage,
  names: ReadonlyMap<string, string>,
): Promise<PublicReport[]> {
  const open = await reports.list(page.tenant_id, page.slug, 'open', L.maxOpenReportsPerPage);
  return open.map((r) => publicReportOf(r.report, names));
}

export interface PublicHistoryDeps {
  directory: Mirror<StoredStatusPage>;
  reports: ReportStore;
  monitors: Pick<MonitorStore, 'summaries'>;
  logger: Logger;
  /** How long anyone may keep an answer. */
  cacheSeconds: number;
}

/** Names of the page's monitors by id (their summaries: no secret is opened). */
export async function monitorNamesOf(
  monitors: Pick<MonitorStore, 'summaries'>,
  page: StoredStatusPage,
): Promise<Map<string, string>> {
  const found = await monitors.summaries(page.monitor_ids);
  return new Map(found.filter((m) => m.tenant_id === page.tenant_id).map((m) => [m.id, m.name]));
}

/** A report list's `cursor` parameter (400 INVALID_PARAMETER for one this service did not issue). */
export const reportCursorParam = (req: Request): ReportCursor | undefined =>
  cursorParam(req, (v: unknown): v is ReportCursor => isTimeIdCursor(v));

/** Answers a page of a report list (up to `limit` of `rows`, `next_cursor`). */
export function sendReports(
  req: Request,
  res: Response,
  rows: readonly ListedReport[],
  limit: number,
  toItem: (r: StatusReportView) => unknown,
): void {
  sendPage(
    req,
    res,
    rows,
    limit,
    (r) => r.cursor,
    (r) => toItem(r.report),
  );
}

/** GET /api/status/{slug}/history: the page's published, resolved reports, newest first, paged by `cursor`. */
export function publicHistoryRoute(app: Express, deps: PublicHistoryDeps): void {
  app.get('/api/status/:slug/history', async (req: Request, res) => {
    rejectUnknown(req, new Set(['cursor', 'limit']));
    const limit = limitParam(req, L.maxHistoryPageSize, L.historyPageSize);
    const after = reportCursorParam(req);
    const slug = String(req.params.slug);
    if (!deps.directory.loaded) throw new RegistryUnavailableError('the status pages are not loaded yet; retry');
    const page = deps.directory.get(slug);
    if (!page) throw new AppError('STATUS_PAGE_NOT_FOUND', `there is no status page ${slug.slice(0, 64)}`);
    const [rows, names] = await storeCall(deps.logger, req, 'status page history', () =>
      Promise.all([
        deps.reports.list(page.tenant_id, page.slug, 'resolved', limit, after),
        monitorNamesOf(deps.monitors, page),
      ]),
    );
    res.setHeader('Cache-Control', `public, max-age=${deps.cacheSeconds}`);
    sendReports(req, res, rows, limit, (r) => publicReportOf(r, names));
  });
}
