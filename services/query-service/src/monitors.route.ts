import type { Express, Request, RequestHandler, Response } from 'express';
import {
  describeErrors,
  MONITOR_LIMITS,
  ok,
  toIsoSeconds,
  type MonitorCreate,
  type MonitorPatch,
  type Validators,
} from '@telemetry/contract';
import {
  AppError,
  cursorParam,
  encodeCursor,
  limitParam,
  nextLink,
  readJsonBody,
  rejectUnknown,
  StoreUnavailableError,
  type ClickHouseReader,
  type Logger,
} from '@telemetry/platform';
import {
  createSettings,
  lastAlertsSql,
  lastChecksSql,
  monitorProblems,
  newMonitorId,
  newWebhookSecret,
  patchSettings,
  publicMonitor,
  type MonitorActivity,
  type MonitorChange,
  type MonitorStore,
  type StoredMonitor,
  type VerifiedKey,
} from '@telemetry/store';
import type { MonitorDirectory } from './monitor-directory.js';
import { MONITOR_ID, monitorIdOf } from './params.js';

/** Where registry changes are announced to the check runners. */
export interface ChangeNotifier {
  notify(change: MonitorChange): Promise<void>;
}

export interface MonitorRoutesDeps {
  store: MonitorStore;
  directory: MonitorDirectory;
  notifier: ChangeNotifier;
  validators: Validators;
  reader: ClickHouseReader;
  database: string;
  logger: Logger;
  queryTimeoutMs: number;
  /** Middleware checking the bearer API key for a scope. */
  auth: { read: RequestHandler; write: RequestHandler };
}

const BODY_LIMITS = { maxBytes: 256 * 1024, maxRatio: 100 };
const MAX_JSON_DEPTH = 8;

function jsonBody(req: Request): Promise<unknown> {
  return readJsonBody(req, BODY_LIMITS, MAX_JSON_DEPTH);
}

function invalid(problems: { path: string; message: string }[]): AppError {
  return new AppError('VALIDATION_FAILED', `the monitor is not valid: ${problems[0]?.path} ${problems[0]?.message}`, {
    problems,
  });
}

function keyOf(res: Response): VerifiedKey {
  return res.locals.key as VerifiedKey;
}

function isMonitorCursor(v: unknown): v is string {
  return typeof v === 'string' && MONITOR_ID.test(v);
}

function nowIso(): string {
  return toIsoSeconds(Math.floor(Date.now() / 1000));
}

