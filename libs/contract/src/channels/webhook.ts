import type { FromSchema } from 'json-schema-to-ts';
import { httpUrl, webhookSecret } from '../monitor-schema.js';

/**
 * A signed webhook: the alert message POSTed as JSON to `url`, signed with `secret`
 * (`X-Telemetry-Signature`). A monitor's `webhooks` and `webhook_secret` are such configs.
 */
export const webhookChannelConfigSchema = {
  $id: 'WebhookChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['url', 'secret'],
  properties: {
    // As a monitor's `webhooks` entries and its `webhook_secret`.
    url: httpUrl,
    secret: webhookSecret,
  },
} as const;

export type WebhookChannelConfig = FromSchema<typeof webhookChannelConfigSchema>;
