import type { Express, Request, RequestHandler, Response } from 'express';
import {
  describeErrors,
  ok,
  REPORT_ID_PATTERN,
  STATUS_FOLLOW_LIMITS as L,
  type StatusFollowValidators,
  type StatusReportView,
} from '@telemetry/contract';
import { AppError, limitParam, methodNotAllowed, readJsonBody, rejectUnknown } from '@telemetry/platform';
import {
  incidentByIdSql,
  type IncidentByIdRow,
  type MonitorStore,
  type ReportPageContext,
  type ReportStore,
  type StatusPageStore,
} from '@telemetry/store';
import { recordChange, type Auditor } from '../access/audit.js';
import { principalOf } from '../access/principal.js';
import { readRows, storeCall, type ReadDeps } from '../params.js';
import { keyOf, refuseLimited, slugOf, visibleTo } from '../status-pages.route.js';
import { monitorNamesOf, reportCursorParam, sendReports } from './public-page.js';

/**
 * The owner's status report routes (docs/api.md, "Status reports"):
 * /api/status-pages/{slug}/reports…, with the status pages' scopes and visibility (a key
 * limited to some monitors sees only pages of those, and changes no report). Every
 * committed write is audited, and forgets this replica's rendered copy of the public page.
 */
export interface ReportRoutesDeps extends ReadDeps {
  reports: ReportStore;
  pages: Pick<StatusPageStore, 'get'>;
  monitors: Pick<MonitorStore, 'summaries'>;
  validators: StatusFollowValidators;
  auth: { read: RequestHandler; write: RequestHandler };
  audit: Auditor;
  /** Forgets this replica's rendered public page (StatusPageHooks.evict). */
  evict: (slug: string) => void;
}

/** A validator of StatusFollowValidators: does the body have its schema, and if not, why. */
type Check<T> = ((data: unknown) => data is T) & { errors?: Parameters<typeof describeErrors>[0] };

/** How far ahead of now an update's `at` may be. */
const MAX_AHEAD_MS = 5 * 60_000;
const REPORT_ID = new RegExp(REPORT_ID_PATTERN);

function reportIdOf(req: Request): string {
  const id = String(req.params.id);
  if (!REPORT_ID.test(id)) throw notFound(id.slice(0, 64));
  return id;
}

function invalid(problems: { path: string; message: string }[]): AppError {
  const first = problems[0];
  return new AppError('VALIDATION_FAILED', `the request is not valid: ${first?.path} ${first?.message}`, { problems });
}

function notFound(id: string): AppError {
  return new AppError('REPORT_NOT_FOUND', `there is no status report ${id} on this status page`);
}

/** `at` (given or now) in ms: 400 at /at when it is more than 5 minutes ahead. */
function timeOf(at: string | undefined): number {
  const now = Date.now();
  if (at === undefined) return now;
  const ms = Date.parse(at);
  if (ms > now + MAX_AHEAD_MS)
    throw invalid([{ path: '/at', message: 'must not be more than 5 minutes ahead of now' }]);
  return ms;
}

/** 400 with the path of each affected monitor that is not a monitor of the page. */
function refuseOffPage(ids: readonly string[] | undefined, page: ReportPageContext): void {
  const problems = (ids ?? []).flatMap((id, i) =>
    page.monitorNames.has(id) ? [] : [{ path: `/monitor_ids/${i}`, message: `${id} is not a monitor of this page` }],
  );
  if (problems.length > 0) throw invalid(problems);
}

/** Who wrote it: a person's id, or the key's. */
function authorOf(res: Response): string {
  const p = principalOf(res);
  return p.actor.type === 'person' ? p.actor.id : `key:${p.keyId}`;
}

/** A report as the audit log records it: its updates counted, not copied. */
const briefly = (r: StatusReportView) => ({ ...r, updates: r.updates.length });

