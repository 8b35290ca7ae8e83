import type { Express, Request, RequestHandler, Response } from 'express';
import { describeErrors, MONITOR_LIMITS, ok, type Monitor } from '@telemetry/contract';
import { AppError, cursorParam, encodeCursor, limitParam, nextLink, rejectUnknown } from '@telemetry/platform';
import {
  heartbeatToken,
  MASK,
  newMonitorId,
  newWebhookSecret,
  patchSettings,
  publicMonitor,
  unmaskPatch,
  type MonitorActivity,
  type MonitorChange,
  type MonitorStore,
  type MonitorWithNonce,
} from '@telemetry/store';
import { changedFields, recordChange, type Auditor } from './access/audit.js';
import { monitorActivity } from './monitor-activity.js';
import {
  announce as announceChange,
  audited,
  checkCreate,
  isRefusal,
  refusalError,
  settingsRefusal,
  type ChangeNotifier,
  type MonitorRules,
} from './monitor-rules.js';
import {
  conditionally as conditionallyWrite,
  etagOf,
  invalid as invalidObject,
  jsonBody,
  keyOf,
  nowIso,
} from './registry-objects.js';
import type { MonitorDirectory } from './monitor-directory.js';
import { MONITOR_ID, monitorIdOf, storeCall as storeCallOf, tenantOf, type ReadDeps } from './params.js';

export type { ChangeNotifier } from './monitor-rules.js';

export interface MonitorRoutesDeps extends ReadDeps, MonitorRules {
  store: MonitorStore;
  directory: MonitorDirectory;
  notifier: ChangeNotifier;
  /** Middleware checking the bearer API key for a scope. */
  auth: { read: RequestHandler; write: RequestHandler };
  /** Middleware answering 404 for a monitor id outside the key's tenant (and 403 outside its list). */
  known: RequestHandler;
  /** Monitors a tenant may have. */
  quotaOf: (tenantId: string) => number;
  /** The audit log (docs/access.md): each committed write is recorded. */
  audit: Auditor;
}

function invalid(problems: { path: string; message: string }[]): AppError {
  return invalidObject('monitor', problems);
}

function isMonitorCursor(v: unknown): v is string {
  return typeof v === 'string' && MONITOR_ID.test(v);
}

