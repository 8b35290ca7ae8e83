import { httpUrl } from '../monitor-schema.js';

/**
 * Pieces of the channel config schemas (channels/<type>.ts). `secrets` of a type's module
 * lists the JSON pointers of its config that are write-only: sealed at rest, shown masked
 * (a URL as its scheme and host, anything else as `****`), and kept when an update sends
 * the shown form back (docs/alerting.md, "Secrets").
 */

/** A provider's webhook URL (Slack, Teams, Discord, Google Chat, Mattermost): a secret, as its path holds the token. */
export const webhookUrl = httpUrl;

/** A provider API's base URL, for a region or a self-hosted server (tests aim it at loopback). */
export const apiUrl = httpUrl;

/** A short label shown by chat providers (a bot's user name, a channel override). */
export const label = { type: 'string', minLength: 1, maxLength: 100, pattern: '^[^\\u0000-\\u001f]+$' } as const;
