import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
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

// NOTE: ajv-formats is CommonJS with a default export; under NodeNext its default
// import is the module object on some toolchains and the function on others.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as ((
  ajv: Ajv,
  formats: string[],
) => Ajv) & { get(name: string): (s: string) => boolean };

export { parsesAsUrl } from './urls.js';
import { parsesAsUrl } from './urls.js';

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
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, schemas: [...ALL_SCHEMAS] });
  addFormats(ajv, ['date-time', 'uuid']);
  // ajv-formats' RFC 3986 check, and a URL the services can parse (parsesAsUrl).
  const uri = addFormats.get('uri');
  ajv.addFormat('uri', (s: string) => uri(s) && parsesAsUrl(s));
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

export interface Problem {
  /** JSON pointer into the body, e.g. `/events/3/source`. */
  path: string;
  message: string;
}

/** Turns ajv's errors into short, stable, client-facing problems (at most `max`). */
export function describeErrors(errors: ErrorObject[] | null | undefined, max = 50): Problem[] {
  if (!errors) return [];
  return errors.slice(0, max).map((e) => {
    let path = e.instancePath || '/';
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'additionalProperties') {
      const extra = (e.params as { additionalProperty: string }).additionalProperty;
      path = `${e.instancePath}/${extra}`;
      message = 'is not an allowed field';
    } else if (e.keyword === 'required') {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      path = `${e.instancePath}/${missing}`;
      message = 'is required';
    }
    return { path, message };
  });
}
