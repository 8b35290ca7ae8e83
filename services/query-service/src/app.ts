import type { Express, RequestHandler } from 'express';
import type { Registry } from 'prom-client';
import { buildOpenApi, type Validators } from '@telemetry/contract';
import {
  AppError,
  methodNotAllowed,
  type ClickHouseClient,
  type ClickHouseReader,
  type EgressPolicy,
  type Logger,
  type Slots,
  type Mirror,
  beginApp,
  ByteLru,
  endApp,
} from '@telemetry/platform';
import {
  type KeyStore,
  type MonitorStore,
  type Scope,
  type StatusPageStore,
  type StoredStatusPage,
  type VerifiedKey,
} from '@telemetry/store';
import type { CheckTail } from './check-tail.js';
import { checksRoute } from './checks.route.js';
import { incidentsRoute } from './incidents.route.js';
import { webhookDeliveriesRoute } from './webhook-deliveries.route.js';
import { requireMonitor, type MonitorDirectory } from './monitor-directory.js';
import { monitorRoutes, type ChangeNotifier } from './monitors.route.js';
import { exportRoute } from './export.route.js';
import { summaryRoute } from './summary.route.js';
import { consoleRoutes, type loadConsoleAssets } from './console.route.js';
import { eventsPerMinuteRoute } from './events.route.js';
import { statusPageRoutes } from './status-pages.route.js';
import { monitorQuotaOf, type QueryConfig } from './config.js';
import type { ReadDeps } from './params.js';

export interface QueryDeps {
  config: QueryConfig;
  logger: Logger;
  registry: Registry;
  keys: Pick<KeyStore, 'authenticate'>;
  /** The exports' own pool, and their slots. */
  exportClient: ClickHouseClient;
  exportSlots: Slots;
  reader: ClickHouseReader;
  validators: Validators;
  /** The hot tail, when TAIL_CHECKS_PER_MONITOR is not 0. */
  tail: CheckTail | undefined;
  monitors: MonitorStore;
  statusPages: StatusPageStore;
  /** Every current status page by slug (the public route reads only this). */
  statusPageDirectory: Mirror<StoredStatusPage>;
  /** The console's files (console.route.ts). */
  consoleAssets: ReturnType<typeof loadConsoleAssets>;
  directory: MonitorDirectory;
  notifier: ChangeNotifier;
  /** Refuses monitor and webhook URLs that are denied IP literals. */
  policy: EgressPolicy;
  ready: () => boolean;
  details: () => Record<string, boolean>;
}

