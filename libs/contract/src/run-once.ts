import type { ValidateFunction } from 'ajv';
import { createAjv } from './ajv.js';
import {
  ID_PATTERN,
  LIMITS,
  LOCATION_PATTERN,
  MONITOR_LIMITS,
  TENANT_ID_PATTERN,
  type CheckError,
  type CheckStatus,
  type MonitorType,
} from './limits.js';
import { monitorSettings, webhookSecret } from './monitor-schema.js';
import { closedSchema, dateTime, screenshotBase64 } from './schema-parts.js';
import { checkSchema } from './schemas.js';
import type { CheckTimings, MonitorSettings } from './types.js';

/**
 * "Run once now" (docs/monitors.md, "Run once now"): POST /api/monitors/run-once runs a
 * check with the settings of a form, without storing them. The query service asks a
 * check runner through RUN_REQUESTS_TOPIC and waits for its answer on RUN_REPLIES_TOPIC.
 * Both messages carry their payload sealed with SECRETS_KEYS (the settings hold header
 * values and URL credentials; a browser check's answer may show the page).
 */

/** What a runner must be able to do to run a request; absent: any runner of the location. */
export const RUN_CAPABILITIES = ['browser'] as const;
export type RunCapability = (typeof RUN_CAPABILITIES)[number];

/** The capability a monitor type's checks need: browser checks need a runner with Chromium. */
export function runCapabilityOf(type: MonitorType): RunCapability | undefined {
  return type === 'browser' ? 'browser' : undefined;
}

export const RUN_ONCE_LIMITS = {
  /** Runs a tenant may ask for per minute (per query-service replica); more: 429 RATE_LIMITED. */
  perTenantPerMinute: 10,
  /** Added to the monitor's timeout_ms: the way through Kafka and back, and a runner's start of the check. */
  marginMs: 5000,
} as const;

const requestId = { type: 'string', minLength: 1, maxLength: 128, pattern: ID_PATTERN } as const;
/** A SecretBox value (`v1.<key id>.<iv>.<tag>.<ciphertext>`, base64url parts). */
const sealed = { type: 'string', minLength: 8, maxLength: 2_000_000, pattern: '^v1\\.[A-Za-z0-9_.-]+$' } as const;
const tenantId = { type: 'string', pattern: TENANT_ID_PATTERN, maxLength: 36 } as const;
const location = { type: 'string', pattern: LOCATION_PATTERN } as const;

/**
 * Value of a message on RUN_REQUESTS_TOPIC (key: its id). Written by the query service;
 * runners of `location` act on it (with `capability`, only those that have it) until
 * `expires_at`. `sealed` holds RunRequestPayload, bound to every other field.
 */
export const runRequestMessageSchema = closedSchema(
  'RunRequestMessage',
  ['id', 'tenant_id', 'location', 'created_at', 'expires_at', 'sealed'],
  {
    id: requestId,
    tenant_id: tenantId,
    location,
    capability: { type: 'string', enum: RUN_CAPABILITIES },
    created_at: dateTime,
    expires_at: dateTime,
    sealed,
  },
);

/** Value of a message on RUN_REPLIES_TOPIC (key: the request's id). `sealed` holds RunReplyPayload, bound to `id`. */
export const runReplyMessageSchema = closedSchema('RunReplyMessage', ['id', 'runner', 'created_at', 'sealed'], {
  id: requestId,
  /** RUNNER_ID of the runner that ran it. */
  runner: { type: 'string', minLength: 1, maxLength: 256 },
  created_at: dateTime,
  sealed,
});

const checkProps = checkSchema.properties;

/** What a runner found (the sealed part of a reply): a check as the runner publishes one, and its screenshot. */
export const runReplyPayloadSchema = closedSchema(
  'RunReplyPayload',
  ['status', 'response_time', 'status_code', 'location'],
  {
    status: checkProps.status,
    response_time: checkProps.response_time,
    status_code: checkProps.status_code,
    error: { type: 'string', enum: checkProps.error.enum.filter((e) => e !== null) },
    tls_days_left: { type: 'integer', minimum: -1_000_000, maximum: 1_000_000 },
    detail: { type: 'string', minLength: 1, maxLength: MONITOR_LIMITS.maxCheckDetailLength },
    timings: checkProps.timings.oneOf[0],
    location,
    /** A browser check's failure screenshot (PNG, base64, at most MONITOR_LIMITS.maxScreenshotBytes). */
    screenshot_png: screenshotBase64,
  },
);

/**
 * The settings of POST /api/monitors/run-once: a MonitorCreate body whose every field is
 * optional (without monitor_id, url is needed as for a create: monitorProblems says so).
 */
