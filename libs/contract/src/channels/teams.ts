import type { FromSchema } from 'json-schema-to-ts';
import { webhookUrl } from './common.js';

/** Microsoft Teams: a Workflows (Power Automate) webhook, sent an Adaptive Card as a message attachment. */
export const teamsChannelConfigSchema = {
  $id: 'TeamsChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: { url: webhookUrl },
} as const;

export type TeamsChannelConfig = FromSchema<typeof teamsChannelConfigSchema>;
export const teamsSecrets = ['/url'] as const;
