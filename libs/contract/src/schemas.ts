import { CHECK_STATUSES, ID_PATTERN, LIMITS, NAME_PATTERN } from './limits.js';

/**
 * JSON Schemas, written once. They drive validation (ajv) in every service and are the
 * source for the API documentation. The TypeScript types beside them (types.ts) are
 * checked against them by a unit test that validates typed fixtures.
 */

const name = {
  type: 'string',
  minLength: 1,
  maxLength: LIMITS.maxNameLength,
  pattern: NAME_PATTERN,
} as const;

const dateTime = { type: 'string', format: 'date-time', maxLength: 64 } as const;

/** One element of `events` in POST /api/telemetry/events (seed 2.1, plus our optional fields). */
export const telemetryEventSchema = {
  $id: 'TelemetryEvent',
  type: 'object',
  additionalProperties: false,
  required: ['source', 'category', 'payload'],
  properties: {
    source: name,
    category: name,
    payload: { type: 'object' },
    /** Client event id: a retry with the same id (and key) is stored once. */
    id: { type: 'string', minLength: 1, maxLength: LIMITS.maxClientIdLength, pattern: ID_PATTERN },
    /** When the event happened, by the client's clock. */
    timestamp: dateTime,
  },
} as const;

/** Body of POST /api/telemetry/events (seed 4.1). */
export const ingestRequestSchema = {
  $id: 'IngestRequest',
  type: 'object',
  additionalProperties: false,
  required: ['events'],
  properties: {
    events: {
      type: 'array',
      minItems: 1,
      maxItems: LIMITS.maxEventsPerRequest,
      items: { $ref: 'TelemetryEvent' },
    },
    /** When the client sent the batch, by its clock; corrects the skew of `timestamp`. */
    sent_at: dateTime,
  },
} as const;

/** Value of a message on the events topic (JSON, UTF-8). Written by the gateway. */
export const eventMessageSchema = {
  $id: 'EventMessage',
  type: 'object',
  additionalProperties: false,
  required: ['v', 'event_id', 'key_id', 'source', 'category', 'payload', 'received_at'],
  properties: {
    v: { const: 1 },
    event_id: { type: 'string', format: 'uuid' },
    key_id: { type: 'string', minLength: 1, maxLength: 64 },
    source: name,
    category: name,
    payload: { type: 'object' },
    client_event_id: { type: 'string', minLength: 1, maxLength: LIMITS.maxClientIdLength },
    client_ts: dateTime,
    sent_at: dateTime,
    received_at: dateTime,
  },
} as const;

const monitorId = {
  type: 'string',
  minLength: 1,
  maxLength: LIMITS.maxMonitorIdLength,
  pattern: ID_PATTERN,
} as const;

const checkProperties = {
  id: { type: 'string', minLength: 1, maxLength: 128, pattern: ID_PATTERN },
  monitor_id: monitorId,
  status: { type: 'string', enum: CHECK_STATUSES },
  response_time: { type: 'number', minimum: 0, maximum: 86_400_000 },
  status_code: { type: 'integer', minimum: 0, maximum: 999 },
} as const;

/** Value of a message on the check-results topic (JSON, UTF-8). Written by check runners. */
export const checkMessageSchema = {
  $id: 'CheckMessage',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'monitor_id', 'status', 'response_time', 'status_code', 'created_at'],
  properties: { ...checkProperties, created_at: dateTime },
} as const;

/** A check as returned by GET /api/monitors/{id}/checks (seed 2.2). */
export const checkSchema = {
  $id: 'Check',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'monitor_id', 'status', 'response_time', 'status_code', 'created_at'],
  properties: {
    ...checkProperties,
    created_at: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$' },
  },
} as const;

export const monitorIdSchema = monitorId;

export const ALL_SCHEMAS = [
  telemetryEventSchema,
  ingestRequestSchema,
  eventMessageSchema,
  checkMessageSchema,
  checkSchema,
] as const;