export const runOnceSettingsSchema = closedSchema('RunOnceSettings', [], {
  ...monitorSettings,
  // A form's create body may carry it: accepted, not used.
  webhook_secret: webhookSecret,
});

const monitorId = { type: 'string', minLength: 1, maxLength: LIMITS.maxMonitorIdLength, pattern: ID_PATTERN } as const;

/**
 * Body of POST /api/monitors/run-once. `settings` is checked by RunOnceSettings on its own,
 * so that its problems have the paths POST /api/monitors gives them (`/url`, not `/settings/url`).
 */
export const runOnceRequestSchema = {
  ...closedSchema('RunOnceRequest', ['settings'], {
    settings: { type: 'object', description: 'RunOnceSettings' },
    monitor_id: monitorId,
  }),
  description:
    "settings: a MonitorCreate body, every field optional (RunOnceSettings). With monitor_id (a monitor of the caller's tenant), the settings are applied over the stored monitor as a PATCH (**** keeps a stored header value, URL credentials and variables); without, they are the settings of a new monitor. Nothing is stored.",
} as const;

/** The answer of POST /api/monitors/run-once (in the envelope's `data`). */
export const runOnceResultSchema = closedSchema(
  'RunOnceResult',
  ['status', 'response_time', 'status_code', 'error', 'detail', 'timings', 'location', 'screenshot'],
  {
    status: checkProps.status,
    response_time: checkProps.response_time,
    status_code: checkProps.status_code,
    error: checkProps.error,
    detail: checkProps.detail,
    timings: checkProps.timings,
    tls_days_left: checkProps.tls_days_left,
    /** The runner's RUNNER_LOCATION. */
    location: checkProps.location,
    /** A browser check's failure screenshot as a data URL (data:image/png;base64,…); null when none. */
    screenshot: {
      type: ['string', 'null'],
      maxLength: screenshotBase64.maxLength + 32,
      pattern: '^data:image/png;base64,',
    },
  },
);

export const RUN_ONCE_SCHEMAS = [
  runRequestMessageSchema,
  runReplyMessageSchema,
  runReplyPayloadSchema,
  runOnceSettingsSchema,
  runOnceRequestSchema,
  runOnceResultSchema,
] as const;

export interface RunRequestMessage {
  id: string;
  tenant_id: string;
  location: string;
  capability?: RunCapability;
  created_at: string;
  expires_at: string;
  sealed: string;
}

export interface RunReplyMessage {
  id: string;
  runner: string;
  created_at: string;
  sealed: string;
}

/** The sealed part of a request: the monitor to run, secrets in the clear. */
export interface RunRequestPayload {
  /** The stored monitor's id, or a fresh `mon_…` for settings not saved. */
  monitor_id: string;
  settings: MonitorSettings;
}

export interface RunReplyPayload {
  status: CheckStatus;
  response_time: number;
  status_code: number;
  error?: CheckError;
  tls_days_left?: number;
  detail?: string;
  timings?: CheckTimings;
  location: string;
  screenshot_png?: string;
}

export type RunOnceSettings = Partial<MonitorSettings> & { webhook_secret?: string };

export interface RunOnceRequest {
  settings: Record<string, unknown>;
  monitor_id?: string;
}

export interface RunOnceResult {
  status: CheckStatus;
  response_time: number;
  status_code: number;
  error: CheckError | null;
  detail: string | null;
  timings: CheckTimings | null;
  tls_days_left?: number | null;
  location: string | null;
  screenshot: string | null;
}

export interface RunOnceValidators {
  request: ValidateFunction<RunOnceRequest>;
  settings: ValidateFunction<RunOnceSettings>;
  requestMessage: ValidateFunction<RunRequestMessage>;
  replyMessage: ValidateFunction<RunReplyMessage>;
  replyPayload: ValidateFunction<RunReplyPayload>;
}

/** Compiles the run-once schemas once (a composition root calls it). */
export function createRunOnceValidators(): RunOnceValidators {
  const ajv = createAjv(RUN_ONCE_SCHEMAS);
  const get = <T>(id: string): ValidateFunction<T> => {
    const fn = ajv.getSchema<T>(id);
    if (!fn) throw new Error(`schema ${id} missing`);
    return fn;
  };
  return {
    request: get('RunOnceRequest'),
    settings: get('RunOnceSettings'),
    requestMessage: get('RunRequestMessage'),
    replyMessage: get('RunReplyMessage'),
    replyPayload: get('RunReplyPayload'),
  };
}
