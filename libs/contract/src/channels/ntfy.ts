import type { FromSchema } from 'json-schema-to-ts';
import { apiUrl } from './common.js';

/** ntfy: a JSON publish to `server` (default https://ntfy.sh) on `topic`, with an access token when the topic is protected. */
export const ntfyChannelConfigSchema = {
  $id: 'NtfyChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['topic'],
  properties: {
    server: apiUrl,
    topic: { type: 'string', pattern: '^[-_A-Za-z0-9]{1,64}$' },
    token: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[\\x21-\\x7e]+$' },
    /** 1 (min) to 5 (max); down alerts default to 4, the rest to 3. */
    priority: { type: 'integer', minimum: 1, maximum: 5 },
  },
} as const;

export type NtfyChannelConfig = FromSchema<typeof ntfyChannelConfigSchema>;
export const ntfySecrets = ['/token'] as const;
