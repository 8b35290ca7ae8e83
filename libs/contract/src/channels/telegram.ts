import type { FromSchema } from 'json-schema-to-ts';
import { apiUrl } from './common.js';

/** Telegram: the Bot API's sendMessage (`{api_url}/bot{bot_token}/sendMessage`) to `chat_id`. */
export const telegramChannelConfigSchema = {
  $id: 'TelegramChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['bot_token', 'chat_id'],
  properties: {
    bot_token: { type: 'string', pattern: '^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$' },
    /** A chat's numeric id, or @channelusername. */
    chat_id: { type: 'string', pattern: '^(-?[0-9]{1,20}|@[A-Za-z0-9_]{5,64})$' },
    /** Default https://api.telegram.org. */
    api_url: apiUrl,
  },
} as const;

export type TelegramChannelConfig = FromSchema<typeof telegramChannelConfigSchema>;
export const telegramSecrets = ['/bot_token'] as const;
