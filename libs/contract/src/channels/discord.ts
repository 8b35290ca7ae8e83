import type { FromSchema } from 'json-schema-to-ts';
import { webhookUrl } from './common.js';

/** Discord: a channel webhook (https://discord.com/api/webhooks/…), sent content and an embed. */
export const discordChannelConfigSchema = {
  $id: 'DiscordChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: { url: webhookUrl },
} as const;

export type DiscordChannelConfig = FromSchema<typeof discordChannelConfigSchema>;
export const discordSecrets = ['/url'] as const;
