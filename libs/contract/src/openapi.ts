import { ERROR_CODES, type ErrorCode } from './error-codes.js';
import {
  CHECK_STATUSES,
  HEARTBEAT_TOKEN_PATTERN,
  LIMITS,
  MONITOR_LIMITS,
  STATUS_PAGE_LIMITS,
  STATUS_PAGE_SLUG_PATTERN,
  WEBHOOK_DELIVERY_STATUSES,
} from './limits.js';
import {
  alertMessageSchema,
  checkSchema,
  incidentSchema,
  ingestRequestSchema,
  monitorCreateSchema,
  monitorIdSchema,
  monitorPatchSchema,
  monitorSchema,
  publicStatusPageSchema,
  statusPageCreateSchema,
  statusPagePatchSchema,
  statusPageSchema,
  telemetryEventSchema,
  webhookDeliveryMessageSchema,
  webhookDeliverySchema,
} from './schemas.js';

/**
 * The OpenAPI 3.1 document, built from the same JSON Schemas that validate requests
 * (schemas.ts) and the same error list (error-codes.ts): nothing is written twice.
 * Each HTTP service serves its part at /openapi.json; docs/openapi.json holds the whole.
 */

type Json = Record<string, unknown>;

/** Our schemas reference each other by `$id`; OpenAPI wants component refs. */
function component(schema: Json): Json {
  const { $id: _id, ...rest } = schema;
  return JSON.parse(JSON.stringify(rest).replace(/"\$ref":"([A-Za-z]+)"/g, '"$ref":"#/components/schemas/$1"')) as Json;
}

const errorResponse = (codes: ErrorCode[], description: string, headers?: Json): Json => ({
  description: `${description} Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`,
  ...(headers ? { headers } : {}),
  content: {
    'application/json': {
      schema: {
        allOf: [{ $ref: '#/components/schemas/Failure' }, { properties: { code: { enum: codes } } }],
      },
    },
  },
});

const retryAfter = { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } } };

function byStatus(codes: ErrorCode[]): Record<string, ErrorCode[]> {
  const out: Record<string, ErrorCode[]> = {};
  for (const c of codes) (out[String(ERROR_CODES[c].status)] ??= []).push(c);
  return out;
}

function errors(codes: ErrorCode[]): Json {
  const out: Json = {};
  for (const [status, cs] of Object.entries(byStatus(codes))) {
    const retriable = status === '503' || status === '429';
    out[status] = errorResponse(
      cs,
      retriable ? 'Nothing was accepted; retry after Retry-After.' : 'Refused.',
      retriable ? retryAfter : undefined,
    );
  }
  return out;
}

/** The forms params.ts accepts: a date, or a date-time with seconds optional and a zone. */
export const TIME_PARAM_PATTERN =
  '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2}))?$';
export const STATUS_PARAM_PATTERN = `^(${CHECK_STATUSES.join('|')})(,(${CHECK_STATUSES.join('|')}))*$`;

const timeParam = (name: string, description: string): Json => ({
  name,
  in: 'query',
  required: false,
  description,
  schema: { type: 'string', pattern: TIME_PARAM_PATTERN, examples: ['2026-11-22T10:00:00Z'] },
});

const statusParam: Json = {
  name: 'status',
  in: 'query',
  required: false,
  description: 'One or more statuses, comma-separated or repeated.',
  schema: { type: 'string', pattern: STATUS_PARAM_PATTERN },
  examples: { one: { value: 'down' }, several: { value: 'down,degraded' } },
};

/** `limit`: 1 to `max`, default 100. */
const limitParam = (max: number): Json => ({
  name: 'limit',
  in: 'query',
  required: false,
  schema: { type: 'integer', minimum: 1, maximum: max, default: 100 },
});

const cursorParam: Json = {
  name: 'cursor',
  in: 'query',
  required: false,
  description: 'next_cursor of the previous page.',
  schema: { type: 'string' },
};

const linkHeader = { Link: { description: 'rel="next" URL when there is a next page.', schema: { type: 'string' } } };

const monitorPath: Json = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'Monitor identifier.',
  schema: monitorIdSchema,
};

const rateHeaders = {
  'RateLimit-Limit': { description: 'Burst size of the key’s bucket.', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in the bucket.', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the bucket is full again.', schema: { type: 'integer' } },
};

