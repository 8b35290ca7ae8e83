import type { Express, Request, RequestHandler, Response } from 'express';
import {
  describeErrors,
  MONITOR_LIMITS,
  ok,
  type Incident,
  type MonitorCreate,
  type MonitorPatch,
  type Validators,
} from '@telemetry/contract';
import {
  AppError,
  parseBody,
  readBody,
  sqlIdentifier,
  sqlNumber,
  sqlString,
  StoreUnavailableError,
  type ClickHouseReader,
  type Component,
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
import { bad, MONITOR_ID, monitorIdOf, rejectUnknown, single, toIsoSeconds } from './params.js';

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

/** Current monitor ids: all of them, or those among `ids`. */
export type IdLookup = (ids?: readonly string[]) => Promise<string[]>;

/**
 * Which monitor ids exist, for the 404 of every /api/monitors/{id}/... route. It holds
 * the set of all current ids, reloaded every `refreshMs` (one query, however many
 * requests), so the check routes pay a Set lookup. An id not in the set is looked up
 * on its own, so a monitor just created on another replica is found at once; a monitor
 * deleted on another replica still answers for up to `refreshMs`.
 */
export class MonitorDirectory implements Component {
  readonly name = 'monitor-directory';
  // Without the set every lookup goes to ClickHouse: slower, still correct.
  readonly essential = false;
  private ids = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private loadedAt = 0;
  private stopped = false;

  constructor(
    private readonly lookup: IdLookup,
    private readonly refreshMs: number,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    await this.refresh();
    this.schedule();
  }

  health(): boolean {
    return Date.now() - this.loadedAt < this.refreshMs * 3 + 10_000;
  }

  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    return Promise.resolve();
  }

  async exists(id: string): Promise<boolean> {
    if (this.ids.has(id)) return true;
    const found = (await this.lookup([id])).length > 0;
    if (found) this.ids.add(id);
    return found;
  }

  remember(id: string): void {
    this.ids.add(id);
  }

  forget(id: string): void {
    this.ids.delete(id);
  }

  private async refresh(): Promise<void> {
    try {
      this.ids = new Set(await this.lookup());
      this.loadedAt = Date.now();
    } catch (err) {
      this.logger.warn('monitor ids not reloaded', { err: String(err) });
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.refresh().finally(() => this.schedule()), this.refreshMs);
    this.timer.unref();
  }
}

const BODY_LIMITS = { maxBytes: 256 * 1024, maxRatio: 100 };
const MAX_JSON_DEPTH = 8;

async function jsonBody(req: Request): Promise<unknown> {
  const type = (req.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json')
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
  const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Encoding must be identity or gzip');
  }
  const raw = await readBody(req, BODY_LIMITS);
  if (raw.length === 0) throw new AppError('INVALID_JSON', 'an empty body is not a valid request');
  return parseBody(raw, MAX_JSON_DEPTH);
}

function invalid(problems: { path: string; message: string }[]): AppError {
  return new AppError('VALIDATION_FAILED', `the monitor is not valid: ${problems[0]?.path} ${problems[0]?.message}`, {
    problems,
  });
}

function keyOf(res: Response): VerifiedKey {
  return res.locals.key as VerifiedKey;
}

function encodeCursor(id: string): string {
  return Buffer.from(id).toString('base64url');
}

function decodeCursor(raw: string): string {
  const id = raw.length <= 400 ? Buffer.from(raw, 'base64url').toString('utf8') : '';
  if (!MONITOR_ID.test(id)) throw bad('cursor', 'is not a cursor this service issued');
  return id;
}

function limitParam(req: Request, max: number, fallback: number): number {
  const raw = single(req, 'limit');
  if (raw === undefined) return fallback;
  if (!/^\d{1,6}$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    throw bad('limit', `must be an integer from 1 to ${max}`);
  }
  return Number(raw);
}

function nowIso(): string {
  return toIsoSeconds(Math.floor(Date.now() / 1000));
}

