import { DELETION_ID_PATTERN, DELETION_LIMITS } from '../deletions.js';
import { cursorParam, linkHeader, queryParam } from './parameters.js';
import { bodyErrors, envelopeOf, jsonBody, jsonOk, keyErrors, pageOf, ref, type Json } from './responses.js';

/**
 * Deletion on request in the OpenAPI document (docs/deletions.md): deletions:write asks,
 * deletions:read follows. The tenant is always the caller's.
 */
export const deletionPaths: Json = {
  '/api/deletions': {
    post: {
      operationId: 'createDeletion',
      summary: "Delete the events of user ids and anonymous ids of the caller's tenant, and drop their new events",
      description:
        "202: the request and the ids' suppression are committed (PostgreSQL); new events of the ids are dropped by every gateway within a second, and the stored ones are deleted in the background (GET /api/deletions/{id} shows how far it got). Ids are the tenant's: another tenant's events with the same ids are never touched.",
      security: [{ apiKey: ['deletions:write'] }],
      requestBody: jsonBody('DeletionCreate'),
      responses: {
        '202': jsonOk('Accepted: pending until the stream consumer runs it.', envelopeOf(ref('Deletion')), {
          Location: { description: '/api/deletions/{id}', schema: { type: 'string' } },
        }),
        // RATE_LIMITED: the tenant has DELETION_LIMITS.maxOpenPerTenant deletions open (Retry-After);
        // QUOTA_EXCEEDED: its suppressed ids would pass DELETION_LIMITS.maxSuppressionsPerTenant.
        ...keyErrors(...bodyErrors, 'INVALID_PARAMETER', 'TOO_MANY_IDS', 'RATE_LIMITED', 'QUOTA_EXCEEDED'),
      },
    },
    get: {
      operationId: 'listDeletions',
      summary: "The tenant's deletion requests, newest first",
      security: [{ apiKey: ['deletions:read'] }],
      parameters: [
        queryParam('limit', {
          type: 'integer',
          minimum: 1,
          maximum: DELETION_LIMITS.maxPage,
          default: DELETION_LIMITS.defaultPage,
        }),
        cursorParam,
      ],
      responses: {
        '200': jsonOk('A page of deletions.', pageOf('Deletion'), linkHeader),
        ...keyErrors('INVALID_PARAMETER'),
      },
    },
  },
  '/api/deletions/{id}': {
    get: {
      operationId: 'getDeletion',
      summary: 'One deletion: its state and the rows deleted per table so far',
      security: [{ apiKey: ['deletions:read'] }],
      parameters: [
        {
          name: 'id',
          in: 'path',
          required: true,
          description: 'Deletion identifier (del_…).',
          schema: { type: 'string', pattern: DELETION_ID_PATTERN },
        },
      ],
      responses: {
        '200': jsonOk('The deletion.', envelopeOf(ref('Deletion'))),
        ...keyErrors('INVALID_PARAMETER', 'DELETION_NOT_FOUND'),
      },
    },
  },
};
