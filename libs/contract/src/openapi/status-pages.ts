import { header, slugPath } from './parameters.js';
import {
  bodyErrors,
  envelopeOf,
  errors,
  jsonBody,
  jsonOk,
  keyErrors,
  ref,
  storeErrors,
  type Json,
} from './responses.js';

/**
 * The status page routes in the OpenAPI document (docs/console.md): the tenant's pages,
 * managed with an API key, and the published page anyone may read at /api/status/{slug}.
 */

const statusPageOk = (description: string): Json => jsonOk(description, envelopeOf(ref('StatusPage')));

export const statusPagePaths: Json = {
  '/api/status-pages': {
    get: {
      operationId: 'listStatusPages',
      summary: "The tenant's status pages, in slug order",
      security: [{ apiKey: ['monitors:read'] }],
      responses: {
        '200': jsonOk('Every status page this key may see.', envelopeOf({ type: 'array', items: ref('StatusPage') })),
        ...keyErrors('INVALID_PARAMETER'),
      },
    },
    post: {
      operationId: 'createStatusPage',
      summary: 'Publish a status page at /status/{slug}',
      description:
        "Lists the chosen monitors of the tenant by name, with their status, 90 days of daily uptime and open incidents; anyone may read it without a key. Slugs are unique across tenants (409 SLUG_TAKEN). Every monitor id must be a current monitor of the tenant (400 VALIDATION_FAILED naming it). An optional `key` names the page in a configuration file (docs/as-code.md): unique among the tenant's pages (409 KEY_TAKEN).",
      security: [{ apiKey: ['monitors:write'] }],
      requestBody: jsonBody('StatusPageCreate'),
      responses: {
        '201': statusPageOk('Published; Location names it.'),
        ...keyErrors(
          ...bodyErrors,
          'INVALID_PARAMETER',
          'SLUG_TAKEN',
          'KEY_TAKEN',
          'QUOTA_EXCEEDED',
          'MONITOR_NOT_ALLOWED',
        ),
      },
    },
  },
  '/api/status-pages/{slug}': {
    get: {
      operationId: 'getStatusPage',
      summary: 'A status page of the tenant',
      security: [{ apiKey: ['monitors:read'] }],
      parameters: [slugPath],
      responses: {
        '200': statusPageOk('The status page.'),
        ...keyErrors('INVALID_PARAMETER', 'STATUS_PAGE_NOT_FOUND'),
      },
    },
    patch: {
      operationId: 'updateStatusPage',
      summary: "Change a status page's title, description, monitors or key",
      description:
        'Only the fields given change; the slug stays. `key` sets or changes its configuration key (409 KEY_TAKEN when another page of the tenant has it), `key: null` releases it (a configuration file no longer manages the page).',
      security: [{ apiKey: ['monitors:write'] }],
      parameters: [slugPath],
      requestBody: jsonBody('StatusPagePatch'),
      responses: {
        '200': statusPageOk('The changed status page.'),
        ...keyErrors(
          ...bodyErrors,
          'INVALID_PARAMETER',
          'STATUS_PAGE_NOT_FOUND',
          'KEY_TAKEN',
          'PRECONDITION_FAILED',
          'MONITOR_NOT_ALLOWED',
        ),
      },
    },
    delete: {
      operationId: 'deleteStatusPage',
      summary: 'Take a status page down',
      security: [{ apiKey: ['monitors:write'] }],
      parameters: [slugPath],
      responses: {
        '200': jsonOk('Deleted.', envelopeOf({ type: 'null' })),
        ...keyErrors('INVALID_PARAMETER', 'STATUS_PAGE_NOT_FOUND', 'MONITOR_NOT_ALLOWED'),
      },
    },
  },
  '/api/status/{slug}': {
    get: {
      operationId: 'getPublicStatusPage',
      summary: 'A published status page, for anyone (no key)',
      description:
        'Names and statuses only: no monitor id, URL, header, status code or error. Computed at most once per STATUS_PAGE_CACHE_SECONDS per replica, by one computation however many ask at once; Cache-Control lets browsers and proxies keep it as long. When ClickHouse cannot be read, the last page computed is answered with `stale: true` and X-Status-Page-Stale: 1, and the computation is tried again at most once per STATUS_PAGE_CACHE_SECONDS; a page never computed answers 503 STORE_UNAVAILABLE.',
      security: [],
      parameters: [slugPath],
      responses: {
        '200': jsonOk('The page.', envelopeOf(ref('PublicStatusPage')), {
          'Cache-Control': header(
            '`public, max-age=N`: until the next computation (a stale page: until the next try).',
          ),
          'X-Status-Page-Stale': header('`1` when the page is stale (also `stale: true`); absent otherwise.', {
            type: 'string',
            enum: ['1'],
          }),
          Warning: header('`110 - "Response is Stale"` when the page is stale.'),
        }),
        ...errors(['INVALID_PARAMETER', 'STATUS_PAGE_NOT_FOUND', ...storeErrors]),
      },
    },
  },
};
