import { maintenanceMessage } from './status-follow-schemas.js';
import {
  BROWSER_ACTIONS,
  CHANNEL_ID_PATTERN,
  VARIABLE_NAME_PATTERN,
  DEFAULT_LOCATION,
  ESCALATION_POLICY_ID_PATTERN,
  DNS_RECORD_TYPES,
  LOCATION_PATTERN,
  WEEKDAYS,
  MONITOR_LIMITS,
  MONITOR_METHODS,
  MONITOR_TYPES,
} from './limits.js';
import { dateTime } from './schema-parts.js';

/**
 * The one hand-written definition of a monitor's settings, in a module of its own so that
 * browser code (the console, through monitor-catalog.ts) bundles it without the other
 * schemas. schemas.ts builds the API's monitor schemas from it.
 */

export const M = MONITOR_LIMITS;
export const httpUrl = {
  type: 'string',
  minLength: 8,
  maxLength: M.maxUrlLength,
  pattern: '^https?://[^\\s]+$',
  format: 'uri',
} as const;
/**
 * What a monitor checks: a URL whose form its type's module decides (http(s)://… for http,
 * tcp://host:port for tcp…; heartbeat://<id> is set by the server).
 */
export const monitorUrl = { ...httpUrl, pattern: '^[a-z][a-z0-9+.-]*://[^\\s]+$' } as const;
const threshold = { type: 'integer', minimum: 1, maximum: M.maxThreshold } as const;
const statusCodeRule = {
  oneOf: [
    { type: 'integer', minimum: 100, maximum: 599 },
    { type: 'string', pattern: '^[1-5]xx$' },
  ],
} as const;

/** An assertion in the expression language of docs/assertions.md; parsed by assertionProblems. */
const assertion = { type: 'string', minLength: 1, maxLength: M.maxAssertionLength } as const;