const gatewayPaths: Json = {
  '/api/telemetry/events': {
    post: {
      operationId: 'ingestEvents',
      summary: 'Ingest a batch of telemetry events',
      description: `Answers 200 only after Kafka acknowledged every event. Any other answer means none was accepted, except KAFKA_UNAVAILABLE (and KAFKA_REJECTED or KAFKA_MESSAGE_TOO_LARGE for a request that was split): then some events may have been stored, and a retry gives events with a client id the same event_id. The body may be sent with Content-Encoding: gzip. At most ${LIMITS.maxEventsPerRequest} events, ${LIMITS.maxBodyBytes} bytes (after gzip), ${LIMITS.maxEventBytes} bytes per event, nesting depth ${LIMITS.maxJsonDepth}.`,
      security: [{ accessKeyHeader: [] }, { accessKeyQuery: [] }],
      parameters: [
        {
          name: 'return',
          in: 'query',
          required: false,
          description:
            "ids: `data` lists each event's stored event_id, in the order of `events` (an event with a client id gets the same one on every retry). Without it `data` is null.",
          schema: { type: 'string', enum: ['ids'] },
        },
      ],
      requestBody: {
        required: true,
        description: 'JSON; sent as text/plain it is the same JSON, as navigator.sendBeacon sends a string.',
        content: {
          'application/json': { schema: { $ref: '#/components/schemas/IngestRequest' } },
          'text/plain': { schema: { type: 'string' } },
        },
      },
      responses: {
        '200': {
          description: 'Every event is acknowledged by Kafka.',
          headers: rateHeaders,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/IngestSuccess' } } },
        },
        ...errors([
          'INVALID_JSON',
          'VALIDATION_FAILED',
          'INVALID_PARAMETER',
          'MISSING_CREDENTIALS',
          'INVALID_CREDENTIALS',
          'ORIGIN_NOT_ALLOWED',
          'SOURCE_NOT_ALLOWED',
          'PAYLOAD_TOO_LARGE',
          'BATCH_TOO_LARGE',
          'EVENT_TOO_LARGE',
          'KAFKA_MESSAGE_TOO_LARGE',
          'UNSUPPORTED_MEDIA_TYPE',
          'RATE_LIMITED',
          'INTERNAL_ERROR',
          'KAFKA_REJECTED',
          'KAFKA_UNAVAILABLE',
          'OVERLOADED',
        ]),
      },
    },
    options: {
      operationId: 'ingestEventsPreflight',
      summary: 'CORS preflight',
      responses: { '204': { description: 'Preflight answered; no credentials are used.' } },
    },
  },
  '/api/telemetry/pixel.gif': {
    get: {
      operationId: 'ingestPixel',
      summary: 'Ingest one event from an image request',
      description:
        'Always a no-store 1x1 GIF; the status is 200 only when Kafka acknowledged the event, and X-Error-Code carries the error code otherwise.',
      security: [{ accessKeyQuery: [] }, { accessKeyHeader: [] }],
      parameters: [
        { name: 'source', in: 'query', required: true, schema: telemetryEventSchema.properties.source },
        { name: 'category', in: 'query', required: true, schema: telemetryEventSchema.properties.category },
        {
          name: 'payload',
          in: 'query',
          required: false,
          description: 'One URL-encoded JSON object.',
          schema: { type: 'string' },
        },
        { name: 'id', in: 'query', required: false, schema: telemetryEventSchema.properties.id },
        { name: 'timestamp', in: 'query', required: false, schema: { type: 'string', format: 'date-time' } },
      ],
      responses: Object.fromEntries(
        ['200', '400', '401', '403', '413', '429', '500', '503'].map((s) => [
          s,
          {
            description: s === '200' ? 'Accepted.' : 'Not accepted; see X-Error-Code.',
            headers:
              s === '200' ? {} : { 'X-Error-Code': { schema: { type: 'string', enum: Object.keys(ERROR_CODES) } } },
            content: { 'image/gif': { schema: { type: 'string', contentEncoding: 'base64' } } },
          },
        ]),
      ),
    },
  },
  '/api/heartbeats/{token}': {
    post: {
      operationId: 'heartbeat',
      summary: 'A monitored job says it ran (heartbeat monitors, docs/monitors.md)',
      description:
        "The token is the heartbeat monitor's `heartbeat_token`; it is the credential (no key). The call is stored as an `up` check of the monitor once Kafka acknowledged it. A body, if any, is not read. A monitor may call 10 times at once, then once a second.",
      security: [],
      parameters: [
        {
          name: 'token',
          in: 'path',
          required: true,
          schema: { type: 'string', pattern: HEARTBEAT_TOKEN_PATTERN, maxLength: 100 },
        },
      ],
      responses: {
        '200': {
          description: 'Stored (acknowledged by Kafka).',
          headers: rateHeaders,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['success', 'data'],
                properties: { success: { const: true }, data: { type: 'null' } },
              },
            },
          },
        },
        ...errors([
          'HEARTBEAT_NOT_FOUND',
          'RATE_LIMITED',
          'INTERNAL_ERROR',
          'KAFKA_REJECTED',
          'KAFKA_UNAVAILABLE',
          'OVERLOADED',
        ]),
      },
    },
  },
  '/sdk/v1.js': {
    get: {
      operationId: 'browserSdk',
      summary: 'The browser SDK (docs/sdk.md)',
      description:
        'The `<script>` build of @telemetry/browser. Public, cached for SDK_CACHE_SECONDS and revalidated by ETag, gzipped when accepted; 404 NOT_FOUND when the gateway was started without the built SDK.',
      security: [],
      responses: {
        '200': {
          description: 'The script.',
          headers: { ETag: { schema: { type: 'string' } }, 'Cache-Control': { schema: { type: 'string' } } },
          content: { 'text/javascript': { schema: { type: 'string' } } },
        },
        '304': { description: 'Not modified (If-None-Match matched the ETag).' },
        '404': { description: 'Not built on this gateway (NOT_FOUND).' },
      },
    },
  },
};

