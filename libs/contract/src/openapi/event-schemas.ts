import { cursorParam, header, ifMatch, limitParam, linkHeader } from './parameters.js';
import { bodyErrors, envelopeOf, jsonBody, jsonOk, keyErrors, pageOf, ref, type Json } from './responses.js';

/**
 * /api/event-schemas in the OpenAPI document (docs/event-schemas.md): a tenant's JSON
 * Schemas per (source, category), their versions and their action.
 */

const idPath: Json = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'Event schema identifier (sch_…).',
  schema: { type: 'string', pattern: '^sch_[a-z0-9]{20}$' },
};
const read = [{ apiKey: ['event_schemas:read'] }];
const write = [{ apiKey: ['event_schemas:write'] }];
const versionHeader = { ETag: header('The version: send it back in If-Match to change it safely.') };
const one = (description: string): Json => jsonOk(description, envelopeOf(ref('EventSchema')), versionHeader);

export const eventSchemaPaths: Json = {
  '/api/event-schemas': {
    get: {
      operationId: 'listEventSchemas',
      summary: "The tenant's event schemas, by id (without their versions)",
      security: read,
      parameters: [limitParam(200), cursorParam],
      responses: {
        '200': jsonOk('A page of schemas.', pageOf('EventSchema'), linkHeader),
        ...keyErrors('INVALID_PARAMETER'),
      },
    },
    post: {
      operationId: 'createEventSchema',
      summary: 'Register a JSON Schema for the payload of events of one (source, category)',
      description:
        'The schema is JSON Schema draft 2020-12, compiled by ajv in strict mode; refused (400 INVALID_SCHEMA) when it is larger than 32 KiB, deeper than 32 levels, refers outside itself, uses format regex or an unknown format, or has a pattern the linear-time engine cannot run (backreferences, lookahead). Its version 1 is the schema given; the gateways validate events against it within about a second.',
      security: write,
      requestBody: jsonBody('EventSchemaCreate'),
      responses: {
        '201': one('Created, with its versions; Location names it.'),
        ...keyErrors(...bodyErrors, 'INVALID_PARAMETER', 'INVALID_SCHEMA', 'SCHEMA_EXISTS', 'QUOTA_EXCEEDED'),
      },
    },
  },
  '/api/event-schemas/{id}': {
    get: {
      operationId: 'getEventSchema',
      summary: 'An event schema with every version, newest first',
      security: read,
      parameters: [idPath],
      responses: { '200': one('The schema.'), ...keyErrors('INVALID_PARAMETER', 'EVENT_SCHEMA_NOT_FOUND') },
    },
    patch: {
      operationId: 'updateEventSchema',
      summary: "Change a schema's action (reject or route)",
      security: write,
      parameters: [idPath, ifMatch],
      requestBody: jsonBody('EventSchemaPatch'),
      responses: {
        '200': one('The changed schema.'),
        ...keyErrors(...bodyErrors, 'INVALID_PARAMETER', 'EVENT_SCHEMA_NOT_FOUND', 'PRECONDITION_FAILED'),
      },
    },
    delete: {
      operationId: 'deleteEventSchema',
      summary: 'Delete a schema and its versions (its events are no longer checked; failed_events rows stay)',
      security: write,
      parameters: [idPath, ifMatch],
      responses: {
        '200': jsonOk('Deleted.', envelopeOf({ type: 'null' })),
        ...keyErrors('INVALID_PARAMETER', 'EVENT_SCHEMA_NOT_FOUND', 'PRECONDITION_FAILED'),
      },
    },
  },
  '/api/event-schemas/{id}/versions': {
    post: {
      operationId: 'addEventSchemaVersion',
      summary: 'Add a version: events are validated against the newest one',
      security: write,
      parameters: [idPath, ifMatch],
      requestBody: jsonBody('EventSchemaVersionCreate'),
      responses: {
        '201': one('The schema with its new version.'),
        ...keyErrors(
          ...bodyErrors,
          'INVALID_PARAMETER',
          'INVALID_SCHEMA',
          'EVENT_SCHEMA_NOT_FOUND',
          'PRECONDITION_FAILED',
          'QUOTA_EXCEEDED',
        ),
      },
    },
  },
};
