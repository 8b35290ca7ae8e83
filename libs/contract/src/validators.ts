import type { ValidateFunction } from 'ajv';
import { createAjv } from './ajv.js';
import { ALL_SCHEMAS } from './schemas.js';
import type {
  AlertMessage,
  Check,
  CheckMessage,
  EventMessage,
  Incident,
  IngestRequest,
  Monitor,
  MonitorCreate,
  MonitorPatch,
  PublicStatusPage,
  ScreenshotMessage,
  StatusPage,
  StatusPageCreate,
  StatusPagePatch,
  WebhookDelivery,
  WebhookDeliveryMessage,
  ChannelCreate,
  ChannelPatch,
  ChannelObject,
  EscalationPolicyCreate,
  EscalationPolicyPatch,
} from './types.js';
import type { AuditEntry } from './access.js';
import type { KeyCreate, KeyPatch } from './access-schemas.js';

export { describeErrors, parsesAsUrl, type Problem } from './ajv.js';

export interface Validators {
  ingestRequest: ValidateFunction<IngestRequest>;
  eventMessage: ValidateFunction<EventMessage>;
  checkMessage: ValidateFunction<CheckMessage>;
  screenshotMessage: ValidateFunction<ScreenshotMessage>;
  check: ValidateFunction<Check>;
  monitorCreate: ValidateFunction<MonitorCreate>;
  monitorPatch: ValidateFunction<MonitorPatch>;
  monitor: ValidateFunction<Monitor>;
  alertMessage: ValidateFunction<AlertMessage>;
  incident: ValidateFunction<Incident>;
  webhookDeliveryMessage: ValidateFunction<WebhookDeliveryMessage>;
  webhookDelivery: ValidateFunction<WebhookDelivery>;
  statusPageCreate: ValidateFunction<StatusPageCreate>;
  statusPagePatch: ValidateFunction<StatusPagePatch>;
  statusPage: ValidateFunction<StatusPage>;
  publicStatusPage: ValidateFunction<PublicStatusPage>;
  channelCreate: ValidateFunction<ChannelCreate>;
  channelPatch: ValidateFunction<ChannelPatch>;
  channel: ValidateFunction<ChannelObject>;
  escalationPolicyCreate: ValidateFunction<EscalationPolicyCreate>;
  escalationPolicyPatch: ValidateFunction<EscalationPolicyPatch>;
  auditEntry: ValidateFunction<AuditEntry>;
  keyCreate: ValidateFunction<KeyCreate>;
  keyPatch: ValidateFunction<KeyPatch>;
}

/** Compiles every schema once. Call it in a composition root, not per request. */
export function createValidators(): Validators {
  const ajv = createAjv(ALL_SCHEMAS);
  const get = <T>(id: string): ValidateFunction<T> => {
    const fn = ajv.getSchema<T>(id);
    if (!fn) throw new Error(`schema ${id} missing`);
    return fn;
  };
  return {
    ingestRequest: get<IngestRequest>('IngestRequest'),
    eventMessage: get<EventMessage>('EventMessage'),
    checkMessage: get<CheckMessage>('CheckMessage'),
    screenshotMessage: get<ScreenshotMessage>('ScreenshotMessage'),
    check: get<Check>('Check'),
    monitorCreate: get<MonitorCreate>('MonitorCreate'),
    monitorPatch: get<MonitorPatch>('MonitorPatch'),
    monitor: get<Monitor>('Monitor'),
    alertMessage: get<AlertMessage>('AlertMessage'),
    incident: get<Incident>('Incident'),
    webhookDeliveryMessage: get<WebhookDeliveryMessage>('WebhookDeliveryMessage'),
    webhookDelivery: get<WebhookDelivery>('WebhookDelivery'),
    statusPageCreate: get<StatusPageCreate>('StatusPageCreate'),
    statusPagePatch: get<StatusPagePatch>('StatusPagePatch'),
    statusPage: get<StatusPage>('StatusPage'),
    publicStatusPage: get<PublicStatusPage>('PublicStatusPage'),
    channelCreate: get<ChannelCreate>('ChannelCreate'),
    channelPatch: get<ChannelPatch>('ChannelPatch'),
    channel: get<ChannelObject>('Channel'),
    escalationPolicyCreate: get<EscalationPolicyCreate>('EscalationPolicyCreate'),
    escalationPolicyPatch: get<EscalationPolicyPatch>('EscalationPolicyPatch'),
    auditEntry: get<AuditEntry>('AuditEntry'),
    keyCreate: get<KeyCreate>('KeyCreate'),
    keyPatch: get<KeyPatch>('KeyPatch'),
  };
}
