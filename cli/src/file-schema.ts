import {
  CHANNEL_CONFIG_SCHEMAS,
  CHANNEL_SECRETS,
  CHANNEL_TYPES,
  CONFIG_DOCUMENT_VERSION,
  CONFIG_LIMITS,
  CONFIG_SECTIONS,
  channelCreateSchema,
  configKeySchema,
  escalationPolicyCreateSchema,
  monitorCreateSchema,
  secretPinSchema,
  statusPageCreateSchema,
  type ConfigSection,
} from '@telemetry/contract';

/**
 * The JSON Schema of telemetry.yaml (docs/as-code.md), made from the API's create bodies
 * (libs/contract) so that the file takes what the API takes: each item is its kind's
 * create body with a `key`, its references to other objects are keys, and its secrets
 * are `{env: NAME}` (never inline). `npm run docs` publishes it as
 * docs/telemetry.schema.json (for editors); `telemetry validate` checks files with it.
 */

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = { [k: string]: Json };

export const SCHEMA_FILE = 'docs/telemetry.schema.json';

/** A JSON pointer pattern inside an item: `/headers/*` (`*`: any property or index). */
export type PointerPattern = string;

/** Where an item refers to another object, by its key. */
export interface Reference {
  at: PointerPattern;
  to: ConfigSection;
}

/** Every reference of each section's items: what `telemetry validate` checks the file defines. */
export const REFERENCES: Record<ConfigSection, readonly Reference[]> = {
  channels: [],
  escalation_policies: [{ at: '/steps/*/channels/*', to: 'channels' }],
  monitors: [
    { at: '/channels/*', to: 'channels' },
    { at: '/escalation_policy', to: 'escalation_policies' },
  ],
  status_pages: [{ at: '/monitor_ids/*', to: 'monitors' }],
};

/** What a section's items are called, one of them (in messages). */
export const ITEM_NAMES: Record<ConfigSection, string> = {
  channels: 'channel',
  escalation_policies: 'escalation policy',
  monitors: 'monitor',
  status_pages: 'status page',
};

/**
 * Where a monitor keeps secrets (write-only in the API): its header values, its api_flow
 * and browser variables, its webhook signing secret; its URL when it carries credentials
 * (the URL may be written inline otherwise).
 */
export const MONITOR_SECRETS: readonly PointerPattern[] = [
  '/headers/*',
  '/variables/*',
  '/webhooks/*',
  '/webhook_secret',
];
export const MONITOR_OPTIONAL_SECRETS: readonly PointerPattern[] = ['/url'];

/** The secret positions of one item (a channel's depend on its type); `optional`: may be inline too. */
export function secretPatterns(section: ConfigSection, item: unknown): { at: PointerPattern; optional: boolean }[] {
  if (section === 'monitors') {
    return [
      ...MONITOR_SECRETS.map((at) => ({ at, optional: false })),
      ...MONITOR_OPTIONAL_SECRETS.map((at) => ({ at, optional: true })),
    ];
  }
  if (section === 'channels') {
    const type = (item as { type?: unknown } | null)?.type;
    const t = CHANNEL_TYPES.find((c) => c === type);
    return t ? CHANNEL_SECRETS[t].map((p) => ({ at: `/config${p}`, optional: false })) : [];
  }
  return [];
}

/** `{env: NAME}` (optionally with the fingerprint export writes): where a secret's value comes from. */
export const ENV_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';
const secretDefinition: Schema = {
  description:
    'A secret: the name of the environment variable holding it. With `fingerprint` (as `telemetry export` writes it), an unset variable keeps the stored value if it still has this fingerprint.',
  type: 'object',
  additionalProperties: false,
  required: ['env'],
  properties: {
    env: { type: 'string', minLength: 1, maxLength: 128, pattern: ENV_NAME_PATTERN },
    fingerprint: { ...(secretPinSchema.properties.fingerprint as unknown as Schema) },
  },
};

const keyDefinition: Schema = {
  description: 'The object’s key: unique within its kind in the tenant, stored on the object; references use it.',
  ...(configKeySchema as unknown as Schema),
};

const SECRET_REF: Schema = { $ref: '#/definitions/secret' };
const refTo = (section: ConfigSection): Schema => ({
  $ref: '#/definitions/key',
  description: `the key of a ${ITEM_NAMES[section]} (${section})`,
});

/** A deep copy of a contract schema without its `$id`, titles and descriptions (they are written for the console). */
function copy(schema: unknown): Schema {
  // `inProperties`: the keys are property names (a status page's `title`), not keywords.
  const strip = (v: unknown, inProperties = false): Json => {
    if (Array.isArray(v)) return v.map((x) => strip(x));
    if (v !== null && typeof v === 'object') {
      const out: Schema = {};
      for (const [k, x] of Object.entries(v)) {
        if (!inProperties && (k === '$id' || k === 'title' || k === 'description')) continue;
        out[k] = strip(x, !inProperties && k === 'properties');
      }
      return out;
    }
    return v as Json;
  };
  return strip(schema) as Schema;
}

