import type { ValidateFunction } from 'ajv';
import { createAjv, describeErrors, type Problem } from '../ajv.js';
import { discordChannelConfigSchema, discordSecrets, type DiscordChannelConfig } from './discord.js';
import { emailChannelConfigSchema, emailSecrets, type EmailChannelConfig } from './email.js';
import { googleChatChannelConfigSchema, googleChatSecrets, type GoogleChatChannelConfig } from './google_chat.js';
import { mattermostChannelConfigSchema, mattermostSecrets, type MattermostChannelConfig } from './mattermost.js';
import { ntfyChannelConfigSchema, ntfySecrets, type NtfyChannelConfig } from './ntfy.js';
import { opsgenieChannelConfigSchema, opsgenieSecrets, type OpsgenieChannelConfig } from './opsgenie.js';
import { pagerdutyChannelConfigSchema, pagerdutySecrets, type PagerdutyChannelConfig } from './pagerduty.js';
import { pushoverChannelConfigSchema, pushoverSecrets, type PushoverChannelConfig } from './pushover.js';
import { slackChannelConfigSchema, slackSecrets, type SlackChannelConfig } from './slack.js';
import { teamsChannelConfigSchema, teamsSecrets, type TeamsChannelConfig } from './teams.js';
import { telegramChannelConfigSchema, telegramSecrets, type TelegramChannelConfig } from './telegram.js';
import { webhookChannelConfigSchema, webhookSecrets, type WebhookChannelConfig } from './webhook.js';

export { webhookChannelConfigSchema, type WebhookChannelConfig } from './webhook.js';
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

/**
 * Alert channels: where an alert is sent (docs/alerting.md). Each type owns a config
 * schema here (channels/<type>.ts, with the JSON pointers of its secrets), so that what
 * validates a channel's config (the query service) is the same code the check runner
 * relies on; how a channel renders, sends and judges an answer lives in libs/alerting
 * (src/channels/<type>.ts). A new channel is its module here, its value in CHANNEL_TYPES,
 * its lines in CHANNEL_CONFIG_SCHEMAS, CHANNEL_SECRETS and ChannelConfigs (the compiler
 * refuses a type missing from any), and its module in libs/alerting.
 */
export const CHANNEL_TYPES = [
  'webhook',
  'email',
  'slack',
  'teams',
  'discord',
  'google_chat',
  'mattermost',
  'telegram',
  'ntfy',
  'pushover',
  'pagerduty',
  'opsgenie',
] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

/**
 * Each type's config schema, from its module (channels/<type>.ts): a type without one,
 * or one that is not a type, does not compile.
 */
export const CHANNEL_CONFIG_SCHEMAS = {
  webhook: webhookChannelConfigSchema,
  email: emailChannelConfigSchema,
  slack: slackChannelConfigSchema,
  teams: teamsChannelConfigSchema,
  discord: discordChannelConfigSchema,
  google_chat: googleChatChannelConfigSchema,
  mattermost: mattermostChannelConfigSchema,
  telegram: telegramChannelConfigSchema,
  ntfy: ntfyChannelConfigSchema,
  pushover: pushoverChannelConfigSchema,
  pagerduty: pagerdutyChannelConfigSchema,
  opsgenie: opsgenieChannelConfigSchema,
} as const satisfies { readonly [T in ChannelType]: { readonly $id: string } };

/** The JSON pointers of each type's write-only config fields (sealed, shown masked). */
export const CHANNEL_SECRETS = {
  webhook: webhookSecrets,
  email: emailSecrets,
  slack: slackSecrets,
  teams: teamsSecrets,
  discord: discordSecrets,
  google_chat: googleChatSecrets,
  mattermost: mattermostSecrets,
  telegram: telegramSecrets,
  ntfy: ntfySecrets,
  pushover: pushoverSecrets,
  pagerduty: pagerdutySecrets,
  opsgenie: opsgenieSecrets,
} as const satisfies { readonly [T in ChannelType]: readonly string[] };

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