const authErrors: ErrorCode[] = [
  'MISSING_CREDENTIALS',
  'INVALID_CREDENTIALS',
  'KEY_EXPIRED',
  'INSUFFICIENT_SCOPE',
  'MONITOR_NOT_ALLOWED',
];

const envelopeOf = (data: Json): Json => ({
  type: 'object',
  required: ['success', 'data'],
  properties: { success: { const: true }, data },
});

const jsonBody = (ref: string): Json => ({
  required: true,
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } },
});

const bodyErrors: ErrorCode[] = ['INVALID_JSON', 'VALIDATION_FAILED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'];
const storeErrors: ErrorCode[] = ['INTERNAL_ERROR', 'STORE_UNAVAILABLE'];

const etagHeader = {
  ETag: {
    description: "The monitor's version: send it back in If-Match to change it safely.",
    schema: { type: 'string' },
  },
};

/** Conditional reads of check history (sendCacheable in the query service). */
const cacheHeaders = {
  ETag: {
    description: 'A tag of this answer: send it back in If-None-Match to get 304 while nothing changed.',
    schema: { type: 'string' },
  },
  'Cache-Control': {
    description:
      '`private, max-age=86400` for a range that ended more than an hour ago (it no longer changes); `private, no-cache` otherwise (keep it, but revalidate with If-None-Match).',
    schema: { type: 'string' },
  },
  Vary: { description: '`Authorization`: the answer depends on the key.', schema: { type: 'string' } },
};

const ifNoneMatch: Json = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  description: 'The ETag of an earlier answer to the same request: 304 with no body while it is still the answer.',
  schema: { type: 'string' },
};

const notModified: Json = {
  '304': { description: 'Not modified: the answer is still the one whose ETag was sent.', headers: cacheHeaders },
};

const ifMatch: Json = {
  name: 'If-Match',
  in: 'header',
  required: false,
  description:
    'The ETag of the monitor as last read: a change is made only if nobody changed it since (else 412 PRECONDITION_FAILED, nothing changed). `*` or absent: unconditional.',
  schema: { type: 'string' },
};

