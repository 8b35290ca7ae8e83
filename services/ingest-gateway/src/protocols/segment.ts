import type { Express, Request, RequestHandler, Response } from 'express';
import { LIMITS, ok } from '@telemetry/contract';
import { AppError, checkMediaType, methodNotAllowed, parseBody, readBody } from '@telemetry/platform';
import { compatMessages } from './compat.js';
import { stampOf } from '../request-stamp.js';
import { withStatus, type ProtocolDeps } from './protocol.js';
import {
  isObject,
  SEGMENT_LIMITS,
  segmentEvents,
  segmentWriteKey,
  type BatchLevel,
  type SegmentInput,
  type SegmentType,
} from './segment/messages.js';
import { arrayElementSpans } from './segment/spans.js';
import { gatewayOrigin, segmentSettings } from './segment/settings.js';

/** Each message type's path: Segment's long one and the short one analytics.js posts to (`{apiHost}/{type[0]}`). */
export const SEGMENT_SINGLE_ROUTES: Record<string, SegmentType> = {
  '/v1/track': 'track',
  '/v1/t': 'track',
  '/v1/identify': 'identify',
  '/v1/i': 'identify',
  '/v1/page': 'page',
  '/v1/p': 'page',
  '/v1/screen': 'screen',
  '/v1/s': 'screen',
  '/v1/group': 'group',
  '/v1/g': 'group',
  '/v1/alias': 'alias',
  '/v1/a': 'alias',
};
/** Batches: Segment's `/v1/batch` and its alias `/v1/import`; analytics.js's batching strategy posts to `{apiHost}/b`. */
export const SEGMENT_BATCH_ROUTES = ['/v1/batch', '/v1/import', '/v1/b'];
/** Where analytics.js loads its settings (`{cdnURL}/v1/projects/{writeKey}/settings`); `:token` keeps the key out of the access log. */
export const SEGMENT_SETTINGS_ROUTE = '/v1/projects/:token/settings';

/** analytics.js posts text/plain (no preflight for the type); the server libraries application/json. */
const TYPES = new Set(['application/json', 'text/plain']);

/**
 * What Segment answers 400 and we 413 (docs/errors.md): a Segment client treats 400 as
 * final (analytics-node's publisher, segment-analytics-python's consumer) but retries some
 * other 4xx; the code stays ours, the status becomes Segment's.
 */
const SEGMENT_400 = new Set(['PAYLOAD_TOO_LARGE', 'EVENT_TOO_LARGE', 'BATCH_TOO_LARGE', 'KAFKA_MESSAGE_TOO_LARGE']);

