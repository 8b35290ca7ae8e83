import type { ErrorCode } from '../error-codes.js';
import { MONITOR_LIMITS, WEBHOOK_DELIVERY_STATUSES } from '../limits.js';
import { RUN_ONCE_LIMITS } from '../run-once.js';
import { webhookDeliverySchema } from '../schemas.js';
import { cursorParam, etagHeader, ifMatch, limitParam, linkHeader, monitorPath, queryParam } from './parameters.js';
import { bodyErrors, envelopeOf, jsonBody, jsonOk, keyErrors, monitorErrors, ref, type Json } from './responses.js';

/**
 * The query service's monitor routes in the OpenAPI document: list, create, read, change
 * and delete monitors (with If-Match on the monitor's version), rotate a monitor's webhook
 * secret or heartbeat token, and read its incidents and webhook delivery attempts.
 */

/** A monitor as answered, with its version in ETag. */
const monitorOk = (description: string): Json => jsonOk(description, ref('MonitorSuccess'), etagHeader);

/** POST /api/monitors/{id}/<credential>: replace one of the monitor's credentials, answered with the monitor. */
const rotation = (
  operationId: string,
  summary: string,
  description: string,
  field: string,
  ...more: ErrorCode[]
): Json => ({
  post: {
    operationId,
    summary,
    description,
    security: [{ apiKey: ['monitors:write'] }],
    parameters: [monitorPath, ifMatch],
    responses: {
      '200': monitorOk(`The monitor, with its new ${field}.`),
      ...monitorErrors(...more, 'PRECONDITION_FAILED'),
    },
  },
});

