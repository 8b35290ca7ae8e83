import type { ValidateFunction } from 'ajv';
import { createAjv, describeErrors, type Problem } from '../ajv.js';
import { CHANNEL_CONFIG_SCHEMAS, CHANNEL_TYPES, type ChannelType } from './catalog.js';
import type { DiscordChannelConfig } from './discord.js';
import type { EmailChannelConfig } from './email.js';
import type { GoogleChatChannelConfig } from './google_chat.js';
import type { MattermostChannelConfig } from './mattermost.js';
import type { NtfyChannelConfig } from './ntfy.js';
import type { OpsgenieChannelConfig } from './opsgenie.js';
import type { PagerdutyChannelConfig } from './pagerduty.js';
import type { PushoverChannelConfig } from './pushover.js';
import type { SlackChannelConfig } from './slack.js';
import type { TeamsChannelConfig } from './teams.js';
import type { TelegramChannelConfig } from './telegram.js';
import type { WebhookChannelConfig } from './webhook.js';

export { webhookChannelConfigSchema, type WebhookChannelConfig } from './webhook.js';
export { CHANNEL_CONFIG_SCHEMAS, CHANNEL_SECRETS, CHANNEL_TYPES, type ChannelType } from './catalog.js';
export type { DiscordChannelConfig } from './discord.js';
export type { EmailChannelConfig } from './email.js';
export type { GoogleChatChannelConfig } from './google_chat.js';
export type { MattermostChannelConfig } from './mattermost.js';
export type { NtfyChannelConfig } from './ntfy.js';
export type { OpsgenieChannelConfig } from './opsgenie.js';
export type { PagerdutyChannelConfig } from './pagerduty.js';
export type { PushoverChannelConfig } from './pushover.js';
export type { SlackChannelConfig } from './slack.js';
export type { TeamsChannelConfig } from './teams.js';
export type { TelegramChannelConfig } from './telegram.js';

/** The config of each channel type (each derived from its schema in its module). */
export interface ChannelConfigs {
  webhook: WebhookChannelConfig;
  email: EmailChannelConfig;
  slack: SlackChannelConfig;
  teams: TeamsChannelConfig;
  discord: DiscordChannelConfig;
  google_chat: GoogleChatChannelConfig;
  mattermost: MattermostChannelConfig;
  telegram: TelegramChannelConfig;
  ntfy: NtfyChannelConfig;
  pushover: PushoverChannelConfig;
  pagerduty: PagerdutyChannelConfig;
  opsgenie: OpsgenieChannelConfig;
}
export type ConfigOf<T extends ChannelType> = ChannelConfigs[T];

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