/** Segment's HTTP Tracking API (docs/compat.md, "Segment"): its SDKs send to us unchanged. */
export function segmentRoutes(app: Express, deps: ProtocolDeps): void {
  const { config, intake } = deps;
  // analytics.js sends its write key in Authorization (Basic) and retries with
  // X-Retry-Count: both make its cross-origin posts preflighted.
  const cors: RequestHandler = (req, res, next) => {
    deps.cors(req, res, (err?: unknown) => {
      if (err) return next(err);
      if (req.method === 'OPTIONS') {
        const allowed = res.getHeader('Access-Control-Allow-Headers');
        res.setHeader(
          'Access-Control-Allow-Headers',
          `${allowed ? `${String(allowed)}, ` : ''}Authorization, X-Retry-Count`,
        );
      }
      next();
    });
  };
  const preflight: RequestHandler = (_req, res) => {
    res.status(204).end();
  };

  /** One request of `pathType` (undefined: a batch): 200 only once Kafka has every message. */
  async function receive(req: Request, res: Response, pathType: SegmentType | undefined): Promise<void> {
    checkMediaType(req, TYPES);
    // A key in Authorization is checked (and takes its rate-limit token) before the body is
    // read, as on our own endpoint: a bad or throttled key costs no body read or parse.
    const headerKey = segmentWriteKey(req.get('authorization'), []);
    const early = headerKey === undefined ? undefined : intake.authenticate(headerKey, req, res);
    const raw = await readBody(req, {
      maxBytes: Math.min(config.maxBodyBytes, SEGMENT_LIMITS.maxBatchBytes),
      maxRatio: config.maxGzipRatio,
    });
    if (raw.length === 0) throw new AppError('INVALID_JSON', 'an empty body is not a valid request');
    const body = parseBody(raw);
    if (!isObject(body)) {
      throw new AppError('VALIDATION_FAILED', 'the body must be a JSON object', {
        problems: [{ path: '', message: 'must be a JSON object' }],
      });
    }
    let inputs: SegmentInput[];
    let batch: BatchLevel = {};
    let keys: unknown[];
    if (pathType !== undefined) {
      inputs = [{ message: body, pathType, bytes: raw.length, path: '' }];
      keys = [body.writeKey];
    } else {
      inputs = batchInputs(body, raw, config.maxEventsPerRequest);
      batch = { sentAt: body.sentAt, context: body.context, integrations: body.integrations };
      keys = [body.writeKey, ...inputs.map((i) => (isObject(i.message) ? i.message.writeKey : undefined))];
    }
    const writeKey = segmentWriteKey(req.get('authorization'), keys);
    if (writeKey === undefined) {
      throw new AppError(
        'MISSING_CREDENTIALS',
        'send the write key as the HTTP Basic user name or writeKey in the body',
      );
    }
    // segmentWriteKey refused a body key that differs from the header's.
    const key = early ?? intake.authenticate(writeKey, req, res);
    const events = segmentEvents(inputs, batch);
    const messages = compatMessages(
      events,
      key,
      new Date().toISOString(),
      LIMITS.maxEventBytes,
      (i) => inputs[i]!.path,
      stampOf(req, key.ipStorage),
    );
    await intake.publish(key, messages);
    res.status(200).json(ok(null));
  }

  const handler =
    (pathType: SegmentType | undefined): RequestHandler =>
    async (req, res) => {
      try {
        await receive(req, res, pathType);
      } catch (err) {
        throw withStatus(err, SEGMENT_400, 400);
      }
    };

  const posts: [string, SegmentType | undefined][] = [
    ...Object.entries(SEGMENT_SINGLE_ROUTES),
    ...SEGMENT_BATCH_ROUTES.map((p): [string, undefined] => [p, undefined]),
  ];
  for (const [path, type] of posts) {
    app.options(path, cors, preflight);
    app.post(path, cors, handler(type));
    methodNotAllowed(app, path, ['POST', 'OPTIONS']);
  }

  app.options(SEGMENT_SETTINGS_ROUTE, cors, preflight);
  app.get(SEGMENT_SETTINGS_ROUTE, cors, (req, res) => {
    const writeKey = String(req.params.token);
    // An unknown key is 401, a key restricted to other origins 403, as on the event routes.
    intake.authenticate(writeKey, req, res);
    const origin = gatewayOrigin(req);
    // Private: the answer names the Host the client used, and a revoked key stops soon.
    res.setHeader('Cache-Control', 'private, max-age=60');
    res.status(200).json(segmentSettings(writeKey, origin));
  });
  methodNotAllowed(app, SEGMENT_SETTINGS_ROUTE, ['GET', 'HEAD', 'OPTIONS']);
}

/** A batch's messages with their sizes as sent; `/batch` must be a non-empty array of at most `maxMessages`. */
function batchInputs(body: Record<string, unknown>, raw: Buffer, maxMessages: number): SegmentInput[] {
  const list = body.batch;
  if (!Array.isArray(list) || list.length === 0) {
    throw new AppError('VALIDATION_FAILED', 'batch must be a non-empty array of messages', {
      problems: [{ path: '/batch', message: 'must be a non-empty array of messages' }],
    });
  }
  if (list.length > maxMessages) {
    throw new AppError('BATCH_TOO_LARGE', `a batch holds at most ${maxMessages} messages`, {
      limit: 'maxEventsPerRequest',
      max: maxMessages,
    });
  }
  const text = raw.toString('utf8');
  const spans = arrayElementSpans(text, 'batch');
  return list.map((message: unknown, i) => {
    const span = spans?.length === list.length ? spans[i] : undefined;
    const bytes = span ? Buffer.byteLength(text.slice(span[0], span[1])) : Buffer.byteLength(JSON.stringify(message));
    return { message, bytes, path: `/batch/${i}` };
  });
}
