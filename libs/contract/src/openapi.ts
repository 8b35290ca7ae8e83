import { accessPaths } from './openapi/access.js';
import { deletionPaths } from './openapi/deletions.js';
import { alertingPaths } from './openapi/alerting.js';
import { checkPaths } from './openapi/checks.js';
import { configPaths } from './openapi/config.js';
import { schemas, securitySchemes } from './openapi/components.js';
import { eventPaths } from './openapi/events.js';
import { eventSchemaPaths } from './openapi/event-schemas.js';
import { healthPaths } from './openapi/health.js';
import { memberPaths } from './openapi/members.js';
import { heartbeatPaths } from './openapi/heartbeats.js';
import { monitorPaths } from './openapi/monitors.js';
import { csrfHeader } from './openapi/parameters.js';
import { withCodes, type Json } from './openapi/responses.js';
import { sdkPaths } from './openapi/sdk.js';
import { sessionPaths } from './openapi/sessions.js';
import { ssoPaths } from './openapi/sso.js';
import { statusPagePaths } from './openapi/status-pages.js';
import { statusFollowPaths } from './openapi/status-follow.js';
import { telemetryPaths } from './openapi/telemetry.js';

/**
 * The OpenAPI 3.1 document, built from the same JSON Schemas that validate requests
 * (schemas.ts) and the same error list (error-codes.ts): nothing is written twice.
 * Each route family contributes its paths (openapi/<family>.ts, on the building blocks of
 * openapi/responses.ts and openapi/parameters.ts); this file puts them together in the
 * document's order. Each HTTP service serves its part at /openapi.json; docs/openapi.json
 * holds the whole.
 */

export { STATUS_PARAM_PATTERN, TIME_PARAM_PATTERN } from './openapi/parameters.js';

export type ApiPart = 'gateway' | 'query' | 'all';

/** The ingest gateway's routes. */
const gatewayPaths: Json = { ...telemetryPaths, ...heartbeatPaths, ...sdkPaths };

/** The query service's routes. */
const queryPaths: Json = withSessionCookie({
  ...monitorPaths,
  ...statusPagePaths,
  ...statusFollowPaths,
  ...eventPaths,
  ...checkPaths,
  ...alertingPaths,
  ...eventSchemaPaths,
  ...sessionPaths,
  ...memberPaths,
  ...ssoPaths,
  ...accessPaths,
  ...deletionPaths,
  ...configPaths,
});

/** A write's parameters with the optional X-CSRF-Token header (once). */
function withCsrfHeader(parameters: Json[] = []): Json[] {
  const has = parameters.some((p) => p.in === 'header' && String(p.name).toLowerCase() === 'x-csrf-token');
  return has ? parameters : [...parameters, csrfHeader(false)];
}

/**
 * Every route of the query service that takes an API key with a scope takes the session
 * cookie too (authorize() in the query service's access/principal.ts): the cookie scheme
 * beside the key's, SESSION_EXPIRED, and on state-changing methods the X-CSRF-Token header
 * and CSRF_FAILED. Added here once rather than in each route family.
 */
function withSessionCookie(paths: Json): Json {
  const safe = new Set(['get', 'head', 'options']);
  const out: Json = {};
  for (const [path, item] of Object.entries(paths) as [string, Record<string, Json>][]) {
    out[path] = Object.fromEntries(
      Object.entries(item).map(([method, op]) => {
        const key = (op.security as Json[] | undefined)?.find((s) => 'apiKey' in s);
        if (!key) return [method, op];
        const write = !safe.has(method);
        return [
          method,
          {
            ...op,
            security: [key, { sessionCookie: key.apiKey }],
            ...(write ? { parameters: withCsrfHeader(op.parameters as Json[] | undefined) } : {}),
            responses: withCodes(
              op.responses as Json,
              write ? ['SESSION_EXPIRED', 'CSRF_FAILED'] : ['SESSION_EXPIRED'],
            ),
          },
        ];
      }),
    );
  }
  return out;
}

const TITLES: Record<ApiPart, string> = {
  gateway: 'Telemetry ingest gateway',
  query: 'Check history query service',
  all: 'Telemetry pipeline',
};

export function buildOpenApi(part: ApiPart = 'all', version = '0.1.0'): Json {
  const paths = {
    ...(part !== 'query' ? gatewayPaths : {}),
    ...(part !== 'gateway' ? queryPaths : {}),
    ...healthPaths,
  };
  return {
    openapi: '3.1.0',
    info: {
      title: TITLES[part],
      version,
      description:
        'Every response is the envelope {success, data | error + code}. Error codes are stable; see components.schemas.ErrorCode.',
    },
    paths,
    components: { securitySchemes, schemas },
  };
}
