/**
 * Ingestion limits. Each is documented in docs/api.md; a 413 names the limit it hit.
 * They are defaults: the gateway's config can lower (not raise past sanity) some of them.
 */
export const LIMITS = {
  /** Events in one POST /api/telemetry/events request. */
  maxEventsPerRequest: 500,
  /** Bytes of one request body after decompression. */
  maxBodyBytes: 1024 * 1024,
  /** Bytes of one event, serialized as JSON. */
  maxEventBytes: 64 * 1024,
  /** Nesting depth of objects and arrays anywhere in the body. */
  maxJsonDepth: 32,
  /** Length of `source` and `category`. */
  maxNameLength: 128,
  /** Length of a client event id. */
  maxClientIdLength: 128,
  /** Length of a monitor id. */
  maxMonitorIdLength: 128,
  /** Length of an event name a tracker's protocol sends (Segment's `event`, PostHog's `event`): its `category`. */
  maxEventNameLength: 200,
  /** Length of `anonymous_id` and `user_id`. */
  maxIdentityLength: 256,
  /** Length of a client-reported user agent kept with an event. */
  maxUserAgentLength: 512,
  /** Violations an event schema's refusal lists, and a `failed_events` row keeps (docs/event-schemas.md). */
  maxSchemaViolations: 20,
} as const;

/**
 * The window around an event's receive time in which its own time (a UUIDv7 `id`'s, else
 * its `timestamp`) decides where the event is kept (`id_time`, the key and the monthly
 * partition of `events`): from 30 days before to 2 days after. An event whose time lies
 * outside is kept as one without a time, under its first copy's receive time, so that no
 * request can spread its events over many partitions. Within `edgeMs` of either end the
 * first copy's choice is recorded, so copies received within a day of each other agree
 * (docs/api.md, "Event times"; docs/clickhouse.md, `id_time`).
 */
export const CLIENT_TIME_WINDOW = {
  pastMs: 30 * 86_400_000,
  futureMs: 2 * 86_400_000,
  edgeMs: 86_400_000,
} as const;

/** `source`, `category`: start with a letter or digit, then letters, digits and . _ : / - */
export const NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:/-]*$';
/**
 * The `category` of an event that came in a tracker's protocol (docs/compat.md): the
 * event's own name as its SDK sent it ("Order Completed", "$pageview"): any text without
 * control characters. Our own endpoint keeps NAME_PATTERN.
 */
export const EVENT_NAME_PATTERN = '^[^\\u0000-\\u001f\\u007f]+$';
/** `anonymous_id`, `user_id` and a client's user agent: any text without control characters. */
export const PRINTABLE_PATTERN = EVENT_NAME_PATTERN;
/** The protocols an event can come in (docs/compat.md); `telemetry` is our own. */
export const EVENT_PROTOCOLS = ['telemetry', 'segment', 'posthog'] as const;
export type EventProtocol = (typeof EVENT_PROTOCOLS)[number];

/** Client event ids and monitor ids: letters, digits and . _ : - */
export const ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]*$';

/**
 * Tenant ids: `ten_` and 1-32 lower-case letters and digits (new ones: 16 hex digits).
 * Every key, monitor, check, alert and event belongs to one tenant (docs/api.md).
 */
export const TENANT_ID_PATTERN = '^ten_[0-9a-z]{1,32}$';
/** The tenant of rows written before tenants existed (migration 4) and of older messages. */
export const DEFAULT_TENANT = 'ten_default';

/** Check statuses. `up` is the seed's; the rest are ours (docs/api.md). */
export const CHECK_STATUSES = ['up', 'down', 'degraded'] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];

