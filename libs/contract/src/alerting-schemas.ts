import { ALERTING_LIMITS as A, CHANNEL_ID_PATTERN, ESCALATION_POLICY_ID_PATTERN } from './limits.js';
import { CHANNEL_TYPES } from './channels/catalog.js';
import { configKeySchema, nullableConfigKeySchema } from './config-key.js';
import { closed, closedSchema, dateTime, patchSchema } from './schema-parts.js';

/**
 * The alerting API's JSON Schemas (docs/alerting.md): alert channels, escalation
 * policies, acknowledgement. A channel's `config` is checked against its type's schema
 * (channels/<type>.ts) after these, so that problems name `/config/...`.
 */

/**
 * What a notification is about (docs/alerting.md, "What is sent"): `down` also stands for
 * a certificate expiring and a heartbeat missed (the incident's cause says which).
 */
export const NOTIFICATION_KINDS = ['down', 'up', 'reminder', 'escalation', 'acknowledged', 'test'] as const;
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/**
 * The variables a message template may use (Mustache, logic-less: `{{monitor.name}}`,
 * sections over `alerts` and over any variable to test it is set). Anything else is 400
 * INVALID_TEMPLATE. docs/alerting.md lists what each holds.
 */
export const TEMPLATE_VARIABLES = [
  'kind',
  // True for the notification's kind only: {{#kind_is.down}}…{{/kind_is.down}}.
  ...NOTIFICATION_KINDS.map((k) => `kind_is.${k}` as const),
  'title',
  'monitor.id',
  'monitor.name',
  'monitor.url',
  'monitor.link',
  'incident.id',
  'incident.started_at',
  'incident.resolved_at',
  'incident.duration',
  'incident.cause',
  'incident.acknowledged_by',
  'check.status_code',
  'check.error',
  'check.response_time',
  'check.created_at',
  'ack_link',
  'step',
  'reminder',
  'count',
  'grouped',
  'alerts',
] as const;
export type TemplateVariable = (typeof TEMPLATE_VARIABLES)[number];

const channelName = { type: 'string', minLength: 1, maxLength: 100, pattern: '^[^\\u0000-\\u001f]+$' } as const;
const channelId = { type: 'string', pattern: CHANNEL_ID_PATTERN } as const;
const policyId = { type: 'string', pattern: ESCALATION_POLICY_ID_PATTERN } as const;

/** A channel's own message templates: the title (subject) and the text, each replacing the default. */
const templates = closed([], {
  title: { type: 'string', minLength: 1, maxLength: A.maxTitleTemplateLength },
  text: { type: 'string', minLength: 1, maxLength: A.maxTemplateLength },
});

const channelSettings = {
  name: channelName,
  /** The type's config (docs/alerting.md); secrets are write-only. */
  config: { type: 'object' },
  /** Send `up` when the incident resolves (paging channels always resolve theirs). Default true. */
  send_resolved: { type: 'boolean' },
  /** A reminder every this many seconds while an incident is open and unacknowledged (0: none). Default 0. */
  remind_every_seconds: { type: 'integer', minimum: 0, maximum: A.maxDelaySeconds },
  /** At most this many reminders per incident. Default 3. */
  remind_max: { type: 'integer', minimum: 1, maximum: A.maxReminders },
  templates,
} as const;

/** Body of POST /api/channels. */
export const channelCreateSchema = closedSchema('ChannelCreate', ['type', 'name', 'config'], {
  type: { type: 'string', enum: CHANNEL_TYPES },
  /** Its configuration key (docs/as-code.md), unique among the tenant's channels. */
  key: configKeySchema,
  ...channelSettings,
});

/** Body of PATCH /api/channels/{id}: `config` whole (a secret sent back as shown keeps its stored value). */
export const channelPatchSchema = patchSchema('ChannelPatch', {
  /** A new key, or null to release it (a file no longer manages the channel). */
  key: nullableConfigKeySchema,
  ...channelSettings,
});

/** An alert channel as the API returns it: secrets masked. */
export const channelSchema = closedSchema(
  'Channel',
  [
    'id',
    'key',
    'type',
    'name',
    'config',
    'send_resolved',
    'remind_every_seconds',
    'remind_max',
    'templates',
    'version',
    'created_at',
    'updated_at',
  ],
  {
    id: channelId,
    /** Its configuration key, or null (not managed by a file). */
    key: nullableConfigKeySchema,
    type: { type: 'string', enum: CHANNEL_TYPES },
    ...channelSettings,
    version: { type: 'integer', minimum: 1 },
    created_at: dateTime,
    updated_at: dateTime,
  },
);

/** What POST /api/channels/{id}/test answers: what the provider said. */
export const channelTestResultSchema = closedSchema('ChannelTestResult', ['delivered', 'status_code', 'error'], {
  delivered: { type: 'boolean' },
  /** The provider's HTTP status (for email, the SMTP reply code); 0 without an answer. */
  status_code: { type: 'integer', minimum: 0, maximum: 999 },
  /** Why it failed without an answer (timeout, target_not_allowed, ...), or null. */
  error: { type: ['string', 'null'], maxLength: 64 },
  /** The start of the provider's answer (at most 1 KB), for a bad request's reason. */
  response: { type: 'string', maxLength: 1024 },
});

const step = closed(['channels'], {
  channels: { type: 'array', minItems: 1, maxItems: A.maxChannelsPerStep, uniqueItems: true, items: channelId },
  /** The next step is notified when nobody acknowledged within this long (the last step: not used). */
  escalate_after_seconds: { type: 'integer', minimum: 1, maximum: A.maxDelaySeconds },
});

const policySettings = {
  name: channelName,
  steps: { type: 'array', minItems: 1, maxItems: A.maxPolicySteps, items: step },
} as const;

/** Body of POST /api/escalation-policies. */
export const escalationPolicyCreateSchema = closedSchema('EscalationPolicyCreate', ['name', 'steps'], {
  /** Its configuration key (docs/as-code.md), unique among the tenant's policies. */
  key: configKeySchema,
  ...policySettings,
});
/** Body of PATCH /api/escalation-policies/{id}: `key` null releases it. */
export const escalationPolicyPatchSchema = patchSchema('EscalationPolicyPatch', {
  key: nullableConfigKeySchema,
  ...policySettings,
});
/** An escalation policy as the API returns it. */
export const escalationPolicySchema = closedSchema(
  'EscalationPolicy',
  ['id', 'key', 'name', 'steps', 'version', 'created_at', 'updated_at'],
  {
    id: policyId,
    key: nullableConfigKeySchema,
    ...policySettings,
    version: { type: 'integer', minimum: 1 },
    created_at: dateTime,
    updated_at: dateTime,
  },
);

export const ALERTING_SCHEMAS = [
  channelCreateSchema,
  channelPatchSchema,
  channelSchema,
  channelTestResultSchema,
  escalationPolicyCreateSchema,
  escalationPolicyPatchSchema,
  escalationPolicySchema,
] as const;