const monitorPaths: Json = {
  '/api/monitors': {
    get: {
      operationId: 'listMonitors',
      summary: 'The monitors this key may see, in id order',
      security: [{ apiKey: ['monitors:read'] }],
      parameters: [limitParam(MONITOR_LIMITS.maxPageSize), cursorParam],
      responses: {
        '200': {
          description: 'A page of monitors.',
          headers: linkHeader,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/MonitorPage' } } },
        },
        ...errors([...authErrors, 'INVALID_PARAMETER', ...storeErrors]),
      },
    },
    post: {
      operationId: 'createMonitor',
      summary: 'Create a monitor',
      description:
        'Only name and url are required; the rest take the defaults shown in the schema. The response (and only it) shows webhook_secret, generated unless given. Runners start checking within seconds. A url or webhook that is an IP address the egress policy denies (loopback, private, link-local, ...), or on a port it denies (EGRESS_DENY_PORTS, 25 by default), is 400 TARGET_NOT_ALLOWED; one whose host the URL parser refuses (http://1.2.3.4.5/) is 400 VALIDATION_FAILED; a name that resolves to one gives down checks with error target_not_allowed. Monitors may not set Host, Content-Length, Transfer-Encoding, Connection or other hop-by-hop headers.',
      security: [{ apiKey: ['monitors:write'] }],
      requestBody: jsonBody('MonitorCreate'),
      responses: {
        '201': {
          description: 'Created; Location names it.',
          headers: { Location: { schema: { type: 'string' } } },
          content: { 'application/json': { schema: { $ref: '#/components/schemas/MonitorSuccess' } } },
        },
        ...errors([
          ...authErrors,
          'INVALID_PARAMETER',
          ...bodyErrors,
          'TARGET_NOT_ALLOWED',
          'QUOTA_EXCEEDED',
          ...storeErrors,
        ]),
      },
    },
  },
  '/api/monitors/{id}': {
    get: {
      operationId: 'getMonitor',
      summary: 'One monitor',
      security: [{ apiKey: ['monitors:read'] }],
      parameters: [monitorPath],
      responses: {
        '200': {
          description:
            "The monitor; header values and the URL's query values shown as ****, the URL without userinfo, webhook URLs as scheme and host only, never the webhook secret.",
          headers: etagHeader,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/MonitorSuccess' } } },
        },
        ...errors([...authErrors, 'INVALID_PARAMETER', 'MONITOR_NOT_FOUND', ...storeErrors]),
      },
    },
    patch: {
      operationId: 'updateMonitor',
      summary: 'Change some settings of a monitor',
      description:
        'Fields not sent keep their value; null clears keyword, degraded_threshold_ms and body. A masked value sent back (a header value ****, the URL or a webhook as shown) keeps the stored one. A url on another origin (scheme, host, port) drops the stored header values and URL credentials unless the request sends them again; the answer names them in dropped_secrets.',
      security: [{ apiKey: ['monitors:write'] }],
      parameters: [monitorPath, ifMatch],
      requestBody: jsonBody('MonitorPatch'),
      responses: {
        '200': {
          description: 'The monitor as changed, with dropped_secrets (empty when none).',
          headers: etagHeader,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/MonitorSuccess' } } },
        },
        ...errors([
          ...authErrors,
          'INVALID_PARAMETER',
          'MONITOR_NOT_FOUND',
          'PRECONDITION_FAILED',
          ...bodyErrors,
          'TARGET_NOT_ALLOWED',
          ...storeErrors,
        ]),
      },
    },
    delete: {
      operationId: 'deleteMonitor',
      summary: 'Delete a monitor (its check history stays until retention drops it)',
      security: [{ apiKey: ['monitors:write'] }],
      parameters: [monitorPath, ifMatch],
      responses: {
        '200': {
          description: 'Deleted.',
          content: { 'application/json': { schema: envelopeOf({ type: 'null' }) } },
        },
        ...errors([...authErrors, 'INVALID_PARAMETER', 'MONITOR_NOT_FOUND', 'PRECONDITION_FAILED', ...storeErrors]),
      },
    },
  },
  '/api/monitors/{id}/webhook-secret': {
    post: {
      operationId: 'rotateWebhookSecret',
      summary: "Replace a monitor's webhook signing secret",
      description:
        'Generates a new secret, shown in this answer only (webhook_secret); deliveries are signed with it from now on. Takes no body.',
      security: [{ apiKey: ['monitors:write'] }],
      parameters: [monitorPath, ifMatch],
      responses: {
        '200': {
          description: 'The monitor, with its new webhook_secret.',
          headers: etagHeader,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/MonitorSuccess' } } },
        },
        ...errors([...authErrors, 'INVALID_PARAMETER', 'MONITOR_NOT_FOUND', 'PRECONDITION_FAILED', ...storeErrors]),
      },
    },
  },
  '/api/monitors/{id}/heartbeat-token': {
    post: {
      operationId: 'rotateHeartbeatToken',
      summary: "Replace a heartbeat monitor's token",
      description:
        'Gives the monitor a new heartbeat_token, shown in this answer (and on later reads by keys with monitors:write); every gateway refuses the old one (404 HEARTBEAT_NOT_FOUND) and takes the new one within a second. Takes no body. A monitor of another type is 400 VALIDATION_FAILED on /type.',
      security: [{ apiKey: ['monitors:write'] }],
      parameters: [monitorPath, ifMatch],
      responses: {
        '200': {
          description: 'The monitor, with its new heartbeat_token.',
          headers: etagHeader,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/MonitorSuccess' } } },
        },
        ...errors([
          ...authErrors,
          'INVALID_PARAMETER',
          'VALIDATION_FAILED',
          'MONITOR_NOT_FOUND',
          'PRECONDITION_FAILED',
          ...storeErrors,
        ]),
      },
    },
  },
  '/api/monitors/{id}/incidents': {
    get: {
      operationId: 'listIncidents',
      summary: 'Incidents of a monitor (down until up again), newest first',
      security: [{ apiKey: ['monitors:read'] }],
      parameters: [
        monitorPath,
        limitParam(1000),
        { name: 'status', in: 'query', required: false, schema: { type: 'string', enum: ['open', 'resolved'] } },
      ],
      responses: {
        '200': {
          description: 'The incidents.',
          content: {
            'application/json': {
              schema: envelopeOf({ type: 'array', items: { $ref: '#/components/schemas/Incident' } }),
            },
          },
        },
        ...errors([...authErrors, 'INVALID_PARAMETER', 'MONITOR_NOT_FOUND', ...storeErrors]),
      },
    },
  },
  '/api/monitors/{id}/webhook-deliveries': {
    get: {
      operationId: 'listWebhookDeliveries',
      summary: "Every attempt to deliver a monitor's alerts to its webhooks, newest first",
      description:
        'One entry per attempt (a retried delivery has several), recorded by the check runner and readable once the stream consumer has written it (seconds). Keyset paging with next_cursor and a Link header.',
      security: [{ apiKey: ['monitors:read'] }],
      parameters: [
        monitorPath,
        limitParam(1000),
        {
          name: 'status',
          in: 'query',
          required: false,
          schema: { type: 'string', enum: WEBHOOK_DELIVERY_STATUSES },
        },
        {
          name: 'alert_id',
          in: 'query',
          required: false,
          description: 'Only the attempts of this alert (the X-Telemetry-Delivery header).',
          schema: webhookDeliverySchema.properties.alert_id,
        },
        cursorParam,
      ],
      responses: {
        '200': {
          description: 'A page of delivery attempts.',
          headers: linkHeader,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/WebhookDeliveryPage' } } },
        },
        ...errors([...authErrors, 'INVALID_PARAMETER', 'MONITOR_NOT_FOUND', ...storeErrors]),
      },
    },
  },
};

