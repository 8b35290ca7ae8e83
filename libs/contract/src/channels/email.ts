import type { FromSchema } from 'json-schema-to-ts';

/**
 * Email: each notification to every address of `to`, through the operator's mail settings
 * (SMTP_URL, MAIL_FROM), or through the tenant's own server when `smtp` is set (a target
 * like any other: the egress policy judges it).
 */
export const emailChannelConfigSchema = {
  $id: 'EmailChannelConfig',
  type: 'object',
  additionalProperties: false,
  required: ['to'],
  properties: {
    to: {
      type: 'array',
      minItems: 1,
      maxItems: 20,
      uniqueItems: true,
      items: { type: 'string', format: 'email', maxLength: 254 },
    },
    smtp: {
      type: 'object',
      additionalProperties: false,
      required: ['url', 'from'],
      properties: {
        /** smtp://user:pass@host:587 (STARTTLS when offered; ?starttls=required insists) or smtps://… (implicit TLS). */
        url: { type: 'string', minLength: 9, maxLength: 2048, pattern: '^smtps?://[^\\s]+$', format: 'uri' },
        from: { type: 'string', format: 'email', maxLength: 254 },
      },
    },
  },
} as const;

export type EmailChannelConfig = FromSchema<typeof emailChannelConfigSchema>;
export const emailSecrets = ['/smtp/url'] as const;