/** The registry's routes: /api/monitors and /api/monitors/{id}. */
export function monitorRoutes(app: Express, deps: MonitorRoutesDeps): void {
  const storeCall = async <T>(req: Request, what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      deps.logger.warn(`${what} failed`, { request_id: req.id, err: String(err) });
      throw new StoreUnavailableError();
    }
  };

  const announce = async (req: Request, change: MonitorChange): Promise<void> => {
    try {
      await deps.notifier.notify(change);
    } catch (err) {
      // The change is stored; runners also reload the registry on a timer, so they
      // pick it up within REGISTRY_REFRESH_MS even when this notice is lost.
      deps.logger.warn('monitor change notice not sent', { request_id: req.id, id: change.id, err: String(err) });
    }
  };

  /** What the checks and alerts of these monitors say: their status in the API. */
  const activity = async (req: Request, ids: string[]): Promise<Map<string, MonitorActivity>> => {
    const out = new Map<string, MonitorActivity>(ids.map((id) => [id, {}]));
    if (ids.length === 0) return out;
    const signal = AbortSignal.timeout(deps.queryTimeoutMs);
    const [alerts, checks] = await storeCall(req, 'monitor status', () =>
      Promise.all([
        deps.reader.query<{ monitor_id: string; t: string }>(lastAlertsSql(deps.database, ids), signal),
        deps.reader.query<{ monitor_id: string; t: number | string }>(lastChecksSql(deps.database, ids), signal),
      ]),
    );
    for (const r of alerts.data) out.get(r.monitor_id)!.lastAlert = r.t;
    for (const r of checks.data) out.get(r.monitor_id)!.lastCheckAt = toIsoSeconds(Number(r.t));
    return out;
  };
  const shown = async (req: Request, m: StoredMonitor, withSecret = false) =>
    publicMonitor(m, (await activity(req, [m.id])).get(m.id), withSecret);

  const load = async (req: Request): Promise<StoredMonitor> => {
    const id = monitorIdOf(req);
    const m = await storeCall(req, 'monitor lookup', () => deps.store.get(id));
    if (!m) throw new AppError('MONITOR_NOT_FOUND', `there is no monitor ${id}`);
    return m;
  };

  app.post('/api/monitors', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    if (keyOf(res).monitorIds.size > 0) {
      throw new AppError('MONITOR_NOT_ALLOWED', 'this API key is limited to some monitors and may not create others');
    }
    const body = await jsonBody(req);
    if (!deps.validators.monitorCreate(body)) throw invalid(describeErrors(deps.validators.monitorCreate.errors));
    const create: MonitorCreate = body;
    const settings = createSettings(create);
    const problems = monitorProblems(settings);
    if (problems.length > 0) throw invalid(problems);
    const now = nowIso();
    const m = {
      id: newMonitorId(),
      ...settings,
      webhook_secret: create.webhook_secret ?? newWebhookSecret(),
      created_at: now,
      updated_at: now,
    };
    const version = await storeCall(req, 'monitor insert', () => deps.store.save(m));
    deps.directory.remember(m.id);
    await announce(req, { id: m.id, version, deleted: false });
    res.status(201).setHeader('Location', `/api/monitors/${m.id}`);
    res.json(ok(publicMonitor({ ...m, version }, {}, true)));
  });

  app.get('/api/monitors', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set(['limit', 'cursor']));
    const limit = limitParam(req, MONITOR_LIMITS.maxPageSize, 100);
    const afterId = cursorParam(req, isMonitorCursor);
    const allowed = keyOf(res).monitorIds;
    const rows = await storeCall(req, 'monitor list', () =>
      deps.store.list({ afterId, limit: limit + 1, ids: allowed.size > 0 ? [...allowed] : undefined }),
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const next = rows.length > limit && last ? encodeCursor(last.id) : null;
    if (next) res.setHeader('Link', nextLink(req, next));
    const seen = await activity(
      req,
      page.map((m) => m.id),
    );
    res.json({ success: true, data: page.map((m) => publicMonitor(m, seen.get(m.id))), next_cursor: next });
  });

  app.get('/api/monitors/:id', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set());
    res.json(ok(await shown(req, await load(req))));
  });

  app.patch('/api/monitors/:id', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    const current = await load(req);
    const body = await jsonBody(req);
    if (!deps.validators.monitorPatch(body)) throw invalid(describeErrors(deps.validators.monitorPatch.errors));
    const patch: MonitorPatch = body;
    const settings = patchSettings(current, patch);
    const problems = monitorProblems(settings);
    if (problems.length > 0) throw invalid(problems);
    const m = {
      id: current.id,
      ...settings,
      webhook_secret: patch.webhook_secret ?? current.webhook_secret,
      created_at: current.created_at,
      updated_at: nowIso(),
    };
    const version = await storeCall(req, 'monitor update', () => deps.store.save(m));
    await announce(req, { id: m.id, version, deleted: false });
    res.json(ok(await shown(req, { ...m, version }, patch.webhook_secret !== undefined)));
  });

  app.delete('/api/monitors/:id', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    const current = await load(req);
    const version = await storeCall(req, 'monitor delete', () =>
      deps.store.save({ ...current, updated_at: nowIso() }, true),
    );
    deps.directory.forget(current.id);
    await announce(req, { id: current.id, version, deleted: true });
    res.json(ok(null));
  });
}
