import type { RequestListener } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import { Counter, type Registry } from 'prom-client';
import { buildOpenApi, LIMITS, type IngestRequest, type Validators } from '@telemetry/contract';
import {
  AppError,
  methodNotAllowed,
  parseBody,
  type FairPublisher,
  type Logger,
  beginApp,
  createHttpMetrics,
  endApp,
} from '@telemetry/platform';
import {
  type HeartbeatTokens,
  type KeyStore,
  type VerifiedKey,
  type SuppressionList,
  type EventSchemaIndex,
} from '@telemetry/store';
import { GatewaySchemas } from './event-schemas.js';

import type { GatewayConfig } from './config.js';
import { toMessages, validateRequest } from './ingest.js';

import { RateLimiter } from './rate-limit.js';
import { createIntake } from './intake.js';
import { stampOf, type StampSource } from './request-stamp.js';
import { corsFor } from './cors.js';
import { accessKey, EVENTS_ROUTE, eventsRoute, frontListener } from './events.route.js';
import { segmentRoutes } from './protocols/segment.js';
import { posthogRoutes } from './protocols/posthog.js';
import { sdkRoute, type SdkBundle } from './sdk.route.js';
import { heartbeatRoute } from './heartbeat.route.js';

export interface GatewayDeps {
  config: GatewayConfig;
  logger: Logger;
  registry: Registry;
  keys: Pick<KeyStore, 'authenticate'>;
  /** Every tenant's suppressed ids (deletion on request): their new events are answered but dropped. */
  suppressions?: SuppressionList;
  heartbeatTokens: Pick<HeartbeatTokens, 'verify'>;
  /** Tenants' event schemas (docs/event-schemas.md), a copy kept by the change feed. */
  eventSchemas: Pick<EventSchemaIndex, 'find' | 'hasTenant'>;
  publisher: FairPublisher;
  validators: Validators;
  ready: () => boolean;
  details: () => Record<string, boolean>;
  /** The browser SDK served at /sdk/v1.js (undefined: not built, 404). */
  sdk: SdkBundle | undefined;
}

export { EVENTS_ROUTE };
export const PIXEL_ROUTE = '/api/telemetry/pixel.gif';

/** A transparent 1x1 GIF. */
const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/**
 * The gateway's HTTP side: a node:http listener that serves POST /api/telemetry/events
 * itself (events.route.ts, the hot path) and hands every other request to the Express
 * app, which serves every other route (and this one in other spellings).
 */
