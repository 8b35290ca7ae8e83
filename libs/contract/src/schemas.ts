import { publicMaintenanceSchema, publicReportSchema } from './status-follow-schemas.js';
import {
  ALERT_TYPES,
  CHANNEL_ID_PATTERN,
  EVENT_NAME_PATTERN,
  EVENT_PROTOCOLS,
  PRINTABLE_PATTERN,
  CHECK_ERRORS,
  CHECK_STATUSES,
  ID_PATTERN,
  HEARTBEAT_TOKEN_PATTERN,
  LOCATION_PATTERN,
  TENANT_ID_PATTERN,
  LIMITS,
  MONITOR_LIMITS,
  MONITOR_STATUSES,
  NAME_PATTERN,
  STATUS_PAGE_LIMITS,
  STATUS_PAGE_SLUG_PATTERN,
  WEBHOOK_DELIVERY_STATUSES,
} from './limits.js';
import { closed, closedSchema, dateTime, patchSchema, screenshotBase64 } from './schema-parts.js';
import { configKeySchema, nullableConfigKeySchema } from './config-as-code.js';
import { monitorSettings, monitorUrl, webhookSecret } from './monitor-schema.js';

export { monitorSettingsSchema } from './monitor-schema.js';
import { CHANNEL_TYPES } from './channels/index.js';
import { ALERTING_SCHEMAS, NOTIFICATION_KINDS } from './alerting-schemas.js';
import { ACCESS_SCHEMAS } from './access-schemas.js';

/**
 * JSON Schemas, written once. They drive validation (ajv) in every service and are the
 * source for the API documentation. The TypeScript types beside them (types.ts) are
 * checked against them by a unit test that validates typed fixtures.
 */

const name = {
  type: 'string',
  minLength: 1,
  maxLength: LIMITS.maxNameLength,
  pattern: NAME_PATTERN,
} as const;

/** Who an event is about (docs/compat.md, "Identity"): the same columns whatever the protocol. */
export const IDENTITY_SCHEMA = {
  type: 'string',
  minLength: 1,
  maxLength: LIMITS.maxIdentityLength,
  pattern: PRINTABLE_PATTERN,
} as const;

/** One element of `events` in POST /api/telemetry/events (seed 2.1, plus our optional fields). */
export const telemetryEventSchema = closedSchema('TelemetryEvent', ['source', 'category', 'payload'], {
  source: name,
  category: name,
  payload: { type: 'object' },
  /** Client event id: a retry with the same id (and key) gets the same event_id. */
  id: { type: 'string', minLength: 1, maxLength: LIMITS.maxClientIdLength, pattern: ID_PATTERN },
  /** When the event happened, by the client's clock. */
  timestamp: dateTime,
  /** The visitor before they are known (our browser SDK's anonymous id); the `anonymous_id` column. */
  anonymous_id: IDENTITY_SCHEMA,
  /** The known user (after identify); the `user_id` column. */
  user_id: IDENTITY_SCHEMA,
});

/** Body of POST /api/telemetry/events (seed 4.1). */
export const ingestRequestSchema = closedSchema('IngestRequest', ['events'], {
  events: {
    type: 'array',
    minItems: 1,
    maxItems: LIMITS.maxEventsPerRequest,
    items: { $ref: 'TelemetryEvent' },
  },
  /** When the client sent the batch, by its clock; corrects the skew of `timestamp`. */
  sent_at: dateTime,
});

/** A tenant id (docs/api.md). */
const tenantId = { type: 'string', pattern: TENANT_ID_PATTERN, maxLength: 36 } as const;

