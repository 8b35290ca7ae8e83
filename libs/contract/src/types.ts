import type { PublicMaintenance, PublicReport } from './status-follow.js';
import type { CheckError, CheckStatus, EventProtocol, MonitorStatus, StateAlertType } from './limits.js';
import type {
  channelCreateSchema,
  channelPatchSchema,
  channelSchema,
  channelTestResultSchema,
  escalationPolicyCreateSchema,
  escalationPolicyPatchSchema,
  escalationPolicySchema,
} from './alerting-schemas.js';

import type { FromSchema } from 'json-schema-to-ts';
import type { monitorSettingsSchema } from './monitor-schema.js';
import type {
  monitorCreateSchema,
  monitorPatchSchema,
  monitorSchema,
  screenshotMessageSchema,
  webhookDeliveryMessageSchema,
  webhookDeliverySchema,
} from './schemas.js';

export interface TelemetryEvent {
  source: string;
  category: string;
  payload: Record<string, unknown>;
  id?: string;
  timestamp?: string;
  anonymous_id?: string;
  user_id?: string;
}

export interface IngestRequest {
  events: TelemetryEvent[];
  sent_at?: string;
}

export interface EventMessage {
  v: 1;
  event_id: string;
  key_id: string;
  tenant_id?: string;
  source: string;
  category: string;
  payload: Record<string, unknown>;
  client_event_id?: string;
  client_ts?: string;
  sent_at?: string;
  received_at: string;
  /** Absent: our own endpoint (`telemetry`). */
  protocol?: EventProtocol;
  anonymous_id?: string;
  user_id?: string;
  client_ip?: string;
  user_agent?: string;
  /**
   * The address of the request's client as the gateway saw it: the connection's peer, or
   * X-Forwarded-For's client when the peer is one of TRUSTED_PROXIES (docs/enrichment.md).
   * `client_ip` (what the event's own protocol reports) takes priority over it.
   */
  request_ip?: string;
  /** The request's User-Agent header; `user_agent` takes priority over it. */
  request_user_agent?: string;
  /** What the key keeps of the address in ClickHouse; absent: `truncated`. */
  ip_storage?: IpStorage;
  /** The event violated its tenant's schema, whose action is `route`: it goes to `failed_events`. */
  schema_failure?: SchemaFailure;
}

/** What an access key keeps of a client's address in ClickHouse (docs/enrichment.md). */
export type IpStorage = 'full' | 'truncated' | 'none';
export const IP_STORAGE_MODES: readonly IpStorage[] = ['full', 'truncated', 'none'];

/** Why an event went to `failed_events` (docs/event-schemas.md). */
export interface SchemaFailure {
  schema_id: string;
  version: number;
  /** The validator's problems, as VALIDATION_FAILED lists them (at most LIMITS.maxSchemaViolations). */
  violations: { path: string; message: string }[];
}

export interface CheckMessage {
  id: string;
  monitor_id: string;
  tenant_id?: string;
  status: CheckStatus;
  response_time: number;
  status_code: number;
  error?: CheckError;
  location?: string;
  tls_days_left?: number;
  /** What failed, in words (the assertion and the value seen, the step, the blocked request). */
  detail?: string;
  timings?: CheckTimings;
  /** A screenshot of the failure was published to the screenshots topic under this check's id. */
  screenshot?: boolean;
  created_at: string;
}

/** Where a check's time went (checkTimings in schemas.ts; docs/monitors.md, "Timings"). */
export interface CheckTimings {
  steps?: { name: string; duration_ms: number; ok: boolean; status_code?: number }[];
  navigation?: { ttfb_ms?: number; dom_content_loaded_ms?: number; load_ms?: number };
  web_vitals?: { lcp_ms?: number; cls?: number; inp_ms?: number };
  packets?: {
    sent: number;
    received: number;
    loss_percent: number;
    rtt_min_ms?: number;
    rtt_avg_ms?: number;
    rtt_max_ms?: number;
  };
}

/** Seed 2.2 plus `error`; `created_at` is `YYYY-MM-DDThh:mm:ssZ`. */
export interface Check {
  id: string;
  monitor_id: string;
  status: CheckStatus;
  response_time: number;
  status_code: number;
  error?: CheckError | null;
  /** Where it ran (RUNNER_LOCATION); null for checks made before locations. */
  location?: string | null;
  /** tls monitors: whole days until the certificate expires; null otherwise. */
  tls_days_left?: number | null;
  detail?: string | null;
  timings?: CheckTimings | null;
  /** The path of its screenshot (browser checks that failed), null when none was kept. */
  screenshot?: string | null;
  created_at: string;
}

/** An expected status: a code (200) or a class ("2xx"). */
export type StatusCodeRule = number | string;

/**
 * A monitor's settings, derived from the one hand-written definition: the JSON Schema
 * `monitorSettingsSchema` (monitor-schema.ts). Every field is present (the defaults fill the rest).
 */