/** Monitor registry limits (POST/PATCH /api/monitors), documented in docs/api.md. */
export const MONITOR_LIMITS = {
  maxNameLength: 200,
  maxUrlLength: 2048,
  /** Shortest check interval. We recommend 30 s or more for public sites. */
  minIntervalSeconds: 1,
  maxIntervalSeconds: 86_400,
  minTimeoutMs: 100,
  maxTimeoutMs: 60_000,
  maxExpectedStatusCodes: 20,
  maxKeywordLength: 1024,
  /** Bytes a tcp monitor sends, and characters of the reply it expects. */
  maxTcpSendLength: 1024,
  maxTcpExpectLength: 1024,
  /** A tls monitor's warning time, in days (default DEFAULT_TLS_MIN_DAYS). */
  maxTlsMinDays: 3650,
  /** How long a failing check waits before its confirmation try (0: no confirmation). */
  maxConfirmDelayMs: 60_000,
  /** Values a dns monitor expects, and the length of each. */
  maxDnsExpected: 20,
  maxDnsValueLength: 255,
  /** Maintenance windows per monitor, and the longest recurring one (a week). */
  maxMaintenanceWindows: 10,
  maxMaintenanceMinutes: 10_080,
  /** Locations a monitor is checked from. */
  maxLocations: 8,
  /** A heartbeat monitor's grace for a late call, in seconds (a week). */
  maxHeartbeatGraceSeconds: 604_800,
  maxHeaders: 20,
  maxHeaderValueLength: 1024,
  maxBodyBytes: 64 * 1024,
  maxThreshold: 20,
  maxWebhooks: 5,
  /** Alert channels per monitor. */
  maxChannels: 20,
  minWebhookSecretLength: 16,
  maxWebhookSecretLength: 256,
  /** Monitors per page of GET /api/monitors. */
  maxPageSize: 1000,
  /** Assertions per monitor or per api_flow step, and the length of each (docs/assertions.md). */
  maxAssertions: 20,
  maxAssertionLength: 500,
  /** Requests of an api_flow monitor. */
  maxApiSteps: 10,
  /** Values one api_flow step extracts into variables. */
  maxExtracts: 10,
  /** Steps of a browser monitor. */
  maxBrowserSteps: 30,
  maxSelectorLength: 500,
  /** Variables of an api_flow or browser monitor (sealed like header values), and each value's length. */
  maxVariables: 20,
  maxVariableValueLength: 4096,
  /** Echo requests of an icmp check (a monitor gets DEFAULT_ICMP_COUNT). */
  maxIcmpCount: 20,
  /** A browser check's failure screenshot, in bytes (PNG). */
  maxScreenshotBytes: 500 * 1024,
  /** Characters of a check's `detail`. */
  maxCheckDetailLength: 1024,
} as const;

/** Echo requests an icmp monitor sends per check unless it says otherwise. */
export const DEFAULT_ICMP_COUNT = 3;

/** Status pages (docs/console.md). */
export const STATUS_PAGE_LIMITS = {
  maxSlugLength: 64,
  maxTitleLength: 200,
  maxDescriptionLength: 2000,
  /** Monitors one page lists. */
  maxMonitors: 50,
  /** Status pages per tenant. */
  maxPerTenant: 100,
  /** Days of uptime bars. */
  days: 90,
} as const;

/** A status page's slug: lower-case letters, digits and inner hyphens. */
export const STATUS_PAGE_SLUG_PATTERN = '^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$';

/**
 * What a monitor checks (docs/monitors.md, "Monitor types"): `http` a URL's answer, `tcp`
 * that a port accepts a connection (and, optionally, answers what it is sent), `tls` that
 * a server's certificate chain is valid for its host and does not expire too soon, `dns`
 * that a name resolves (to the expected values), `heartbeat` that a job calls
 * POST /api/heartbeats/{token} at least every interval_seconds (plus a grace time).
 */
export const MONITOR_TYPES = ['http', 'tcp', 'tls', 'dns', 'heartbeat', 'api_flow', 'browser', 'icmp'] as const;

/** The types whose checks take `assertions` (docs/assertions.md); api_flow steps take their own. */
export const ASSERTING_TYPES = ['http', 'tls', 'dns'] as const;

/**
 * What a browser check's step does (docs/browser-checks.md): declarative only, no user code
 * runs in the runner.
 */
export const BROWSER_ACTIONS = ['goto', 'click', 'fill', 'press', 'wait_for', 'assert_text', 'assert_url'] as const;
export type BrowserAction = (typeof BROWSER_ACTIONS)[number];

/** A variable's name in `variables`, an extract's target, and `{{name}}` in a step. */
export const VARIABLE_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,63}$';

/** Record types a dns monitor may ask for. */
export const DNS_RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'NS', 'TXT'] as const;
export type DnsRecordType = (typeof DNS_RECORD_TYPES)[number];
export type MonitorType = (typeof MONITOR_TYPES)[number];

/** A runner's location (RUNNER_LOCATION) and a monitor's `locations`: `eu-west`, `us-east-1`. */
export const LOCATION_PATTERN = '^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$';

/** Where monitors are checked from unless they say (and runners are, unless RUNNER_LOCATION says). */
export const DEFAULT_LOCATION = 'default';

/** The grace a heartbeat monitor gives a late call when it does not say, in seconds. */
export const DEFAULT_HEARTBEAT_GRACE_SECONDS = 60;

