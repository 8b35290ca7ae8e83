import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { AppError, errorHandler, type DiscardLimits, type Logger } from '@telemetry/platform';
import { posthogProblemPath } from './map.js';
import { withStatus } from '../protocol.js';

/** What PostHog's capture answers a request it accepted; the SDKs read nothing else from it. */
export const CAPTURE_OK = { status: 1 } as const;

/** PostHog's error `type` for an HTTP status (its API's error body, docs/compat.md). */
function errorType(status: number): string {
  if (status === 401 || status === 403) return 'authentication_error';
  if (status === 429) return 'throttled_error';
  if (status >= 500) return 'server_error';
  return 'validation_error';
}

/**
 * An error as PostHog's API answers it, `{type, code, detail, attr}`, with our stable
 * error code as `code` and the JSON pointer of the first bad field as `attr` (else null).
 * The status is our code's (400, 401, 413, 503 with Retry-After when Kafka did not
 * acknowledge or the key's rate limit is reached: the SDKs retry 5xx and drop 4xx).
 */
export function posthogErrorBody(err: AppError): { type: string; code: string; detail: string; attr: string | null } {
  const problems = (err.details as { problems?: { path?: unknown }[] } | undefined)?.problems;
  const path = Array.isArray(problems) && typeof problems[0]?.path === 'string' ? problems[0].path : null;
  return {
    type: errorType(err.status),
    code: err.code,
    detail: err.expose ? err.message : 'internal error',
    attr: path === null ? null : posthogProblemPath(path),
  };
}

/**
 * posthog-js 1.449.2 retries only a status below 400 or from 500 (its retry queue): a 429
 * would make it drop the batch. So the rate limit answers 503 on PostHog's routes, with
 * the same Retry-After (which posthog-js and posthog-node honour) and our code RATE_LIMITED.
 */
const RETRIED_AS_503 = new Set(['RATE_LIMITED']);

/**
 * A PostHog route: any error becomes PostHog's error body (not our envelope), through
 * the platform's one error handler (logging, headers, discarding an unread body).
 */
export function posthogRoute(
  logger: Logger,
  discard: DiscardLimits,
  handler: (req: Request, res: Response) => Promise<void> | void,
): RequestHandler {
  const onError = errorHandler(logger, discard, posthogErrorBody);
  return async (req, res, next) => {
    try {
      await handler(req, res);
    } catch (err) {
      onError(withStatus(err, RETRIED_AS_503, 503), req, res, next);
    }
  };
}

/**
 * The remote config posthog-js reads (`/array/{token}/config` and `config.js`, and
 * `/flags?config=true`), as @posthog/browser-common's RemoteConfig type has it: everything that would load an extension script (`/static/*.js`)
 * or call another API is off, and `supportedCompression` names exactly what we decode.
 */
export function remoteConfig(token: string): Record<string, unknown> {
  return {
    token,
    supportedCompression: ['gzip-js', 'base64'],
    hasFeatureFlags: false,
    captureDeadClicks: false,
    capturePerformance: false,
    autocapture_opt_out: false,
    autocaptureExceptions: false,
    errorTracking: { autocaptureExceptions: false, suppressionRules: [] },
    elementsChainAsString: true,
    sessionRecording: false,
    heatmaps: false,
    // NOTE: no `surveys`. posthog-js 1.449.2 loads /static/surveys.js for `surveys: false` (or
    // []) too; only without the key ("flags not loaded yet") does it load no surveys script
    // (test/browser/compat-posthog.int.test.ts).
    productTours: false,
    conversations: false,
    logs: { captureConsoleLogs: false },
    defaultIdentifiedOnly: true,
    toolbarParams: {},
    toolbarVersion: 'toolbar',
    isAuthenticated: false,
    siteApps: [],
  };
}

/** `config.js`: what PostHog's script does, `window._POSTHOG_REMOTE_CONFIG[token] = {config, siteApps}`. */
export function remoteConfigScript(token: string): string {
  // NOTE: JSON is not quite JavaScript inside a script: escape `<` and the line separators.
  const json = (v: unknown): string =>
    JSON.stringify(v)
      .replace(/</g, '\\u003c')
      .replace(/\u2028/g, '\\u2028')
      .replace(/\u2029/g, '\\u2029');
  return (
    '(function(){window._POSTHOG_REMOTE_CONFIG=window._POSTHOG_REMOTE_CONFIG||{};' +
    `window._POSTHOG_REMOTE_CONFIG[${json(token)}]=${json({ config: remoteConfig(token), siteApps: [] })};})();\n`
  );
}

/**
 * The flags answer: no flags, in both shapes (`flags`, what /flags?v=2 and up and
 * /decide?v=4 answer; `featureFlags` and `featureFlagPayloads`, older /decide), which the
 * SDKs' normalisers both read. With `withConfig` (/flags?config=true, /decide) the remote
 * config too.
 */
export function flagsAnswer(token: string, withConfig: boolean): Record<string, unknown> {
  return {
    ...(withConfig ? remoteConfig(token) : {}),
    flags: {},
    featureFlags: {},
    featureFlagPayloads: {},
    errorsWhileComputingFlags: false,
    quotaLimited: [],
    requestId: randomUUID(),
  };
}
