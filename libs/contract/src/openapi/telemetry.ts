import { ERROR_CODES } from '../error-codes.js';
import { LIMITS } from '../limits.js';
import { telemetryEventSchema } from '../schemas.js';
import { queryParam, rateHeaders } from './parameters.js';
import { errors, jsonOk, ref, type Json } from './responses.js';

/**
 * The ingest gateway's telemetry routes in the OpenAPI document: a batch of events as JSON
 * (or the same JSON as text/plain, as navigator.sendBeacon sends it) with its CORS
 * preflight, and one event from an image request for pages that can send nothing else.
 */

export const telemetryPaths: Json = {
  '/api/telemetry/events': {
    post: {
      operationId: 'ingestEvents',
      summary: 'Ingest a batch of telemetry events',
      description: `Answers 200 only after Kafka acknowledged every event. Any other answer means none was accepted, except KAFKA_UNAVAILABLE (and KAFKA_REJECTED or KAFKA_MESSAGE_TOO_LARGE for a request that was split): then some events may have been stored, and a retry gives events with a client id the same event_id. The body may be sent with Content-Encoding: gzip. At most ${LIMITS.maxEventsPerRequest} events, ${LIMITS.maxBodyBytes} bytes (after gzip), ${LIMITS.maxEventBytes} bytes per event, nesting depth ${LIMITS.maxJsonDepth}.`,
      security: [{ accessKeyHeader: [] }, { accessKeyQuery: [] }],
      parameters: [
        queryParam(
          'return',
          { type: 'string', enum: ['ids'] },
          "ids: `data` lists each event's stored event_id, in the order of `events` (an event with a client id gets the same one on every retry). Without it `data` is null.",
        ),
      ],
      requestBody: {
        required: true,
        description: 'JSON; sent as text/plain it is the same JSON, as navigator.sendBeacon sends a string.',
        content: {
          'application/json': { schema: ref('IngestRequest') },
          'text/plain': { schema: { type: 'string' } },
        },
      },
      responses: {
        '200': jsonOk('Every event is acknowledged by Kafka.', ref('IngestSuccess'), rateHeaders),
        ...errors([
          'INVALID_JSON',
          'VALIDATION_FAILED',
          'INVALID_PARAMETER',
          'MISSING_CREDENTIALS',
          'INVALID_CREDENTIALS',
          'ORIGIN_NOT_ALLOWED',
          'SOURCE_NOT_ALLOWED',
          'SCHEMA_VIOLATION',
          'PAYLOAD_TOO_LARGE',
          'BATCH_TOO_LARGE',
          'EVENT_TOO_LARGE',
          'KAFKA_MESSAGE_TOO_LARGE',
          'UNSUPPORTED_MEDIA_TYPE',
          'RATE_LIMITED',
          'INTERNAL_ERROR',
          'KAFKA_REJECTED',
          'KAFKA_UNAVAILABLE',
          'OVERLOADED',
        ]),
      },
    },
    options: {
      operationId: 'ingestEventsPreflight',
      summary: 'CORS preflight',
      responses: { '204': { description: 'Preflight answered; no credentials are used.' } },
    },
  },
  '/api/telemetry/pixel.gif': {
    get: {
      operationId: 'ingestPixel',
      summary: 'Ingest one event from an image request',
      description:
        'Always a no-store 1x1 GIF; the status is 200 only when Kafka acknowledged the event, and X-Error-Code carries the error code otherwise.',
      security: [{ accessKeyQuery: [] }, { accessKeyHeader: [] }],
      parameters: [
        { name: 'source', in: 'query', required: true, schema: telemetryEventSchema.properties.source },
        { name: 'category', in: 'query', required: true, schema: telemetryEventSchema.properties.category },
        queryParam('payload', { type: 'string' }, 'One URL-encoded JSON object.'),
        queryParam('id', telemetryEventSchema.properties.id),
        queryParam('timestamp', { type: 'string', format: 'date-time' }),
        queryParam('anonymous_id', telemetryEventSchema.properties.anonymous_id, 'The visitor before they are known.'),
        queryParam('user_id', telemetryEventSchema.properties.user_id, 'The known user.'),
      ],
      responses: Object.fromEntries(
        ['200', '400', '401', '403', '413', '429', '500', '503'].map((s) => [
          s,
          {
            description: s === '200' ? 'Accepted.' : 'Not accepted; see X-Error-Code.',
            headers:
              s === '200' ? {} : { 'X-Error-Code': { schema: { type: 'string', enum: Object.keys(ERROR_CODES) } } },
            content: { 'image/gif': { schema: { type: 'string', contentEncoding: 'base64' } } },
          },
        ]),
      ),
    },
  },
};
