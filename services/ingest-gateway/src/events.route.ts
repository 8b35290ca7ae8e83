import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { parse as parseQuery, type ParsedUrlQuery } from 'node:querystring';
import type { Express } from 'express';
import { ok, type IngestRequest, type SuccessEnvelope, type Validators } from '@telemetry/contract';
import {
  AppError,
  bad,
  checkMediaType,
  clientIp,
  discardRest,
  errorEnvelope,
  observeRequest,
  parseBody,
  readBody,
  requestIdOf,
  sendJson,
  toAppError,
  type DiscardLimits,
  type HttpMetrics,
  type Logger,
  type TrustedProxies,
} from '@telemetry/platform';
import type { VerifiedKey } from '@telemetry/store';
import type { GatewayConfig } from './config.js';
import { corsHeaders } from './cors.js';
import { validateRequest } from './ingest.js';
import type { Intake } from './intake.js';
import type { StampSource } from './request-stamp.js';

export const EVENTS_ROUTE = '/api/telemetry/events';

const ALLOWED_TYPES = new Set(['application/json', 'text/plain']);

export interface EventsRouteDeps {
  config: Pick<GatewayConfig, 'corsMaxAgeS' | 'maxBodyBytes' | 'maxGzipRatio' | 'maxEventsPerRequest'>;
  intake: Pick<Intake, 'authenticate'>;
  validators: Validators;
  trustedProxies: TrustedProxies;
  /** The checks after authentication that the pixel shares, the publish, the stored ids. */
  accept(at: StampSource, key: VerifiedKey, body: IngestRequest): Promise<string[]>;
}

/**
 * POST /api/telemetry/events, our own endpoint, on any node:http request: CORS, the key
 * (MISSING_CREDENTIALS ... RATE_LIMITED), the media type, `?return`, the body within its
 * limits (gzip too), validation, then accept (which answers only once Kafka has the
 * events). Resolves with the answer's envelope; any refusal rejects (an AppError) and
 * whoever serves the route answers it with our envelope. `query` is the request's query
 * as Express's `simple` parser reads it (node:querystring).
 */
export type EventsRoute = (
  req: IncomingMessage,
  res: ServerResponse,
  query: ParsedUrlQuery,
) => Promise<SuccessEnvelope<string[] | null>>;

export function eventsRoute(deps: EventsRouteDeps): EventsRoute {
  const { config } = deps;
  const limits = { maxBytes: config.maxBodyBytes, maxRatio: config.maxGzipRatio };
  return async (req, res, query) => {
    corsHeaders(req, res, config.corsMaxAgeS);
    const key = deps.intake.authenticate(accessKey(req.headers['x-access-key'], query.key), req, res);
    checkMediaType(req, ALLOWED_TYPES);
    const returnIds = returnParam(query);
    const raw = await readBody(req, limits);
    if (raw.length === 0) throw new AppError('INVALID_JSON', 'an empty body is not a valid request');
    const body = validateRequest(deps.validators, parseBody(raw), config.maxEventsPerRequest);
    const ids = await deps.accept({ ip: clientIp(req, deps.trustedProxies), headers: req.headers }, key, body);
    return ok(returnIds ? ids : null);
  };
}

/**
 * The access key from the `X-Access-Key` header or the `key` query parameter; never
 * logged (see logger redaction too). Two different keys (or `key` given twice): refused
 * rather than picking one.
 */
export function accessKey(header: string | string[] | undefined, param: unknown): string | undefined {
  const h = typeof header === 'string' ? header.trim() : undefined;
  if (param !== undefined && (typeof param !== 'string' || (h !== undefined && h !== param))) {
    throw new AppError('INVALID_CREDENTIALS', 'X-Access-Key and the key parameter disagree');
  }
  return h ?? param;
}

/**
 * `?return=ids`: the answer's `data` lists each event's stored `event_id`, in the order of
 * `events` (a retry of an event with a client id gets the same one); else `data` is null.
 */
function returnParam(query: ParsedUrlQuery): boolean {
  const v = query.return;
  if (v === undefined) return false;
  if (typeof v !== 'string') throw bad('return', 'give it once');
  if (v !== 'ids') throw bad('return', 'the only value is ids');
  return true;
}

/**
 * The request targets Express would route to POST /api/telemetry/events as they are
 * written: the path exactly, then an optional query. NOTE: parseurl (which Express reads
 * paths and queries with) hands a target with whitespace or `#` to the legacy URL parser,
 * which reads it differently; those, other spellings Express also routes here (a trailing
 * slash, other letter case) and absolute-form targets go to the Express app, which serves
 * the same route through the same eventsRoute.
 */
const FRONT_TARGET = /^\/api\/telemetry\/events(?:\?[^\t\n\f\r #\u00a0\ufeff]*)?$/;

export interface FrontDeps {
  /** The app that serves everything else (and this route in other spellings). */
  app: Express;
  events: EventsRoute;
  logger: Logger;
  /** The app's own HTTP metrics (beginApp's): this route counts in them as the app's routes do. */
  metrics: HttpMetrics;
  discard: DiscardLimits;
}

/**
 * The gateway's node:http listener: POST /api/telemetry/events, the hot path, without
 * Express's per-request work (its router walking every layer, its request and response
 * prototypes, middleware closures); every other request goes to the Express app.
 * Everything the app adds to a request is done here the same way: the request id
 * (X-Request-Id), the HTTP metrics and access log line under the route's template, the
 * error envelope of errorHandler with its headers and discardRest, and JSON answers with
 * the same headers and bytes as Express's res.json.
 */
export function frontListener(deps: FrontDeps): RequestListener {
  const { app, events, logger, metrics, discard } = deps;
  const serve = async (req: IncomingMessage, res: ServerResponse, url: string): Promise<void> => {
    const id = requestIdOf(req, res);
    const start = process.hrtime.bigint();
    let code = '';
    res.on('finish', () => {
      observeRequest(logger, metrics, {
        id,
        method: 'POST',
        path: EVENTS_ROUTE,
        route: EVENTS_ROUTE,
        status: res.statusCode,
        code,
        start,
      });
    });
    try {
      const q = url.indexOf('?');
      const envelope = await events(req, res, q === -1 ? {} : parseQuery(url.slice(q + 1)));
      sendJson(res, 200, envelope);
    } catch (err) {
      const appErr = toAppError(err, logger, { requestId: id, path: EVENTS_ROUTE });
      if (res.headersSent) {
        res.destroy();
        return;
      }
      code = appErr.code;
      for (const [h, v] of Object.entries(appErr.headers)) res.setHeader(h, v);
      discardRest(req, res, discard);
      sendJson(res, appErr.status, errorEnvelope(appErr));
    }
  };
  return (req, res) => {
    const url = req.url ?? '';
    if (req.method === 'POST' && FRONT_TARGET.test(url)) {
      serve(req, res, url).catch((err: unknown) => {
        logger.error('unhandled error', { path: EVENTS_ROUTE, err: String(err) });
        res.destroy();
      });
    } else {
      app(req, res);
    }
  };
}

/** Whether frontListener serves a request for `method` and `url` itself (tests). */
export function servedInFront(method: string, url: string): boolean {
  return method === 'POST' && FRONT_TARGET.test(url);
}
