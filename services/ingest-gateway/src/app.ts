import express, { type Express, type Request, type RequestHandler } from 'express';
import { Counter, type Registry } from 'prom-client';
import { LIMITS, ok, type Validators } from '@telemetry/contract';
import {
  AppError,
  createExpressApp,
  createHttpMetrics,
  errorHandler,
  healthRoutes,
  notFound,
  requestContext,
  type KeyStore,
  type Logger,
  type VerifiedKey,
} from '@telemetry/runtime';
import type { Message } from 'kafkajs';
import type { GatewayConfig } from './config.js';
import { parseBody, toMessages, validateRequest } from './ingest.js';

/** Where accepted events go; resolves only once Kafka acknowledged them. */
export interface Publisher {
  send(topic: string, messages: Message[]): Promise<void>;
}

export interface GatewayDeps {
  config: GatewayConfig;
  logger: Logger;
  registry: Registry;
  keys: Pick<KeyStore, 'verify'>;
  publisher: Publisher;
  validators: Validators;
  ready: () => boolean;
  details: () => Record<string, boolean>;
}

const ALLOWED_TYPES = new Set(['application/json', 'text/plain']);

export function createGatewayApp(deps: GatewayDeps): Express {
  const { config, logger, registry } = deps;
  const app = createExpressApp();
  const httpMetrics = createHttpMetrics(registry);
  const accepted = new Counter({
    name: 'ingest_events_accepted_total',
    help: 'Events acknowledged by Kafka and answered 200',
    registers: [registry],
  });

  app.use(requestContext(logger, httpMetrics));
  healthRoutes(app, { ready: deps.ready, details: deps.details, registry });

  const route = '/api/telemetry/events';
  const cors = corsFor(config.corsMaxAgeS);
  app.options(route, cors, (_req, res) => {
    res.status(204).end();
  });

  app.post(
    route,
    cors,
    authenticate(deps.keys),
    checkContentType,
    express.raw({ type: () => true, limit: config.maxBodyBytes, inflate: true }),
    async (req, res) => {
      const key = res.locals.key as VerifiedKey;
      if (!Buffer.isBuffer(req.body)) throw new AppError('INVALID_JSON', 'an empty body is not a valid request');
      const body = validateRequest(deps.validators, parseBody(req.body), config.maxEventsPerRequest);
      if (key.allowedSources.size > 0) {
        const bad = body.events.flatMap((e, i) => (key.allowedSources.has(e.source) ? [] : [i]));
        if (bad.length > 0) {
          throw new AppError('SOURCE_NOT_ALLOWED', 'this access key may not send events of that source', {
            invalid_events: bad,
          });
        }
      }
      const messages = toMessages(body, key.keyId, new Date().toISOString(), LIMITS.maxEventBytes);
      await deps.publisher.send(config.eventsTopic, messages);
      accepted.inc(messages.length);
      res.status(200).json(ok(null));
    },
  );

  app.use(notFound);
  app.use(errorHandler(logger));
  return app;
}

/**
 * CORS for browser pixels: any origin may send (the access key, not the origin, is the
 * credential), no cookies. A key restricted to origins is enforced in authenticate().
 */
function corsFor(maxAgeS: number): RequestHandler {
  return (req, res, next) => {
    const origin = req.get('origin');
    if (origin) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Vary', 'Origin');
    }
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', 'Content-Type, Content-Encoding, X-Access-Key, X-Request-Id');
      res.setHeader('Access-Control-Max-Age', String(maxAgeS));
    }
    next();
  };
}

/** The access key from `X-Access-Key` or `?key=`; never logged (see logger redaction too). */
export function accessKeyOf(req: Request): string | undefined {
  const header = req.get('x-access-key');
  if (header !== undefined) return header.trim();
  const q = (req.query as Record<string, unknown>).key;
  return typeof q === 'string' ? q : undefined;
}

function authenticate(keys: Pick<KeyStore, 'verify'>): RequestHandler {
  return (req, res, next) => {
    const raw = accessKeyOf(req);
    if (!raw)
      throw new AppError('MISSING_CREDENTIALS', 'send the access key in X-Access-Key or the key query parameter');
    const key = keys.verify(raw, 'telemetry');
    if (!key) throw new AppError('INVALID_CREDENTIALS', 'the access key is not valid');
    const origin = req.get('origin');
    if (key.allowedOrigins.size > 0 && (!origin || !key.allowedOrigins.has(origin))) {
      throw new AppError('ORIGIN_NOT_ALLOWED', 'this access key may not be used from this origin');
    }
    res.locals.key = key;
    next();
  };
}

const checkContentType: RequestHandler = (req, _res, next) => {
  const type = (req.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (!ALLOWED_TYPES.has(type)) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json or text/plain');
  }
  const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Encoding must be identity or gzip');
  }
  next();
};