const slugPath: Json = {
  name: 'slug',
  in: 'path',
  required: true,
  description: "The status page's slug: its public path /status/{slug}.",
  schema: { type: 'string', pattern: STATUS_PAGE_SLUG_PATTERN, maxLength: STATUS_PAGE_LIMITS.maxSlugLength },
};

const statusPageOk = (description: string): Json => ({
  description,
  content: { 'application/json': { schema: envelopeOf({ $ref: '#/components/schemas/StatusPage' }) } },
});

/** Status pages (docs/console.md) and the events overview of the console. */
const consolePaths: Json = {
  '/api/status-pages': {
    get: {
      operationId: 'listStatusPages',
      summary: "The tenant's status pages, in slug order",
      security: [{ apiKey: ['monitors:read'] }],
      responses: {
        '200': {
          description: 'Every status page this key may see.',
          content: {
            'application/json': {
              schema: envelopeOf({ type: 'array', items: { $ref: '#/components/schemas/StatusPage' } }),
            },
          },
        },
        ...errors([...authErrors, 'INVALID_PARAMETER', ...storeErrors]),
      },
    },
    post: {
      operationId: 'createStatusPage',
      summary: 'Publish a status page at /status/{slug}',
      description:
        'Lists the chosen monitors of the tenant by name, with their status, 90 days of daily uptime and open incidents; anyone may read it without a key. Slugs are unique across tenants (409 SLUG_TAKEN). Every monitor id must be a current monitor of the tenant (400 VALIDATION_FAILED naming it).',
      security: [{ apiKey: ['monitors:write'] }],
      requestBody: jsonBody('StatusPageCreate'),
      responses: {
        '201': statusPageOk('Published; Location names it.'),
        ...errors([
          ...authErrors,
          ...bodyErrors,
          'INVALID_PARAMETER',
          'SLUG_TAKEN',
          'QUOTA_EXCEEDED',
          'MONITOR_NOT_ALLOWED',
          ...storeErrors,
        ]),
      },
    },
  },
  '/api/status-pages/{slug}': {
    get: {
      operationId: 'getStatusPage',
      summary: 'A status page of the tenant',
      security: [{ apiKey: ['monitors:read'] }],
      parameters: [slugPath],
      responses: {
        '200': statusPageOk('The status page.'),
        ...errors([...authErrors, 'INVALID_PARAMETER', 'STATUS_PAGE_NOT_FOUND', ...storeErrors]),
      },
    },
    patch: {
      operationId: 'updateStatusPage',
      summary: "Change a status page's title, description or monitors",
      security: [{ apiKey: ['monitors:write'] }],
      parameters: [slugPath],
      requestBody: jsonBody('StatusPagePatch'),
      responses: {
        '200': statusPageOk('The changed status page.'),
        ...errors([
          ...authErrors,
          ...bodyErrors,
          'INVALID_PARAMETER',
          'STATUS_PAGE_NOT_FOUND',
          'MONITOR_NOT_ALLOWED',
          ...storeErrors,
        ]),
      },
    },
    delete: {
      operationId: 'deleteStatusPage',
      summary: 'Take a status page down',
      security: [{ apiKey: ['monitors:write'] }],
      parameters: [slugPath],
      responses: {
        '200': { description: 'Deleted.', content: { 'application/json': { schema: envelopeOf({ type: 'null' }) } } },
        ...errors([...authErrors, 'INVALID_PARAMETER', 'STATUS_PAGE_NOT_FOUND', 'MONITOR_NOT_ALLOWED', ...storeErrors]),
      },
    },
  },
  '/api/status/{slug}': {
    get: {
      operationId: 'getPublicStatusPage',
      summary: 'A published status page, for anyone (no key)',
      description:
        'Names and statuses only: no monitor id, URL, header, status code or error. Computed at most once per STATUS_PAGE_CACHE_SECONDS per replica, by one computation however many ask at once; Cache-Control lets browsers and proxies keep it as long. When ClickHouse cannot be read, the last page computed is answered with `stale: true` and X-Status-Page-Stale: 1, and the computation is tried again at most once per STATUS_PAGE_CACHE_SECONDS; a page never computed answers 503 STORE_UNAVAILABLE.',
      security: [],
      parameters: [slugPath],
      responses: {
        '200': {
          description: 'The page.',
          headers: {
            'Cache-Control': {
              description: '`public, max-age=N`: until the next computation (a stale page: until the next try).',
              schema: { type: 'string' },
            },
            'X-Status-Page-Stale': {
              description: '`1` when the page is stale (also `stale: true`); absent otherwise.',
              schema: { type: 'string', enum: ['1'] },
            },
            Warning: { description: '`110 - "Response is Stale"` when the page is stale.', schema: { type: 'string' } },
          },
          content: { 'application/json': { schema: envelopeOf({ $ref: '#/components/schemas/PublicStatusPage' }) } },
        },
        ...errors(['INVALID_PARAMETER', 'STATUS_PAGE_NOT_FOUND', ...storeErrors]),
      },
    },
  },
  '/api/events/per-minute': {
    get: {
      operationId: 'eventsPerMinute',
      summary: "Events per minute by source and category, from the tenant's rollup",
      description:
        'Over [from, to), rounded out to whole minutes; at most 24 hours; default the last hour. Minutes without events are left out.',
      security: [{ apiKey: ['events:read'] }],
      parameters: [timeParam('from', 'Start (inclusive).'), timeParam('to', 'End (exclusive); default now.')],
      responses: {
        '200': {
          description: 'Counts per minute, source and category.',
          content: {
            'application/json': {
              schema: envelopeOf({
                type: 'object',
                required: ['from', 'to', 'truncated', 'minutes'],
                properties: {
                  from: { type: 'string' },
                  to: { type: 'string' },
                  truncated: {
                    type: 'boolean',
                    description:
                      'true: more than 50,000 rows (minute x source x category); the first 50,000 in time order are shown. Narrow the range.',
                  },
                  minutes: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['minute', 'source', 'category', 'events'],
                      properties: {
                        minute: { type: 'string' },
                        source: { type: 'string' },
                        category: { type: 'string' },
                        events: { type: 'integer' },
                      },
                    },
                  },
                },
              }),
            },
          },
        },
        ...errors([...authErrors, 'INVALID_PARAMETER', ...storeErrors]),
      },
    },
  },
};

