import type { ValidateFunction } from 'ajv';
import { MONITOR_LIMITS } from './limits.js';
import type { WebhookDelivery, WebhookDeliveryMessage } from './types.js';
import { createAjv, describeErrors, type Problem } from './ajv.js';

/**
 * Alert channels: where an alert is sent (docs/monitors.md, "Webhooks"). Each type owns
 * a config schema here, so that what validates a channel's config (the query service,
 * when channels become an API of their own) is the same code the check runner relies
 * on; how a channel renders, sends and judges an answer lives in the runner
 * (services/check-runner/src/channels/<type>.ts). A new channel is one more value below,
 * one schema, one entry in ChannelConfigs and CHANNEL_CONFIG_SCHEMAS, and its runner module.
 */
export const CHANNEL_TYPES = ['webhook'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

/**
 * A signed webhook: the alert message POSTed as JSON to `url`, signed with `secret`
 * (`X-Telemetry-Signature`). A monitor's `webhooks` and `webhook_secret` are such configs.
 */
export const webhookChannelConfigSchema = {
  $id: 'WebhookChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['url', 'secret'],
  properties: {
    // As a monitor's `webhooks` entries (schemas.ts).
    url: {
      type: 'string',
      minLength: 8,
      maxLength: MONITOR_LIMITS.maxUrlLength,
      pattern: '^https?://[^\\s]+$',
      format: 'uri',
    },
    // As a monitor's `webhook_secret`.
    secret: {
      type: 'string',
      minLength: MONITOR_LIMITS.minWebhookSecretLength,
      maxLength: MONITOR_LIMITS.maxWebhookSecretLength,
      pattern: '^[\\x21-\\x7e]+$',
    },
  },
} as const;

export interface WebhookChannelConfig {
  url: string;
  secret: string;
}

/** The config of each channel type: a type missing here makes ConfigOf (and every map keyed by type) fail to compile. */
export interface ChannelConfigs {
  webhook: WebhookChannelConfig;
}
export type ConfigOf<T extends ChannelType> = ChannelConfigs[T];

/** Each type's config schema (exhaustive: a type without one does not compile). */
export const CHANNEL_CONFIG_SCHEMAS: { readonly [T in ChannelType]: { readonly $id: string } } = {
  webhook: webhookChannelConfigSchema,
};

/** Where one alert goes: a channel type and its config. */
export interface ChannelTarget<T extends ChannelType = ChannelType> {
  type: T;
  config: ConfigOf<T>;
}
/** A target of any type (a union over the types, so `type` narrows `config`). */
export type AnyChannelTarget = { [T in ChannelType]: ChannelTarget<T> }[ChannelType];

export type ChannelValidators = { readonly [T in ChannelType]: ValidateFunction<ConfigOf<T>> };

/** Compiles every channel config schema once (in a composition root, not per request). */
export function createChannelValidators(): ChannelValidators {
  const ajv = createAjv(Object.values(CHANNEL_CONFIG_SCHEMAS));
  const compiled = {} as Record<ChannelType, ValidateFunction>;
  for (const t of CHANNEL_TYPES) {
    const fn = ajv.getSchema(CHANNEL_CONFIG_SCHEMAS[t].$id);
    if (!fn) throw new Error(`channel config schema ${t} missing`);
    compiled[t] = fn;
  }
  return compiled as unknown as ChannelValidators;
}

export function isChannelType(t: unknown): t is ChannelType {
  return (CHANNEL_TYPES as readonly unknown[]).includes(t);
}

/**
 * What is wrong with a channel config of type `type` (empty: nothing), each problem with
 * its JSON pointer under `at` (`/config/url`), as every other validation reports them.
 */
export function channelConfigProblems(v: ChannelValidators, type: ChannelType, config: unknown, at = ''): Problem[] {
  const validate = v[type];
  if (validate(config)) return [];
  return describeErrors(validate.errors).map((p) => ({ ...p, path: `${at}${p.path === '/' ? '' : p.path}` || '/' }));
}

/** A whole target `{type, config}`: its problems (`/type`, `/config/...`), or none and the typed target. */
export function validateChannelTarget(
  v: ChannelValidators,
  value: unknown,
): { ok: true; target: AnyChannelTarget } | { ok: false; problems: Problem[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, problems: [{ path: '/', message: 'must be object' }] };
  }
  const { type, config, ...rest } = value as Record<string, unknown>;
  const problems: Problem[] = Object.keys(rest).map((k) => ({ path: `/${k}`, message: 'is not an allowed field' }));
  if (type === undefined) problems.push({ path: '/type', message: 'is required' });
  else if (!isChannelType(type))
    problems.push({ path: '/type', message: `must be one of ${CHANNEL_TYPES.join(', ')}` });
  else if (config === undefined) problems.push({ path: '/config', message: 'is required' });
  else problems.push(...channelConfigProblems(v, type, config, '/config'));
  return problems.length > 0 ? { ok: false, problems } : { ok: true, target: value as AnyChannelTarget };
}

/**
 * A delivery attempt's record with the channel it went through. NOTE: types.ts is to
 * gain `channel` itself; until then these name the message and API shapes with it.
 * `channel` is optional on the topic: records published before channels existed are webhooks.
 */
export type ChannelDeliveryMessage = WebhookDeliveryMessage & { channel?: ChannelType };
export type ChannelDelivery = WebhookDelivery & { channel: ChannelType };
