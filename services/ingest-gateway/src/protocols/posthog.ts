import type { Express, Request, RequestHandler, Response } from 'express';
import { AppError, methodNotAllowed, single, type BodyLimits } from '@telemetry/platform';
import type { VerifiedKey } from '@telemetry/store';
import { compatMessages, validationFailed } from './compat.js';
import { stampOf } from '../request-stamp.js';
import type { ProtocolDeps } from './protocol.js';
import { readPosthogBody } from './posthog/decode.js';
import { msTime, posthogBatch, posthogCompatEvent } from './posthog/map.js';
import { CAPTURE_OK, flagsAnswer, posthogRoute, remoteConfig, remoteConfigScript } from './posthog/answers.js';

/**
 * The capture paths the pinned SDKs post to (docs/compat.md, "PostHog"): posthog-js `/e/`,
 * posthog-node and Python `/batch/` and, for `$ai_*` events, `/i/v0/ai/batch/`; `/capture`
 * and `/i/v0/e` are PostHog's other names for the same endpoint.
 */
export const POSTHOG_CAPTURE_PATHS = ['/batch', '/capture', '/e', '/i/v0/e', '/i/v0/ai/batch'] as const;
const FLAGS_PATHS = ['/flags', '/decide'] as const;
const CONFIG_PATH = '/array/:token/config';
const CONFIG_JS_PATH = '/array/:token/config.js';

/** Each path with and without its trailing slash (the SDKs send it; PostHog accepts both). */
const both = (paths: readonly string[]): string[] => paths.flatMap((p) => [p, `${p}/`]);

/**
 * The largest PostHog event we take, as our message (docs/compat.md, "Limits"): PostHog
 * takes up to 1 MB, our own endpoint 64 KiB; 192 KiB keeps the message under the
 * consumer's MAX_MESSAGE_BYTES (256 KiB) with room for our fields. A larger event is 413:
 * posthog-node then halves its batch size (for good) and sends the rest of the batch again.
 */
export const POSTHOG_MAX_EVENT_BYTES = 192 * 1024;

const none = (x: unknown): boolean => x === undefined || x === null || x === '';

/** PostHog's capture API, flags and remote config (docs/compat.md, "PostHog"). */
export function posthogRoutes(app: Express, deps: ProtocolDeps): void {
  const { config, intake, logger } = deps;
  const limits: BodyLimits = { maxBytes: config.maxBodyBytes, maxRatio: config.maxGzipRatio };
  const discard = { maxBytes: config.discardBodyMaxBytes, timeoutMs: config.discardBodyTimeoutMs };
  const route = (handler: (req: Request, res: Response) => Promise<void> | void): RequestHandler =>
    posthogRoute(logger, discard, handler);
  const capture = both(POSTHOG_CAPTURE_PATHS);
  const flags = both(FLAGS_PATHS);
  const cors = corsAllowingRequested(deps.cors);

  const authenticate = (token: string | undefined, req: Request, res: Response): VerifiedKey => {
    if (!token)
      throw new AppError('MISSING_CREDENTIALS', 'send the project token (our access key) as api_key or token');
    return intake.authenticate(token, req, res);
  };

  // NOTE: one registration per path, so each path is its own metrics label.
  for (const p of [...capture, ...flags, CONFIG_PATH, CONFIG_JS_PATH]) {
    app.options(p, cors, (_req, res) => {
      res.status(204).end();
    });
  }

  const captureHandler = route(async (req, res) => {
    const receivedAt = new Date();
    const batch = posthogBatch(await readPosthogBody(req, limits), config.maxEventsPerRequest);
    const key = authenticate(batch.key, req, res);
    const querySentAt = msTime(single(req, '_')) ?? msTime(single(req, 'sent_at'));
    const events = batch.events.map((e) => posthogCompatEvent(e, batch.sentAt, querySentAt, receivedAt.getTime()));
    // PostHog's capture refuses an event without a distinct id; so do we (every SDK sends one).
    const anonymous = events.flatMap((e, index) =>
      none(e.anonymousId) && none(e.userId)
        ? [{ index, path: `${batch.pathOf(index)}/distinct_id`, message: 'needs a distinct_id' }]
        : [],
    );
    if (anonymous.length > 0) throw validationFailed(anonymous);
    const messages = compatMessages(
      events,
      key,
      receivedAt.toISOString(),
      POSTHOG_MAX_EVENT_BYTES,
      batch.pathOf,
      stampOf(req, key.ipStorage),
    );
    // A 2xx only once Kafka acknowledged every event (publish rejects otherwise: 503).
    await intake.publish(key, messages);
    res.status(200).json(CAPTURE_OK);
  });
  for (const p of capture) app.post(p, cors, captureHandler);

  // Flags and decide: no flags, ever. The token is the body's `token` (or `api_key`).
  const flagsHandler = route(async (req, res) => {
    const body = await readPosthogBody(req, limits);
    const token = tokenOf(body);
    authenticate(token, req, res);
    const withConfig = req.path.startsWith('/decide') || single(req, 'config') === 'true';
    res.status(200).json(flagsAnswer(token!, withConfig));
  });
  for (const p of flags) app.post(p, cors, flagsHandler);

  // The remote config, as JSON (posthog-node, posthog-js's fallback) or as the script
  // posthog-js's full bundle loads; the token in the path is our access key.
  const configHandler = (script: boolean): RequestHandler =>
    route((req, res) => {
      const token = req.params.token as string;
      authenticate(token, req, res);
      res.setHeader('Cache-Control', 'no-store');
      if (script) res.status(200).type('application/javascript').send(remoteConfigScript(token));
      else res.status(200).json(remoteConfig(token));
    });
  app.get(CONFIG_PATH, cors, configHandler(false));
  app.get(CONFIG_JS_PATH, cors, configHandler(true));

  for (const p of [...capture, ...flags]) methodNotAllowed(app, p, ['POST', 'OPTIONS']);
  for (const p of [CONFIG_PATH, CONFIG_JS_PATH]) methodNotAllowed(app, p, ['GET', 'HEAD', 'OPTIONS']);
}

/** The flags request's token: `token` (posthog-js, posthog-node) or `api_key` (Python); both must agree. */
function tokenOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { token, api_key: apiKey } = body as Record<string, unknown>;
  const keys = new Set([token, apiKey].filter((v): v is string => typeof v === 'string' && v !== ''));
  if (keys.size > 1) throw new AppError('INVALID_CREDENTIALS', 'the request carries two different project tokens');
  return keys.values().next().value;
}

/**
 * Our CORS, and a preflight allows the headers the page asks for: posthog-js adds the
 * page's own `request_headers` to every request. Safe: no credentials are ever allowed,
 * and the key in the body, not a header, is what authenticates.
 */
function corsAllowingRequested(cors: RequestHandler): RequestHandler {
  return (req, res, next) => {
    cors(req, res, (err?: unknown) => {
      const asked = req.get('access-control-request-headers');
      if (req.method === 'OPTIONS' && asked && /^[A-Za-z0-9\-_, ]{1,1000}$/.test(asked)) {
        res.setHeader('Access-Control-Allow-Headers', asked);
      }
      next(err);
    });
  };
}
