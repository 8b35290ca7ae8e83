import type { FromSchema } from 'json-schema-to-ts';
import { webhookUrl } from './common.js';

/** Slack: an incoming webhook (https://hooks.slack.com/services/…), sent Block Kit blocks with a text fallback. */
export const slackChannelConfigSchema = {
  $id: 'SlackChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: { url: webhookUrl },
} as const;

export type SlackChannelConfig = FromSchema<typeof slackChannelConfigSchema>;
export const slackSecrets = ['/url'] as const;
