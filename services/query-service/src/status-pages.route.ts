import type { Express, Request, RequestHandler, Response } from 'express';
import { Counter, type Registry } from 'prom-client';
import {
  describeErrors,
  ok,
  STATUS_PAGE_LIMITS,
  STATUS_PAGE_SLUG_PATTERN,
  toIsoSeconds,
  type Problem,
  type PublicStatusPage,
  type Validators,
} from '@telemetry/contract';
import { AppError, readJsonBody, rejectUnknown, type Mirror } from '@telemetry/platform';
import {
  dailyCountsSql,
  monitorStatus,
  openIncidentsSql,
  publicStatusPageOf,
  type DailyCountRow,
  type MonitorStore,
  type OpenIncidentRow,
  type ReportStore,
  RegistryUnavailableError,
  type StatusPageStore,
  type StoredStatusPage,
  type VerifiedKey,
  uptimePercent,
} from '@telemetry/store';
import { recordChange, type Auditor } from './access/audit.js';
import { monitorActivity } from './monitor-activity.js';
import { RenderCache } from './render-cache.js';
import { storeCall as storeCallOf, tenantOf, type ReadDeps } from './params.js';
import { openReportsOf, publicHistoryRoute, publicMaintenanceOf } from './status/public-page.js';

export interface StatusPageRoutesDeps extends ReadDeps {
  store: StatusPageStore;
  /** Every tenant's pages by slug, kept current by the registry's change feed (the public routes read only this). */
  directory: Mirror<StoredStatusPage>;
  monitors: MonitorStore;
  validators: Validators;
  auth: { read: RequestHandler; write: RequestHandler };
  /** How long a public page is answered from memory (and may be kept by browsers and proxies). */
  cacheSeconds: number;
  registry: Registry;
  /** The audit log (docs/access.md): each committed write is recorded. */
  audit: Auditor;
  /** Status reports (the public page's open ones, its history). */
  reports: ReportStore;
}

/**
 * What other parts may do to the public pages: forget this replica's rendered copy of one
 * (a report changed), or make this replica's directory and render follow a committed
 * change of a page at once (a page applied from a configuration document; other replicas
 * follow by the registry's change feed).
 */
export interface StatusPageHooks {
  evict(slug: string): void;
  /** A page written (as stored), or the slug of a page deleted. */
  changed(page: StoredStatusPage | string): void;
}

/** A page's own fields as its owner sets them: what a create stores and a PATCH or a document item changes. */
export interface StatusPageDraft {
  slug: string;
  title: string;
  description: string | null;
  monitor_ids: string[];
  key: string | null;
}

/**
 * A POST /api/status-pages body (or a configuration document's item, its monitor keys
 * already made ids: config-as-code/status-pages.ts) as the page it describes, defaults
 * applied; or its problems. Whether the monitors exist is the caller's to check.
 */
export function createdPage(
  validators: Pick<Validators, 'statusPageCreate'>,
  given: unknown,
): { page: StatusPageDraft } | { problems: Problem[] } {
  if (!validators.statusPageCreate(given)) return { problems: describeErrors(validators.statusPageCreate.errors) };
  return {
    page: {
      slug: given.slug,
      title: given.title,
      description: given.description ?? null,
      monitor_ids: given.monitor_ids,
      key: given.key ?? null,
    },
  };
}

const SLUG = new RegExp(STATUS_PAGE_SLUG_PATTERN);
const DAY = 86_400;

export function slugOf(req: Request): string {
  const slug = String(req.params.slug);
  if (slug.length > STATUS_PAGE_LIMITS.maxSlugLength || !SLUG.test(slug)) {
    throw new AppError('STATUS_PAGE_NOT_FOUND', 'there is no such status page');
  }
  return slug;
}

export function keyOf(res: Response): VerifiedKey {
  return res.locals.key as VerifiedKey;
}

