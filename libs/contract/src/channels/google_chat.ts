import type { FromSchema } from 'json-schema-to-ts';
import { webhookUrl } from './common.js';

/** Google Chat: a space's incoming webhook (https://chat.googleapis.com/v1/spaces/…/messages?key=…&token=…), sent a text message. */
export const googleChatChannelConfigSchema = {
  $id: 'GoogleChatChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: { url: webhookUrl },
} as const;

export type GoogleChatChannelConfig = FromSchema<typeof googleChatChannelConfigSchema>;
export const googleChatSecrets = ['/url'] as const;
