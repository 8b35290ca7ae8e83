import type { FromSchema } from 'json-schema-to-ts';
import { label, webhookUrl } from './common.js';

/** Mattermost: an incoming webhook (https://chat.example.com/hooks/…), sent text and an attachment; `channel` and `username` override the hook's own. */
export const mattermostChannelConfigSchema = {
  $id: 'MattermostChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: { url: webhookUrl, channel: label, username: label },
} as const;

export type MattermostChannelConfig = FromSchema<typeof mattermostChannelConfigSchema>;
export const mattermostSecrets = ['/url'] as const;
