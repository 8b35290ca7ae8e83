import { createHash, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, {
  type ErrorRequestHandler,
  type Express,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { fail } from '@telemetry/contract';
import type { Registry } from 'prom-client';
import { discardRest, type DiscardLimits } from './body.js';
import { AppError } from './errors.js';
import type { Component, ServiceRunner } from './lifecycle.js';
import type { Logger } from './logger.js';
import { createHttpMetrics, type HttpMetrics } from './metrics.js';
import { useTrustedProxies, type TrustedProxies } from './trusted-proxies.js';

declare module 'express-serve-static-core' {
  interface Request {
    id: string;
  }
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The entity tags an If-Match or If-None-Match header names (RFC 9110 8.8.3): `*`, or the
 * tags with any weak prefix (`W/`) dropped; undefined when the header is absent.
 */
export function entityTags(header: string | undefined): '*' | string[] | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === '*') return '*';
  return header.split(',').map((t) => t.trim().replace(/^W\//, ''));
}

/**
 * Sends `body` as JSON with an ETag of its bytes and `cacheControl`, and answers 304 with no
 * body when If-None-Match names that tag (RFC 9110 13.1.2): a client that has the answer
 * already gets nothing new. The answer depends on the key: `Vary: Authorization`.
 */
export function sendCacheable(req: Request, res: Response, body: unknown, cacheControl: string): void {
  sendCacheableJson(req, res, JSON.stringify(body), cacheControl);
}

/** As sendCacheable, of a body already serialized (`json`: JSON.stringify of the body). */
export function sendCacheableJson(req: Request, res: Response, json: string, cacheControl: string): void {
  const etag = `"${createHash('sha1').update(json).digest('base64url')}"`;
  res.setHeader('Cache-Control', cacheControl);
  res.setHeader('Vary', 'Authorization');
  if (answeredNotModified(req, res, etag)) return;
  res.type('application/json').send(json);
}

/**
 * Sets `etag` and, when If-None-Match names it (or is `*`), answers 304 with no body and
 * returns true (RFC 9110 13.1.2); otherwise the caller sends the body.
 */
export function answeredNotModified(req: Request, res: Response, etag: string): boolean {
  res.setHeader('ETag', etag);
  const tags = entityTags(req.get('if-none-match'));
  if (tags !== '*' && !tags?.includes(etag)) return false;
  res.status(304).end();
  return true;
}

/** Express app with our defaults: no x-powered-by, no ETag, strict routing off. */
export function createExpressApp(): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', 'simple');
  return app;
}

/**
 * Request id, access log and HTTP metrics. Logs the path without its query string:
 * the ingest route takes an access key in `?key=`, and it must never reach a log.
 */
export function requestContext(logger: Logger, metrics: HttpMetrics): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get('x-request-id');
    req.id = incoming && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', req.id);
    const start = process.hrtime.bigint();
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const route = routeLabel(req.route as { path?: string } | undefined, req.baseUrl);
      const status = String(res.statusCode);
      const code = (res.locals.errorCode as string | undefined) ?? '';
      metrics.requests.inc({ route, method: req.method, status, code });
      metrics.duration.observe({ route, method: req.method, status }, seconds);
      // NOTE: winston formats a line before its transport drops it: skip the work when
      // info is off (the access log is the hottest log line we have).
      if (route === '/healthz' || route === '/readyz' || route === '/metrics' || !logger.isInfoEnabled()) return;
      logger.info('request', {
        request_id: req.id,
        method: req.method,
        path: loggedPath(req.path, route),
        route,
        status: res.statusCode,
        code: code || undefined,
        ms: Math.round(seconds * 1e4) / 10,
      });
    });
    next();
  };
}

/**
 * The path as logged: a route with a `:token` parameter (a credential in the path, such as
 * a heartbeat token) is logged as its template, never with the value.
 */
export function loggedPath(path: string, route: string): string {
  return route.includes(':token') ? route : path;
}

