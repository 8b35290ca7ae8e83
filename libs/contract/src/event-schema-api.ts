import type { ValidateFunction } from 'ajv';
import { createAjv } from './ajv.js';

/**
 * The bodies of /api/event-schemas (docs/event-schemas.md): validated by the query service,
 * and the OpenAPI document's schemas. The JSON Schema a tenant submits (`schema`) is an
 * object here; what it may be is checked apart (event-schema.ts, INVALID_SCHEMA).
 */
/** Limits of event schemas (docs/event-schemas.md, "Limits and refusals"). */
export const EVENT_SCHEMA_LIMITS = {
  /** A schema's JSON text, in bytes (UTF-8). */
  maxSchemaBytes: 32 * 1024,
  /** Nesting of objects and arrays in a schema's JSON. */
  maxSchemaDepth: 32,
  /**
   * Subschemas of a schema with every `$ref` followed (its target counted each time it is
   * named): what validation may visit at one place of a payload. A chain of `$defs` that
   * each name the next twice would double it per link.
   */
  maxExpandedSubschemas: 1000,
  /** `uniqueItems: true` only with a `maxItems` of at most this (ajv compares pairs of items). */
  maxUniqueItems: 100,
  /** Schemas per tenant. */
  maxSchemasPerTenant: 200,
  /** Versions per schema. */
  maxVersionsPerSchema: 100,
  /** A source's or category's length (as an event's). */
  maxNameLength: 100,
} as const;

/** The draft a schema is written in; `$schema`, when given, must name it. */
export const EVENT_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** The formats a schema may use (ajv-formats' full checks); any other `format` is refused. */
export const EVENT_SCHEMA_FORMATS = ['date-time', 'date', 'time', 'email', 'uuid', 'uri', 'ipv4', 'ipv6', 'hostname'];

/** What a schema does to an event that violates it. */
export const EVENT_SCHEMA_ACTIONS = ['reject', 'route'] as const;
export type EventSchemaAction = (typeof EVENT_SCHEMA_ACTIONS)[number];

const name = {
  type: 'string',
  minLength: 1,
  maxLength: EVENT_SCHEMA_LIMITS.maxNameLength,
  pattern: '^[A-Za-z0-9_.:-]+$',
} as const;
const action = { type: 'string', enum: ['reject', 'route'] } as const;
const schema = { type: 'object' } as const;

export const eventSchemaCreateSchema = {
  $id: 'EventSchemaCreate',
  type: 'object',
  additionalProperties: false,
  required: ['source', 'category', 'schema', 'action'],
  properties: { source: name, category: name, schema, action },
} as const;

export const eventSchemaVersionCreateSchema = {
  $id: 'EventSchemaVersionCreate',
  type: 'object',
  additionalProperties: false,
  required: ['schema'],
  properties: { schema },
} as const;

export const eventSchemaPatchSchema = {
  $id: 'EventSchemaPatch',
  type: 'object',
  additionalProperties: false,
  required: ['action'],
  properties: { action },
} as const;

/** An event schema as the API shows it. */
export const eventSchemaViewSchema = {
  $id: 'EventSchema',
  type: 'object',
  required: [
    'id',
    'source',
    'category',
    'action',
    'latest_version',
    'version',
    'created_by',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: { type: 'string', pattern: '^sch_[a-z0-9]{20}$' },
    source: { type: 'string' },
    category: { type: 'string' },
    action,
    latest_version: {
      type: 'integer',
      minimum: 1,
      description: 'The newest version: the one events are validated against',
    },
    version: {
      type: 'integer',
      minimum: 1,
      description: "The object's version (its ETag): changes with the action and each new schema version",
    },
    created_by: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
    versions: {
      type: 'array',
      description: 'Every version, newest first (GET of one schema only)',
      items: {
        type: 'object',
        required: ['version', 'schema', 'created_by', 'created_at'],
        properties: {
          version: { type: 'integer', minimum: 1 },
          schema: { type: 'object' },
          created_by: { type: 'string', description: "Who made it: a person's id or an API key's id" },
          created_at: { type: 'string', format: 'date-time' },
        },
      },
    },
  },
} as const;

export interface EventSchemaCreate {
  source: string;
  category: string;
  schema: object;
  action: 'reject' | 'route';
}

/** The validators of these bodies (the query service compiles them once). */
export function createEventSchemaApiValidators(): {
  create: ValidateFunction<EventSchemaCreate>;
  version: ValidateFunction<{ schema: object }>;
  patch: ValidateFunction<{ action: 'reject' | 'route' }>;
} {
  const ajv = createAjv([eventSchemaCreateSchema, eventSchemaVersionCreateSchema, eventSchemaPatchSchema]);
  return {
    create: ajv.getSchema<EventSchemaCreate>('EventSchemaCreate')!,
    version: ajv.getSchema<{ schema: object }>('EventSchemaVersionCreate')!,
    patch: ajv.getSchema<{ action: 'reject' | 'route' }>('EventSchemaPatch')!,
  };
}
