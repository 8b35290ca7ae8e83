import { HEARTBEAT_TOKEN_PATTERN } from '../limits.js';
import { rateHeaders } from './parameters.js';
import { envelopeOf, errors, jsonOk, type Json } from './responses.js';

/**
 * The ingest gateway's heartbeat route in the OpenAPI document: a monitored job says it
 * ran, with the heartbeat monitor's token as the credential.
 */

export const heartbeatPaths: Json = {
  '/api/heartbeats/{token}': {
    post: {
      operationId: 'heartbeat',
      summary: 'A monitored job says it ran (heartbeat monitors, docs/monitors.md)',
      description:
        "The token is the heartbeat monitor's `heartbeat_token`; it is the credential (no key). The call is stored as an `up` check of the monitor once Kafka acknowledged it. A body, if any, is not read. A monitor may call 10 times at once, then once a second.",
      security: [],
      parameters: [
        {
          name: 'token',
          in: 'path',
          required: true,
          schema: { type: 'string', pattern: HEARTBEAT_TOKEN_PATTERN, maxLength: 100 },
        },
      ],
      responses: {
        '200': jsonOk('Stored (acknowledged by Kafka).', envelopeOf({ type: 'null' }), rateHeaders),
        ...errors([
          'HEARTBEAT_NOT_FOUND',
          'RATE_LIMITED',
          'INTERNAL_ERROR',
          'KAFKA_REJECTED',
          'KAFKA_UNAVAILABLE',
          'OVERLOADED',
        ]),
      },
    },
  },
};
