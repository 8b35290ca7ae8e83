import type { FromSchema } from 'json-schema-to-ts';
import { httpUrl, webhookSecret } from '../monitor-schema.js';

/**
 * A signed webhook: the alert message POSTed as JSON to `url`, signed with `secret`
 * (`X-Telemetry-Signature`). A monitor's `webhooks` and `webhook_secret` are such configs.
 * `body_template`, when set, replaces the body: a Mustache template of the documented
 * variables (docs/alerting.md), each value inserted JSON-escaped.
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
    body_template: { type: 'string', minLength: 1, maxLength: 8000 },
  },
} as const;

export type WebhookChannelConfig = FromSchema<typeof webhookChannelConfigSchema>;
export const webhookSecrets = ['/url', '/secret'] as const;