/** A heartbeat token: `hb_`, the tenant (without `ten_`), the monitor (without `mon_`), 32 hex of its MAC. */
export const HEARTBEAT_TOKEN_PATTERN = '^hb_[0-9a-z]{1,32}_[0-9a-f]{16}_[0-9a-f]{32}$';

/** The days a tls monitor's certificate must still be valid when its monitor does not say. */
export const DEFAULT_TLS_MIN_DAYS = 14;

/** Days of a recurring maintenance window. */
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** Methods a monitor may use. */
export const MONITOR_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export type MonitorMethod = (typeof MONITOR_METHODS)[number];

/** A monitor's status in the API: derived from its checks and its open incident. */
export const MONITOR_STATUSES = ['pending', 'up', 'down', 'paused'] as const;
export type MonitorStatus = (typeof MONITOR_STATUSES)[number];

/**
 * Alert types: a monitor going down (an incident opens) or coming back up (it closes), and
 * someone acknowledging an incident (or taking it back): docs/alerting.md.
 */
export const ALERT_TYPES = ['monitor.down', 'monitor.up', 'incident.acknowledged', 'incident.unacknowledged'] as const;
/** The alert types that change a monitor's state (incidents and status are read from these only). */
export const STATE_ALERT_TYPES = ['monitor.down', 'monitor.up'] as const;
export type StateAlertType = (typeof STATE_ALERT_TYPES)[number];

/** An alert channel's id (/api/channels). */
export const CHANNEL_ID_PATTERN = '^chn_[a-z0-9]{20}$';
/** An escalation policy's id (/api/escalation-policies). */
export const ESCALATION_POLICY_ID_PATTERN = '^esc_[a-z0-9]{20}$';

/** Limits of alert channels, escalation policies and templates (docs/alerting.md, "Limits"). */
export const ALERTING_LIMITS = {
  maxChannelsPerTenant: 200,
  maxPoliciesPerTenant: 100,
  maxPolicySteps: 10,
  maxChannelsPerStep: 20,
  maxTemplateLength: 4000,
  maxTitleTemplateLength: 500,
  /** Reminders per incident and channel. */
  maxReminders: 100,
  /** The longest reminder interval and escalation delay: a day. */
  maxDelaySeconds: 86_400,
  maxSilenceReasonLength: 500,
} as const;
export type AlertType = (typeof ALERT_TYPES)[number];

/**
 * A webhook delivery attempt's outcome: `delivered` (a 2xx), `retrying` (it failed and
 * another attempt follows), `failed` (it failed and none follows: an answer that is
 * not retried, the egress policy, or the last of WEBHOOK_MAX_ATTEMPTS).
 */
export const WEBHOOK_DELIVERY_STATUSES = ['delivered', 'retrying', 'failed'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/**
 * Why a check failed (`error` of a check; empty when it passed). Connection errors and
 * timeouts are `down` with status_code 0.
 */
export const CHECK_ERRORS = [
  'timeout',
  'dns',
  'connection_refused',
  'connection_reset',
  'tls',
  'network',
  'unexpected_status',
  'keyword_missing',
  'body_too_large',
  // The egress policy refused the address (docs/monitors.md, "What checks may reach").
  'target_not_allowed',
  // A redirect from https to http.
  'insecure_redirect',
  // A tcp monitor's reply did not contain its tcp_expect.
  'unexpected_reply',
  // A tls monitor's certificate expires within its tls_min_days.
  'certificate_expiring',
  // A dns monitor's answer lacked one of its dns_expected values.
  'unexpected_answer',
  // A heartbeat monitor's job did not call within interval_seconds + heartbeat_grace_seconds.
  'heartbeat_missing',
  // One of the monitor's assertions (or an api_flow step's) did not hold: `detail` names it and the value seen.
  'assertion_failed',
  // A browser step (click, fill, wait_for…) could not be done in its timeout, or an api_flow step's
  // extract found nothing (or a value could not be filled in): `detail` names the step.
  'step_failed',
  // A browser check's page asked for an address the egress policy refuses: `detail` names it.
  'request_blocked',
  // An icmp check got no echo reply at all.
  'packet_loss',
] as const;
export type CheckError = (typeof CHECK_ERRORS)[number];

/**
 * Headers a monitor may not set (400 on create and PATCH): the connection's own, which
 * could smuggle a second request or reach another virtual host.
 */
export const FORBIDDEN_MONITOR_HEADERS = [
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'expect',
] as const;

export function isForbiddenMonitorHeader(name: string): boolean {
  return (FORBIDDEN_MONITOR_HEADERS as readonly string[]).includes(name.toLowerCase());
}