/** Value of a message on the events topic (JSON, UTF-8). Written by the gateway. */
export const eventMessageSchema = closedSchema(
  'EventMessage',
  ['v', 'event_id', 'key_id', 'source', 'category', 'payload', 'received_at'],
  {
    v: { const: 1 },
    event_id: { type: 'string', format: 'uuid' },
    key_id: { type: 'string', minLength: 1, maxLength: 64 },
    /** The key's tenant; absent in messages written before tenants (read as the default tenant). */
    tenant_id: tenantId,
    source: name,
    /** Our own endpoint's categories are names (NAME_PATTERN); a tracker's event names are any printable text. */
    category: { type: 'string', minLength: 1, maxLength: LIMITS.maxEventNameLength, pattern: EVENT_NAME_PATTERN },
    payload: { type: 'object' },
    client_event_id: { type: 'string', minLength: 1, maxLength: LIMITS.maxClientIdLength },
    client_ts: dateTime,
    sent_at: dateTime,
    received_at: dateTime,
    /** The protocol the event came in; absent: ours (`telemetry`). */
    protocol: { type: 'string', enum: EVENT_PROTOCOLS },
    anonymous_id: IDENTITY_SCHEMA,
    user_id: IDENTITY_SCHEMA,
    /** The address the client reported for itself (Segment's `context.ip`, PostHog's `$ip`): an IPv4 or IPv6 literal. */
    client_ip: { type: 'string', minLength: 2, maxLength: 45, pattern: '^[0-9A-Fa-f:.]+$' },
    /** The user agent the client reported (Segment's `context.userAgent`, PostHog's `$raw_user_agent`). */
    user_agent: { type: 'string', minLength: 1, maxLength: LIMITS.maxUserAgentLength, pattern: PRINTABLE_PATTERN },
    /** The request's client address as the gateway saw it (peer, or X-Forwarded-For through TRUSTED_PROXIES). */
    request_ip: { type: 'string', minLength: 2, maxLength: 45, pattern: '^[0-9A-Fa-f:.]+$' },
    /** The request's User-Agent header. */
    request_user_agent: {
      type: 'string',
      minLength: 1,
      maxLength: LIMITS.maxUserAgentLength,
      pattern: PRINTABLE_PATTERN,
    },
    /** What the key keeps of the address; absent: truncated. */
    ip_storage: { type: 'string', enum: ['full', 'truncated', 'none'] },
    /** The schema the event violated (its action: route to failed_events). */
    schema_failure: {
      type: 'object',
      additionalProperties: false,
      required: ['schema_id', 'version', 'violations'],
      properties: {
        schema_id: { type: 'string', minLength: 1, maxLength: 64 },
        version: { type: 'integer', minimum: 1 },
        violations: {
          type: 'array',
          maxItems: LIMITS.maxSchemaViolations,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['path', 'message'],
            properties: { path: { type: 'string', maxLength: 1024 }, message: { type: 'string', maxLength: 1024 } },
          },
        },
      },
    },
  },
);

/** An id of ours that a message carries: a check's, an alert's, an incident's, a delivery attempt's. */
const messageId = { type: 'string', minLength: 1, maxLength: 128, pattern: ID_PATTERN } as const;

/** Why a check (or a delivery attempt) failed, as the API shows it: null when it did not. */
const checkErrorOrNull = { type: ['string', 'null'], enum: [...CHECK_ERRORS, null] } as const;

const ms = { type: 'number', minimum: 0, maximum: 86_400_000 } as const;

/** A check's `timings` (docs/monitors.md, "Timings"): each part only where the type measures it. */
const checkTimings = {
  type: 'object',
  additionalProperties: false,
  properties: {
    /** api_flow requests and browser steps, in order, as far as the check got. */
    steps: {
      type: 'array',
      maxItems: 64,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'duration_ms', 'ok'],
        properties: {
          name: { type: 'string', maxLength: 200 },
          duration_ms: ms,
          ok: { type: 'boolean' },
          status_code: { type: 'integer', minimum: 0, maximum: 999 },
        },
      },
    },
    /** A browser check's first page: the Navigation Timing API's marks, ms from the start of navigation. */
    navigation: {
      type: 'object',
      additionalProperties: false,
      properties: { ttfb_ms: ms, dom_content_loaded_ms: ms, load_ms: ms },
    },
    /** A browser check's Web Vitals, where measurable (INP needs an interaction). */
    web_vitals: {
      type: 'object',
      additionalProperties: false,
      properties: { lcp_ms: ms, cls: { type: 'number', minimum: 0, maximum: 1000 }, inp_ms: ms },
    },
    /** An icmp check's echo requests: sent, replies, loss in percent, round trips of the replies. */
    packets: {
      type: 'object',
      additionalProperties: false,
      required: ['sent', 'received', 'loss_percent'],
      properties: {
        sent: { type: 'integer', minimum: 0, maximum: 1000 },
        received: { type: 'integer', minimum: 0, maximum: 1000 },
        loss_percent: { type: 'number', minimum: 0, maximum: 100 },
        rtt_min_ms: ms,
        rtt_avg_ms: ms,
        rtt_max_ms: ms,
      },
    },
  },
} as const;