function routeLabel(route: { path?: string } | undefined, baseUrl: string): string {
  // Only route templates become labels, never raw paths (unbounded cardinality).
  return route?.path ? `${baseUrl}${route.path}` : 'unmatched';
}

export interface HealthOptions {
  ready: () => boolean;
  details: () => Record<string, boolean>;
  registry: Registry;
  /** Served at /openapi.json when given. */
  openapi?: object;
}

/** /healthz: the process is alive. /readyz: dependencies answer and we are not stopping. */
export function healthRoutes(app: Express, opts: HealthOptions): void {
  app.get('/healthz', (_req, res) => {
    res.json({ success: true, data: { status: 'alive' } });
  });
  app.get('/readyz', (_req, res) => {
    const ready = opts.ready();
    res
      .status(ready ? 200 : 503)
      .json(
        ready
          ? { success: true, data: { status: 'ready', components: opts.details() } }
          : { ...fail('SHUTTING_DOWN', 'not ready'), details: { components: opts.details() } },
      );
  });
  const openapi = opts.openapi;
  if (openapi) {
    app.get('/openapi.json', (_req, res) => {
      res.json(openapi);
    });
  }
  app.get('/metrics', (_req, res, next) => {
    opts.registry.metrics().then((text) => {
      res.setHeader('Content-Type', opts.registry.contentType);
      res.send(text);
    }, next);
  });
  for (const path of ['/healthz', '/readyz', '/metrics', ...(openapi ? ['/openapi.json'] : [])]) {
    methodNotAllowed(app, path, ['GET', 'HEAD']);
  }
}

/** 405 with `Allow` for a known path asked with another method (register after its routes). */
export function methodNotAllowed(app: Express, path: string, allowed: string[]): void {
  app.all(path, (_req, _res, next) => {
    next(new AppError('METHOD_NOT_ALLOWED', `use ${allowed.join(' or ')}`, undefined, { Allow: allowed.join(', ') }));
  });
}

export const notFound: RequestHandler = (_req, _res, next) => {
  next(new AppError('NOT_FOUND', 'no such route'));
};

/**
 * The one error middleware: every error becomes our envelope. With `discard`, an answer
 * given before the request's body was all read is followed by discardRest (body.ts).
 * `render` writes another protocol's error body (a tracker's API on the gateway).
 */
export function errorHandler(
  logger: Logger,
  discard?: DiscardLimits,
  render: (err: AppError) => unknown = (e) => fail(e.code, e.expose ? e.message : 'internal error', e.details),
): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    let appErr: AppError;
    if (err instanceof AppError) {
      appErr = err;
    } else if (isBodyParserError(err)) {
      appErr = fromBodyParserError(err);
    } else {
      logger.error('unhandled error', {
        request_id: req.id,
        path: loggedPath(req.path, routeLabel(req.route as { path?: string } | undefined, req.baseUrl)),
        err: err instanceof Error ? (err.stack ?? err.message) : String(err),
      });
      appErr = new AppError('INTERNAL_ERROR', 'internal error', undefined, {}, false);
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.locals.errorCode = appErr.code;
    for (const [h, v] of Object.entries(appErr.headers)) res.setHeader(h, v);
    if (discard) discardRest(req, res, discard);
    res.status(appErr.status).json(render(appErr));
  };
}

interface BodyParserError {
  type: string;
  status: number;
  limit?: number;
  expose?: boolean;
}

function isBodyParserError(err: unknown): err is BodyParserError {
  return typeof err === 'object' && err !== null && typeof (err as { type?: unknown }).type === 'string';
}

function fromBodyParserError(err: BodyParserError): AppError {
  switch (err.type) {
    case 'entity.too.large':
      return new AppError('PAYLOAD_TOO_LARGE', `body is larger than ${err.limit} bytes`, {
        limit: 'maxBodyBytes',
        max: err.limit,
      });
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', 'unsupported content encoding or charset');
    case 'request.aborted':
      return new AppError('INVALID_JSON', 'request aborted before the body was complete');
    default:
      return new AppError('INVALID_JSON', 'the body could not be read');
  }
}