export function createGatewayApp(deps: GatewayDeps): RequestListener {
  const { config, logger, registry } = deps;
  const metrics = createHttpMetrics(registry);
  const app = beginApp({
    logger,
    registry,
    metrics,
    ready: deps.ready,
    details: deps.details,
    openapi: buildOpenApi('gateway'),
    trustedProxies: config.trustedProxies,
  });
  const accepted = new Counter({
    name: 'ingest_events_accepted_total',
    help: 'Events acknowledged by Kafka and answered 200',
    registers: [registry],
  });
  const suppressed = new Counter({
    name: 'ingest_events_suppressed_total',
    help: 'Events answered 2xx but not published: their user_id or anonymous_id is on the tenant s suppression list (docs/deletions.md)',
    registers: [registry],
  });
  const limiter = new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst);
  const intake = createIntake({
    keys: deps.keys,
    limiter,
    publisher: deps.publisher,
    eventsTopic: config.eventsTopic,
    accepted,
    suppressions: deps.suppressions,
    suppressed,
    schemas: new GatewaySchemas(
      deps.eventSchemas,
      logger,
      new Counter({
        name: 'ingest_schema_checks_total',
        help: 'Events checked against an event schema, by outcome (valid, reject, route)',
        labelNames: ['outcome'],
        registers: [registry],
      }),
    ),
  });

  /** Everything after authentication that both routes share: checks, publish, count. Returns the stored event ids. */
  async function accept(req: StampSource, key: VerifiedKey, body: IngestRequest): Promise<string[]> {
    if (key.allowedSources.size > 0) {
      const bad = body.events.flatMap((e, i) => (key.allowedSources.has(e.source) ? [] : [i]));
      if (bad.length > 0) {
        throw new AppError('SOURCE_NOT_ALLOWED', 'this access key may not send events of that source', {
          invalid_events: bad,
        });
      }
    }
    const messages = toMessages(body, key, new Date().toISOString(), LIMITS.maxEventBytes, stampOf(req, key.ipStorage));
    await intake.publish(key, messages);
    return messages.map((m) => String(m.key));
  }

  const cors = corsFor(config.corsMaxAgeS);
  const auth: RequestHandler = (req, res, next) => {
    res.locals.key = intake.authenticate(accessKeyOf(req), req, res);
    next();
  };
  app.options(EVENTS_ROUTE, cors, (_req, res) => {
    res.status(204).end();
  });
  const events = eventsRoute({
    config,
    intake,
    validators: deps.validators,
    trustedProxies: config.trustedProxies,
    accept,
  });
  // Served here only in the spellings frontListener leaves to the app (a trailing slash, ...).
  app.post(EVENTS_ROUTE, async (req, res) => {
    res.status(200).json(await events(req, res, req.query as Record<string, string | string[]>));
  });

  // The pixel: for <img> tags and pages that can run no script. It always answers a
  // 1x1 GIF that no cache keeps; the status tells what happened (200 only when Kafka
  // acknowledged the event) and X-Error-Code carries the error code.
  app.get(PIXEL_ROUTE, cors, async (req, res) => {
    try {
      auth(req, res, () => undefined);
      const body = validateRequest(deps.validators, pixelRequest(req), 1);
      await accept(req, res.locals.key as VerifiedKey, body);
      sendGif(res, 200);
    } catch (err) {
      const appErr = err instanceof AppError ? err : new AppError('INTERNAL_ERROR', 'internal error');
      if (!(err instanceof AppError)) logger.error('pixel failed', { request_id: req.id, err: String(err) });
      res.locals.errorCode = appErr.code;
      for (const [h, v] of Object.entries(appErr.headers)) res.setHeader(h, v);
      res.setHeader('X-Error-Code', appErr.code);
      sendGif(res, appErr.status);
    }
  });

  // The trackers' protocols (docs/compat.md): their SDKs send to us unchanged.
  segmentRoutes(app, { config, logger, intake, cors });
  posthogRoutes(app, { config, logger, intake, cors });

  sdkRoute(app, deps.sdk, config.sdkCacheSeconds);
  heartbeatRoute(app, {
    key: config.heartbeatKey,
    tokens: deps.heartbeatTokens,
    publisher: deps.publisher,
    checksTopic: config.checksTopic,
    registry,
  });
  methodNotAllowed(app, EVENTS_ROUTE, ['POST', 'OPTIONS']);
  methodNotAllowed(app, PIXEL_ROUTE, ['GET', 'HEAD']);
  const discard = { maxBytes: config.discardBodyMaxBytes, timeoutMs: config.discardBodyTimeoutMs };
  return frontListener({ app: endApp(app, logger, discard), events, logger, metrics, discard });
}

function sendGif(res: Response, status: number): void {
  res.status(status);
  res.setHeader('Content-Type', 'image/gif');
  res.setHeader('Cache-Control', 'no-store, no-cache, must-revalidate, max-age=0');
  res.setHeader('Pragma', 'no-cache');
  res.setHeader('Expires', '0');
  res.end(GIF);
}

/** The optional event fields a pixel may carry, by the POST body's names (docs/api.md). */
const PIXEL_OPTIONAL = ['id', 'timestamp', 'anonymous_id', 'user_id'] as const;
const PIXEL_FIELDS = new Set<string>(['source', 'category', 'payload', ...PIXEL_OPTIONAL]);

/**
 * The pixel's compact event: `source`, `category`, `payload` (a JSON object,
 * URL-encoded; default {}), optional `id`, `timestamp`, `anonymous_id` and `user_id`.
 * Only these and `key`.
 */
export function pixelRequest(req: Request): unknown {
  const q = req.query as Record<string, unknown>;
  for (const k of Object.keys(q)) {
    if (k !== 'key' && !PIXEL_FIELDS.has(k)) {
      throw new AppError('VALIDATION_FAILED', `the pixel takes key, ${[...PIXEL_FIELDS].join(', ')}`, {
        problems: [{ path: `/${k.slice(0, 64)}`, message: 'is not an allowed parameter' }],
      });
    }
  }
  let payload: unknown = {};
  if (q.payload !== undefined && q.payload !== '') {
    if (typeof q.payload !== 'string' || q.payload.length > LIMITS.maxEventBytes) {
      throw new AppError('VALIDATION_FAILED', 'payload must be one URL-encoded JSON object');
    }
    payload = parseBody(Buffer.from(q.payload));
  }
  const event: Record<string, unknown> = { source: q.source, category: q.category, payload };
  // The optional fields of an event, as given (validated as the POST body's are).
  for (const k of PIXEL_OPTIONAL) if (q[k] !== undefined) event[k] = q[k];
  return { events: [event] };
}

/** The access key from `X-Access-Key` or `?key=`; never logged (see logger redaction too). */
export function accessKeyOf(req: Request): string | undefined {
  return accessKey(req.headers['x-access-key'], (req.query as Record<string, unknown>).key);
}
