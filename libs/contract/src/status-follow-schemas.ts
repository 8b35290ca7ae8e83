import type { ValidateFunction } from 'ajv';
import { createAjv } from './ajv.js';
import { ID_PATTERN, LIMITS, STATUS_PAGE_LIMITS } from './limits.js';
import { EMAIL_PATTERN } from './people-schemas.js';
import { closed, closedSchema, dateTime, patchSchema } from './schema-parts.js';
import {
  DOMAIN_TXT_PREFIX,
  HOSTNAME_PATTERN,
  REPORT_ID_PATTERN,
  REPORT_IMPACTS,
  REPORT_STATES,
  STATUS_FOLLOW_LIMITS as L,
  SUBSCRIBER_ID_PATTERN,
  SUBSCRIBER_KINDS,
  SUBSCRIBER_STATES,
  type ReportImpact,
  type ReportState,
} from './status-follow.js';

/**
 * The JSON Schemas of status reports, subscriptions and custom domains (docs/api.md,
 * "Status reports and subscribers"). Texts are plain text: markup in them is shown as
 * typed, never interpreted (the page, mails and feeds escape it).
 */

const monitorId = { type: 'string', minLength: 1, maxLength: LIMITS.maxMonitorIdLength, pattern: ID_PATTERN } as const;
/** Affected monitors, or the monitors a subscriber follows: some of the page's ([]: all of it). */
const monitorIds = {
  type: 'array',
  maxItems: STATUS_PAGE_LIMITS.maxMonitors,
  uniqueItems: true,
  items: monitorId,
} as const;
/**
 * A text with at least one character that is not a space; no control characters but newlines
 * and tabs anywhere in it. NOTE: anchored at both ends (`^[^…]*\\S` alone let a control
 * character, or a NUL PostgreSQL refuses, follow the first letter).
 */
const text = (max: number) =>
  ({
    type: 'string',
    minLength: 1,
    maxLength: max,
    pattern: '^(?=[\\s\\S]*\\S)[^\\u0000-\\u0008\\u000b-\\u001f\\u007f]*$',
  }) as const;
/**
 * Invisible and direction-changing characters (soft hyphen, zero-width spaces and joiners,
 * bidirectional marks, overrides and isolates, word joiner, byte-order mark): an email
 * address with one looks like another, so a subscription refuses it.
 */
const INVISIBLE = '[\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\ufeff]';
const title = text(L.maxReportTitleLength);
const message = text(L.maxUpdateMessageLength);
const state = { type: 'string', enum: REPORT_STATES } as const;
const impact = { type: 'string', enum: REPORT_IMPACTS } as const;
/** A signed link's token (confirmation, unsubscribe): checked by its signature, not here. */
const token = { type: 'string', minLength: 1, maxLength: 512, pattern: '^[A-Za-z0-9._~-]+$' } as const;

/** Body of POST /api/status-pages/{slug}/reports: the report and its first update. */
export const statusReportCreateSchema = closedSchema('StatusReportCreate', ['title', 'message'], {
  title,
  /** Default `major`. */
  impact,
  /** Default []: the page as a whole. */
  monitor_ids: monitorIds,
  /** The first update's state; default `investigating`. */
  state,
  message,
  /** The first update's time; default now. Not more than 5 minutes ahead. */
  at: dateTime,
  /** true: kept from the page and its subscribers until PATCH {"draft": false}. Default false. */
  draft: { type: 'boolean' },
});

/** Body of PATCH /api/status-pages/{slug}/reports/{id}: `draft: false` publishes a draft (and tells subscribers). */
export const statusReportPatchSchema = patchSchema('StatusReportPatch', {
  title,
  impact,
  monitor_ids: monitorIds,
  draft: { type: 'boolean', const: false },
});

/** Body of POST /api/status-pages/{slug}/reports/{id}/updates. */
export const reportUpdateCreateSchema = closedSchema('ReportUpdateCreate', ['state', 'message'], {
  state,
  message,
  at: dateTime,
});

