import type { FromSchema } from 'json-schema-to-ts';
import { apiUrl } from './common.js';

/**
 * Opsgenie Alert API: create, acknowledge and close an alert with `alias` = our incident
 * id, `Authorization: GenieKey <api_key>`, at `api_url` (default https://api.opsgenie.com;
 * the EU instance is https://api.eu.opsgenie.com).
 */
export const opsgenieChannelConfigSchema = {
  $id: 'OpsgenieChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['api_key'],
  properties: {
    api_key: { type: 'string', pattern: '^[A-Za-z0-9-]{20,64}$' },
    priority: { type: 'string', enum: ['P1', 'P2', 'P3', 'P4', 'P5'] },
    api_url: apiUrl,
  },
} as const;

export type OpsgenieChannelConfig = FromSchema<typeof opsgenieChannelConfigSchema>;
export const opsgenieSecrets = ['/api_key'] as const;
