import {
  channelCreateSchema,
  channelPatchSchema,
  channelSchema,
  channelTestResultSchema,
  escalationPolicyCreateSchema,
  escalationPolicyPatchSchema,
  escalationPolicySchema,
} from '../alerting-schemas.js';
import { SCOPES, SESSION_COOKIE } from '../access.js';
import { auditEntrySchema, keyCreateSchema, keyPatchSchema } from '../access-schemas.js';
import { ERROR_CODES } from '../error-codes.js';
import { ACCESS_API_SCHEMAS } from '../access-api-schemas.js';
import { PEOPLE_SCHEMAS } from '../people-schemas.js';
import {
  eventSchemaCreateSchema,
  eventSchemaPatchSchema,
  eventSchemaVersionCreateSchema,
  eventSchemaViewSchema,
} from '../event-schema-api.js';
import { publicMaintenanceSchema, publicReportSchema, STATUS_FOLLOW_SCHEMAS } from '../status-follow-schemas.js';
import { DELETION_SCHEMAS } from '../deletions.js';
import { RUN_ONCE_SCHEMAS, runOnceRequestSchema } from '../run-once.js';
import { CHECK_STATUSES } from '../limits.js';
import {
  alertMessageSchema,
  checkSchema,
  incidentSchema,
  ingestRequestSchema,
  monitorCreateSchema,
  monitorPatchSchema,
  monitorSchema,
  publicStatusPageSchema,
  statusPageCreateSchema,
  statusPagePatchSchema,
  statusPageSchema,
  telemetryEventSchema,
  webhookDeliveryMessageSchema,
  webhookDeliverySchema,
} from '../schemas.js';
import { summarySuccessSchema } from './checks.js';
import { configAdoptedSchema, configExportSchema } from './config.js';
import { CONFIG_SCHEMAS } from '../config-as-code.js';
import { component, envelopeOf, pageOf, ref, type Json } from './responses.js';

/**
 * The components of the OpenAPI document: the security schemes (telemetry access keys,
 * API keys) and the schemas the routes refer to, most of them the very JSON Schemas that
 * validate requests (schemas.ts), the error list (error-codes.ts) and the envelopes around
 * them. Listed in one place, in the document's order.
 */

export const securitySchemes: Json = {
  accessKeyHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Access-Key',
    description: 'Telemetry access key (tk_…).',
  },
  accessKeyQuery: {
    type: 'apiKey',
    in: 'query',
    name: 'key',
    description: 'Telemetry access key, for pages that cannot set headers.',
  },
  apiKey: {
    type: 'http',
    scheme: 'bearer',
    description: `API key (ak_…) with scopes: ${SCOPES.join(', ')} (docs/access.md).`,
  },
  sessionCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: SESSION_COOKIE,
    description: `A person's session (POST /api/session/password, or single sign-on), named \`__Host-${SESSION_COOKIE}\` when Secure; it holds the scopes of the person's role (docs/access.md). State-changing requests it authenticates carry X-CSRF-Token.`,
  },
};

export const schemas: Json = {
  TelemetryEvent: component(telemetryEventSchema),
  IngestRequest: component(ingestRequestSchema),
  Check: component(checkSchema),
  MonitorCreate: component(monitorCreateSchema),
  MonitorPatch: component(monitorPatchSchema),
  Monitor: component(monitorSchema),
  Incident: component(incidentSchema),
  StatusPageCreate: component(statusPageCreateSchema),
  StatusPagePatch: component(statusPagePatchSchema),
  StatusPage: component(statusPageSchema),
  PublicStatusPage: component(publicStatusPageSchema),
  ...Object.fromEntries(STATUS_FOLLOW_SCHEMAS.map((s) => [s.$id, component(s)])),
  ...Object.fromEntries(DELETION_SCHEMAS.map((s) => [s.$id, component(s)])),
  PublicReport: component(publicReportSchema),
  PublicMaintenance: component(publicMaintenanceSchema),
  AlertMessage: {
    ...component(alertMessageSchema),
    description:
      'A message on the alerts topic, and the JSON body of a webhook delivery (headers X-Telemetry-Event, X-Telemetry-Delivery, X-Telemetry-Signature).',
  },
  ...Object.fromEntries(RUN_ONCE_SCHEMAS.map((s) => [s.$id, component(s)])),
  // Validated in two steps (the settings' problems keep POST /api/monitors's paths); documented as one.
  RunOnceRequest: component({
    ...runOnceRequestSchema,
    properties: { ...runOnceRequestSchema.properties, settings: ref('RunOnceSettings') },
  }),
  MonitorSuccess: envelopeOf(ref('Monitor')),
  MonitorPage: pageOf('Monitor'),
  CheckStatus: { type: 'string', enum: CHECK_STATUSES },
  ErrorCode: {
    type: 'string',
    enum: Object.keys(ERROR_CODES),
    description: Object.entries(ERROR_CODES)
      .map(([c, e]) => `${c} (${e.status}): ${e.description}`)
      .join('\n'),
  },
  Failure: {
    type: 'object',
    required: ['success', 'error', 'code'],
    properties: {
      success: { const: false },
      error: { type: 'string' },
      code: ref('ErrorCode'),
      details: { type: 'object' },
    },
  },
  IngestSuccess: envelopeOf({
    oneOf: [
      { type: 'null' },
      { type: 'array', items: { type: 'string', format: 'uuid' }, description: 'With ?return=ids.' },
    ],
  }),
  WebhookDelivery: component(webhookDeliverySchema),
  WebhookDeliveryMessage: {
    ...component(webhookDeliveryMessageSchema),
    description: 'A message on the webhook-deliveries topic: one delivery attempt, written by a check runner.',
  },
  WebhookDeliveryPage: pageOf('WebhookDelivery'),
  CheckPage: pageOf('Check'),
  SummarySuccess: summarySuccessSchema,
  ChannelCreate: component(channelCreateSchema),
  ChannelPatch: component(channelPatchSchema),
  Channel: component(channelSchema),
  ChannelTestResult: component(channelTestResultSchema),
  EscalationPolicyCreate: component(escalationPolicyCreateSchema),
  EscalationPolicyPatch: component(escalationPolicyPatchSchema),
  EscalationPolicy: component(escalationPolicySchema),
  ...Object.fromEntries(
    [eventSchemaCreateSchema, eventSchemaVersionCreateSchema, eventSchemaPatchSchema, eventSchemaViewSchema].map(
      (s) => [s.$id, component(s)],
    ),
  ),
  ...Object.fromEntries([...PEOPLE_SCHEMAS, ...ACCESS_API_SCHEMAS].map((s) => [s.$id, component(s)])),
  AuditEntry: {
    ...component(auditEntrySchema),
    description: 'One audit entry: a message on AUDIT_TOPIC, a row of audit_log, an item of GET /api/audit.',
  },
  AuditPage: pageOf('AuditEntry'),
  KeyCreate: component(keyCreateSchema),
  KeyPatch: component(keyPatchSchema),
  ...Object.fromEntries(CONFIG_SCHEMAS.map((s) => [s.$id, component(s)])),
  ConfigExport: configExportSchema,
  ConfigAdopted: configAdoptedSchema,
};