/** Body of POST /api/status-pages/{slug}/reports/from-incident: a draft from an incident of a monitor of the page. */
export const reportFromIncidentSchema = closedSchema('ReportFromIncident', ['incident_id'], {
  incident_id: { type: 'string', minLength: 1, maxLength: 128, pattern: ID_PATTERN },
});

/** Body of POST /api/status/{slug}/subscribers: an email (confirmed by a link) or a webhook (verified by a challenge). */
export const subscribeSchema = {
  $id: 'Subscribe',
  type: 'object',
  additionalProperties: false,
  properties: {
    email: {
      type: 'string',
      minLength: 3,
      maxLength: 254,
      pattern: EMAIL_PATTERN,
      not: { type: 'string', pattern: INVISIBLE },
    },
    webhook: { type: 'string', minLength: 8, maxLength: L.maxWebhookUrlLength, pattern: '^https?://' },
    /** Default []: every notice of the page. */
    monitor_ids: monitorIds,
  },
  // Each branch names its property (ajv's strictRequired); the properties above say what they hold.
  oneOf: [
    { properties: { email: true }, required: ['email'] },
    { properties: { webhook: true }, required: ['webhook'] },
  ],
} as const;

/** Body of POST /api/status/{slug}/subscribers/confirm and of POST /api/status/{slug}/unsubscribe (or its `?token=`). */
export const subscriptionTokenSchema = closedSchema('SubscriptionToken', ['token'], { token });

/** Body of POST /api/status-pages/{slug}/domains. */
export const domainCreateSchema = closedSchema('DomainCreate', ['hostname'], {
  hostname: { type: 'string', minLength: 4, maxLength: 253, pattern: HOSTNAME_PATTERN },
});

/** The optional `message` of a maintenance window (monitor-schema.ts): shown on the page and in notices. */
export const maintenanceMessage = text(L.maxMaintenanceMessageLength);

/** An update as the API answers it. */
export const reportUpdateSchema = closedSchema('ReportUpdate', ['id', 'state', 'message', 'at', 'created_at'], {
  id: { type: 'string' },
  state,
  message: { type: 'string' },
  at: dateTime,
  created_at: dateTime,
});

/** An update as anyone sees it (PublicStatusPage's reports, the history). */
export const publicReportUpdateSchema = closed(['id', 'state', 'message', 'at'], {
  id: { type: 'string' },
  state,
  message: { type: 'string' },
  at: dateTime,
});

/** A report as anyone sees it (PublicStatusPage's `reports`, GET /api/status/{slug}/history). */
export const publicReportSchema = closed(
  ['id', 'title', 'impact', 'state', 'monitors', 'created_at', 'updated_at', 'resolved_at', 'updates'],
  {
    id: { type: 'string' },
    title: { type: 'string' },
    impact,
    state,
    monitors: { type: 'array', items: closed(['id', 'name'], { id: monitorId, name: { type: 'string' } }) },
    created_at: dateTime,
    updated_at: dateTime,
    resolved_at: { type: ['string', 'null'], format: 'date-time' },
    /** Newest first. */
    updates: { type: 'array', items: publicReportUpdateSchema },
  },
);

/** A maintenance window as anyone sees it (PublicStatusPage's `maintenance`). */
export const publicMaintenanceSchema = closed(['monitor', 'starts_at', 'ends_at', 'in_progress', 'message'], {
  monitor: closed(['id', 'name'], { id: monitorId, name: { type: 'string' } }),
  starts_at: dateTime,
  ends_at: dateTime,
  in_progress: { type: 'boolean' },
  message: { type: ['string', 'null'] },
});

/** A status report as its page's owner reads it (StatusReportView in status-follow.ts). */
export const statusReportViewSchema = closedSchema(
  'StatusReportView',
  [
    'id',
    'slug',
    'title',
    'impact',
    'monitor_ids',
    'state',
    'draft',
    'incident_id',
    'created_at',
    'updated_at',
    'resolved_at',
    'updates',
  ],
  {
    id: { type: 'string', pattern: REPORT_ID_PATTERN },
    slug: { type: 'string' },
    title: { type: 'string' },
    impact,
    monitor_ids: { type: 'array', items: monitorId },
    state,
    draft: { type: 'boolean' },
    incident_id: { type: ['string', 'null'] },
    created_at: dateTime,
    updated_at: dateTime,
    resolved_at: { type: ['string', 'null'], format: 'date-time' },
    /** Newest first. */
    updates: { type: 'array', items: { $ref: 'ReportUpdate' } },
  },
);

