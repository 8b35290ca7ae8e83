import type { FromSchema } from 'json-schema-to-ts';
import { apiUrl, label } from './common.js';

/** Pushover: the Message API (`{api_url}/1/messages.json`, default https://api.pushover.net) with an application token and a user or group key. */
export const pushoverChannelConfigSchema = {
  $id: 'PushoverChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['token', 'user_key'],
  properties: {
    token: { type: 'string', pattern: '^[A-Za-z0-9]{30}$' },
    user_key: { type: 'string', pattern: '^[A-Za-z0-9]{30}$' },
    device: label,
    /** -2 to 1 (2, emergency, needs receipts we do not poll). */
    priority: { type: 'integer', minimum: -2, maximum: 1 },
    api_url: apiUrl,
  },
} as const;

export type PushoverChannelConfig = FromSchema<typeof pushoverChannelConfigSchema>;
export const pushoverSecrets = ['/token', '/user_key'] as const;