/** An HTTP server as a lifecycle component: stop() stops accepting and drains. */
export class HttpServerComponent implements Component {
  readonly name = 'http';
  private server: Server | undefined;
  private listening = false;
  private stopping = false;

  constructor(
    private readonly app: Express,
    private readonly port: number,
    private readonly host: string,
    /** After stop() is called, /readyz fails this long before the socket closes. */
    private readonly drainDelayMs = 0,
    /** In-flight requests get this long to be answered; then their connections are cut. */
    private readonly drainTimeoutMs = 15_000,
  ) {}

  async start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const server = this.app.listen(this.port, this.host, (err?: Error) => (err ? reject(err) : resolve()));
      server.keepAliveTimeout = 65_000; // longer than common load-balancer idle timeouts
      server.headersTimeout = 66_000;
      server.requestTimeout = 30_000;
      // Runs before Express: while stopping, no connection is kept alive.
      server.prependListener('request', (_req, res) => {
        if (this.stopping) res.setHeader('Connection', 'close');
      });
      this.server = server;
    });
    this.listening = true;
  }

  /** The bound port (useful with port 0 in tests). */
  get boundPort(): number {
    return (this.server?.address() as AddressInfo).port;
  }

  health(): boolean {
    return this.listening;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.listening = false;
    // Let load balancers see /readyz fail before we stop accepting connections.
    if (this.drainDelayMs > 0) await new Promise((r) => setTimeout(r, this.drainDelayMs));
    // NOTE: close() stops accepting new connections, but a keep-alive connection that
    // is busy now would go on serving new requests for keepAliveTimeout. So: every
    // answer from now on says `Connection: close`, idle sockets are closed as soon as
    // they go idle, and whatever is left at the drain deadline is cut.
    this.stopping = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    let cut: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      cut = setTimeout(() => {
        server.closeAllConnections();
        resolve();
      }, this.drainTimeoutMs);
    });
    await Promise.race([closed, deadline]);
    clearInterval(sweep);
    clearTimeout(cut);
  }
}

/** The HTTP side of a service without an API: /healthz, /readyz and /metrics only. */
export function healthServer(opts: {
  runner: Pick<ServiceRunner, 'ready' | 'health'>;
  registry: Registry;
  logger: Logger;
  port: number;
  host: string;
  shutdownDelayMs?: number;
}): HttpServerComponent {
  const app = createExpressApp();
  healthRoutes(app, { ready: opts.runner.ready, details: opts.runner.health, registry: opts.registry });
  app.use(notFound);
  app.use(errorHandler(opts.logger));
  return new HttpServerComponent(app, opts.port, opts.host, opts.shutdownDelayMs);
}

/**
 * An API's app, begun: request ids, JSON access logs and HTTP metrics on every
 * request, `first` (when given), then /healthz, /readyz, /metrics (and /openapi.json). Add the routes, then
 * call endApp(). `req.ip` is the client's address as TRUSTED_PROXIES makes it (trusted-proxies.ts).
 */
export function beginApp(
  opts: HealthOptions & { logger: Logger; first?: RequestHandler; trustedProxies: TrustedProxies },
): Express {
  const app = createExpressApp();
  useTrustedProxies(app, opts.trustedProxies);
  app.use(requestContext(opts.logger, createHttpMetrics(opts.registry)));
  // Before every route, the health routes too: what a request may reach at all (the query
  // service's routing by Host).
  if (opts.first) app.use(opts.first);
  healthRoutes(app, opts);
  return app;
}

/** After the routes: 404 NOT_FOUND for the rest, and the one error middleware. */
export function endApp(app: Express, logger: Logger, discard?: DiscardLimits): Express {
  app.use(notFound);
  app.use(errorHandler(logger, discard));
  return app;
}