/** A subscriber as the page's owner sees it (SubscriberView): an email, or a webhook URL's origin only. */
export const subscriberViewSchema = closedSchema(
  'SubscriberView',
  ['id', 'kind', 'address', 'monitor_ids', 'state', 'created_at', 'confirmed_at'],
  {
    id: { type: 'string', pattern: SUBSCRIBER_ID_PATTERN },
    kind: { type: 'string', enum: SUBSCRIBER_KINDS },
    address: { type: 'string' },
    monitor_ids: { type: 'array', items: monitorId },
    state: { type: 'string', enum: SUBSCRIBER_STATES },
    created_at: dateTime,
    confirmed_at: { type: ['string', 'null'], format: 'date-time' },
  },
);

/** A custom domain of a page (DomainView): the TXT record that proves it, and whether it was seen. */
export const domainViewSchema = closedSchema(
  'DomainView',
  ['hostname', 'slug', 'txt_name', 'txt_value', 'verified', 'verified_at', 'created_at'],
  {
    hostname: { type: 'string', pattern: HOSTNAME_PATTERN },
    slug: { type: 'string' },
    /** `${DOMAIN_TXT_PREFIX}<hostname>`. */
    txt_name: { type: 'string', pattern: `^${DOMAIN_TXT_PREFIX.replace('.', '\\.')}` },
    txt_value: { type: 'string' },
    verified: { type: 'boolean' },
    verified_at: { type: ['string', 'null'], format: 'date-time' },
    created_at: dateTime,
  },
);

export const STATUS_FOLLOW_SCHEMAS = [
  statusReportCreateSchema,
  statusReportPatchSchema,
  reportUpdateCreateSchema,
  reportFromIncidentSchema,
  subscribeSchema,
  subscriptionTokenSchema,
  domainCreateSchema,
  reportUpdateSchema,
  statusReportViewSchema,
  subscriberViewSchema,
  domainViewSchema,
] as const;

export interface StatusReportCreate {
  title: string;
  impact?: ReportImpact;
  monitor_ids?: string[];
  state?: ReportState;
  message: string;
  at?: string;
  draft?: boolean;
}
export interface StatusReportPatch {
  title?: string;
  impact?: ReportImpact;
  monitor_ids?: string[];
  draft?: false;
}
export interface ReportUpdateCreate {
  state: ReportState;
  message: string;
  at?: string;
}
export type Subscribe = ({ email: string; webhook?: never } | { webhook: string; email?: never }) & {
  monitor_ids?: string[];
};

export interface StatusFollowValidators {
  statusReportCreate: ValidateFunction<StatusReportCreate>;
  statusReportPatch: ValidateFunction<StatusReportPatch>;
  reportUpdateCreate: ValidateFunction<ReportUpdateCreate>;
  reportFromIncident: ValidateFunction<{ incident_id: string }>;
  subscribe: ValidateFunction<Subscribe>;
  subscriptionToken: ValidateFunction<{ token: string }>;
  domainCreate: ValidateFunction<{ hostname: string }>;
}

/** Compiles the schemas once (a composition root calls it). */
export function createStatusFollowValidators(): StatusFollowValidators {
  const ajv = createAjv(STATUS_FOLLOW_SCHEMAS);
  const get = <T>(id: string): ValidateFunction<T> => ajv.getSchema<T>(id)!;
  return {
    statusReportCreate: get('StatusReportCreate'),
    statusReportPatch: get('StatusReportPatch'),
    reportUpdateCreate: get('ReportUpdateCreate'),
    reportFromIncident: get('ReportFromIncident'),
    subscribe: get('Subscribe'),
    subscriptionToken: get('SubscriptionToken'),
    domainCreate: get('DomainCreate'),
  };
}
