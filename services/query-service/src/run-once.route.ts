import type { Express, Request, RequestHandler } from 'express';
import {
  DEFAULT_LOCATION,
  describeErrors,
  ok,
  runCapabilityOf,
  RUN_ONCE_LIMITS,
  type MonitorSettings,
  type Problem,
  type RunOnceResult,
  type RunOnceSettings,
  type RunOnceValidators,
  type RunReplyPayload,
  type RunRequestPayload,
} from '@telemetry/contract';
import { AppError, rejectUnknown, type EgressPolicy, type Logger } from '@telemetry/platform';
import {
  createSettings,
  deniedTargets,
  maskUrl,
  monitorProblems,
  newMonitorId,
  newRunId,
  patchSettings,
  unmaskPatch,
  type MonitorStore,
  type RunRequestEnvelope,
} from '@telemetry/store';
import type { Auditor } from './access/audit.js';
import { invalid as invalidObject, jsonBody, keyOf } from './registry-objects.js';
import { storeCall, tenantOf } from './params.js';

/** Asks a runner to run a check and waits for its answer (RunOnceClient). */
export interface RunOnceAsker {
  ask(envelope: RunRequestEnvelope, payload: RunRequestPayload): Promise<RunReplyPayload | undefined>;
}

export interface RunOnceRoutesDeps {
  store: Pick<MonitorStore, 'get'>;
  client: RunOnceAsker;
  policy: EgressPolicy;
  validators: Pick<RunOnceValidators, 'request' | 'settings'>;
  /** monitors:write, as creating a monitor. */
  write: RequestHandler;
  audit: Auditor;
  logger: Logger;
  /** MIN_INTERVAL_SECONDS: a run is refused what a create or PATCH would be. */
  minIntervalSeconds: number;
  /** RUN_ONCE_PER_MINUTE. */
  perMinute: number;
  /** RUN_ONCE_TIMEOUT_MS: the longest wait for a runner. */
  timeoutCapMs: number;
  now?: () => number;
}

function invalid(problems: Problem[]): AppError {
  return invalidObject('monitor', problems);
}

/** At most `limit` runs per tenant in any minute (per replica); 429 RATE_LIMITED beyond. */
export function runBudget(limit: number): (tenantId: string, now: number) => void {
  const spent = new Map<string, number[]>();
  return (tenantId, now) => {
    const recent = (spent.get(tenantId) ?? []).filter((t) => t > now - 60_000);
    if (recent.length >= limit) {
      const wait = Math.max(1, Math.ceil((recent[0]! + 60_000 - now) / 1000));
      throw new AppError(
        'RATE_LIMITED',
        `this tenant may run ${limit} checks a minute with run-once`,
        { limit: 'RUN_ONCE_PER_MINUTE' },
        { 'Retry-After': String(wait) },
      );
    }
    recent.push(now);
    spent.set(tenantId, recent);
    // Tenants quiet for a minute are forgotten.
    if (spent.size > 10_000) {
      for (const [t, times] of spent) if (!times.some((x) => x > now - 60_000)) spent.delete(t);
    }
  };
}

/** How long the query service waits for a runner: the check's timeout and a margin, at most the cap. */
export function runWaitMs(s: Pick<MonitorSettings, 'timeout_ms'>, capMs: number): number {
  return Math.min(capMs, s.timeout_ms + RUN_ONCE_LIMITS.marginMs);
}

/** The answer of a run from the runner's reply. */
export function runResult(r: RunReplyPayload): RunOnceResult {
  return {
    status: r.status,
    response_time: r.response_time,
    status_code: r.status_code,
    error: r.error ?? null,
    detail: r.detail ?? null,
    timings: r.timings ?? null,
    tls_days_left: r.tls_days_left ?? null,
    location: r.location,
    screenshot: r.screenshot_png === undefined ? null : `data:image/png;base64,${r.screenshot_png}`,
  };
}

/**
 * POST /api/monitors/run-once (docs/monitors.md, "Run once now"): runs a check with the
 * settings of a form, without storing them, on a runner of the monitor's first location.
 */