export function reportRoutes(app: Express, deps: ReportRoutesDeps): void {
  /** A write's body, valid by `v` (400 VALIDATION_FAILED with each problem's path); writes are refused to limited keys. */
  const writeBody = async <T>(req: Request, res: Response, v: Check<T>): Promise<T> => {
    rejectUnknown(req, new Set());
    refuseLimited(res);
    const given = await readJsonBody(req, { maxBytes: 64 * 1024, maxRatio: 100 }, 4);
    if (!v(given)) throw invalid(describeErrors(v.errors));
    return given;
  };
  /** A write of an existing report: 404 when there is none; this replica's public page is rendered anew. */
  const written = async <T>(req: Request, slug: string, id: string, what: string, fn: () => Promise<T | undefined>) => {
    const done = await storeCall(deps.logger, req, what, fn);
    if (!done) throw notFound(id);
    deps.evict(slug);
    return done;
  };
  /** The page (visible to the key) and its monitors' names, or 404. */
  const pageOf = async (req: Request, res: Response): Promise<ReportPageContext> => {
    const slug = slugOf(req);
    const page = await storeCall(deps.logger, req, 'status page lookup', () => deps.pages.get(slug));
    if (!page || !visibleTo(keyOf(res), page))
      throw new AppError('STATUS_PAGE_NOT_FOUND', `there is no status page ${slug}`);
    const monitorNames = await storeCall(deps.logger, req, 'monitor lookup', () => monitorNamesOf(deps.monitors, page));
    return { slug, tenantId: page.tenant_id, title: page.title, monitorNames };
  };
  const target = (id: string) => ({ type: 'status_report', id });
  const created = async (req: Request, res: Response, report: StatusReportView): Promise<void> => {
    deps.evict(report.slug);
    await recordChange(deps.audit, req, res, 'status_report.create', target(report.id), undefined, report);
    res.status(201).setHeader('Location', `/api/status-pages/${report.slug}/reports/${report.id}`);
    res.json(ok(report));
  };

  app.get('/api/status-pages/:slug/reports', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set(['cursor', 'limit']));
    const limit = limitParam(req, L.maxHistoryPageSize, L.historyPageSize);
    const after = reportCursorParam(req);
    const page = await pageOf(req, res);
    const rows = await storeCall(deps.logger, req, 'status report list', () =>
      deps.reports.list(page.tenantId, page.slug, 'all', limit, after),
    );
    sendReports(req, res, rows, limit, (r) => r);
  });

  app.post('/api/status-pages/:slug/reports', deps.auth.write, async (req, res) => {
    const given = await writeBody(req, res, deps.validators.statusReportCreate);
    const at = timeOf(given.at);
    const page = await pageOf(req, res);
    refuseOffPage(given.monitor_ids, page);
    const { after } = await storeCall(deps.logger, req, 'status report insert', () =>
      deps.reports.create(
        page,
        {
          title: given.title,
          impact: given.impact ?? 'major',
          monitorIds: given.monitor_ids ?? [],
          state: given.state ?? 'investigating',
          message: given.message,
          at,
          draft: given.draft ?? false,
        },
        authorOf(res),
      ),
    );
    await created(req, res, after);
  });

  app.post('/api/status-pages/:slug/reports/from-incident', deps.auth.write, async (req, res) => {
    const given = await writeBody(req, res, deps.validators.reportFromIncident);
    const page = await pageOf(req, res);
    const [incident] = await readRows<IncidentByIdRow>(deps, req, 'incident lookup', () =>
      incidentByIdSql(deps.database, deps.layout, page.tenantId, given.incident_id),
    );
    if (!incident) throw new AppError('INCIDENT_NOT_FOUND', `there is no incident ${given.incident_id}`);
    const name = page.monitorNames.get(incident.monitor_id);
    if (name === undefined)
      throw invalid([{ path: '/incident_id', message: "the incident's monitor is not a monitor of this page" }]);
    const since = new Date(Number(incident.started) * 1000).toISOString().replace(/\.000Z$/, 'Z');
    const { after } = await storeCall(deps.logger, req, 'status report insert', () =>
      deps.reports.create(
        page,
        {
          title: `${name} is down`.slice(0, L.maxReportTitleLength),
          impact: 'major',
          monitorIds: [incident.monitor_id],
          state: 'investigating',
          message: `We are investigating a problem with ${name}: it has been failing its checks since ${since}.`,
          at: Date.now(),
          draft: true,
          incidentId: given.incident_id,
        },
        authorOf(res),
      ),
    );
    await created(req, res, after);
  });

  // Before the :id routes: another method on from-incident is 405, not a report named so.
  methodNotAllowed(app, '/api/status-pages/:slug/reports/from-incident', ['POST']);

  app.get('/api/status-pages/:slug/reports/:id', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set());
    const id = reportIdOf(req);
    const page = await pageOf(req, res);
    const report = await storeCall(deps.logger, req, 'status report lookup', () =>
      deps.reports.get(page.tenantId, page.slug, id),
    );
    if (!report) throw notFound(id);
    res.json(ok(report));
  });

  app.patch('/api/status-pages/:slug/reports/:id', deps.auth.write, async (req, res) => {
    const patch = await writeBody(req, res, deps.validators.statusReportPatch);
    const id = reportIdOf(req);
    const page = await pageOf(req, res);
    refuseOffPage(patch.monitor_ids, page);
    const done = await written(req, page.slug, id, 'status report update', () =>
      deps.reports.change(page, id, {
        title: patch.title,
        impact: patch.impact,
        monitorIds: patch.monitor_ids,
        publish: patch.draft === false,
      }),
    );
    const [before, after] = [briefly(done.before!), briefly(done.after)];
    await recordChange(deps.audit, req, res, 'status_report.update', target(id), before, after);
    res.json(ok(done.after));
  });

  app.delete('/api/status-pages/:slug/reports/:id', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res);
    const id = reportIdOf(req);
    const page = await pageOf(req, res);
    const gone = await written(req, page.slug, id, 'status report delete', () =>
      deps.reports.remove(page.tenantId, page.slug, id),
    );
    await recordChange(deps.audit, req, res, 'status_report.delete', target(id), briefly(gone), undefined);
    res.json(ok(null));
  });

  app.post('/api/status-pages/:slug/reports/:id/updates', deps.auth.write, async (req, res) => {
    const given = await writeBody(req, res, deps.validators.reportUpdateCreate);
    const id = reportIdOf(req);
    const at = timeOf(given.at);
    const page = await pageOf(req, res);
    const done = await written(req, page.slug, id, 'status report update insert', () =>
      deps.reports.addUpdate(page, id, { state: given.state, message: given.message, at }, authorOf(res)),
    );
    // The state it set and the update itself (not every earlier update again).
    const [before, after] = [done.before!, done.after];
    await recordChange(
      deps.audit,
      req,
      res,
      'status_report.post_update',
      target(id),
      { state: before.state, resolved_at: before.resolved_at },
      {
        state: after.state,
        resolved_at: after.resolved_at,
        update: after.updates.find((u) => !before.updates.some((b) => b.id === u.id)),
      },
    );
    res.status(201).json(ok(after));
  });
}
