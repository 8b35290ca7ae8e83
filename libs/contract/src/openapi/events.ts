import { queryParam, timeParam } from './parameters.js';
import { envelopeOf, jsonOk, keyErrors, type Json } from './responses.js';

/**
 * The query service's events overview in the OpenAPI document: events per minute by
 * source and category, from the tenant's rollup (the console's events page).
 */

/** The body of /api/events/per-minute. */
const perMinuteSchema: Json = {
  type: 'object',
  required: ['from', 'to', 'truncated', 'minutes'],
  properties: {
    from: { type: 'string' },
    to: { type: 'string' },
    truncated: {
      type: 'boolean',
      description:
        'true: more than 50,000 rows (minute x source x category); the first 50,000 in time order are shown. Narrow the range.',
    },
    minutes: {
      type: 'array',
      items: {
        type: 'object',
        required: ['minute', 'source', 'category', 'events'],
        properties: {
          minute: { type: 'string' },
          source: { type: 'string' },
          category: { type: 'string' },
          events: { type: 'integer' },
        },
      },
    },
  },
};

export const eventPaths: Json = {
  '/api/events/per-minute': {
    get: {
      operationId: 'eventsPerMinute',
      summary: "Events per minute by source and category, from the tenant's rollup",
      description:
        'Over [from, to), rounded out to whole minutes; at most 24 hours; default the last hour. Minutes without events are left out.',
      security: [{ apiKey: ['events:read'] }],
      parameters: [
        timeParam('from', 'Start (inclusive).'),
        timeParam('to', 'End (exclusive); default now.'),
        queryParam(
          'bots',
          { type: 'string', enum: ['include', 'exclude', 'only'], default: 'include' },
          'include: every event; exclude: humans only (is_bot = 0); only: bots only (docs/enrichment.md).',
        ),
      ],
      responses: {
        '200': jsonOk('Counts per minute, source and category.', envelopeOf(perMinuteSchema)),
        ...keyErrors('INVALID_PARAMETER'),
      },
    },
  },
};