export type MonitorSettings = Required<FromSchema<typeof monitorSettingsSchema>>;

/** A one-off window (absolute times) or a recurring one (local time in a time zone). */
export type MaintenanceWindow = MonitorSettings['maintenance_windows'][number];

/** Body of POST /api/monitors (url is required of every type but heartbeat, whose url the server sets). */
export type MonitorCreate = FromSchema<typeof monitorCreateSchema, { keepDefaultedPropertiesOptional: true }>;
/** Body of PATCH /api/monitors/{id}. */
export type MonitorPatch = FromSchema<typeof monitorPatchSchema, { keepDefaultedPropertiesOptional: true }>;

/**
 * A monitor as the API returns it (monitorSchema): its settings, id, status and times;
 * `webhook_secret` only in the answer that set it, `heartbeat_token` for heartbeat
 * monitors, `dropped_secrets` only in a PATCH's answer.
 */
export type Monitor = FromSchema<typeof monitorSchema>;

export interface StatusPageSettings {
  title: string;
  description: string | null;
  monitor_ids: string[];
}

export type StatusPageCreate = Pick<StatusPageSettings, 'title' | 'monitor_ids'> &
  Partial<StatusPageSettings> & { slug: string; key?: string };
export type StatusPagePatch = Partial<StatusPageSettings> & { key?: string | null };

export interface StatusPage extends StatusPageSettings {
  slug: string;
  /** Its configuration key (docs/as-code.md); null: none. */
  key: string | null;
  created_at: string;
  updated_at: string;
}

/** GET /api/status/{slug}: what anyone may see. */
export interface PublicStatusPage {
  slug: string;
  title: string;
  description: string | null;
  status: 'up' | 'down';
  generated_at: string;
  /** True: the current state could not be read; this is the page of generated_at. */
  stale: boolean;
  days: number;
  monitors: {
    id: string;
    name: string;
    status: MonitorStatus;
    uptime_percent: number | null;
    days: { date: string; uptime_percent: number | null }[];
  }[];
  incidents: { monitor: string; started_at: string }[];
  reports: PublicReport[];
  maintenance: PublicMaintenance[];
}

/** What every alert message carries. */
interface AlertBase {
  id: string;
  monitor_id: string;
  tenant_id?: string;
  incident_id: string;
  /** Made during a maintenance window: stored, not delivered to webhooks. */
  maintenance?: boolean;
  created_at: string;
  monitor: { name: string; url: string };
}

/** A monitor going down (an incident opens) or coming back up (it closes), decided on `check`. */
export interface StateAlert extends AlertBase {
  type: StateAlertType;
  check: {
    id: string;
    status: CheckStatus;
    response_time: number;
    status_code: number;
    error?: CheckError;
    created_at: string;
  };
  actor?: undefined;
}

/** Someone acknowledging an incident, or taking it back (docs/alerting.md). */
export interface AcknowledgementAlert extends AlertBase {
  type: 'incident.acknowledged' | 'incident.unacknowledged';
  /** `key:<key id>`, or the acknowledge link's recipient. */
  actor?: string;
  check?: undefined;
}

/** A message of the alerts topic. */
export type AlertMessage = StateAlert | AcknowledgementAlert;

export function isStateAlert(a: AlertMessage): a is StateAlert {
  return a.type === 'monitor.down' || a.type === 'monitor.up';
}

export interface Incident {
  id: string;
  monitor_id: string;
  status: 'open' | 'resolved';
  started_at: string;
  resolved_at: string | null;
  duration_seconds: number;
  cause: { status_code: number; error: CheckError | null };
  /** Opened during a maintenance window: nobody was paged for it. */
  maintenance?: boolean;
  /** When and by whom it was acknowledged (absent: not known to this answer; null: nobody). */
  acknowledged_at?: string | null;
  acknowledged_by?: string | null;
}

/** A delivery attempt's record on the webhook-deliveries topic (`channel` absent: a webhook). */
export type WebhookDeliveryMessage = FromSchema<typeof webhookDeliveryMessageSchema>;
export type ScreenshotMessage = FromSchema<typeof screenshotMessageSchema>;

/** A delivery attempt as GET /api/monitors/{id}/webhook-deliveries returns it. */
export type WebhookDelivery = FromSchema<typeof webhookDeliverySchema>;

/** Body of POST /api/channels. */
export type ChannelCreate = FromSchema<typeof channelCreateSchema>;
/** Body of PATCH /api/channels/{id}. */
export type ChannelPatch = FromSchema<typeof channelPatchSchema>;
/** An alert channel as the API returns it (secrets masked). */
export type ChannelObject = FromSchema<typeof channelSchema>;
export type ChannelTestResult = FromSchema<typeof channelTestResultSchema>;
export type EscalationPolicyCreate = FromSchema<typeof escalationPolicyCreateSchema>;
export type EscalationPolicyPatch = FromSchema<typeof escalationPolicyPatchSchema>;
export type EscalationPolicy = FromSchema<typeof escalationPolicySchema>;
