import type { ValidateFunction } from 'ajv';
import { createAjv } from './ajv.js';
import { configKeySchema } from './config-key.js';

/**
 * Monitoring as code (docs/as-code.md): a tenant's monitors, alert channels, escalation
 * policies and status pages described by one document (`telemetry.yaml`, read by the
 * `telemetry` CLI), planned and applied through `POST /api/config`, exported with
 * `GET /api/config`. Each object is named by its `key`, unique within its tenant and kind
 * and stored on the object, so the file never needs ids: references between objects
 * (a monitor's channels, a page's monitors) are keys.
 */

/** The document's sections, in the order they are created (a section refers only to those before it). */
export const CONFIG_SECTIONS = ['channels', 'escalation_policies', 'monitors', 'status_pages'] as const;
export type ConfigSection = (typeof CONFIG_SECTIONS)[number];

/** The kind of object a section holds (as a plan's changes name it). */
export const CONFIG_KINDS = {
  channels: 'channel',
  escalation_policies: 'escalation_policy',
  monitors: 'monitor',
  status_pages: 'status_page',
} as const satisfies Record<ConfigSection, string>;
export type ConfigKind = (typeof CONFIG_KINDS)[ConfigSection];

export { CONFIG_KEY_PATTERN, configKeySchema, nullableConfigKeySchema } from './config-key.js';

/** The document's version this server reads. */
export const CONFIG_DOCUMENT_VERSION = 1;

export const CONFIG_LIMITS = {
  /** Objects in one document, all sections together. */
  maxObjects: 2000,
  /** Bytes of a POST /api/config body. */
  maxBodyBytes: 4 * 1024 * 1024,
} as const;

/**
 * In POST /api/config, where a secret's value goes: the stored value whose fingerprint this
 * is (as GET answers it in `secret_fingerprints` and GET /api/config exports it). Sent when
 * the file names the secret's environment variable and it is not set: the stored value is
 * kept if, and only if, it still has this fingerprint.
 */
export const secretPinSchema = {
  $id: 'SecretPin',
  type: 'object',
  additionalProperties: false,
  required: ['fingerprint'],
  properties: {
    fingerprint: {
      type: 'string',
      minLength: 1,
      maxLength: 100,
      pattern: '^fp1\\.[A-Za-z0-9_-]{1,32}\\.[A-Za-z0-9_-]{22}$',
    },
  },
} as const;
export interface SecretPin {
  fingerprint: string;
}

/**
 * POST /api/config's body and GET /api/config's `data.document`: each section a list of
 * objects, each with its `key` and, for the rest, the fields its own API's create body
 * has (POST /api/monitors, …), references as keys and secrets as values or SecretPins.
 * Each item is validated by its kind (the same rules as its API), not by this schema.
 */
export const configDocumentSchema = {
  $id: 'ConfigDocument',
  type: 'object',
  additionalProperties: false,
  required: ['version'],
  properties: {
    version: { const: CONFIG_DOCUMENT_VERSION },
    ...Object.fromEntries(
      CONFIG_SECTIONS.map((s) => [
        s,
        {
          type: 'array',
          maxItems: CONFIG_LIMITS.maxObjects,
          items: { type: 'object', required: ['key'], properties: { key: configKeySchema } },
        },
      ]),
    ),
  },
} as const;

export type ConfigItem = { key: string } & Record<string, unknown>;
export type ConfigDocument = { version: typeof CONFIG_DOCUMENT_VERSION } & Partial<Record<ConfigSection, ConfigItem[]>>;

export const CONFIG_ACTIONS = ['create', 'update', 'delete'] as const;
export type ConfigAction = (typeof CONFIG_ACTIONS)[number];

/** One change of a plan. */
export interface ConfigChange {
  kind: ConfigKind;
  key: string;
  action: ConfigAction;
  /** The object's id (a status page's slug); for a create, the id it gets (or got). */
  id: string;
  /** The top-level fields that change (an update), or are set (a create); [] for a delete. */
  fields: string[];
}

/** POST /api/config's answer: what changes (dry run) or changed. */
export interface ConfigPlan {
  /** False for a dry run: nothing was written. */
  applied: boolean;
  /** Only what changes, in the order it is applied. */
  changes: ConfigChange[];
  /** How many objects of the document, and of the tenant's managed ones, do what. */
  summary: { create: number; update: number; delete: number; unchanged: number };
}

export const configPlanSchema = {
  $id: 'ConfigPlan',
  type: 'object',
  additionalProperties: false,
  required: ['applied', 'changes', 'summary'],
  properties: {
    applied: { type: 'boolean' },
    changes: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['kind', 'key', 'action', 'id', 'fields'],
        properties: {
          kind: { enum: Object.values(CONFIG_KINDS) },
          key: configKeySchema,
          action: { enum: CONFIG_ACTIONS },
          id: { type: 'string' },
          fields: { type: 'array', items: { type: 'string' } },
        },
      },
    },
    summary: {
      type: 'object',
      additionalProperties: false,
      required: ['create', 'update', 'delete', 'unchanged'],
      properties: Object.fromEntries(
        ['create', 'update', 'delete', 'unchanged'].map((k) => [k, { type: 'integer', minimum: 0 }]),
      ),
    },
  },
} as const;

export const CONFIG_SCHEMAS = [secretPinSchema, configDocumentSchema, configPlanSchema] as const;

export interface ConfigValidators {
  document: ValidateFunction<ConfigDocument>;
  secretPin: ValidateFunction<SecretPin>;
}

export function createConfigValidators(): ConfigValidators {
  const ajv = createAjv(CONFIG_SCHEMAS);
  return {
    document: ajv.getSchema<ConfigDocument>('ConfigDocument')!,
    secretPin: ajv.getSchema<SecretPin>('SecretPin')!,
  };
}