/** The registry's routes: /api/monitors and /api/monitors/{id}. */
export function monitorRoutes(app: Express, deps: MonitorRoutesDeps): void {
  const storeCall = <T>(req: Request, what: string, fn: () => Promise<T>): Promise<T> =>
    storeCallOf(deps.logger, req, what, fn);

  const announce = (req: Request, change: MonitorChange): Promise<void> =>
    announceChange(deps.notifier, deps.logger, req.id, change);

  /** What the checks and alerts of these monitors say: their status in the API. */
  const activity = (req: Request, tenantId: string, ids: string[]): Promise<Map<string, MonitorActivity>> =>
    storeCall(req, 'monitor status', () =>
      monitorActivity(deps.reader, deps.database, deps.layout, tenantId, ids, AbortSignal.timeout(deps.queryTimeoutMs)),
    );
  /**
   * The API's view of a monitor: a heartbeat monitor's with its token, for keys that may
   * change the monitor (whoever holds the token can say the job ran).
   */
  const view = (res: Response, m: MonitorWithNonce, seen: MonitorActivity | undefined, withSecret = false): Monitor => {
    const { heartbeat_nonce: nonce, ...stored } = m;
    const out = publicMonitor(stored, seen, withSecret);
    return m.type === 'heartbeat' &&
      nonce !== undefined &&
      deps.heartbeatKey !== '' &&
      keyOf(res).scopes.has('monitors:write')
      ? { ...out, heartbeat_token: heartbeatToken(deps.heartbeatKey, m.tenant_id, m.id, nonce) }
      : out;
  };
  const shown = async (req: Request, res: Response, m: MonitorWithNonce, withSecret = false) => {
    res.setHeader('ETag', etagOf(m.version));
    return view(res, m, (await activity(req, m.tenant_id, [m.id])).get(m.id), withSecret);
  };

  /** The monitor of the path, in the key's tenant (`known` ran first). */
  const load = async (req: Request, res: Response): Promise<MonitorWithNonce> => {
    const id = monitorIdOf(req);
    const m = await storeCall(req, 'monitor lookup', () => deps.store.get(id, tenantOf(res)));
    if (!m) throw new AppError('MONITOR_NOT_FOUND', `there is no monitor ${id}`);
    return m;
  };
  /** A read-modify-write of the path's monitor (registry-objects.ts). */
  const conditionally = <T>(
    req: Request,
    res: Response,
    what: string,
    write: (current: MonitorWithNonce) => Promise<T | undefined>,
  ): Promise<T> =>
    conditionallyWrite(
      req,
      'monitor',
      () => load(req, res),
      (current) => storeCall(req, what, () => write(current)),
    );

  app.post('/api/monitors', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    if (keyOf(res).monitorIds.size > 0) {
      throw new AppError('MONITOR_NOT_ALLOWED', 'this API key is limited to some monitors and may not create others');
    }
    const id = newMonitorId();
    const checked = checkCreate(deps, await jsonBody(req), id);
    if (isRefusal(checked)) throw refusalError(checked);
    const { create, settings } = checked;
    const tenantId = tenantOf(res);
    const now = nowIso();
    // The quota is counted in the insert's transaction, under the registry's write lock:
    // it holds across replicas.
    const m = await storeCall(req, 'monitor insert', () =>
      deps.store.create(
        {
          tenant_id: tenantId,
          id,
          key: create.key ?? null,
          ...settings,
          webhook_secret: create.webhook_secret ?? newWebhookSecret(),
          created_at: now,
          updated_at: now,
        },
        deps.quotaOf(tenantId),
      ),
    );
    const version = m.version;
    deps.directory.remember(m.id, m.tenant_id);
    await announce(req, { id: m.id, version, deleted: false });
    await deps.audit.record(req, res, {
      action: 'monitor.create',
      target: { type: 'monitor', id: m.id },
      changes: changedFields(undefined, audited(m)),
    });
    res.status(201).setHeader('Location', `/api/monitors/${m.id}`);
    res.setHeader('ETag', etagOf(version));
    res.json(ok(view(res, m, {}, true)));
  });

  app.get('/api/monitors', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set(['limit', 'cursor']));
    const limit = limitParam(req, MONITOR_LIMITS.maxPageSize, 100);
    const afterId = cursorParam(req, isMonitorCursor);
    const allowed = keyOf(res).monitorIds;
    const rows = await storeCall(req, 'monitor list', () =>
      deps.store.list({
        tenantId: tenantOf(res),
        afterId,
        limit: limit + 1,
        ids: allowed.size > 0 ? [...allowed] : undefined,
      }),
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const next = rows.length > limit && last ? encodeCursor(last.id) : null;
    if (next) res.setHeader('Link', nextLink(req, next));
    const seen = await activity(
      req,
      tenantOf(res),
      page.map((m) => m.id),
    );
    res.json({ success: true, data: page.map((m) => view(res, m, seen.get(m.id))), next_cursor: next });
  });

  app.get('/api/monitors/:id', deps.auth.read, deps.known, async (req, res) => {
    rejectUnknown(req, new Set());
    const body = JSON.stringify(ok(await shown(req, res, await load(req, res))));
    // NOTE: the ETag is the monitor's version, for If-Match. It is no cache validator: the
    // status and last check change without it. res.json would answer a matching
    // If-None-Match with 304 (Express's freshness check) and a browser would show a stale
    // status; res.end skips that check.
    res.setHeader('Cache-Control', 'no-store');
    res.type('application/json').end(body);
  });

  app.patch('/api/monitors/:id', deps.auth.write, deps.known, async (req, res) => {
    rejectUnknown(req, new Set());
    const body = await jsonBody(req);
    if (!deps.validators.monitorPatch(body)) throw invalid(describeErrors(deps.validators.monitorPatch.errors));
    let before: MonitorWithNonce | undefined;
    const m = await conditionally(req, res, 'monitor update', async (current) => {
      before = current;
      // What the PATCH sent masked is the stored secret; a URL moved to another origin
      // leaves the stored header values and URL credentials behind (named in the answer).
      const { patch, dropped } = unmaskPatch(current, body);
      const settings = patchSettings(current, patch);
      const refusal = settingsRefusal(deps, settings, {
        interval: patch.interval_seconds !== undefined,
        type: patch.type !== undefined,
      });
      if (refusal) throw refusalError(refusal);
      const next = {
        tenant_id: current.tenant_id,
        id: current.id,
        key: body.key === undefined ? current.key : body.key,
        ...settings,
        webhook_secret: patch.webhook_secret ?? current.webhook_secret,
        created_at: current.created_at,
        updated_at: nowIso(),
      };
      const stored = await deps.store.update(next, current.version);
      return stored && { monitor: stored, dropped };
    });
    if (m.dropped.length > 0) {
      // Names only, never values.
      deps.logger.info('monitor secrets dropped: the url moved to another origin', {
        request_id: req.id,
        id: m.monitor.id,
        dropped: m.dropped,
      });
    }
    await announce(req, { id: m.monitor.id, version: m.monitor.version, deleted: false });
    // A secret that changed behind the same mask (a header value, the signing secret) is recorded masked.
    await recordChange(
      deps.audit,
      req,
      res,
      'monitor.update',
      { type: 'monitor', id: m.monitor.id },
      before && audited(before),
      audited(m.monitor),
      { before, after: m.monitor },
    );
    const out = await shown(req, res, m.monitor, body.webhook_secret !== undefined);
    res.json(ok({ ...out, dropped_secrets: m.dropped }));
  });

  app.delete('/api/monitors/:id', deps.auth.write, deps.known, async (req, res) => {
    rejectUnknown(req, new Set());
    const { id, version, gone } = await conditionally(req, res, 'monitor delete', async (current) =>
      (await deps.store.remove(current.id, current.tenant_id, current.version))
        ? { id: current.id, version: current.version + 1, gone: current }
        : undefined,
    );
    deps.directory.forget(id);
    await announce(req, { id, version, deleted: true });
    await deps.audit.record(req, res, {
      action: 'monitor.delete',
      target: { type: 'monitor', id },
      changes: changedFields(audited(gone), undefined),
    });
    res.json(ok(null));
  });

  // A new webhook signing secret, shown in this answer only; the old one stops at once.
  app.post('/api/monitors/:id/webhook-secret', deps.auth.write, deps.known, async (req, res) => {
    rejectUnknown(req, new Set());
    const m = await conditionally(req, res, 'webhook secret rotation', (current) =>
      deps.store.update({ ...current, webhook_secret: newWebhookSecret(), updated_at: nowIso() }, current.version),
    );
    await announce(req, { id: m.id, version: m.version, deleted: false });
    await deps.audit.record(req, res, {
      action: 'monitor.rotate_webhook_secret',
      target: { type: 'monitor', id: m.id },
      changes: { webhook_secret: { before: MASK, after: MASK } },
    });
    res.json(ok(await shown(req, res, m, true)));
  });

  // A new heartbeat token (shown in this answer); the old one is refused within a second
  // on every gateway.
  app.post('/api/monitors/:id/heartbeat-token', deps.auth.write, deps.known, async (req, res) => {
    rejectUnknown(req, new Set());
    const m = await conditionally(req, res, 'heartbeat token rotation', (current) => {
      if (current.type !== 'heartbeat') {
        throw new AppError('VALIDATION_FAILED', 'only heartbeat monitors have a token', {
          problems: [{ path: '/type', message: 'is not heartbeat' }],
        });
      }
      return deps.store.rotateHeartbeatToken(current, current.version);
    });
    await announce(req, { id: m.id, version: m.version, deleted: false });
    await deps.audit.record(req, res, {
      action: 'monitor.rotate_heartbeat_token',
      target: { type: 'monitor', id: m.id },
      changes: { heartbeat_token: { before: MASK, after: MASK } },
    });
    res.json(ok(await shown(req, res, m)));
  });
}