/** An api_flow step's headers: as a monitor's, {{name}} allowed in values. */
const stepHeaders = {
  type: 'object',
  maxProperties: M.maxHeaders,
  propertyNames: { pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$" },
  additionalProperties: {
    type: 'string',
    maxLength: M.maxHeaderValueLength,
    pattern: '^[\\t\\x20-\\x7e\\x80-\\xff]*$',
  },
} as const;

/** The settings of a monitor: what POST takes, PATCH changes and GET returns (plus id and times). */
export const monitorSettings = {
  name: { title: 'Name', type: 'string', minLength: 1, maxLength: M.maxNameLength, pattern: '\\S' },
  type: { title: 'Type', type: 'string', enum: MONITOR_TYPES, default: 'http' },
  url: {
    title: 'URL',
    // The console puts each type's URL form (its module's urlHint) before it.
    description: 'Stored query values show as ****; another host drops the stored headers and credentials',
    ...monitorUrl,
  },
  method: { title: 'Method', type: 'string', enum: MONITOR_METHODS, default: 'GET' },
  interval_seconds: {
    title: 'Interval (seconds)',
    type: 'integer',
    minimum: M.minIntervalSeconds,
    maximum: M.maxIntervalSeconds,
    default: 60,
  },
  /** On create, a timeout not given shrinks to a shorter interval. */
  timeout_ms: {
    title: 'Timeout (ms)',
    type: 'integer',
    minimum: M.minTimeoutMs,
    maximum: M.maxTimeoutMs,
    default: 10_000,
  },
  expected_status_codes: {
    title: 'Expected status codes',
    description: 'comma-separated: 200, 2xx, 301',
    type: 'array',
    minItems: 1,
    maxItems: M.maxExpectedStatusCodes,
    items: statusCodeRule,
    default: ['2xx'],
  },
  keyword: {
    title: 'Keyword the body must contain',
    type: ['string', 'null'],
    minLength: 1,
    maxLength: M.maxKeywordLength,
    default: null,
  },
  degraded_threshold_ms: {
    title: 'Degraded above (ms)',
    type: ['integer', 'null'],
    minimum: 1,
    maximum: M.maxTimeoutMs,
    default: null,
  },
  failure_threshold: { title: 'Failing checks before down', ...threshold, default: 2 },
  /** A failing check is tried again after this many ms, and counts only if it fails again (0: never). */
  confirm_delay_ms: {
    title: 'Confirm a failure after (ms)',
    description: 'a failing check is tried again after this long, and counts only if it fails again; 0: no retry',
    type: 'integer',
    minimum: 0,
    maximum: M.maxConfirmDelayMs,
    default: 0,
  },
  recovery_threshold: { title: 'Passing checks before up', ...threshold, default: 1 },
  follow_redirects: { title: 'Follow redirects', type: 'boolean', default: true },
  headers: {
    title: 'Request headers',
    description: 'one per line, Name: value; stored values show as ****',
    type: 'object',
    maxProperties: M.maxHeaders,
    propertyNames: { pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$" },
    // What HTTP allows in a field value (tab, visible ASCII, obs-text): no CR, LF or NUL.
    additionalProperties: {
      type: 'string',
      maxLength: M.maxHeaderValueLength,
      pattern: '^[\\t\\x20-\\x7e\\x80-\\xff]*$',
    },
    default: {},
  },
  body: { title: 'Request body', type: ['string', 'null'], maxLength: M.maxBodyBytes, default: null },
  webhooks: {
    title: 'Webhook URLs',
    description: 'comma-separated; stored URLs show as scheme and host only, and kept as shown',
    type: 'array',
    maxItems: M.maxWebhooks,
    uniqueItems: true,
    items: httpUrl,
    default: [],
  },
  /** Alert channels (/api/channels) notified when it goes down and, per channel, when it comes back up. */
  channels: {
    title: 'Alert channels',
    description: 'ids of the tenant’s channels (/api/channels), comma-separated',
    type: 'array',
    maxItems: M.maxChannels,
    uniqueItems: true,
    items: { type: 'string', pattern: CHANNEL_ID_PATTERN },
    default: [],
  },
  /** The escalation policy its incidents follow (null: one step, its `channels`). */
  escalation_policy: {
    title: 'Escalation policy',
    description: 'an id from /api/escalation-policies; empty: notify the channels once',
    type: ['string', 'null'],
    pattern: ESCALATION_POLICY_ID_PATTERN,
    default: null,
  },
  /** Until this time no channel is notified (down, up, reminders, escalation); checks, incidents and the signed `webhooks` go on. */
  silenced_until: {
    title: 'Silenced until',
    description: 'until then no channel is notified; empty: not silenced',
    type: ['string', 'null'],
    format: 'date-time',
    maxLength: 64,
    default: null,
  },
  silence_reason: {
    title: 'Why it is silenced',
    type: ['string', 'null'],
    minLength: 1,
    maxLength: 500,
    default: null,
  },
  /** tcp only: what to send once connected (null: nothing). */
  tcp_send: {
    title: 'TCP: send once connected',
    type: ['string', 'null'],
    minLength: 1,
    maxLength: M.maxTcpSendLength,
    default: null,
  },
  /** tcp only: what the reply must contain (null: anything). */
  tcp_expect: {
    title: 'TCP: the reply must contain',
    type: ['string', 'null'],
    minLength: 1,
    maxLength: M.maxTcpExpectLength,
    default: null,
  },
  /** tls only: the certificate must be valid for at least this many more days (a tls monitor gets DEFAULT_TLS_MIN_DAYS). */
  tls_min_days: {
    title: 'TLS: days the certificate must still be valid',
    type: ['integer', 'null'],
    minimum: 0,
    maximum: M.maxTlsMinDays,
    default: null,
  },
  /** dns only: the record type asked for (a dns monitor gets A). */
  dns_record_type: {
    title: 'DNS: record type',
    type: ['string', 'null'],
    enum: [...DNS_RECORD_TYPES, null],
    default: null,
  },
  /** dns only: values the answer must all hold (empty: any answer). */
  dns_expected: {
    title: 'DNS: values the answer must hold',
    description: 'comma-separated; empty: any answer',
    type: 'array',
    maxItems: M.maxDnsExpected,
    uniqueItems: true,
    items: { type: 'string', minLength: 1, maxLength: M.maxDnsValueLength, pattern: '^[\\x20-\\x7e]+$' },
    default: [],
  },
  /** dns only: the resolver to ask, an IP literal with an optional port: 192.0.2.53, 192.0.2.53:5353, [2001:db8::53]:53 (null: the runner's own). */
  dns_resolver: {
    title: 'DNS: resolver',
    description: 'an IP[:port]; empty: the runner’s',
    type: ['string', 'null'],
    maxLength: 64,
    pattern: '^(?:[0-9.]+|\\[[0-9A-Fa-f:.]+\\])(?::[0-9]{1,5})?$',
    default: null,
  },
  /** heartbeat only: how late a call may be after interval_seconds (a heartbeat monitor gets DEFAULT_HEARTBEAT_GRACE_SECONDS). */
  heartbeat_grace_seconds: {
    title: 'Heartbeat: grace for a late call (seconds)',
    description: 'the job calls at least every interval',
    type: ['integer', 'null'],
    minimum: 0,
    maximum: M.maxHeartbeatGraceSeconds,
    default: null,
  },
  /** http, tls and dns: conditions every check must meet (docs/assertions.md); empty: none. */
  assertions: {
    title: 'Assertions',
    description:
      'one per line: status == 200, response_time < 500, $.status == "ok", header.content-type contains "json"',
    type: 'array',
    maxItems: M.maxAssertions,
    items: assertion,
    default: [],
  },
  /** api_flow only: the requests, in order (docs/api-flows.md). */
  api_steps: {
    title: 'API flow: steps',
    description: 'up to 10 requests; {{name}} uses a variable; extract sets one from the answer',
    type: 'array',
    maxItems: M.maxApiSteps,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['url'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 100 },
        method: { type: 'string', enum: MONITOR_METHODS },
        /** Absolute http(s) URL, or a path (/…) resolved against the monitor's URL; {{name}} in its path and query only. */
        url: { type: 'string', minLength: 1, maxLength: M.maxUrlLength, pattern: '^(?:https?://|/)[^\\s]*$' },
        headers: stepHeaders,
        body: { type: ['string', 'null'], maxLength: M.maxBodyBytes },
        expected_status_codes: {
          type: 'array',
          minItems: 1,
          maxItems: M.maxExpectedStatusCodes,
          items: statusCodeRule,
        },
        /** Variable name → where its value comes from in this step's answer: `$.path` or `header.<name>`. */
        extract: {
          type: 'object',
          maxProperties: M.maxExtracts,
          propertyNames: { pattern: VARIABLE_NAME_PATTERN },
          additionalProperties: { type: 'string', minLength: 1, maxLength: M.maxAssertionLength },
        },
        assertions: { type: 'array', maxItems: M.maxAssertions, items: assertion },
      },
    },
    default: [],
  },
  /** browser only: what the browser does after opening the monitor's URL (docs/browser-checks.md). */
  browser_steps: {
    title: 'Browser: steps',
    description: 'goto, click, fill, press, wait_for, assert_text, assert_url; each with its timeout',
    type: 'array',
    maxItems: M.maxBrowserSteps,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['action'],
      properties: {
        action: { type: 'string', enum: BROWSER_ACTIONS },
        /** click, fill, press, wait_for, assert_text: a CSS selector (Playwright's). */
        selector: { type: 'string', minLength: 1, maxLength: M.maxSelectorLength },
        /** fill: the text typed ({{name}} uses a variable); press: a key (Enter). */
        value: { type: 'string', maxLength: M.maxVariableValueLength },
        /** goto: an absolute http(s) URL or a path resolved against the monitor's URL; assert_url: what the URL must contain. */
        url: { type: 'string', minLength: 1, maxLength: M.maxUrlLength },
        /** wait_for, assert_text: text the page (or the selector's element) must contain. */
        text: { type: 'string', minLength: 1, maxLength: M.maxKeywordLength },
        timeout_ms: { type: 'integer', minimum: 100, maximum: M.maxTimeoutMs },
      },
    },
    default: [],
  },
  /** api_flow and browser: values {{name}} stands for; sealed and write-only like header values. */
  variables: {
    title: 'Variables',
    description: 'one per line, name: value; stored values show as ****',
    type: 'object',
    maxProperties: M.maxVariables,
    propertyNames: { pattern: VARIABLE_NAME_PATTERN },
    additionalProperties: { type: 'string', maxLength: M.maxVariableValueLength },
    default: {},
  },
  /** icmp only: echo requests per check (an icmp monitor gets DEFAULT_ICMP_COUNT). */
  icmp_count: {
    title: 'Ping: packets per check',
    type: ['integer', 'null'],
    minimum: 1,
    maximum: M.maxIcmpCount,
    default: null,
  },
  /** Times when checks run and are stored but nobody is paged (docs/monitors.md, "Maintenance windows"). */
  maintenance_windows: {
    title: 'Maintenance windows',
    type: 'array',
    maxItems: M.maxMaintenanceWindows,
    items: {
      oneOf: [
        // One-off: from and to, absolute times.
        {
          type: 'object',
          additionalProperties: false,
          required: ['from', 'to'],
          properties: { from: dateTime, to: dateTime, message: maintenanceMessage },
        },
        // Recurring: at `start` (local time in `time_zone`) on `days` (every day when absent), for `duration_minutes`.
        {
          type: 'object',
          additionalProperties: false,
          required: ['start', 'duration_minutes', 'time_zone'],
          properties: {
            days: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', enum: WEEKDAYS } },
            start: { type: 'string', pattern: '^(?:[01][0-9]|2[0-3]):[0-5][0-9]$' },
            duration_minutes: { type: 'integer', minimum: 1, maximum: M.maxMaintenanceMinutes },
            time_zone: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z][A-Za-z0-9_+/-]*$' },
            /** Shown on the monitor's status pages and in maintenance notices. */
            message: maintenanceMessage,
          },
        },
      ],
    },
    default: [],
  },
  /** Where it is checked from: RUNNER_LOCATION of the runners. */
  locations: {
    title: 'Locations',
    description: 'comma-separated runner locations (RUNNER_LOCATION); default when empty',
    type: 'array',
    minItems: 1,
    maxItems: M.maxLocations,
    uniqueItems: true,
    items: { type: 'string', pattern: LOCATION_PATTERN, maxLength: 32 },
    default: [DEFAULT_LOCATION],
  },
  /** Failing locations that open an incident (null: a majority of `locations`). */
  quorum: {
    title: 'Failing locations that open an incident',
    description: 'a majority of the locations when empty',
    type: ['integer', 'null'],
    minimum: 1,
    maximum: M.maxLocations,
    default: null,
  },
  paused: { title: 'Paused', type: 'boolean', default: false },
} as const;

/**
 * The settings of a monitor as one object: the only hand-written definition of a monitor.
 * Its TypeScript type (MonitorSettings), the defaults, the settings of old rows and the
 * console's fields derive from it (monitor-fields.ts).
 */
export const monitorSettingsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: monitorSettings,
} as const;

/** A monitor's webhook signing secret (write-only: shown once). */
export const webhookSecret = {
  type: 'string',
  minLength: M.minWebhookSecretLength,
  maxLength: M.maxWebhookSecretLength,
  pattern: '^[\\x21-\\x7e]+$',
} as const;
