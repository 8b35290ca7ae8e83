import {
  cacheHeaders,
  cursorParam,
  header,
  ifNoneMatch,
  limitParam,
  linkHeader,
  monitorPath,
  notModified,
  queryParam,
  statusParam,
  timeParam,
} from './parameters.js';
import { envelopeOf, jsonOk, monitorErrors, ref, type Json } from './responses.js';
import { monitorIdSchema } from '../schemas.js';

/**
 * The query service's check history routes in the OpenAPI document: a monitor's checks
 * page by page, summarized per interval, or exported whole; and the summary's schema.
 */

export const checkPaths: Json = {
  '/api/monitors/{id}/checks': {
    get: {
      operationId: 'listChecks',
      summary: 'Check history of a monitor',
      description: 'Newest first by default; keyset paging on (created_at, id) with next_cursor and a Link header.',
      security: [{ apiKey: ['checks:read'] }],
      parameters: [
        monitorPath,
        limitParam(1000),
        queryParam('order', { type: 'string', enum: ['desc', 'asc'], default: 'desc' }),
        timeParam('from', 'Checks at or after this ISO 8601 date-time (with zone).'),
        timeParam('to', 'Checks strictly before this ISO 8601 date-time (with zone).'),
        statusParam,
        cursorParam,
        ifNoneMatch,
      ],
      responses: {
        '200': jsonOk('A page of checks.', ref('CheckPage'), { ...linkHeader, ...cacheHeaders }),
        ...notModified,
        ...monitorErrors(),
      },
    },
  },
  '/api/monitors/{id}/checks/{check_id}/screenshot': {
    get: {
      operationId: 'getCheckScreenshot',
      summary: "A browser check's failure screenshot (PNG)",
      description:
        'The path a check\'s `screenshot` field gives. Only the monitor\'s tenant reads it (API key or console session); kept SCREENSHOT_RETENTION_DAYS (docs/monitors.md, "Screenshots").',
      security: [{ apiKey: ['checks:read'] }],
      parameters: [
        monitorPath,
        {
          name: 'check_id',
          in: 'path',
          required: true,
          description: "The check's id.",
          schema: monitorIdSchema,
        },
        ifNoneMatch,
      ],
      responses: {
        '200': {
          description: 'The PNG (at most 500 KB).',
          headers: {
            ETag: header('A tag of the image: send it back in If-None-Match to get 304.'),
            'Cache-Control': header('`private, max-age=86400`: a screenshot never changes once stored.'),
            Vary: header('`Authorization, Cookie`: the answer depends on the key or session.'),
            'X-Content-Type-Options': header('`nosniff`.'),
          },
          content: { 'image/png': { schema: { type: 'string', format: 'binary' } } },
        },
        ...notModified,
        ...monitorErrors('SCREENSHOT_NOT_FOUND'),
      },
    },
  },
  '/api/monitors/{id}/checks/summary': {
    get: {
      operationId: 'summarizeChecks',
      summary: 'Counts, uptime and response-time quantiles per interval',
      security: [{ apiKey: ['checks:read'] }],
      parameters: [
        monitorPath,
        timeParam('from', 'Rounded down to the interval.'),
        timeParam('to', 'Rounded up to the interval; exclusive.'),
        queryParam('interval', { type: 'string', enum: ['hour', 'day'], default: 'hour' }),
        ifNoneMatch,
      ],
      responses: {
        '200': jsonOk('The summary.', ref('SummarySuccess'), cacheHeaders),
        ...notModified,
        ...monitorErrors(),
      },
    },
  },
  '/api/monitors/{id}/checks/export': {
    get: {
      operationId: 'exportChecks',
      summary: 'Stream the raw history of a range, oldest first',
      security: [{ apiKey: ['checks:read'] }],
      parameters: [
        monitorPath,
        timeParam('from', 'Checks at or after this date-time (default: EXPORT_MAX_RANGE_DAYS before `to`).'),
        timeParam('to', 'Checks strictly before this date-time (default: now).'),
        statusParam,
        queryParam('format', { type: 'string', enum: ['ndjson', 'csv'], default: 'ndjson' }),
      ],
      responses: {
        '200': {
          description: 'One check per line.',
          content: {
            'application/x-ndjson': { schema: { type: 'string' } },
            'text/csv': { schema: { type: 'string' } },
          },
        },
        ...monitorErrors('RATE_LIMITED'),
      },
    },
  },
};

/** Counts, uptime and response-time quantiles of a range or an interval. */
const stats = {
  type: 'object',
  required: ['checks', 'up', 'down', 'degraded', 'uptime_percent', 'response_time'],
  properties: {
    checks: { type: 'integer' },
    up: { type: 'integer' },
    down: { type: 'integer' },
    degraded: { type: 'integer' },
    uptime_percent: { type: ['number', 'null'] },
    response_time: {
      oneOf: [
        { type: 'null' },
        { type: 'object', properties: { p50: { type: 'number' }, p95: { type: 'number' }, p99: { type: 'number' } } },
      ],
    },
  },
};

/** The body of /checks/summary: the range's totals and SLA, and the same figures per interval. */
export const summarySuccessSchema: Json = envelopeOf({
  type: 'object',
  required: ['monitor_id', 'interval', 'from', 'to', 'total', 'sla', 'intervals'],
  properties: {
    monitor_id: { type: 'string' },
    interval: { type: 'string', enum: ['hour', 'day'] },
    from: { type: 'string' },
    to: { type: 'string' },
    total: stats,
    sla: {
      type: 'object',
      description:
        'From the incidents overlapping the range, each counted for its part inside it and before now (an open one lasts until now).',
      required: [
        'availability_percent',
        'downtime_seconds',
        'incidents',
        'longest_incident_seconds',
        'mean_incident_seconds',
      ],
      properties: {
        availability_percent: {
          type: ['number', 'null'],
          description: '100 x (1 - downtime / the length of the range up to now); null before it begins.',
        },
        downtime_seconds: { type: 'integer', minimum: 0 },
        incidents: { type: 'integer', minimum: 0 },
        longest_incident_seconds: { type: ['integer', 'null'], minimum: 0 },
        mean_incident_seconds: { type: ['number', 'null'], minimum: 0 },
      },
    },
    intervals: {
      type: 'array',
      items: {
        allOf: [{ type: 'object', required: ['start'], properties: { start: { type: 'string' } } }, stats],
      },
    },
  },
});