/** Registry and incident routes under /api/monitors. */
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
    const cursor = single(req, 'cursor');
    const afterId = cursor === undefined ? undefined : decodeCursor(cursor);
    const allowed = keyOf(res).monitorIds;
    const rows = await storeCall(req, 'monitor list', () =>
      deps.store.list({ afterId, limit: limit + 1, ids: allowed.size > 0 ? [...allowed] : undefined }),
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const next = rows.length > limit && last ? encodeCursor(last.id) : null;
    if (next) res.setHeader('Link', `</api/monitors?limit=${limit}&cursor=${next}>; rel="next"`);
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

  app.get('/api/monitors/:id/incidents', deps.auth.read, async (req, res) => {
    const id = monitorIdOf(req);
    rejectUnknown(req, new Set(['limit', 'status']));
    const limit = limitParam(req, 1000, 100);
    const status = single(req, 'status');
    if (status !== undefined && status !== 'open' && status !== 'resolved') {
      throw bad('status', 'must be open or resolved');
    }
    if (!(await storeCall(req, 'monitor lookup', () => deps.directory.exists(id)))) {
      throw new AppError('MONITOR_NOT_FOUND', `there is no monitor ${id}`);
    }
    const rows = await storeCall(
      req,
      'incidents query',
      async () =>
        (
          await deps.reader.query<IncidentRow>(
            incidentsSql(deps.database, id, limit, status),
            AbortSignal.timeout(deps.queryTimeoutMs),
          )
        ).data,
    );
    const now = Math.floor(Date.now() / 1000);
    res.json({ success: true, data: rows.map((r) => rowToIncident(r, id, now)) });
  });
}

/** Answers 404 MONITOR_NOT_FOUND for a monitor id the registry does not hold. */
export function requireMonitor(directory: MonitorDirectory, logger: Logger): RequestHandler {
  return async (req, _res, next) => {
    const id = monitorIdOf(req);
    let found: boolean;
    try {
      found = await directory.exists(id);
    } catch (err) {
      logger.warn('monitor lookup failed', { request_id: req.id, err: String(err) });
      throw new StoreUnavailableError();
    }
    if (!found) throw new AppError('MONITOR_NOT_FOUND', `there is no monitor ${id}`);
    next();
  };
}

interface IncidentRow {
  incident_id: string;
  started: number | string;
  resolved: number | string;
  ups: number | string;
  code: number | string;
  err: string;
}

/**
 * Incidents from the alerts table: each is the down alert that opened it and, once it
 * closed, the up alert with the same incident_id. Newest first.
 */
export function incidentsSql(database: string, monitorId: string, limit: number, status?: string): string {
  const having = ["countIf(type = 'monitor.down') > 0"];
  if (status === 'open') having.push("countIf(type = 'monitor.up') = 0");
  if (status === 'resolved') having.push("countIf(type = 'monitor.up') > 0");
  return `SELECT incident_id,
      toUnixTimestamp(minIf(created_at, type = 'monitor.down')) AS started,
      toUnixTimestamp(maxIf(created_at, type = 'monitor.up')) AS resolved,
      countIf(type = 'monitor.up') AS ups,
      anyIf(status_code, type = 'monitor.down') AS code,
      anyIf(error, type = 'monitor.down') AS err
    FROM ${sqlIdentifier(database)}.alerts
    WHERE monitor_id = ${sqlString(monitorId)}
    GROUP BY incident_id
    HAVING ${having.join(' AND ')}
    ORDER BY started DESC, incident_id DESC
    LIMIT ${sqlNumber(limit)}`;
}

function rowToIncident(r: IncidentRow, monitorId: string, now: number): Incident {
  const started = Number(r.started);
  const resolved = Number(r.ups) > 0 ? Number(r.resolved) : null;
  return {
    id: r.incident_id,
    monitor_id: monitorId,
    status: resolved === null ? 'open' : 'resolved',
    started_at: toIsoSeconds(started),
    resolved_at: resolved === null ? null : toIsoSeconds(resolved),
    duration_seconds: Math.max(0, (resolved ?? now) - started),
    cause: { status_code: Number(r.code), error: (r.err || null) as Incident['cause']['error'] },
  };
}