/** Replaces the subschema at `pattern` (a pointer pattern into the instance) by `make(old)`. */
function replaceAt(schema: Schema, pattern: PointerPattern, make: (old: Schema) => Schema): void {
  const segments = pattern.split('/').slice(1);
  let parent: Schema = schema;
  for (const [i, seg] of segments.entries()) {
    let slot: [Schema, string];
    if (seg === '*') {
      if (parent.items && typeof parent.items === 'object') slot = [parent, 'items'];
      else if (parent.additionalProperties && typeof parent.additionalProperties === 'object') {
        slot = [parent, 'additionalProperties'];
      } else throw new Error(`schema has no items or additionalProperties at ${pattern}`);
    } else {
      const props = parent.properties as Schema | undefined;
      if (!props?.[seg]) throw new Error(`schema has no property ${seg} at ${pattern}`);
      slot = [props, seg];
    }
    const [holder, name] = slot;
    if (i === segments.length - 1) holder[name] = make(holder[name] as Schema);
    else parent = holder[name] as Schema;
  }
}

function item(section: ConfigSection, create: unknown, description: string): Schema {
  const body = copy(create);
  // The API's own `key` (optional, nullable) gives way to the file's (required).
  const { key: _apiKey, ...fields } = body.properties as Schema;
  const schema: Schema = {
    description,
    type: 'object',
    additionalProperties: false,
    required: ['key', ...((body.required as string[] | undefined) ?? []).filter((r) => r !== 'key')],
    properties: { key: { $ref: '#/definitions/key' }, ...fields },
  };
  for (const ref of REFERENCES[section]) {
    replaceAt(schema, ref.at, (old) =>
      // a nullable reference (escalation_policy: null) stays nullable
      Array.isArray(old.type) && old.type.includes('null')
        ? { anyOf: [refTo(ref.to), { type: 'null' }] }
        : refTo(ref.to),
    );
  }
  return schema;
}

function monitorItem(): Schema {
  const schema = item(
    'monitors',
    monitorCreateSchema,
    'A monitor: the fields of POST /api/monitors (docs/monitors.md), channels and escalation_policy as keys.',
  );
  for (const at of MONITOR_SECRETS) replaceAt(schema, at, () => SECRET_REF);
  for (const at of MONITOR_OPTIONAL_SECRETS) replaceAt(schema, at, (old) => ({ anyOf: [old, SECRET_REF] }));
  return schema;
}

function channelItem(): Schema {
  const schema = item(
    'channels',
    channelCreateSchema,
    'An alert channel: the fields of POST /api/channels (docs/alerting.md), its config’s secrets as {env: NAME}.',
  );
  // Each type's config, its secrets as references (if/then: the errors name the type's own fields).
  schema.allOf = CHANNEL_TYPES.map((t) => {
    const config = copy(CHANNEL_CONFIG_SCHEMAS[t]);
    for (const p of CHANNEL_SECRETS[t]) replaceAt(config, p, () => SECRET_REF);
    return {
      if: { type: 'object', required: ['type'], properties: { type: { const: t } } },
      then: { type: 'object', properties: { config } },
    };
  });
  return schema;
}

/** Top-level keys the file keeps to itself (anchors shared by items); they are not sent. */
export const EXTENSION_PATTERN = '^x-';

/** The schema of telemetry.yaml, as published in docs/telemetry.schema.json. */
export function telemetryFileSchema(): Schema {
  const definitions: Schema = {
    key: keyDefinition,
    secret: secretDefinition,
    channel: channelItem(),
    escalation_policy: item(
      'escalation_policies',
      escalationPolicyCreateSchema,
      'An escalation policy: the fields of POST /api/escalation-policies (docs/alerting.md), each step’s channels as keys.',
    ),
    monitor: monitorItem(),
    status_page: item(
      'status_pages',
      statusPageCreateSchema,
      'A status page: the fields of POST /api/status-pages, monitor_ids as monitor keys.',
    ),
  };
  const itemDef: Record<ConfigSection, string> = {
    channels: 'channel',
    escalation_policies: 'escalation_policy',
    monitors: 'monitor',
    status_pages: 'status_page',
  };
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: 'telemetry.schema.json',
    title: 'telemetry.yaml',
    description:
      'A tenant’s monitors, alert channels, escalation policies and status pages, managed by the telemetry CLI (docs/as-code.md). A section left out is not managed by the file.',
    type: 'object',
    additionalProperties: false,
    required: ['version'],
    // x-…: the file's own, not sent (a place for YAML anchors: `x-defaults: &defaults`)
    patternProperties: { [EXTENSION_PATTERN]: {} },
    properties: {
      version: { const: CONFIG_DOCUMENT_VERSION },
      ...Object.fromEntries(
        CONFIG_SECTIONS.map((s): [string, Schema] => [
          s,
          { type: 'array', maxItems: CONFIG_LIMITS.maxObjects, items: { $ref: `#/definitions/${itemDef[s]}` } },
        ]),
      ),
    },
    definitions,
  };
}

/** docs/telemetry.schema.json's text. */
export const schemaText = (): string => `${JSON.stringify(telemetryFileSchema(), null, 2)}\n`;