function invalid(problems: { path: string; message: string }[]): AppError {
  return new AppError(
    'VALIDATION_FAILED',
    `the status page is not valid: ${problems[0]?.path} ${problems[0]?.message}`,
    { problems },
  );
}

export function nowIso(): string {
  return toIsoSeconds(Math.floor(Date.now() / 1000));
}

/** A key limited to some monitors sees only pages of those monitors, and changes none. */
export function visibleTo(key: VerifiedKey, page: StoredStatusPage): boolean {
  return (
    page.tenant_id === key.tenantId &&
    (key.monitorIds.size === 0 || page.monitor_ids.every((id) => key.monitorIds.has(id)))
  );
}

export function refuseLimited(res: Response): void {
  if (keyOf(res).monitorIds.size > 0) {
    throw new AppError(
      'MONITOR_NOT_ALLOWED',
      'this API key is limited to some monitors and may not change status pages',
    );
  }
}

/**
 * The status page routes: /api/status-pages (the owner's, with an API key) and
 * GET /api/status/{slug} (anyone's, without a key: names and statuses only).
 */
export function statusPageRoutes(app: Express, deps: StatusPageRoutesDeps): StatusPageHooks {
  const storeCall = <T>(req: Request, what: string, fn: () => Promise<T>): Promise<T> =>
    storeCallOf(deps.logger, req, what, fn);
  const load = async (req: Request, res: Response, slug: string): Promise<StoredStatusPage> => {
    const page = await storeCall(req, 'status page lookup', () => deps.store.get(slug));
    if (!page || !visibleTo(keyOf(res), page))
      throw new AppError('STATUS_PAGE_NOT_FOUND', `there is no status page ${slug}`);
    return page;
  };
  /** A change that found the page at another version than it read: nothing changed, 409 by the envelope. */
  const movedOn = (slug: string): AppError =>
    new AppError('PRECONDITION_FAILED', `the status page ${slug} changed while this request was handled; retry`);
  /** The ids of `settings` that are not current monitors of the tenant: 400 with their paths. */
  const refuseUnknownMonitors = async (req: Request, tenantId: string, ids: readonly string[]): Promise<void> => {
    // Ids and tenants only: no monitor's secrets are opened to check that it exists.
    const known = new Set(
      (await storeCall(req, 'monitor lookup', () => deps.monitors.idsOf(ids)))
        .filter((m) => m.tenantId === tenantId)
        .map((m) => m.id),
    );
    const problems = ids.flatMap((id, i) =>
      known.has(id) ? [] : [{ path: `/monitor_ids/${i}`, message: `there is no monitor ${id}` }],
    );
    if (problems.length > 0) throw invalid(problems);
  };
  /** After a page changed here: this replica's directory and render follow at once (others by the feed). */
  const changed = (page: StoredStatusPage | string): void => {
    if (typeof page === 'string') deps.directory.remove(page);
    else deps.directory.put(page);
    rendered.evict(typeof page === 'string' ? page : page.slug);
  };
  const body = (req: Request): Promise<unknown> => readJsonBody(req, { maxBytes: 64 * 1024, maxRatio: 100 }, 4);

  app.post('/api/status-pages', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res);
    const checked = createdPage(deps.validators, await body(req));
    if ('problems' in checked) throw invalid(checked.problems);
    const tenantId = tenantOf(res);
    await refuseUnknownMonitors(req, tenantId, checked.page.monitor_ids);
    const now = nowIso();
    // The slug is the table's primary key (SLUG_TAKEN across replicas and tenants), the key
    // unique per tenant (KEY_TAKEN), and the page count is read under the registry's write
    // lock (QUOTA_EXCEEDED holds too).
    const page = await storeCall(req, 'status page insert', () =>
      deps.store.create({ ...checked.page, tenant_id: tenantId, created_at: now, updated_at: now }),
    );
    changed(page);
    const target = { type: 'status_page', id: page.slug };
    await recordChange(deps.audit, req, res, 'status_page.create', target, undefined, publicStatusPageOf(page));
    res.status(201).setHeader('Location', `/api/status-pages/${page.slug}`);
    res.json(ok(publicStatusPageOf(page)));
  });

  app.get('/api/status-pages', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set());
    const key = keyOf(res);
    const pages = await storeCall(req, 'status page list', () => deps.store.ofTenant(key.tenantId));
    res.json(ok(pages.filter((p) => visibleTo(key, p)).map(publicStatusPageOf)));
  });

  app.get('/api/status-pages/:slug', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set());
    res.json(ok(publicStatusPageOf(await load(req, res, slugOf(req)))));
  });

  app.patch('/api/status-pages/:slug', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res);
    const slug = slugOf(req);
    const patch = await body(req);
    if (!deps.validators.statusPagePatch(patch)) throw invalid(describeErrors(deps.validators.statusPagePatch.errors));
    const current = await load(req, res, slug);
    const next: StatusPageDraft = {
      slug: current.slug,
      title: patch.title ?? current.title,
      description: patch.description === undefined ? current.description : patch.description,
      monitor_ids: patch.monitor_ids ?? current.monitor_ids,
      // null releases the key (a configuration file no longer manages the page).
      key: patch.key === undefined ? current.key : patch.key,
    };
    if (patch.monitor_ids) await refuseUnknownMonitors(req, current.tenant_id, patch.monitor_ids);
    const page = await storeCall(req, 'status page update', () =>
      deps.store.update({ ...current, ...next, updated_at: nowIso() }, current.version),
    );
    if (!page) throw movedOn(slug);
    changed(page);
    const after = publicStatusPageOf(page);
    const target = { type: 'status_page', id: slug };
    await recordChange(deps.audit, req, res, 'status_page.update', target, publicStatusPageOf(current), after);
    res.json(ok(after));
  });

  app.delete('/api/status-pages/:slug', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res);
    const slug = slugOf(req);
    const current = await load(req, res, slug);
    const gone = await storeCall(req, 'status page delete', () =>
      deps.store.remove(slug, current.tenant_id, current.version),
    );
    if (!gone) throw movedOn(slug);
    changed(slug);
    const target = { type: 'status_page', id: slug };
    await recordChange(deps.audit, req, res, 'status_page.delete', target, publicStatusPageOf(current), undefined);
    res.json(ok(null));
  });

  // Public pages, rendered at most once per cacheSeconds per replica and one at a time per
  // slug: no key, so no crowd of readers reaches ClickHouse more often than that, and an
  // unknown slug never does. A failed render is tried again at most once per cacheSeconds;
  // meanwhile the last good page is answered, marked stale.
  const renders = new Counter({
    name: 'status_page_renders_total',
    help: 'Public status pages computed from ClickHouse, by outcome (ok, failed)',
    labelNames: ['outcome'],
    registers: [deps.registry],
  });
  const staleAnswers = new Counter({
    name: 'status_page_stale_answers_total',
    help: 'Public status pages answered stale (the last good page) because a render failed',
    registers: [deps.registry],
  });
  const rendered = new RenderCache<PublicStatusPage>(deps.cacheSeconds * 1000, deps.cacheSeconds * 1000, (outcome) =>
    renders.inc({ outcome }),
  );
  // A page changed on another replica: rendered anew here too. (The notice of a change
  // made here comes back after the page was put, maybe rendered again: the directory
  // compares versions and does not call for a page it holds at that version already.)
  deps.directory.onChange((slugs) => {
    for (const slug of slugs) rendered.evict(slug);
  });
  const render = async (req: Request, page: StoredStatusPage): Promise<PublicStatusPage> => {
    const now = Math.floor(Date.now() / 1000);
    const to = Math.floor(now / DAY) * DAY + DAY;
    const from = to - STATUS_PAGE_LIMITS.days * DAY;
    const signal = AbortSignal.timeout(deps.queryTimeoutMs);
    const tenantId = page.tenant_id;
    const monitors = await storeCall(req, 'status page monitors', () =>
      deps.monitors.list({ tenantId, ids: page.monitor_ids }),
    );
    const ids = monitors.map((m) => m.id);
    const names = new Map(monitors.map((m) => [m.id, m.name]));
    const [activity, counts, open, reports] = await storeCall(req, 'status page', () =>
      Promise.all([
        monitorActivity(deps.reader, deps.database, deps.layout, tenantId, ids, signal),
        ids.length === 0
          ? Promise.resolve([])
          : deps.reader
              .query<DailyCountRow>(dailyCountsSql(deps.database, deps.layout, tenantId, ids, from, to), signal)
              .then((r) => r.data),
        ids.length === 0
          ? Promise.resolve([])
          : deps.reader
              .query<OpenIncidentRow>(openIncidentsSql(deps.database, deps.layout, tenantId, ids), signal)
              .then((r) => r.data),
        openReportsOf(deps.reports, page, names),
      ]),
    );
    // Per monitor and day: [good (up or degraded), all].
    const perDay = new Map<string, [number, number]>();
    for (const r of counts) {
      const k = `${r.monitor_id} ${Number(r.t)}`;
      const c = perDay.get(k) ?? [0, 0];
      c[1] += Number(r.n);
      if (r.status !== 'down') c[0] += Number(r.n);
      perDay.set(k, c);
    }
    // In the page's order (the owner's), not the registry's.
    const byId = new Map(monitors.map((m) => [m.id, m]));
    const shown = page.monitor_ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []));
    const list = shown.map((m) => {
      let good = 0;
      let all = 0;
      const days = [];
      for (let t = from; t < to; t += DAY) {
        const [g, a] = perDay.get(`${m.id} ${t}`) ?? [0, 0];
        good += g;
        all += a;
        days.push({ date: toIsoSeconds(t).slice(0, 10), uptime_percent: uptimePercent(g, a) });
      }
      return {
        id: m.id,
        name: m.name,
        status: monitorStatus(m, activity.get(m.id) ?? {}),
        uptime_percent: uptimePercent(good, all),
        days,
      };
    });
    return {
      slug: page.slug,
      title: page.title,
      description: page.description,
      status: list.some((m) => m.status === 'down') ? 'down' : 'up',
      generated_at: toIsoSeconds(now),
      stale: false,
      days: STATUS_PAGE_LIMITS.days,
      monitors: list,
      incidents: open.map((r) => ({
        monitor: names.get(r.monitor_id) ?? '',
        started_at: toIsoSeconds(Number(r.started)),
      })),
      reports,
      maintenance: publicMaintenanceOf(shown, now * 1000),
    };
  };

  app.get('/api/status/:slug', async (req, res) => {
    rejectUnknown(req, new Set());
    const slug = slugOf(req);
    if (!deps.directory.loaded) throw new RegistryUnavailableError('the status pages are not loaded yet; retry');
    const page = deps.directory.get(slug);
    if (!page) throw new AppError('STATUS_PAGE_NOT_FOUND', `there is no status page ${slug}`);
    const kept = await rendered.get(slug, () => render(req, page));
    if (kept.stale) {
      staleAnswers.inc();
      res.setHeader('X-Status-Page-Stale', '1');
      res.setHeader('Warning', '110 - "Response is Stale"');
    }
    // Anyone may keep it as long as this replica does (a stale page: until the next try).
    const maxAge = Math.max(0, Math.floor((kept.until - Date.now()) / 1000));
    res.setHeader('Cache-Control', `public, max-age=${maxAge}`);
    res.json(ok(kept.stale ? { ...kept.value, stale: true } : kept.value));
  });

  publicHistoryRoute(app, deps);
  return { evict: (slug) => rendered.evict(slug), changed };
}