export function createQueryApp(deps: QueryDeps): Express {
  const app = beginApp({
    logger: deps.logger,
    ready: deps.ready,
    details: deps.details,
    registry: deps.registry,
    openapi: buildOpenApi('query'),
  });
  // No CORS headers: this API is for servers and scripts holding an API key, and for the
  // console, which is served from this same origin.
  consoleRoutes(app, deps.consoleAssets);
  const known = requireMonitor(deps.directory, deps.logger);
  // What every read route needs, and the registry's two scopes.
  const read: ReadDeps = {
    reader: deps.reader,
    database: deps.config.clickhouseDatabase,
    logger: deps.logger,
    queryTimeoutMs: deps.config.queryTimeoutMs,
  };
  const registryAuth = { read: bearer(deps.keys, 'monitors:read'), write: bearer(deps.keys, 'monitors:write') };
  monitorRoutes(app, {
    store: deps.monitors,
    directory: deps.directory,
    notifier: deps.notifier,
    policy: deps.policy,
    validators: deps.validators,
    ...read,
    auth: registryAuth,
    known,
    quotaOf: monitorQuotaOf(deps.config),
    minIntervalSeconds: deps.config.minIntervalSeconds,
    heartbeatKey: deps.config.heartbeatKey,
  });
  app.get(
    '/api/monitors/:id/incidents',
    bearer(deps.keys, 'monitors:read'),
    ...incidentsRoute({
      known,
      ...read,
    }),
  );
  app.get(
    '/api/monitors/:id/webhook-deliveries',
    bearer(deps.keys, 'monitors:read'),
    ...webhookDeliveriesRoute({
      known,
      ...read,
    }),
  );
  app.get(
    '/api/monitors/:id/checks',
    bearer(deps.keys, 'checks:read'),
    known,
    checksRoute({
      tail: deps.tail,
      reader: deps.reader,
      database: deps.config.clickhouseDatabase,
      logger: deps.logger,
      defaultLimit: deps.config.defaultLimit,
      maxLimit: deps.config.maxLimit,
      queryTimeoutMs: deps.config.queryTimeoutMs,
    }),
  );
  app.get(
    '/api/monitors/:id/checks/summary',
    bearer(deps.keys, 'checks:read'),
    known,
    summaryRoute({
      closed: new ByteLru(deps.config.summaryCacheBytes),
      ...read,
    }),
  );
  app.get(
    '/api/monitors/:id/checks/export',
    bearer(deps.keys, 'checks:read'),
    known,
    exportRoute({
      client: deps.exportClient,
      slots: deps.exportSlots,
      database: deps.config.clickhouseDatabase,
      logger: deps.logger,
      exportTimeoutMs: deps.config.exportTimeoutMs,
      maxRangeDays: deps.config.exportMaxRangeDays,
      maxMemoryBytes: deps.config.exportMaxMemoryBytes,
      stallTimeoutMs: deps.config.exportStallTimeoutMs,
    }),
  );
  statusPageRoutes(app, {
    store: deps.statusPages,
    directory: deps.statusPageDirectory,
    monitors: deps.monitors,
    validators: deps.validators,
    ...read,
    auth: registryAuth,
    cacheSeconds: deps.config.statusPageCacheSeconds,
    registry: deps.registry,
  });
  app.get(
    '/api/events/per-minute',
    bearer(deps.keys, 'events:read'),
    eventsPerMinuteRoute({
      ...read,
    }),
  );
  for (const path of [
    '/api/status/:slug',
    '/api/events/per-minute',
    '/api/monitors/:id/checks',
    '/api/monitors/:id/checks/summary',
    '/api/monitors/:id/checks/export',
    '/api/monitors/:id/incidents',
    '/api/monitors/:id/webhook-deliveries',
  ]) {
    methodNotAllowed(app, path, ['GET', 'HEAD']);
  }
  methodNotAllowed(app, '/api/monitors', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/status-pages', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/status-pages/:slug', ['GET', 'HEAD', 'PATCH', 'DELETE']);
  methodNotAllowed(app, '/api/monitors/:id', ['GET', 'HEAD', 'PATCH', 'DELETE']);
  methodNotAllowed(app, '/api/monitors/:id/webhook-secret', ['POST']);
  return endApp(app, deps.logger, {
    maxBytes: deps.config.discardBodyMaxBytes,
    timeoutMs: deps.config.discardBodyTimeoutMs,
  });
}

/**
 * `Authorization: Bearer <API key>` with `scope`. The key's tenant confines everything
 * after it; which monitors of the tenant it may touch is checked by requireMonitor.
 */
function bearer(keys: Pick<KeyStore, 'authenticate'>, scope: Scope): RequestHandler {
  return (req, res, next) => {
    const header = req.get('authorization');
    if (!header) throw new AppError('MISSING_CREDENTIALS', 'send Authorization: Bearer <API key>');
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    if (!m) throw new AppError('INVALID_CREDENTIALS', 'the API key is not valid');
    const key: VerifiedKey = keys.authenticate(m[1]!, 'api');
    if (!key.scopes.has(scope)) throw new AppError('INSUFFICIENT_SCOPE', `this API key lacks the ${scope} scope`);
    res.locals.key = key;
    next();
  };
}