const queryPaths: Json = {
  ...monitorPaths,
  ...consolePaths,
  '/api/monitors/{id}/checks': {
    get: {
      operationId: 'listChecks',
      summary: 'Check history of a monitor',
      description: 'Newest first by default; keyset paging on (created_at, id) with next_cursor and a Link header.',
      security: [{ apiKey: ['checks:read'] }],
      parameters: [
        monitorPath,
        limitParam(1000),
        {
          name: 'order',
          in: 'query',
          required: false,
          schema: { type: 'string', enum: ['desc', 'asc'], default: 'desc' },
        },
        timeParam('from', 'Checks at or after this ISO 8601 date-time (with zone).'),
        timeParam('to', 'Checks strictly before this ISO 8601 date-time (with zone).'),
        statusParam,
        cursorParam,
        ifNoneMatch,
      ],
      responses: {
        '200': {
          description: 'A page of checks.',
          headers: { ...linkHeader, ...cacheHeaders },
          content: { 'application/json': { schema: { $ref: '#/components/schemas/CheckPage' } } },
        },
        ...notModified,
        ...errors([...authErrors, 'INVALID_PARAMETER', 'MONITOR_NOT_FOUND', 'INTERNAL_ERROR', 'STORE_UNAVAILABLE']),
      },
    },
  },
  '/api/monitors/{id}/checks/summary': {
    get: {
      operationId: 'summarizeChecks',
      summary: 'Counts, uptime and response-time quantiles per interval',
      security: [{ apiKey: ['checks:read'] }],
      parameters: [
        monitorPath,
        timeParam('from', 'Rounded down to the interval.'),
        timeParam('to', 'Rounded up to the interval; exclusive.'),
        {
          name: 'interval',
          in: 'query',
          required: false,
          schema: { type: 'string', enum: ['hour', 'day'], default: 'hour' },
        },
        ifNoneMatch,
      ],
      responses: {
        '200': {
          description: 'The summary.',
          headers: cacheHeaders,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/SummarySuccess' } } },
        },
        ...notModified,
        ...errors([...authErrors, 'INVALID_PARAMETER', 'MONITOR_NOT_FOUND', 'INTERNAL_ERROR', 'STORE_UNAVAILABLE']),
      },
    },
  },
  '/api/monitors/{id}/checks/export': {
    get: {
      operationId: 'exportChecks',
      summary: 'Stream the raw history of a range, oldest first',
      security: [{ apiKey: ['checks:read'] }],
      parameters: [
        monitorPath,
        timeParam('from', 'Checks at or after this date-time (default: EXPORT_MAX_RANGE_DAYS before `to`).'),
        timeParam('to', 'Checks strictly before this date-time (default: now).'),
        statusParam,
        {
          name: 'format',
          in: 'query',
          required: false,
          schema: { type: 'string', enum: ['ndjson', 'csv'], default: 'ndjson' },
        },
      ],
      responses: {
        '200': {
          description: 'One check per line.',
          content: {
            'application/x-ndjson': { schema: { type: 'string' } },
            'text/csv': { schema: { type: 'string' } },
          },
        },
        ...errors([
          ...authErrors,
          'INVALID_PARAMETER',
          'MONITOR_NOT_FOUND',
          'RATE_LIMITED',
          'INTERNAL_ERROR',
          'STORE_UNAVAILABLE',
        ]),
      },
    },
  },
};

