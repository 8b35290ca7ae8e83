/**
 * The one documented list of error codes. Every failed response of every service
 * carries exactly one of these in the envelope's `code` field. Codes are stable:
 * never rename or reuse one; add new ones at the end of their group.
 * docs/errors.md is checked against this list by a unit test.
 */
export const ERROR_CODES = {
  // 400: the request itself is wrong
  INVALID_JSON: { status: 400, description: 'The body is not valid JSON (or not valid UTF-8).' },
  VALIDATION_FAILED: {
    status: 400,
    description: 'The body is JSON but breaks the schema; `details` lists each problem.',
  },
  INVALID_PARAMETER: {
    status: 400,
    description: 'A path or query parameter is malformed or out of range; `details` names it.',
  },
  INVALID_TEMPLATE: {
    status: 400,
    description:
      'A message template does not parse, uses a variable that is not documented (docs/alerting.md, "Templates"), or uses a partial; `details` names the field and the problem.',
  },
  TARGET_NOT_ALLOWED: {
    status: 400,
    description:
      "A monitor's URL or a webhook URL is an IP address the egress policy denies (loopback, private, link-local, ... in any notation), or its port is one EGRESS_DENY_PORTS denies (25 by default), whatever its host; `details.path` names the field. Names are judged when a check connects.",
  },
  INVITATION_INVALID: {
    status: 400,
    description:
      'An invitation link is malformed, forged, expired, revoked or used already, or was sent to another email than the one signing in with it; ask for a new invitation.',
  },
  RESET_LINK_INVALID: {
    status: 400,
    description: 'A password-reset link is malformed, forged, expired or used already; ask for a new one.',
  },
  WEAK_PASSWORD: {
    status: 400,
    description:
      'The password is shorter than the minimum (docs/access.md, "Limits"), longer than the maximum, or on the list of common passwords; `details.reason` says which.',
  },
  OIDC_FAILED: {
    status: 400,
    description:
      "A single sign-on callback was refused: its `state` is unknown, used or expired, or the identity provider's answer failed validation (issuer, audience, nonce, signature); sign in again from the start.",
  },
  INVALID_SCHEMA: {
    status: 400,
    description:
      'A submitted event schema is refused: not a JSON Schema (draft 2020-12, strict), larger than 32 KiB, nested deeper than 32 levels, a `$ref` outside the schema, `format: regex` or an unknown format, or a `pattern` the linear-time engine cannot run (backreferences, lookahead); `details.problems` says where (docs/event-schemas.md, "Refusals").',
  },
  SCHEMA_VIOLATION: {
    status: 400,
    description:
      "Events of the request violate their (source, category)'s event schema, whose action is `reject`; nothing of the request was accepted. `details.invalid_events` lists their indexes, `details.problems` each violation (`/events/<i>/payload/...`), `details.schemas` each event's schema id and version (docs/event-schemas.md).",
  },
  // 401: who are you?
  MISSING_CREDENTIALS: {
    status: 401,
    description: 'No access key (`X-Access-Key` / `key`) or no `Authorization: Bearer` API key was sent.',
  },
  INVALID_CREDENTIALS: {
    status: 401,
    description: 'The key is malformed, unknown, of the wrong kind, or revoked.',
  },
  KEY_EXPIRED: {
    status: 401,
    description: 'The key was valid but its expiry time has passed; ask for a new key.',
  },
  SIGN_IN_FAILED: {
    status: 401,
    description:
      'The email and password (or the TOTP code) do not match an account; the same answer whichever was wrong.',
  },
  TOTP_REQUIRED: {
    status: 401,
    description: 'The password was right and the account has two-step sign-in: send `totp` with the current code.',
  },
  SESSION_EXPIRED: {
    status: 401,
    description:
      'The session cookie names a session that was signed out, expired (idle or absolute), or whose person is no longer a member of its tenant; sign in again.',
  },
  // 403: we know you, and no
  INSUFFICIENT_SCOPE: {
    status: 403,
    description:
      "The API key, or the signed-in person's role, lacks the scope this route needs (`details.scope`; docs/access.md has the matrix).",
  },
  MONITOR_NOT_ALLOWED: { status: 403, description: 'The API key is limited to other monitors.' },
  QUOTA_EXCEEDED: {
    status: 403,
    description:
      'The tenant has as many monitors (or status pages, or a page as many subscribers, custom domains or open reports, or as many ids suppressed by deletions) as its quota allows (`details.quota`); delete one, or ask the operator to raise it.',
  },
  ORIGIN_NOT_ALLOWED: {
    status: 403,
    description: "The request's `Origin` is not in the access key's allowed origins.",
  },
  SOURCE_NOT_ALLOWED: {
    status: 403,
    description: "An event's `source` is not in the access key's allowed sources.",
  },
  CSRF_FAILED: {
    status: 403,
    description:
      "A state-changing request authenticated by the session cookie came without the session's `X-CSRF-Token`, with a wrong one, or from another origin; nothing was changed.",
  },
  ROLE_NOT_ALLOWED: {
    status: 403,
    description:
      'Only an owner may grant or take the owner role, remove an owner or invite one; an admin may do the rest.',
  },
  NOT_A_MEMBER: {
    status: 403,
    description:
      'The person signed in is not a member of that tenant (or of any: ask an owner or admin for an invitation).',
  },
  // 404
  NOT_FOUND: { status: 404, description: 'No such route.' },
  MONITOR_NOT_FOUND: { status: 404, description: 'No monitor with this id (never created, or deleted).' },
  SCREENSHOT_NOT_FOUND: {
    status: 404,
    description:
      'This check of the monitor has no screenshot: it took none (only failed browser checks do), it is not stored yet, or it is past SCREENSHOT_RETENTION_DAYS.',
  },
  STATUS_PAGE_NOT_FOUND: {
    status: 404,
    description: 'No status page with this slug (never created, deleted, or of another tenant).',
  },
  CHANNEL_NOT_FOUND: { status: 404, description: 'No alert channel with this id in this tenant.' },
  ESCALATION_POLICY_NOT_FOUND: { status: 404, description: 'No escalation policy with this id in this tenant.' },
  INCIDENT_NOT_FOUND: {
    status: 404,
    description: 'No incident with this id in this tenant (or its down alert has not been dispatched yet).',
  },
  MEMBER_NOT_FOUND: { status: 404, description: 'No member with this person id in this tenant.' },
  INVITATION_NOT_FOUND: { status: 404, description: 'No pending invitation with this id in this tenant.' },
  EVENT_SCHEMA_NOT_FOUND: { status: 404, description: 'No event schema with this id in this tenant.' },
  KEY_NOT_FOUND: { status: 404, description: 'No key with this key id in this tenant.' },
  REPORT_NOT_FOUND: { status: 404, description: 'No status report with this id on this status page.' },
  SUBSCRIBER_NOT_FOUND: { status: 404, description: 'No subscriber with this id on this status page.' },
  DOMAIN_NOT_FOUND: { status: 404, description: 'No custom domain with this host name on this status page.' },
  SSO_UNAVAILABLE: {
    status: 503,
    description:
      'The identity provider (OIDC_ISSUER) did not answer: its discovery document, keys or token endpoint could not be read; retry, or sign in with email and password.',
  },
  SSO_NOT_CONFIGURED: {
    status: 404,
    description: 'Single sign-on is not configured here (OIDC_ISSUER is empty); sign in with email and password.',
  },
  LINK_INVALID: {
    status: 400,
    description: 'An acknowledge link is malformed, forged or expired; acknowledge from the console instead.',
  },
  SUBSCRIPTION_LINK_INVALID: {
    status: 400,
    description:
      'A status-page confirmation or unsubscribe token is malformed, forged, for another page, or (a confirmation) expired or used; subscribe again for a new link.',
  },
  WEBHOOK_VERIFICATION_FAILED: {
    status: 400,
    description:
      'The webhook subscriber URL did not answer the verification request (docs/api.md, "Webhook subscribers") with its `challenge` in time; nothing is sent to a URL that did not ask. `details.reason` says what happened.',
  },
  DOMAIN_NOT_ALLOWED: {
    status: 400,
    description:
      "The custom domain is one of the operator's own host names (PUBLIC_URL's, OPERATOR_HOSTS) or under one of them; use a host name of your own.",
  },
  DOMAIN_NOT_VERIFIED: {
    status: 400,
    description:
      'The TXT record that proves the custom domain was not found through the resolver; publish `details.txt_value` at `details.txt_name` and try again (DNS changes can take minutes to spread).',
  },
  HEARTBEAT_NOT_FOUND: {
    status: 404,
    description:
      "No heartbeat monitor has this token (malformed, made with another HEARTBEAT_KEY, or the gateway has no HEARTBEAT_KEY); the monitor's `heartbeat_token` is the one to call.",
  },
  DELETION_NOT_FOUND: {
    status: 404,
    description: "No deletion with this id in this tenant (another tenant's deletions are not found either).",
  },
  METHOD_NOT_ALLOWED: { status: 405, description: 'The route exists but not with this method; see `Allow`.' },
  // 409
  KEY_TAKEN: {
    status: 409,
    description:
      'Another object of this kind in this tenant has this configuration key (docs/as-code.md); keys are unique per tenant and kind.',
  },
  SLUG_TAKEN: {
    status: 409,
    description:
      'A status page with this slug exists already (slugs are public paths, unique across tenants); choose another.',
  },
  IN_USE: {
    status: 409,
    description:
      'The alert channel or escalation policy is used by a monitor or a policy (`details.used_by` lists them); remove it there first.',
  },
  ALREADY_MEMBER: {
    status: 409,
    description: 'The person with this email is a member of the tenant already; change their role instead.',
  },
  LAST_OWNER: {
    status: 409,
    description: 'The tenant would have no owner left; make another member owner first.',
  },
  DOMAIN_TAKEN: {
    status: 409,
    description:
      "Another status page's custom domain is this host name, verified (a host name serves one page); remove it there first.",
  },
  SCHEMA_EXISTS: {
    status: 409,
    description:
      'The tenant has an event schema for this (source, category) already; add a version to it (`details.schema_id`).',
  },
  // 412
  PRECONDITION_FAILED: {
    status: 412,
    description:
      "`If-Match` names another version than the monitor's current one (someone changed it since you read it); nothing was changed. Read it again (`ETag`) and retry.",
  },
  // 413: over a documented limit; `details.limit` names it
  PAYLOAD_TOO_LARGE: { status: 413, description: 'The body is larger than the byte limit.' },
  BATCH_TOO_LARGE: { status: 413, description: 'The batch has more events than allowed.' },
  EVENT_TOO_LARGE: { status: 413, description: 'One event is larger than the per-event byte limit.' },
  KAFKA_MESSAGE_TOO_LARGE: {
    status: 413,
    description:
      "Kafka refused a message as larger than the broker's limit (max.message.bytes); retrying the same events fails the same way. Events of a request that was split may have been stored in part.",
  },
  TOO_MANY_IDS: {
    status: 413,
    description:
      'A deletion request names more user ids and anonymous ids together than DELETION_LIMITS.maxIdsPerRequest (1000); split it.',
  },
  // 415
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    description: 'Content-Type is not application/json or text/plain, or Content-Encoding is not identity or gzip.',
  },
  // 429
  RATE_LIMITED: {
    status: 429,
    description:
      'Too many requests for this key, too many exports at once, too many deletions of the tenant pending or running, or too many subscription requests from this address or to this status page (`details.limit` names the limit); see `Retry-After`.',
  },
  SIGN_IN_THROTTLED: {
    status: 429,
    description:
      'Too many failed sign-ins for this account or from this address: wait `Retry-After` seconds (the wait grows with each failure and ends by itself; nobody is locked out).',
  },
  // 5xx: our side; safe to retry after `Retry-After`
  INTERNAL_ERROR: { status: 500, description: 'An unexpected error; details are in our logs, not here.' },
  KAFKA_UNAVAILABLE: {
    status: 503,
    description:
      'Kafka did not acknowledge in time. The events may or may not have been stored: retry the same request; every copy of an event with a client id (`id`) gets the same event_id and is read once by `LIMIT 1 BY event_id`.',
  },
  KAFKA_REJECTED: {
    status: 500,
    description:
      'Kafka refused the events for a reason retrying does not fix (authorization, an invalid record); an operator must act. Events of a request that was split may have been stored in part.',
  },
  OVERLOADED: { status: 503, description: 'Too much work in flight; nothing was accepted, retry.' },
  STORE_UNAVAILABLE: { status: 503, description: 'ClickHouse did not answer in time.' },
  REGISTRY_UNAVAILABLE: {
    status: 503,
    description:
      'PostgreSQL (the registry of tenants, keys, monitors and status pages) did not answer; nothing was changed, retry. Reads of checks and events, and ingestion, go on meanwhile.',
  },
  SHUTTING_DOWN: { status: 503, description: 'The instance is shutting down; retry on another.' },
  RUN_TIMEOUT: {
    status: 504,
    description:
      "POST /api/monitors/run-once: no check runner of the location (for a browser monitor: none with Chromium) answered within the monitor's timeout_ms and a margin, at most RUN_ONCE_TIMEOUT_MS; nothing was stored, retry.",
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function statusOf(code: ErrorCode): number {
  return ERROR_CODES[code].status;
}