const monitorId = {
  type: 'string',
  minLength: 1,
  maxLength: LIMITS.maxMonitorIdLength,
  pattern: ID_PATTERN,
} as const;

const checkProperties = {
  id: messageId,
  monitor_id: monitorId,
  status: { type: 'string', enum: CHECK_STATUSES },
  response_time: { type: 'number', minimum: 0, maximum: 86_400_000 },
  status_code: { type: 'integer', minimum: 0, maximum: 999 },
  /** Why the check failed; absent (message) or null (API) when it passed. */
  error: { type: 'string', enum: CHECK_ERRORS },
  /** Where it ran: the runner's RUNNER_LOCATION; absent (message) or null (API) for checks made before locations. */
  location: { type: 'string', pattern: LOCATION_PATTERN },
  /** A tls monitor's check: whole days until the certificate expires (negative once expired). */
  tls_days_left: { type: 'integer', minimum: -1_000_000, maximum: 1_000_000 },
  /** What failed, in words: the assertion and the value seen, the step, the blocked request (absent/null: nothing to add). */
  detail: { type: 'string', minLength: 1, maxLength: MONITOR_LIMITS.maxCheckDetailLength },
  /** Where the time went: api_flow and browser steps, a page's navigation and Web Vitals, ping packets. */
  timings: checkTimings,
  /** A browser check kept a screenshot of its failure (GET /api/monitors/{id}/checks/{check_id}/screenshot). */
  screenshot: { type: 'boolean' },
} as const;

/** Value of a message on the check-results topic (JSON, UTF-8). Written by check runners. */
export const checkMessageSchema = closedSchema(
  'CheckMessage',
  ['id', 'monitor_id', 'status', 'response_time', 'status_code', 'created_at'],
  /** tenant_id: the monitor's; absent in messages written before tenants (the default tenant). */
  { ...checkProperties, tenant_id: tenantId, created_at: dateTime },
);

const isoSeconds = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$' } as const;

/**
 * Value of a message on the screenshots topic: a browser check's failure screenshot.
 * Written by check runners (after the check message of `check_id`); the stream consumer
 * writes it to check_screenshots.
 */
export const screenshotMessageSchema = closedSchema(
  'ScreenshotMessage',
  ['check_id', 'monitor_id', 'tenant_id', 'created_at', 'png_base64'],
  {
    check_id: messageId,
    monitor_id: monitorId,
    tenant_id: tenantId,
    /** The check's created_at. */
    created_at: dateTime,
    /** The PNG, base64 (at most MONITOR_LIMITS.maxScreenshotBytes before encoding). */
    png_base64: screenshotBase64,
  },
);

/** A check as returned by GET /api/monitors/{id}/checks (seed 2.2). */
export const checkSchema = closedSchema(
  'Check',
  ['id', 'monitor_id', 'status', 'response_time', 'status_code', 'created_at'],
  {
    ...checkProperties,
    error: checkErrorOrNull,
    location: { oneOf: [checkProperties.location, { type: 'null' }] },
    tls_days_left: { type: ['integer', 'null'], minimum: -1_000_000, maximum: 1_000_000 },
    detail: { type: ['string', 'null'], maxLength: MONITOR_LIMITS.maxCheckDetailLength },
    timings: { oneOf: [checkTimings, { type: 'null' }] },
    /** The path of the failure's screenshot (GET, the monitor's tenant only); null when none was kept. */
    screenshot: { type: ['string', 'null'], maxLength: 512 },
    created_at: isoSeconds,
  },
);

export const monitorIdSchema = monitorId;

/** The settings' names, in the schema's order. */
const SETTING_KEYS = Object.keys(monitorSettings) as (keyof typeof monitorSettings)[];

/**
 * A monitor's configuration key in the API (docs/as-code.md), or null: one type list rather
 * than an anyOf, so a wrong key is one problem (the pattern), not three.
 */
const monitorKey = { ...configKeySchema, type: ['string', 'null'] } as const;

