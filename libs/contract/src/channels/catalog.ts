import { discordChannelConfigSchema, discordSecrets } from './discord.js';
import { emailChannelConfigSchema, emailSecrets } from './email.js';
import { googleChatChannelConfigSchema, googleChatSecrets } from './google_chat.js';
import { mattermostChannelConfigSchema, mattermostSecrets } from './mattermost.js';
import { ntfyChannelConfigSchema, ntfySecrets } from './ntfy.js';
import { opsgenieChannelConfigSchema, opsgenieSecrets } from './opsgenie.js';
import { pagerdutyChannelConfigSchema, pagerdutySecrets } from './pagerduty.js';
import { pushoverChannelConfigSchema, pushoverSecrets } from './pushover.js';
import { slackChannelConfigSchema, slackSecrets } from './slack.js';
import { teamsChannelConfigSchema, teamsSecrets } from './teams.js';
import { telegramChannelConfigSchema, telegramSecrets } from './telegram.js';
import { webhookChannelConfigSchema, webhookSecrets } from './webhook.js';

/**
 * Alert channels: where an alert is sent (docs/alerting.md). Browser-safe (no ajv): the
 * console builds its channel form from these schemas (channel-catalog.ts). Each type owns a config
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
