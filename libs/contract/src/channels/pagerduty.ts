import type { FromSchema } from 'json-schema-to-ts';
import { apiUrl } from './common.js';

/**
 * PagerDuty Events API v2: trigger, acknowledge and resolve events with `dedup_key` = our
 * incident id, to `api_url` (default https://events.pagerduty.com/v2/enqueue; the EU
 * service is https://events.eu.pagerduty.com/v2/enqueue).
 */
export const pagerdutyChannelConfigSchema = {
  $id: 'PagerdutyChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['routing_key'],
  properties: {
    /** The integration key of a service's Events API v2 integration. */
    routing_key: { type: 'string', pattern: '^[A-Za-z0-9]{32}$' },
    severity: { type: 'string', enum: ['critical', 'error', 'warning', 'info'] },
    api_url: apiUrl,
  },
} as const;

export type PagerdutyChannelConfig = FromSchema<typeof pagerdutyChannelConfigSchema>;
export const pagerdutySecrets = ['/routing_key'] as const;