const healthPaths: Json = {
  '/healthz': { get: { operationId: 'healthz', summary: 'Liveness', responses: { '200': { description: 'Alive.' } } } },
  '/readyz': {
    get: {
      operationId: 'readyz',
      summary: 'Readiness',
      responses: { '200': { description: 'Ready.' }, '503': { description: 'Not ready or shutting down.' } },
    },
  },
  '/metrics': {
    get: {
      operationId: 'metrics',
      summary: 'Prometheus metrics',
      responses: {
        '200': { description: 'Text exposition format.', content: { 'text/plain': { schema: { type: 'string' } } } },
      },
    },
  },
};

const stats = {
  type: 'object',
  required: ['checks', 'up', 'down', 'degraded', 'uptime_percent', 'response_time'],
  properties: {
    checks: { type: 'integer' },
    up: { type: 'integer' },
    down: { type: 'integer' },
    degraded: { type: 'integer' },
    uptime_percent: { type: ['number', 'null'] },
    response_time: {
      oneOf: [
        { type: 'null' },
        { type: 'object', properties: { p50: { type: 'number' }, p95: { type: 'number' }, p99: { type: 'number' } } },
      ],
    },
  },
};

export type ApiPart = 'gateway' | 'query' | 'all';

export function buildOpenApi(part: ApiPart = 'all', version = '0.1.0'): Json {
  const paths = {
    ...(part !== 'query' ? gatewayPaths : {}),
    ...(part !== 'gateway' ? queryPaths : {}),
    ...healthPaths,
  };
  return {
    openapi: '3.1.0',
    info: {
      title:
        part === 'gateway'
          ? 'Telemetry ingest gateway'
          : part === 'query'
            ? 'Check history query service'
            : 'Telemetry pipeline',
      version,
      description:
        'Every response is the envelope {success, data | error + code}. Error codes are stable; see components.schemas.ErrorCode.',
    },
    paths,
    components: {
      securitySchemes: {
        accessKeyHeader: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Access-Key',
          description: 'Telemetry access key (tk_…).',
        },
        accessKeyQuery: {
          type: 'apiKey',
          in: 'query',
          name: 'key',
          description: 'Telemetry access key, for pages that cannot set headers.',
        },
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description: `API key (ak_…) with scopes: checks:read, monitors:read, monitors:write, events:read.`,
        },
      },
      schemas: {
        TelemetryEvent: component(telemetryEventSchema),
        IngestRequest: component(ingestRequestSchema),
        Check: component(checkSchema),
        MonitorCreate: component(monitorCreateSchema),
        MonitorPatch: component(monitorPatchSchema),
        Monitor: component(monitorSchema),
        Incident: component(incidentSchema),
        StatusPageCreate: component(statusPageCreateSchema),
        StatusPagePatch: component(statusPagePatchSchema),
        StatusPage: component(statusPageSchema),
        PublicStatusPage: component(publicStatusPageSchema),
        AlertMessage: {
          ...component(alertMessageSchema),
          description:
            'A message on the alerts topic, and the JSON body of a webhook delivery (headers X-Telemetry-Event, X-Telemetry-Delivery, X-Telemetry-Signature).',
        },
        MonitorSuccess: envelopeOf({ $ref: '#/components/schemas/Monitor' }),
        MonitorPage: {
          type: 'object',
          required: ['success', 'data', 'next_cursor'],
          properties: {
            success: { const: true },
            data: { type: 'array', items: { $ref: '#/components/schemas/Monitor' } },
            next_cursor: { type: ['string', 'null'] },
          },
        },
        CheckStatus: { type: 'string', enum: CHECK_STATUSES },
        ErrorCode: {
          type: 'string',
          enum: Object.keys(ERROR_CODES),
          description: Object.entries(ERROR_CODES)
            .map(([c, e]) => `${c} (${e.status}): ${e.description}`)
            .join('\n'),
        },
        Failure: {
          type: 'object',
          required: ['success', 'error', 'code'],
          properties: {
            success: { const: false },
            error: { type: 'string' },
            code: { $ref: '#/components/schemas/ErrorCode' },
            details: { type: 'object' },
          },
        },
        IngestSuccess: {
          type: 'object',
          required: ['success', 'data'],
          properties: {
            success: { const: true },
            data: {
              oneOf: [
                { type: 'null' },
                { type: 'array', items: { type: 'string', format: 'uuid' }, description: 'With ?return=ids.' },
              ],
            },
          },
        },
        WebhookDelivery: component(webhookDeliverySchema),
        WebhookDeliveryMessage: {
          ...component(webhookDeliveryMessageSchema),
          description: 'A message on the webhook-deliveries topic: one delivery attempt, written by a check runner.',
        },
        WebhookDeliveryPage: {
          type: 'object',
          required: ['success', 'data', 'next_cursor'],
          properties: {
            success: { const: true },
            data: { type: 'array', items: { $ref: '#/components/schemas/WebhookDelivery' } },
            next_cursor: { type: ['string', 'null'] },
          },
        },
        CheckPage: {
          type: 'object',
          required: ['success', 'data', 'next_cursor'],
          properties: {
            success: { const: true },
            data: { type: 'array', items: { $ref: '#/components/schemas/Check' } },
            next_cursor: { type: ['string', 'null'] },
          },
        },
        SummarySuccess: {
          type: 'object',
          required: ['success', 'data'],
          properties: {
            success: { const: true },
            data: {
              type: 'object',
              required: ['monitor_id', 'interval', 'from', 'to', 'total', 'sla', 'intervals'],
              properties: {
                monitor_id: { type: 'string' },
                interval: { type: 'string', enum: ['hour', 'day'] },
                from: { type: 'string' },
                to: { type: 'string' },
                total: stats,
                sla: {
                  type: 'object',
                  description:
                    'From the incidents overlapping the range, each counted for its part inside it and before now (an open one lasts until now).',
                  required: [
                    'availability_percent',
                    'downtime_seconds',
                    'incidents',
                    'longest_incident_seconds',
                    'mean_incident_seconds',
                  ],
                  properties: {
                    availability_percent: {
                      type: ['number', 'null'],
                      description: '100 x (1 - downtime / the length of the range up to now); null before it begins.',
                    },
                    downtime_seconds: { type: 'integer', minimum: 0 },
                    incidents: { type: 'integer', minimum: 0 },
                    longest_incident_seconds: { type: ['integer', 'null'], minimum: 0 },
                    mean_incident_seconds: { type: ['number', 'null'], minimum: 0 },
                  },
                },
                intervals: {
                  type: 'array',
                  items: {
                    allOf: [{ type: 'object', required: ['start'], properties: { start: { type: 'string' } } }, stats],
                  },
                },
              },
            },
          },
        },
      },
    },
  };
}