export function runOnceRoutes(app: Express, deps: RunOnceRoutesDeps): void {
  const spend = runBudget(deps.perMinute);
  const now = deps.now ?? Date.now;

  /** The settings to run and the monitor id they run as: a stored monitor's changed by the form, or new ones. */
  const settingsOf = async (
    req: Request,
    tenantId: string,
    given: RunOnceSettings,
    monitorId: string | undefined,
    limited: ReadonlySet<string>,
  ): Promise<{ id: string; settings: MonitorSettings; problems: Problem[] }> => {
    const intervalProblems = (s: MonitorSettings): Problem[] =>
      s.interval_seconds < deps.minIntervalSeconds
        ? [{ path: '/interval_seconds', message: `must be at least ${deps.minIntervalSeconds} (MIN_INTERVAL_SECONDS)` }]
        : [];
    if (monitorId === undefined) {
      if (limited.size > 0) {
        throw new AppError('MONITOR_NOT_ALLOWED', 'this API key is limited to some monitors and may not run others');
      }
      const id = newMonitorId();
      // The name is not needed to run a check.
      const settings = createSettings({ name: 'run once', ...given }, id);
      return { id, settings, problems: intervalProblems(settings) };
    }
    if (limited.size > 0 && !limited.has(monitorId)) {
      throw new AppError('MONITOR_NOT_ALLOWED', 'this API key may not run that monitor');
    }
    const current = await storeCall(deps.logger, req, 'monitor lookup', () => deps.store.get(monitorId, tenantId));
    if (!current) throw new AppError('MONITOR_NOT_FOUND', `there is no monitor ${monitorId}`);
    // As a PATCH: what the form sent masked is the stored secret.
    const { patch } = unmaskPatch(current, given);
    const settings = patchSettings(current, patch);
    return {
      id: current.id,
      settings,
      problems: given.interval_seconds !== undefined ? intervalProblems(settings) : [],
    };
  };

  app.post('/api/monitors/run-once', deps.write, async (req, res) => {
    rejectUnknown(req, new Set());
    const body = await jsonBody(req);
    if (!deps.validators.request(body)) throw invalid(describeErrors(deps.validators.request.errors));
    // Problems of the settings have the paths POST /api/monitors gives them.
    if (!deps.validators.settings(body.settings)) throw invalid(describeErrors(deps.validators.settings.errors));
    const tenantId = tenantOf(res);
    const { id, settings, problems } = await settingsOf(
      req,
      tenantId,
      body.settings,
      body.monitor_id,
      keyOf(res).monitorIds,
    );
    const all = [...problems, ...monitorProblems(settings)];
    if (settings.type === 'heartbeat') {
      all.push({ path: '/type', message: "a heartbeat monitor has nothing to run: its checks are its job's calls" });
    }
    if (all.length > 0) throw invalid(all);
    const denied = deniedTargets(settings, deps.policy);
    if (denied.length > 0) {
      throw new AppError('TARGET_NOT_ALLOWED', `${denied[0]!.path}: ${denied[0]!.message}`, { problems: denied });
    }
    const started = now();
    spend(tenantId, started);
    const waitMs = runWaitMs(settings, deps.timeoutCapMs);
    const capability = runCapabilityOf(settings.type);
    const envelope: RunRequestEnvelope = {
      id: newRunId(),
      tenant_id: tenantId,
      location: settings.locations[0] ?? DEFAULT_LOCATION,
      ...(capability ? { capability } : {}),
      created_at: new Date(started).toISOString(),
      expires_at: new Date(started + waitMs).toISOString(),
    };
    const reply = await deps.client.ask(envelope, { monitor_id: id, settings });
    deps.logger.info('run once', {
      request_id: req.id,
      run_id: envelope.id,
      monitor_id: body.monitor_id,
      type: settings.type,
      location: envelope.location,
      status: reply?.status ?? 'timeout',
      ms: now() - started,
    });
    // Recorded as a test notification is: what ran, and what it found (the URL as shown).
    await deps.audit.record(req, res, {
      action: 'monitor.run_once',
      target: { type: 'monitor', id: body.monitor_id ?? '' },
      outcome: reply ? 'ok' : 'failed',
      changes: {
        type: { after: settings.type },
        url: { after: maskUrl(settings.url) },
        location: { after: envelope.location },
        status: { after: reply?.status ?? null },
        error: { after: reply ? (reply.error ?? null) : 'RUN_TIMEOUT' },
      },
    });
    if (!reply) {
      throw new AppError(
        'RUN_TIMEOUT',
        `no check runner of location ${envelope.location}${capability ? ` with the ${capability} capability` : ''} answered within ${waitMs} ms`,
        { location: envelope.location, timeout_ms: waitMs, ...(capability ? { capability } : {}) },
      );
    }
    res.setHeader('Cache-Control', 'no-store');
    res.json(ok(runResult(reply)));
  });
}