/** Body of POST /api/monitors. */
// url: every type but heartbeat (monitorProblems says so).
export const monitorCreateSchema = closedSchema('MonitorCreate', ['name'], {
  ...monitorSettings,
  webhook_secret: webhookSecret,
  /** Its configuration key (docs/as-code.md), unique in the tenant; null or absent: none. */
  key: monitorKey,
});

/**
 * Body of PATCH /api/monitors/{id}: any settings; null clears keyword, degraded_threshold_ms,
 * body; `key` sets or changes its configuration key, null releases it.
 */
export const monitorPatchSchema = patchSchema('MonitorPatch', {
  ...monitorSettings,
  webhook_secret: webhookSecret,
  key: monitorKey,
});

/** A monitor as returned by the API. The webhook secret is shown once, when it is created. */
// Every setting, and what the server adds.
export const monitorSchema = closedSchema(
  'Monitor',
  [...SETTING_KEYS, 'id', 'key', 'status', 'last_check_at', 'created_at', 'updated_at'],
  {
    id: monitorId,
    /** Its configuration key (docs/as-code.md): set, it is managed by a configuration file; null: not. */
    key: monitorKey,
    ...monitorSettings,
    webhook_secret: webhookSecret,
    /** heartbeat monitors: the token of POST /api/heartbeats/{token} on the gateway. */
    heartbeat_token: { type: 'string', pattern: HEARTBEAT_TOKEN_PATTERN },
    /**
     * Only in a PATCH's answer: the stored secrets the change dropped because the URL moved
     * to another origin (`headers.<Name>`, `url.userinfo`, `url.query.<name>`); [] when none.
     */
    dropped_secrets: {
      type: 'array',
      items: { type: 'string', pattern: '^(headers\\.|url\\.userinfo$|url\\.query(\\.|$))' },
    },
    /** pending: no check yet; up: no open incident; down: an open incident; paused. */
    status: { type: 'string', enum: MONITOR_STATUSES },
    last_check_at: { oneOf: [isoSeconds, { type: 'null' }] },
    created_at: isoSeconds,
    updated_at: isoSeconds,
  },
);

/** Value of a message on the alerts topic, and the body of a webhook delivery. */
export const alertMessageSchema = closedSchema(
  'AlertMessage',
  // `check`: every monitor.down and monitor.up has one; an acknowledgement has none.
  ['id', 'type', 'monitor_id', 'incident_id', 'created_at', 'monitor'],
  {
    /** Unique per alert; webhook receivers can de-duplicate on it. */
    id: messageId,
    type: { type: 'string', enum: ALERT_TYPES },
    monitor_id: monitorId,
    /** The monitor's tenant; absent in messages written before tenants (the default tenant). */
    tenant_id: tenantId,
    /** Made during a maintenance window of the monitor: stored, not delivered to webhooks. */
    maintenance: { type: 'boolean' },
    /** incident.acknowledged / unacknowledged: who (`key:<key id>`, or the acknowledge link's recipient). */
    actor: { type: 'string', minLength: 1, maxLength: 300 },
    /** The id of the check that opened the incident; shared by its down and up alerts. */
    incident_id: messageId,
    created_at: dateTime,
    check: closed(['id', 'status', 'response_time', 'status_code', 'created_at'], {
      id: checkProperties.id,
      status: checkProperties.status,
      response_time: checkProperties.response_time,
      status_code: checkProperties.status_code,
      error: checkProperties.error,
      created_at: dateTime,
    }),
    monitor: closed(['name', 'url'], { name: monitorSettings.name, url: monitorUrl }),
  },
);

/** An incident as returned by GET /api/monitors/{id}/incidents. */
export const incidentSchema = closedSchema(
  'Incident',
  ['id', 'monitor_id', 'status', 'started_at', 'resolved_at', 'duration_seconds', 'cause'],
  {
    /** Opened during a maintenance window: nobody was paged for it. */
    maintenance: { type: 'boolean' },
    /** When someone acknowledged it (null: nobody, or taken back). */
    acknowledged_at: { oneOf: [isoSeconds, { type: 'null' }] },
    /** Who: `key:<key id>`, or an acknowledge link's recipient (`email:ops@example.com`, `slack:<channel name>`). */
    acknowledged_by: { type: ['string', 'null'], maxLength: 300 },
    id: { type: 'string' },
    monitor_id: monitorId,
    status: { type: 'string', enum: ['open', 'resolved'] },
    started_at: isoSeconds,
    resolved_at: { oneOf: [isoSeconds, { type: 'null' }] },
    /** Until resolved_at, or until now while open. */
    duration_seconds: { type: 'integer', minimum: 0 },
    cause: closed(['status_code', 'error'], {
      status_code: checkProperties.status_code,
      error: checkErrorOrNull,
    }),
  },
);

