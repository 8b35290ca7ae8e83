import { v } from '@telemetry/platform';

/**
 * Status pages people follow (docs/console.md, "Status reports" on; docs/operations.md,
 * "Custom domains"): subscriptions, their limits, and custom domains.
 */
export const statusFollowSpec = {
  subscriptionConfirmTtlSeconds: v.int(
    'SUBSCRIPTION_CONFIRM_TTL_SECONDS',
    2 * 86_400,
    "how long a status-page subscription's confirmation link works; an unconfirmed subscription is forgotten after it",
    60,
    30 * 86_400,
  ),
  subscribePerAddressPerHour: v.int(
    'SUBSCRIBE_PER_ADDRESS_PER_HOUR',
    10,
    'subscription requests (POST /api/status/{slug}/subscribers) one client address may make per hour, all pages together; more answer 429',
    1,
    100_000,
  ),
  subscribePerPagePerHour: v.int(
    'SUBSCRIBE_PER_PAGE_PER_HOUR',
    200,
    'subscription requests one status page takes per hour, all addresses together; more answer 429',
    1,
    1_000_000,
  ),
  subscriptionLinksPerAddressPerHour: v.int(
    'SUBSCRIPTION_LINKS_PER_ADDRESS_PER_HOUR',
    60,
    'confirmations and unsubscriptions (POST /api/status/{slug}/subscribers/confirm, /unsubscribe) one client address may make per hour, all pages together; more answer 429',
    1,
    100_000,
  ),
  webhookVerifyTimeoutMs: v.int(
    'WEBHOOK_VERIFY_TIMEOUT_MS',
    5000,
    "how long a webhook subscriber's URL has to answer the verification request with its challenge",
    100,
    30_000,
  ),
  operatorHosts: v.list(
    'OPERATOR_HOSTS',
    '',
    "the operator's own host names besides PUBLIC_URL's (comma-separated): they serve the console and API, and neither they nor names under them can be a status page's custom domain. IP literals and localhost are always the operator's",
  ),
  domainResolver: v.str(
    'DOMAIN_RESOLVER',
    '',
    "the DNS server custom domains' TXT records are asked of: an IP literal with an optional port (192.0.2.53, 192.0.2.53:5353, [2001:db8::53]:53); empty: the system's resolver",
    /^$|^(?:[0-9.]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/,
  ),
  domainVerifyTimeoutMs: v.int(
    'DOMAIN_VERIFY_TIMEOUT_MS',
    5000,
    "how long the custom domain's TXT lookup may take",
    100,
    30_000,
  ),
} as const;
