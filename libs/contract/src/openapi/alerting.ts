import { CHANNEL_ID_PATTERN, ESCALATION_POLICY_ID_PATTERN, WEBHOOK_DELIVERY_STATUSES } from '../limits.js';
import { webhookDeliverySchema } from '../schemas.js';
import { cursorParam, header, ifMatch, limitParam, linkHeader, queryParam } from './parameters.js';
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
 * The alerting routes in the OpenAPI document (docs/alerting.md, "API"): a tenant's alert
 * channels and escalation policies, acknowledging incidents with an API key, and the
 * signed acknowledge links of notifications (no key: the token is the credential).
 */

const idPath = (description: string, pattern: string): Json => ({
  name: 'id',
  in: 'path',
  required: true,
  description,
  schema: { type: 'string', pattern },
});
const channelPath = idPath('Alert channel identifier (chn_…).', CHANNEL_ID_PATTERN);
const policyPath = idPath('Escalation policy identifier (esc_…).', ESCALATION_POLICY_ID_PATTERN);
const incidentPath: Json = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'Incident identifier (the `id` of GET /api/monitors/{id}/incidents).',
  schema: { type: 'string', minLength: 1, maxLength: 128 },
};
const tokenPath: Json = {
  name: 'token',
  in: 'path',
  required: true,
  description: 'The signed token of an acknowledge link.',
  schema: { type: 'string', pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{43}$' },
};
const versionHeader = { ETag: header('The version: send it back in If-Match to change it safely.') };
const read = [{ apiKey: ['monitors:read'] }];
const write = [{ apiKey: ['monitors:write'] }];
const deleted = jsonOk('Deleted.', envelopeOf({ type: 'null' }));
const acknowledgement = envelopeOf({
  type: 'object',
  required: ['acknowledged_at', 'acknowledged_by'],
  properties: {
    acknowledged_at: { type: ['string', 'null'], format: 'date-time' },
    acknowledged_by: { type: ['string', 'null'] },
  },
});
const channelErrors = [...bodyErrors, 'INVALID_TEMPLATE', 'TARGET_NOT_ALLOWED'] as const;
const html = (description: string): Json => ({ description, content: { 'text/html': { schema: { type: 'string' } } } });
/** An acknowledge link's refusals: an HTML page, or the JSON envelope with Accept: application/json. */
const linkErrors = (): Json => {
  const out = errors(['LINK_INVALID', 'INCIDENT_NOT_FOUND']);
  for (const r of Object.values(out) as { content: Json }[]) r.content['text/html'] = { schema: { type: 'string' } };
  return { ...out, ...errors(storeErrors) };
};

/** The same read-change-delete shape for channels and policies. */
function objectPaths(o: {
  base: string;
  noun: string;
  schema: string;
  create: string;
  patch: string;
  notFound: 'CHANNEL_NOT_FOUND' | 'ESCALATION_POLICY_NOT_FOUND';
  path: Json;
  createErrors: readonly (typeof channelErrors)[number][];
  createDescription: string;
}): Json {
  const one = (description: string, headers?: Json): Json => jsonOk(description, envelopeOf(ref(o.schema)), headers);
  const name = o.schema;
  return {
    [o.base]: {
      get: {
        operationId: `list${name}s`,
        summary: `The tenant's ${o.noun}s, by id`,
        security: read,
        responses: {
          '200': jsonOk(`Every ${o.noun}.`, envelopeOf({ type: 'array', items: ref(o.schema) })),
          ...keyErrors('INVALID_PARAMETER'),
        },
      },
      post: {
        operationId: `create${name}`,
        summary: `Create a ${o.noun}`,
        description: o.createDescription,
        security: write,
        requestBody: jsonBody(o.create),
        responses: {
          '201': one('Created; Location names it.', versionHeader),
          ...keyErrors(...o.createErrors, 'INVALID_PARAMETER', 'QUOTA_EXCEEDED', 'KEY_TAKEN'),
        },
      },
    },
    [`${o.base}/{id}`]: {
      get: {
        operationId: `get${name}`,
        summary: `A ${o.noun} of the tenant`,
        security: read,
        parameters: [o.path],
        responses: { '200': one(`The ${o.noun}.`, versionHeader), ...keyErrors('INVALID_PARAMETER', o.notFound) },
      },
      patch: {
        operationId: `update${name}`,
        summary: `Change a ${o.noun}`,
        security: write,
        parameters: [o.path, ifMatch],
        requestBody: jsonBody(o.patch),
        responses: {
          '200': one(`The changed ${o.noun}.`, versionHeader),
          ...keyErrors(...o.createErrors, 'INVALID_PARAMETER', o.notFound, 'PRECONDITION_FAILED', 'KEY_TAKEN'),
        },
      },
      delete: {
        operationId: `delete${name}`,
        summary: `Delete a ${o.noun} nothing uses`,
        security: write,
        parameters: [o.path, ifMatch],
        responses: { '200': deleted, ...keyErrors('INVALID_PARAMETER', o.notFound, 'IN_USE', 'PRECONDITION_FAILED') },
      },
    },
  };
}

export const alertingPaths: Json = {
  ...objectPaths({
    base: '/api/channels',
    noun: 'alert channel',
    schema: 'Channel',
    create: 'ChannelCreate',
    patch: 'ChannelPatch',
    notFound: 'CHANNEL_NOT_FOUND',
    path: channelPath,
    createErrors: channelErrors,
    createDescription:
      "Checked in this order: the body's schema (400 VALIDATION_FAILED), the type's config (VALIDATION_FAILED at /config/...), the templates (400 INVALID_TEMPLATE at /templates/title, /templates/text, /config/body_template), every address it sends to against the egress policy (400 TARGET_NOT_ALLOWED naming it). Secrets in the config are write-only: answers show them masked, and a PATCH that sends a masked value back keeps the stored one. `key` (optional; PATCH null releases it) is unique among the tenant's channels: 409 KEY_TAKEN.",
  }),
  '/api/channels/{id}/test': {
    post: {
      operationId: 'testChannel',
      summary: 'Send a test notification now, once, and say what the provider answered',
      description:
        'About a monitor named "Test notification" of the channel\'s tenant; sent through the egress policy, not retried, within CHANNEL_TEST_TIMEOUT_MS. A provider refusing it is still 200, with delivered false.',
      security: write,
      parameters: [channelPath],
      responses: {
        '200': jsonOk("The provider's answer.", envelopeOf(ref('ChannelTestResult'))),
        ...keyErrors('INVALID_PARAMETER', 'CHANNEL_NOT_FOUND', 'TARGET_NOT_ALLOWED'),
      },
    },
  },
  '/api/channels/{id}/deliveries': {
    get: {
      operationId: 'listChannelDeliveries',
      summary: "Every attempt to deliver to a channel, newest first (the channel's delivery log)",
      security: read,
      parameters: [
        channelPath,
        limitParam(1000),
        queryParam('status', { type: 'string', enum: WEBHOOK_DELIVERY_STATUSES }),
        queryParam('alert_id', webhookDeliverySchema.properties.alert_id, 'Only the attempts of this alert.'),
        cursorParam,
      ],
      responses: {
        '200': jsonOk('A page of delivery attempts.', ref('WebhookDeliveryPage'), linkHeader),
        ...keyErrors('INVALID_PARAMETER', 'CHANNEL_NOT_FOUND'),
      },
    },
  },
  ...objectPaths({
    base: '/api/escalation-policies',
    noun: 'escalation policy',
    schema: 'EscalationPolicy',
    create: 'EscalationPolicyCreate',
    patch: 'EscalationPolicyPatch',
    notFound: 'ESCALATION_POLICY_NOT_FOUND',
    path: policyPath,
    createErrors: bodyErrors,
    createDescription:
      "Every step's channels must be the tenant's (400 VALIDATION_FAILED at /steps/N/channels/M) and every escalate_after_seconds at least ALERT_MIN_DELAY_SECONDS (at /steps/N/escalate_after_seconds). `key` (optional; PATCH null releases it) is unique among the tenant's policies: 409 KEY_TAKEN.",
  }),
  ...Object.fromEntries(
    (['acknowledge', 'unacknowledge'] as const).map((verb) => [
      `/api/incidents/{id}/${verb}`,
      {
        post: {
          operationId: `${verb}Incident`,
          summary:
            verb === 'acknowledge'
              ? 'Acknowledge an open incident: reminders and escalation stop'
              : 'Take back the acknowledgement of an open incident: escalation starts again',
          description:
            'The body is empty or {}. Published to the alerts topic (incident.acknowledged / incident.unacknowledged) before it is stored: 503 when Kafka does not take it, and nothing changed.',
          security: write,
          parameters: [incidentPath],
          responses: {
            '200': jsonOk('Who acknowledged it and when (null: nobody).', acknowledgement),
            ...keyErrors(...bodyErrors, 'INVALID_PARAMETER', 'INCIDENT_NOT_FOUND'),
          },
        },
      },
    ]),
  ),
  '/ack/{token}': {
    get: {
      operationId: 'showAcknowledgeLink',
      summary: "An acknowledge link's confirmation page (changes nothing)",
      description:
        'No key: the signed token is the credential. An HTML page naming the monitor and the incident, with a button that POSTs to the same URL. A bad or expired token is 400 LINK_INVALID (an HTML page; JSON with Accept: application/json).',
      security: [],
      parameters: [tokenPath],
      responses: {
        '200': html('The confirmation page (or that the incident is already acknowledged or resolved).'),
        ...linkErrors(),
      },
    },
    post: {
      operationId: 'acknowledgeByLink',
      summary: "Acknowledge the link's incident as the link's recipient",
      security: [],
      parameters: [tokenPath],
      responses: {
        '200': {
          description:
            'A page saying it is acknowledged (or already was, or resolved); JSON with Accept: application/json.',
          content: { 'text/html': { schema: { type: 'string' } }, 'application/json': { schema: acknowledgement } },
        },
        ...linkErrors(),
      },
    },
  },
};