/** Fields shared by a delivery attempt's message and its API object. */
const webhookDeliveryProperties = {
  /** Unique per attempt. */
  id: messageId,
  monitor_id: monitorId,
  /** The alert delivered: the `X-Telemetry-Delivery` header and the body's `id`. */
  alert_id: alertMessageSchema.properties.id,
  alert_type: alertMessageSchema.properties.type,
  /** The webhook's URL without its query string or credentials (they often hold tokens). */
  url: { type: 'string', minLength: 1, maxLength: 2048 },
  /** 1 for the first attempt of this alert to this URL. */
  attempt: { type: 'integer', minimum: 1, maximum: 100 },
  status: { type: 'string', enum: WEBHOOK_DELIVERY_STATUSES },
  /** The endpoint's HTTP status; 0 when it never answered. */
  status_code: checkProperties.status_code,
  /** From the connection's start to the answer's end, or to the error. */
  duration_ms: { type: 'integer', minimum: 0, maximum: 86_400_000 },
} as const;

const webhookDeliveryRequired = Object.keys(webhookDeliveryProperties) as (keyof typeof webhookDeliveryProperties)[];

/** Value of a message on the webhook-deliveries topic: one delivery attempt. Written by check runners. */
export const webhookDeliveryMessageSchema = closedSchema(
  'WebhookDeliveryMessage',
  [...webhookDeliveryRequired, 'attempted_at'],
  {
    ...webhookDeliveryProperties,
    tenant_id: tenantId,
    /** Why the attempt failed; absent when the endpoint answered (see status_code). */
    error: checkProperties.error,
    attempted_at: dateTime,
    /** The alert channel; absent in records published before channels (webhooks). */
    channel: { type: 'string', enum: CHANNEL_TYPES },
    /** The channel's id (/api/channels); absent for a monitor's own `webhooks`. */
    channel_id: { type: 'string', pattern: CHANNEL_ID_PATTERN },
    /** What was sent (docs/alerting.md); absent in records published before channels objects. */
    kind: { type: 'string', enum: NOTIFICATION_KINDS },
  },
);

/** A delivery attempt as returned by GET /api/monitors/{id}/webhook-deliveries. */
export const webhookDeliverySchema = closedSchema(
  'WebhookDelivery',
  [...webhookDeliveryRequired, 'error', 'attempted_at', 'channel'],
  {
    ...webhookDeliveryProperties,
    /** The alert channel the attempt went through (`webhook`: a signed webhook). */
    channel: { type: 'string', enum: CHANNEL_TYPES },
    /** The channel's id; null for a monitor's own `webhooks`. */
    channel_id: { oneOf: [{ type: 'string', pattern: CHANNEL_ID_PATTERN }, { type: 'null' }] },
    /** What was sent: down, up, reminder, escalation, acknowledged, test. */
    kind: { type: 'string', enum: NOTIFICATION_KINDS },
    /** Why the attempt failed without an answer (timeout, connection_refused, target_not_allowed, ...); null when the endpoint answered. */
    error: checkErrorOrNull,
    /** UTC, in milliseconds. */
    attempted_at: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$' },
  },
);

/** A status page's settings: what POST takes and PATCH changes (docs/console.md). */
const statusPageSettings = {
  title: { type: 'string', minLength: 1, maxLength: STATUS_PAGE_LIMITS.maxTitleLength, pattern: '\\S' },
  description: { type: ['string', 'null'], maxLength: STATUS_PAGE_LIMITS.maxDescriptionLength },
  monitor_ids: {
    type: 'array',
    minItems: 1,
    maxItems: STATUS_PAGE_LIMITS.maxMonitors,
    uniqueItems: true,
    items: monitorId,
  },
} as const;

