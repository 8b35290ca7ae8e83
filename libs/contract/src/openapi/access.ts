import { ACCESS_LIMITS, AUDIT_OUTCOMES } from '../access.js';
import { AUDIT_ACTION_FILTER_PATTERN } from '../access-schemas.js';
import { cursorParam, linkHeader, queryParam, timeParam } from './parameters.js';
import { bodyErrors, envelopeOf, jsonBody, jsonOk, keyErrors, ref, type Json } from './responses.js';

/**
 * The audit log and the keys routes in the OpenAPI document (docs/access.md, "Audit log"
 * and "API keys"): an API key with the scope, or a signed-in member whose role holds it.
 */

const keyView: Json = {
  type: 'object',
  required: [
    'id',
    'kind',
    'name',
    'scopes',
    'monitor_ids',
    'allowed_origins',
    'allowed_sources',
    'created_at',
    'created_by',
    'expires_at',
    'revoked',
    'ip_storage',
  ],
  properties: {
    id: { type: 'string', pattern: '^[0-9a-f]{16}$' },
    kind: { type: 'string', enum: ['api', 'telemetry'] },
    name: { type: 'string' },
    scopes: { type: 'array', items: { type: 'string' } },
    monitor_ids: { type: 'array', items: { type: 'string' } },
    allowed_origins: { type: 'array', items: { type: 'string' } },
    allowed_sources: { type: 'array', items: { type: 'string' } },
    created_at: { type: 'string', format: 'date-time' },
    created_by: {
      type: 'string',
      description: "A person's id (per_…), key:<key id>, operator (npm run keys), or empty (before people).",
    },
    expires_at: { type: ['string', 'null'], format: 'date-time' },
    revoked: { type: 'boolean' },
    ip_storage: {
      type: 'string',
      enum: ['full', 'truncated', 'none'],
      description:
        "What ClickHouse keeps of a telemetry key's events' client addresses: full, truncated (IPv4 /24, IPv6 /48) or none (docs/enrichment.md).",
    },
  },
};

export const accessPaths: Json = {
  '/api/audit': {
    get: {
      operationId: 'listAuditEntries',
      summary: "The tenant's audit log, newest first",
      description:
        'Entries of the caller’s tenant only, folded by id (a redelivered copy shows once). `action` is exact, or a prefix ending in `.`; `actor` a person’s id, a key’s id or an email.',
      security: [{ apiKey: ['audit:read'] }],
      parameters: [
        timeParam('from', 'Entries at or after this time (RFC 3339).'),
        timeParam('to', 'Entries before this time (RFC 3339).'),
        queryParam('actor', { type: 'string', maxLength: 254 }, "A person's id, a key's id or an email."),
        queryParam('action', { type: 'string', maxLength: 64, pattern: AUDIT_ACTION_FILTER_PATTERN }),
        queryParam('target_type', { type: 'string', pattern: '^[a-z][a-z_]{0,63}$' }),
        queryParam('target_id', { type: 'string', maxLength: 300 }),
        queryParam('outcome', { type: 'string', enum: AUDIT_OUTCOMES }),
        queryParam('limit', {
          type: 'integer',
          minimum: 1,
          maximum: ACCESS_LIMITS.maxAuditPage,
          default: ACCESS_LIMITS.defaultAuditPage,
        }),
        cursorParam,
      ],
      responses: {
        '200': jsonOk('A page of entries.', ref('AuditPage'), linkHeader),
        ...keyErrors('INVALID_PARAMETER'),
      },
    },
  },
  '/api/keys': {
    get: {
      operationId: 'listKeys',
      summary: "The tenant's API and telemetry keys (never a secret)",
      security: [{ apiKey: ['keys:read'] }],
      responses: {
        '200': jsonOk('Every key, newest first.', envelopeOf({ type: 'array', items: keyView })),
        ...keyErrors('INVALID_PARAMETER'),
      },
    },
    post: {
      operationId: 'createKey',
      summary: 'Make a key; its secret is in this answer only',
      description: 'A scope the caller lacks is refused (403 INSUFFICIENT_SCOPE).',
      security: [{ apiKey: ['keys:write'] }],
      requestBody: jsonBody('KeyCreate'),
      responses: {
        '201': jsonOk(
          'Made.',
          envelopeOf({
            allOf: [keyView, { type: 'object', required: ['key'], properties: { key: { type: 'string' } } }],
          }),
        ),
        ...keyErrors(...bodyErrors, 'INVALID_PARAMETER', 'MONITOR_NOT_ALLOWED'),
      },
    },
  },
  '/api/keys/{key_id}': {
    patch: {
      operationId: 'updateKey',
      summary: "Change what a telemetry key's events keep of the client's address",
      description:
        'From the next event on, within a second on every gateway (docs/enrichment.md, "What is stored of the address"); events already sent keep the setting they were sent with.',
      security: [{ apiKey: ['keys:write'] }],
      parameters: [
        { name: 'key_id', in: 'path', required: true, schema: { type: 'string' }, description: 'The key id.' },
      ],
      requestBody: jsonBody('KeyPatch'),
      responses: {
        '200': jsonOk('The key as it is now.', envelopeOf(keyView)),
        ...keyErrors(...bodyErrors, 'INVALID_PARAMETER', 'KEY_NOT_FOUND', 'MONITOR_NOT_ALLOWED'),
      },
    },
    delete: {
      operationId: 'revokeKey',
      summary: 'Revoke a key of the tenant: refused everywhere within a second',
      security: [{ apiKey: ['keys:write'] }],
      parameters: [
        { name: 'key_id', in: 'path', required: true, schema: { type: 'string' }, description: 'The key id.' },
      ],
      responses: {
        '200': jsonOk('Revoked.', envelopeOf({ type: 'object' })),
        ...keyErrors('INVALID_PARAMETER', 'KEY_NOT_FOUND', 'MONITOR_NOT_ALLOWED'),
      },
    },
  },
};
