import {
  ALERTING_LIMITS,
  CHANNEL_CONFIG_SCHEMAS,
  CHANNEL_SECRETS,
  CHANNEL_TYPES,
  TEMPLATE_VARIABLES,
  type ChannelType,
} from '@telemetry/contract/channel-catalog';
import type { FieldSpec } from './form-kit.js';

/**
 * The channel form's fields, from the contract: each type's config fields from its JSON
 * Schema (libs/contract/src/channels/<type>.ts: properties, required, enum, type, format,
 * bounds) and its secrets, and the settings every channel has.
 */

/** What people call each type (the menu). */
export const CHANNEL_TYPE_LABELS: Readonly<Record<ChannelType, string>> = {
  webhook: 'Signed webhook',
  email: 'Email',
  slack: 'Slack',
  teams: 'Microsoft Teams',
  discord: 'Discord',
  google_chat: 'Google Chat',
  mattermost: 'Mattermost',
  telegram: 'Telegram',
  ntfy: 'ntfy',
  pushover: 'Pushover',
  pagerduty: 'PagerDuty',
  opsgenie: 'Opsgenie',
};

export const TYPE_OPTIONS = CHANNEL_TYPES.map((t) => ({ value: t, text: CHANNEL_TYPE_LABELS[t] }));

/** The part of a JSON Schema the form reads. */
interface Schema {
  type?: string | readonly string[];
  enum?: readonly unknown[];
  format?: string;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  maxLength?: number;
  items?: Schema;
  required?: readonly string[];
  properties?: Readonly<Record<string, Schema>>;
}

const WORDS: Record<string, string> = { url: 'URL', api: 'API', id: 'ID', smtp: 'SMTP server', to: 'Send to' };

/** `api_url` as "API URL", `routing_key` as "Routing key". */
function humanize(name: string): string {
  const words = name.split('_').map((w) => WORDS[w] ?? w);
  const text = words.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** What the schema says of a value, in words: "comma-separated email addresses, up to 20", "1 to 5". */
function describe(s: Schema, required: boolean, secret: boolean): string | undefined {
  const types = [s.type ?? []].flat();
  const parts: string[] = [];
  if (types.includes('array')) {
    const item = s.items?.format === 'email' ? 'email addresses' : 'values';
    parts.push(`comma-separated ${item}${s.maxItems ? `, up to ${s.maxItems}` : ''}`);
  } else if (types.includes('integer') || types.includes('number')) {
    if (s.minimum !== undefined && s.maximum !== undefined) parts.push(`${s.minimum} to ${s.maximum}`);
  } else if (s.format === 'uri') parts.push('a URL');
  else if (s.format === 'email') parts.push('an email address');
  if (!required)
    parts.push(s.maxLength && s.maxLength >= 1000 ? 'optional' : "optional: the provider's default when empty");
  if (secret) parts.push('secret: shown masked once saved; leave it as shown to keep it');
  return parts.length > 0 ? parts.join('; ') : undefined;
}

function kindOf(s: Schema, secret: boolean): FieldSpec['kind'] {
  const types = [s.type ?? []].flat();
  if (s.enum) return 'select';
  if (types.includes('boolean')) return 'checkbox';
  if (types.includes('integer') || types.includes('number')) return 'number';
  if (types.includes('array')) return 'lines';
  if (s.format === 'uri') return 'url';
  if (secret) return 'secret';
  return (s.maxLength ?? 0) >= 1000 ? 'textarea' : 'text';
}

/** The fields of one schema's properties under `pointer`; an object's own properties are fields too. */
function fieldsOf(
  schema: Schema,
  pointer: string,
  secrets: readonly string[],
  label: string,
  required: boolean,
): FieldSpec[] {
  const out: FieldSpec[] = [];
  for (const [name, s] of Object.entries(schema.properties ?? {})) {
    const at = `${pointer}/${name}`;
    const mustGive = required && (schema.required ?? []).includes(name);
    const title = `${label}${humanize(name)}`;
    if (s.properties) {
      // Optional as a whole (email's own SMTP server): its fields are needed only once it is given.
      out.push(...fieldsOf(s, at, secrets, `${title}: `, mustGive));
      continue;
    }
    const secret = secrets.includes(at.replace(/^\/config/, ''));
    const kind = kindOf(s, secret);
    const hint = describe(s, mustGive, secret);
    out.push({
      pointer: at,
      label: title,
      kind,
      required: mustGive,
      ...(hint ? { hint } : {}),
      ...(s.maxLength ? { maxLength: s.maxLength } : {}),
      ...(s.enum
        ? {
            options: [
              ...(mustGive ? [] : [{ value: '', text: '(the provider’s default)' }]),
              ...s.enum.map((v) => ({ value: String(v), text: String(v) })),
            ],
          }
        : {}),
    });
  }
  return out;
}

/** A type's config fields, at `/config/...`. */
export function configFields(type: ChannelType): FieldSpec[] {
  return fieldsOf(CHANNEL_CONFIG_SCHEMAS[type], '/config', CHANNEL_SECRETS[type], '', true);
}

const VARIABLES = `Mustache; variables: ${TEMPLATE_VARIABLES.filter((v) => !v.startsWith('kind_is.')).join(', ')} (and kind_is.down etc. as sections)`;

/** The settings every channel has (channelSettings of alerting-schemas.ts), but its config. */
export const SETTING_FIELDS: FieldSpec[] = [
  { pointer: '/name', label: 'Name', kind: 'text', required: true, maxLength: 100 },
  { pointer: '/send_resolved', label: 'Send when resolved', kind: 'checkbox', hint: 'paging channels always resolve' },
  {
    pointer: '/remind_every_seconds',
    label: 'Remind every (seconds)',
    kind: 'number',
    hint: `while an incident is open and unacknowledged; 0: no reminders; at most ${ALERTING_LIMITS.maxDelaySeconds}`,
  },
  {
    pointer: '/remind_max',
    label: 'At most this many reminders',
    kind: 'number',
    hint: `per incident, 1 to ${ALERTING_LIMITS.maxReminders}; 3 when empty`,
  },
  {
    pointer: '/templates/title',
    label: 'Title template',
    kind: 'text',
    maxLength: ALERTING_LIMITS.maxTitleTemplateLength,
    hint: `replaces the default title (an email's subject); ${VARIABLES}`,
  },
  {
    pointer: '/templates/text',
    label: 'Text template',
    kind: 'textarea',
    maxLength: ALERTING_LIMITS.maxTemplateLength,
    hint: 'replaces the default text; the same variables',
  },
];