/** A status page's slug: its public path, /status/{slug}. */
export const statusPageSlug = {
  type: 'string',
  minLength: 1,
  maxLength: STATUS_PAGE_LIMITS.maxSlugLength,
  pattern: STATUS_PAGE_SLUG_PATTERN,
} as const;

/** Body of POST /api/status-pages (and a status page of a configuration document, docs/as-code.md). */
export const statusPageCreateSchema = closedSchema('StatusPageCreate', ['slug', 'title', 'monitor_ids'], {
  slug: statusPageSlug,
  ...statusPageSettings,
  /** Its configuration key (docs/as-code.md): unique among the tenant's pages (409 KEY_TAKEN); absent: none. */
  key: configKeySchema,
});

/** Body of PATCH /api/status-pages/{slug}: any settings (the slug stays); `key: null` releases its key. */
export const statusPagePatchSchema = patchSchema('StatusPagePatch', {
  ...statusPageSettings,
  key: nullableConfigKeySchema,
});

/** A status page as its owner reads it. */
export const statusPageSchema = closedSchema(
  'StatusPage',
  ['slug', 'title', 'description', 'monitor_ids', 'key', 'created_at', 'updated_at'],
  {
    slug: statusPageSlug,
    ...statusPageSettings,
    /** Its configuration key; null: not managed by a configuration file. */
    key: nullableConfigKeySchema,
    created_at: isoSeconds,
    updated_at: isoSeconds,
  },
);

/** A status page as the public sees it: names and statuses, nothing else of a monitor. */
export const publicStatusPageSchema = closedSchema(
  'PublicStatusPage',
  [
    'slug',
    'title',
    'description',
    'status',
    'generated_at',
    'stale',
    'days',
    'monitors',
    'incidents',
    'reports',
    'maintenance',
  ],
  {
    slug: statusPageSlug,
    title: statusPageSettings.title,
    description: statusPageSettings.description,
    /** up: every monitor up (or paused or pending); down: one or more down. */
    status: { type: 'string', enum: ['up', 'down'] },
    generated_at: isoSeconds,
    /**
     * true: the current statuses could not be read (ClickHouse failed); this is the last
     * page computed, as of generated_at. Also said by the header X-Status-Page-Stale: 1.
     */
    stale: { type: 'boolean' },
    /** The first day (UTC) of the uptime bars, and how many there are. */
    days: { type: 'integer', minimum: 1 },
    monitors: {
      type: 'array',
      items: closed(['id', 'name', 'status', 'uptime_percent', 'days'], {
        /** The monitor's id: the path of its badges and of a subscription to it. */
        id: monitorId,
        name: statusPageSettings.title,
        status: { type: 'string', enum: MONITOR_STATUSES },
        /** Over the bars' days; null without checks. */
        uptime_percent: { type: ['number', 'null'] },
        /** One per day, oldest first. */
        days: {
          type: 'array',
          items: closed(['date', 'uptime_percent'], {
            date: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' },
            uptime_percent: { type: ['number', 'null'] },
          }),
        },
      }),
    },
    /** Open incidents, newest first. */
    incidents: {
      type: 'array',
      items: closed(['monitor', 'started_at'], { monitor: statusPageSettings.title, started_at: isoSeconds }),
    },
    /** Published reports not resolved yet, newest first (resolved ones: GET /api/status/{slug}/history). */
    reports: { type: 'array', items: publicReportSchema },
    /** Maintenance windows of the page's monitors in progress or starting within STATUS_FOLLOW_LIMITS.maintenanceDaysShown days, soonest first. */
    maintenance: { type: 'array', items: publicMaintenanceSchema },
  },
);

export const ALL_SCHEMAS = [
  telemetryEventSchema,
  ingestRequestSchema,
  eventMessageSchema,
  checkMessageSchema,
  checkSchema,
  screenshotMessageSchema,
  monitorCreateSchema,
  monitorPatchSchema,
  monitorSchema,
  alertMessageSchema,
  incidentSchema,
  webhookDeliveryMessageSchema,
  webhookDeliverySchema,
  statusPageCreateSchema,
  statusPagePatchSchema,
  statusPageSchema,
  publicStatusPageSchema,
  ...ALERTING_SCHEMAS,
  ...ACCESS_SCHEMAS,
] as const;