export const monitorPaths: Json = {
  '/api/monitors': {
    get: {
      operationId: 'listMonitors',
      summary: 'The monitors this key may see, in id order',
      security: [{ apiKey: ['monitors:read'] }],
      parameters: [limitParam(MONITOR_LIMITS.maxPageSize), cursorParam],
      responses: {
        '200': jsonOk('A page of monitors.', ref('MonitorPage'), linkHeader),
        ...keyErrors('INVALID_PARAMETER'),
      },
    },
    post: {
      operationId: 'createMonitor',
      summary: 'Create a monitor',
      description:
        "Only name and url are required; the rest take the defaults shown in the schema. The response (and only it) shows webhook_secret, generated unless given. Runners start checking within seconds. A url or webhook that is an IP address the egress policy denies (loopback, private, link-local, ...), or on a port it denies (EGRESS_DENY_PORTS, 25 by default), is 400 TARGET_NOT_ALLOWED; one whose host the URL parser refuses (http://1.2.3.4.5/) is 400 VALIDATION_FAILED; a name that resolves to one gives down checks with error target_not_allowed. Monitors may not set Host, Content-Length, Transfer-Encoding, Connection or other hop-by-hop headers. key (optional) is its configuration key (docs/as-code.md), unique among the tenant's monitors: one another monitor has is 409 KEY_TAKEN.",
      security: [{ apiKey: ['monitors:write'] }],
      requestBody: jsonBody('MonitorCreate'),
      responses: {
        '201': jsonOk('Created; Location names it.', ref('MonitorSuccess'), {
          Location: { schema: { type: 'string' } },
        }),
        ...keyErrors('INVALID_PARAMETER', ...bodyErrors, 'TARGET_NOT_ALLOWED', 'QUOTA_EXCEEDED', 'KEY_TAKEN'),
      },
    },
  },
  '/api/monitors/run-once': {
    post: {
      operationId: 'runMonitorOnce',
      summary: 'Run a check with the settings of a form, without saving them ("run once now")',
      description: `A check runner of the monitor's first location (default when none; for a browser monitor, one with Chromium) runs one check of settings (a MonitorCreate body, every field optional) and the answer is what it found; nothing is stored, published as a check or alerted. With monitor_id (a monitor of the caller's tenant) the settings are applied over the stored monitor as a PATCH: **** keeps a stored header value (and URL credentials, sealed variables). The settings are validated as POST /api/monitors (PATCH with monitor_id) validates them, with the same codes and paths (pointing into settings); heartbeat monitors have nothing to run (400 on /type). The query service waits the monitor's timeout_ms and ${RUN_ONCE_LIMITS.marginMs} ms, at most RUN_ONCE_TIMEOUT_MS (70 s by default): no answer by then is 504 RUN_TIMEOUT. A tenant may run RUN_ONCE_PER_MINUTE (${RUN_ONCE_LIMITS.perTenantPerMinute} by default) a minute per replica (429 RATE_LIMITED, Retry-After). Audited as monitor.run_once.`,
      security: [{ apiKey: ['monitors:write'] }],
      requestBody: jsonBody('RunOnceRequest'),
      responses: {
        '200': jsonOk(
          'What the check found; screenshot is a data URL (data:image/png;base64,…) of a failed browser check, else null.',
          envelopeOf(ref('RunOnceResult')),
        ),
        ...keyErrors(
          ...bodyErrors,
          'TARGET_NOT_ALLOWED',
          'MONITOR_NOT_FOUND',
          'RATE_LIMITED',
          'KAFKA_UNAVAILABLE',
          'RUN_TIMEOUT',
        ),
      },
    },
  },
  '/api/monitors/{id}': {
    get: {
      operationId: 'getMonitor',
      summary: 'One monitor',
      security: [{ apiKey: ['monitors:read'] }],
      parameters: [monitorPath],
      responses: {
        '200': monitorOk(
          "The monitor; header values and the URL's query values shown as ****, the URL without userinfo, webhook URLs as scheme and host only, never the webhook secret.",
        ),
        ...monitorErrors(),
      },
    },
    patch: {
      operationId: 'updateMonitor',
      summary: 'Change some settings of a monitor',
      description:
        'Fields not sent keep their value; null clears keyword, degraded_threshold_ms and body. A masked value sent back (a header value ****, the URL or a webhook as shown) keeps the stored one. A url on another origin (scheme, host, port) drops the stored header values and URL credentials unless the request sends them again; the answer names them in dropped_secrets. key sets or changes its configuration key, null releases it; a key another monitor of the tenant has is 409 KEY_TAKEN.',
      security: [{ apiKey: ['monitors:write'] }],
      parameters: [monitorPath, ifMatch],
      requestBody: jsonBody('MonitorPatch'),
      responses: {
        '200': monitorOk('The monitor as changed, with dropped_secrets (empty when none).'),
        ...monitorErrors('PRECONDITION_FAILED', ...bodyErrors, 'TARGET_NOT_ALLOWED', 'KEY_TAKEN'),
      },
    },
    delete: {
      operationId: 'deleteMonitor',
      summary: 'Delete a monitor (its check history stays until retention drops it)',
      security: [{ apiKey: ['monitors:write'] }],
      parameters: [monitorPath, ifMatch],
      responses: {
        '200': jsonOk('Deleted.', envelopeOf({ type: 'null' })),
        ...monitorErrors('PRECONDITION_FAILED'),
      },
    },
  },
  '/api/monitors/{id}/webhook-secret': rotation(
    'rotateWebhookSecret',
    "Replace a monitor's webhook signing secret",
    'Generates a new secret, shown in this answer only (webhook_secret); deliveries are signed with it from now on. Takes no body.',
    'webhook_secret',
  ),
  '/api/monitors/{id}/heartbeat-token': rotation(
    'rotateHeartbeatToken',
    "Replace a heartbeat monitor's token",
    'Gives the monitor a new heartbeat_token, shown in this answer (and on later reads by keys with monitors:write); every gateway refuses the old one (404 HEARTBEAT_NOT_FOUND) and takes the new one within a second. Takes no body. A monitor of another type is 400 VALIDATION_FAILED on /type.',
    'heartbeat_token',
    'VALIDATION_FAILED',
  ),
  '/api/monitors/{id}/incidents': {
    get: {
      operationId: 'listIncidents',
      summary: 'Incidents of a monitor (down until up again), newest first',
      security: [{ apiKey: ['monitors:read'] }],
      parameters: [monitorPath, limitParam(1000), queryParam('status', { type: 'string', enum: ['open', 'resolved'] })],
      responses: {
        '200': jsonOk('The incidents.', envelopeOf({ type: 'array', items: ref('Incident') })),
        ...monitorErrors(),
      },
    },
  },
  '/api/monitors/{id}/webhook-deliveries': {
    get: {
      operationId: 'listWebhookDeliveries',
      summary: "Every attempt to deliver a monitor's alerts to its webhooks, newest first",
      description:
        'One entry per attempt (a retried delivery has several), recorded by the check runner and readable once the stream consumer has written it (seconds). Keyset paging with next_cursor and a Link header.',
      security: [{ apiKey: ['monitors:read'] }],
      parameters: [
        monitorPath,
        limitParam(1000),
        queryParam('status', { type: 'string', enum: WEBHOOK_DELIVERY_STATUSES }),
        queryParam(
          'alert_id',
          webhookDeliverySchema.properties.alert_id,
          'Only the attempts of this alert (the X-Telemetry-Delivery header).',
        ),
        cursorParam,
      ],
      responses: {
        '200': jsonOk('A page of delivery attempts.', ref('WebhookDeliveryPage'), linkHeader),
        ...monitorErrors(),
      },
    },
  },
};
