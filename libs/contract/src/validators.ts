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
  StatusPage,
  StatusPageCreate,
  StatusPagePatch,
  WebhookDelivery,
  WebhookDeliveryMessage,
} from './types.js';

export { describeErrors, parsesAsUrl, type Problem } from './ajv.js';

export interface Validators {
  ingestRequest: ValidateFunction<IngestRequest>;
  eventMessage: ValidateFunction<EventMessage>;
  checkMessage: ValidateFunction<CheckMessage>;
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
  };
}
