import { ID_PATTERN, LIMITS } from '../limits.js';
import {
  BADGE_WINDOWS,
  HOSTNAME_PATTERN,
  REPORT_ID_PATTERN,
  STATUS_FOLLOW_LIMITS,
  SUBSCRIBER_ID_PATTERN,
} from '../status-follow.js';
import { cursorParam, header, limitParam, queryParam, slugPath } from './parameters.js';
import {
  bodyErrors,
  envelopeOf,
  errors,
  jsonBody,
  jsonOk,
  keyErrors,
  pageOf,
  ref,
  storeErrors,
  type Json,
} from './responses.js';

/**
 * The routes of status pages people follow in the OpenAPI document (docs/api.md, "Status
 * reports, subscribers, …"): a page's reports, subscribers and custom domains, managed with
 * an API key (monitors:read / monitors:write, as the page itself); and what anyone may do
 * without one: read the history, subscribe (email or webhook), confirm, unsubscribe, follow
 * the feeds and embed the badges.
 */

const read = [{ apiKey: ['monitors:read'] }];
const write = [{ apiKey: ['monitors:write'] }];
const pathParam = (name: string, description: string, schema: Json): Json => ({
  name,
  in: 'path',
  required: true,
  description,
  schema,
});
const reportPath = pathParam('id', 'Status report identifier (rpt_…).', { type: 'string', pattern: REPORT_ID_PATTERN });
const subscriberPath = pathParam('id', 'Subscriber identifier (sub_…).', {
  type: 'string',
  pattern: SUBSCRIBER_ID_PATTERN,
});
const hostnamePath = pathParam('hostname', 'The custom domain: a lower-case host name.', {
  type: 'string',
  pattern: HOSTNAME_PATTERN,
});
const monitorIdPath = pathParam('monitor_id', 'A monitor of the page (GET /api/status/{slug} lists their ids).', {
  type: 'string',
  minLength: 1,
  maxLength: LIMITS.maxMonitorIdLength,
  pattern: ID_PATTERN,
});
const pageLimit = limitParam(STATUS_FOLLOW_LIMITS.maxHistoryPageSize);
const pageParams = [
  cursorParam,
  { ...pageLimit, schema: { ...(pageLimit.schema as Json), default: STATUS_FOLLOW_LIMITS.historyPageSize } },
];
const deleted = jsonOk('Deleted.', envelopeOf({ type: 'null' }));
const reportOk = (description: string, headers?: Json): Json =>
  jsonOk(description, envelopeOf(ref('StatusReportView')), headers);
const location = { Location: header("The report's address: /api/status-pages/{slug}/reports/{id}.") };
const domainOk = (description: string): Json => jsonOk(description, envelopeOf(ref('DomainView')));
/** What every owner route of a page answers about the page (and the registry, PostgreSQL). */
const pageErrors = ['INVALID_PARAMETER', 'STATUS_PAGE_NOT_FOUND', 'REGISTRY_UNAVAILABLE'] as const;
const obj = (properties: Json): Json => ({
  type: 'object',
  required: Object.keys(properties),
  additionalProperties: false,
  properties,
});
const monitorIds = { type: 'array', items: { type: 'string' } };

/** A public route's answer: no key, the page's slug in the path. */
const publicErrors = (...more: Parameters<typeof errors>[0]): Json =>
  errors(['INVALID_PARAMETER', 'STATUS_PAGE_NOT_FOUND', ...more, 'REGISTRY_UNAVAILABLE', ...storeErrors]);
const tokenBody = (what: string): Json => ({
  ...jsonBody('SubscriptionToken'),
  description: `The token of ${what}.`,
});

/** A feed's or badge's answer: not the JSON envelope. */
const typed = (description: string, type: string, headers: Json): Json => ({
  description,
  headers,
  content: { [type]: { schema: { type: 'string' } } },
});
const stale = {
  'X-Status-Page-Stale': header(
    '`1` when the store could not be read and the last answer is served; absent otherwise.',
    {
      type: 'string',
      enum: ['1'],
    },
  ),
};
const feedHeaders = {
  'Cache-Control': header('`public, max-age=N`: until the next render (at most STATUS_PAGE_CACHE_SECONDS).'),
  ETag: header('Send it back in If-None-Match: 304 while no notice was added.'),
  ...stale,
};
const badgeHeaders = {
  'Cache-Control': header('`public, max-age=N`: until the next render (at most STATUS_PAGE_CACHE_SECONDS).'),
  ETag: header('Send it back in If-None-Match: 304 while the badge is unchanged.'),
  ...stale,
};
const feed = (operationId: string, kind: 'RSS 2.0' | 'Atom 1.0', type: string): Json => ({
  get: {
    operationId,
    summary: `The page's notices as ${kind}`,
    description: `The newest ${STATUS_FOLLOW_LIMITS.feedEntries} notices of the page (reports published and updated, maintenance scheduled and started), newest first; each entry's id is stable (\`urn:telemetry:notice:<notice id>\`). Texts are plain text, escaped: markup a report holds is shown as typed. No key, no query parameter (400 INVALID_PARAMETER); a feed reader needs no subscription.`,
    security: [],
    parameters: [slugPath],
    responses: {
      '200': typed('The feed.', type, feedHeaders),
      '304': { description: 'Not modified since the ETag sent.', headers: feedHeaders },
      ...publicErrors(),
    },
  },
});
const badge = (operationId: string, summary: string, window = false): Json => ({
  get: {
    operationId,
    summary,
    description:
      'An SVG badge (shields.io style) of a monitor of a published page, for READMEs and wikis. No key; only monitors the page shows (else 404 MONITOR_NOT_FOUND, as JSON: errors are never an image). A badge whose numbers cannot be read is answered 200: the last one (X-Status-Page-Stale: 1) or an `unknown` one. No query parameter but `window` of uptime.svg (400 INVALID_PARAMETER).',
    security: [],
    parameters: [
      slugPath,
      monitorIdPath,
      ...(window
        ? [queryParam('window', { type: 'string', enum: BADGE_WINDOWS, default: '30d' }, 'The uptime window.')]
        : []),
    ],
    responses: {
      '200': typed('The badge.', 'image/svg+xml', badgeHeaders),
      '304': { description: 'Not modified since the ETag sent.', headers: badgeHeaders },
      ...publicErrors('MONITOR_NOT_FOUND'),
    },
  },
});

export const statusFollowPaths: Json = {
  '/api/status-pages/{slug}/reports': {
    get: {
      operationId: 'listStatusReports',
      summary: "A status page's reports, newest first (drafts included)",
      security: read,
      parameters: [slugPath, ...pageParams],
      responses: {
        '200': jsonOk('One page of reports.', pageOf('StatusReportView')),
        ...keyErrors(...pageErrors),
      },
    },
    post: {
      operationId: 'createStatusReport',
      summary: 'Open a status report (or a draft) with its first update',
      description:
        'Not a draft: published at once, and every subscriber of the page (of one of its monitors) is told (notice `report_opened`). `monitor_ids` must be monitors of the page (400 VALIDATION_FAILED at `/monitor_ids/N`); `at` defaults to now and may not be more than 5 minutes ahead. A page holds at most `maxOpenReportsPerPage` reports not resolved (403 QUOTA_EXCEEDED). Texts are plain text: markup is kept as typed and escaped wherever it is shown.',
      security: write,
      parameters: [slugPath],
      requestBody: jsonBody('StatusReportCreate'),
      responses: {
        '201': reportOk('Opened.', location),
        ...keyErrors(...bodyErrors, ...pageErrors, 'QUOTA_EXCEEDED'),
      },
    },
  },
  '/api/status-pages/{slug}/reports/from-incident': {
    post: {
      operationId: 'createStatusReportFromIncident',
      summary: 'A draft report from an incident of a monitor of the page',
      description:
        'Title "<monitor name> is down", the monitor affected, impact `major`, a first update `investigating` with a default message; a draft: change it, then publish it (PATCH {"draft": false}). 404 INCIDENT_NOT_FOUND for an incident of another tenant or none; 400 VALIDATION_FAILED when its monitor is not on the page.',
      security: write,
      parameters: [slugPath],
      requestBody: jsonBody('ReportFromIncident'),
      responses: {
        '201': reportOk('The draft.', location),
        ...keyErrors(...bodyErrors, ...pageErrors, 'INCIDENT_NOT_FOUND', 'QUOTA_EXCEEDED'),
      },
    },
  },
  '/api/status-pages/{slug}/reports/{id}': {
    get: {
      operationId: 'getStatusReport',
      summary: 'A status report of the page, with its updates',
      security: read,
      parameters: [slugPath, reportPath],
      responses: { '200': reportOk('The report.'), ...keyErrors(...pageErrors, 'REPORT_NOT_FOUND') },
    },
    patch: {
      operationId: 'updateStatusReport',
      summary: "Change a report's title, impact or monitors, or publish a draft",
      description: '`{"draft": false}` publishes a draft: subscribers are told (notice `report_opened`).',
      security: write,
      parameters: [slugPath, reportPath],
      requestBody: jsonBody('StatusReportPatch'),
      responses: {
        '200': reportOk('The changed report.'),
        ...keyErrors(...bodyErrors, ...pageErrors, 'REPORT_NOT_FOUND'),
      },
    },
    delete: {
      operationId: 'deleteStatusReport',
      summary: 'Delete a report (and its updates) from the page',
      security: write,
      parameters: [slugPath, reportPath],
      responses: { '200': deleted, ...keyErrors(...pageErrors, 'REPORT_NOT_FOUND') },
    },
  },
  '/api/status-pages/{slug}/reports/{id}/updates': {
    post: {
      operationId: 'createReportUpdate',
      summary: 'Add an update to a report: its new state and what to say',
      description:
        '`resolved` resolves the report (resolved_at); a later update of another state reopens it. Not a draft: subscribers are told (notice `report_updated`). A report holds at most `maxUpdatesPerReport` updates (403 QUOTA_EXCEEDED).',
      security: write,
      parameters: [slugPath, reportPath],
      requestBody: jsonBody('ReportUpdateCreate'),
      responses: {
        '201': reportOk('The report with its new update.'),
        ...keyErrors(...bodyErrors, ...pageErrors, 'REPORT_NOT_FOUND', 'QUOTA_EXCEEDED'),
      },
    },
  },
  '/api/status-pages/{slug}/subscribers': {
    get: {
      operationId: 'listStatusSubscribers',
      summary: "A status page's subscribers: email addresses, webhook origins",
      description:
        "A webhook subscriber shows its URL's scheme, host and port only: its path and query may hold secrets.",
      security: read,
      parameters: [slugPath, cursorParam, limitParam(500)],
      responses: {
        '200': jsonOk('One page of subscribers.', pageOf('SubscriberView')),
        ...keyErrors(...pageErrors),
      },
    },
  },
  '/api/status-pages/{slug}/subscribers/{id}': {
    delete: {
      operationId: 'deleteStatusSubscriber',
      summary: 'Remove a subscriber (its pending deliveries go with it)',
      security: write,
      parameters: [slugPath, subscriberPath],
      responses: { '200': deleted, ...keyErrors(...pageErrors, 'SUBSCRIBER_NOT_FOUND') },
    },
  },
  '/api/status-pages/{slug}/domains': {
    get: {
      operationId: 'listStatusDomains',
      summary: "A status page's custom domains",
      security: read,
      parameters: [slugPath],
      responses: {
        '200': jsonOk('Every custom domain of the page.', envelopeOf({ type: 'array', items: ref('DomainView') })),
        ...keyErrors(...pageErrors),
      },
    },
    post: {
      operationId: 'createStatusDomain',
      summary: 'Add a custom domain: publish its TXT record, then verify it',
      description:
        "A lower-case host name of two labels or more (no IP literal, trailing dot or wildcard: 400 VALIDATION_FAILED); never one of the operator's (PUBLIC_URL's, OPERATOR_HOSTS) or under one (400 DOMAIN_NOT_ALLOWED). At most `maxDomainsPerPage` per page (403 QUOTA_EXCEEDED).",
      security: write,
      parameters: [slugPath],
      requestBody: jsonBody('DomainCreate'),
      responses: {
        '201': domainOk('Added, not verified: publish TXT `txt_value` at `txt_name`.'),
        '200': domainOk('Claimed by this page already: the same claim and TXT record, nothing changed.'),
        ...keyErrors(...bodyErrors, ...pageErrors, 'DOMAIN_NOT_ALLOWED', 'QUOTA_EXCEEDED'),
      },
    },
  },
  '/api/status-pages/{slug}/domains/{hostname}': {
    delete: {
      operationId: 'deleteStatusDomain',
      summary: 'Remove a custom domain (it stops serving the page)',
      security: write,
      parameters: [slugPath, hostnamePath],
      responses: { '200': deleted, ...keyErrors(...pageErrors, 'DOMAIN_NOT_FOUND') },
    },
  },
  '/api/status-pages/{slug}/domains/{hostname}/verify': {
    post: {
      operationId: 'verifyStatusDomain',
      summary: 'Look up the TXT record of a custom domain; verified, it serves the page',
      description:
        'Asks DOMAIN_RESOLVER (within DOMAIN_VERIFY_TIMEOUT_MS) for the TXT records at `txt_name`. Not found: 400 DOMAIN_NOT_VERIFIED (`details.txt_name`, `details.txt_value`, `details.reason`); verified for another page already: 409 DOMAIN_TAKEN; become one of the operator’s names since it was claimed: 400 DOMAIN_NOT_ALLOWED. Verified already: 200, nothing looked up.',
      security: write,
      parameters: [slugPath, hostnamePath],
      responses: {
        '200': domainOk('Verified.'),
        ...keyErrors(...pageErrors, 'DOMAIN_NOT_FOUND', 'DOMAIN_NOT_VERIFIED', 'DOMAIN_TAKEN', 'DOMAIN_NOT_ALLOWED'),
      },
    },
  },

  // --- public: no key
  '/api/status/{slug}/history': {
    get: {
      operationId: 'getStatusHistory',
      summary: "A published page's resolved reports, newest first (no key)",
      security: [],
      parameters: [slugPath, ...pageParams],
      responses: {
        '200': jsonOk('One page of resolved reports.', pageOf('PublicReport'), {
          'Cache-Control': header('`public, max-age=N` (STATUS_PAGE_CACHE_SECONDS).'),
        }),
        ...publicErrors(),
      },
    },
  },
  '/api/status/{slug}/subscribers': {
    post: {
      operationId: 'subscribeToStatusPage',
      summary: "Follow a page's notices by email or webhook (no key)",
      description:
        'An email: always 202 `{"state": "confirmation_sent"}`, whether the address is new, pending or subscribed already (nobody learns who follows a page); a new or pending one is mailed a confirmation link (valid SUBSCRIPTION_CONFIRM_TTL_SECONDS). A webhook: the URL is judged by the egress policy (400 TARGET_NOT_ALLOWED, before anything is sent), then gets a signed `subscription.verify` POST and must answer its challenge within WEBHOOK_VERIFY_TIMEOUT_MS (else 400 WEBHOOK_VERIFICATION_FAILED, `details.reason`); verified: 201 with the signing secret, shown once. `monitor_ids` must be monitors of the page (400 VALIDATION_FAILED). Rate limits per client address and per page (429 RATE_LIMITED, Retry-After); a page holds at most `maxSubscribersPerPage` (403 QUOTA_EXCEEDED).',
      security: [],
      parameters: [slugPath],
      requestBody: jsonBody('Subscribe'),
      responses: {
        '201': jsonOk(
          'A webhook, verified and active: `secret` signs every call (X-Telemetry-Signature); it is never shown again.',
          envelopeOf(
            obj({
              id: { type: 'string', pattern: SUBSCRIBER_ID_PATTERN },
              kind: { const: 'webhook' },
              monitor_ids: monitorIds,
              secret: { type: 'string', pattern: '^whsec_' },
            }),
          ),
        ),
        '202': jsonOk(
          'An email: a confirmation was sent if one was due (the same answer in every case).',
          envelopeOf(obj({ state: { const: 'confirmation_sent' } })),
        ),
        ...publicErrors(
          ...bodyErrors,
          'TARGET_NOT_ALLOWED',
          'WEBHOOK_VERIFICATION_FAILED',
          'QUOTA_EXCEEDED',
          'RATE_LIMITED',
        ),
      },
    },
  },
  '/api/status/{slug}/subscribers/confirm': {
    post: {
      operationId: 'confirmStatusSubscription',
      summary: "Confirm an email subscription with its link's token (no key)",
      description:
        'The token of the confirmation link (the fragment of /status/{slug}/subscription#confirm=…): forged, expired, used, for another page or of another purpose: 400 SUBSCRIPTION_LINK_INVALID. Confirmations and unsubscriptions of one client address are limited to SUBSCRIPTION_LINKS_PER_ADDRESS_PER_HOUR (429 RATE_LIMITED).',
      security: [],
      parameters: [slugPath],
      requestBody: tokenBody('the confirmation link'),
      responses: {
        '200': jsonOk(
          'Confirmed: the address is told of every notice from now on.',
          envelopeOf(obj({ kind: { const: 'email' }, monitor_ids: monitorIds })),
        ),
        ...publicErrors(...bodyErrors, 'SUBSCRIPTION_LINK_INVALID', 'RATE_LIMITED'),
      },
    },
  },
  '/api/status/{slug}/unsubscribe': {
    post: {
      operationId: 'unsubscribeFromStatusPage',
      summary: 'Unsubscribe with a mail\u2019s token: one click (RFC 8058) or JSON (no key)',
      description:
        'The token in `?token=` with the form body `List-Unsubscribe=One-Click` (what mail clients send for List-Unsubscribe-Post), or JSON `{"token": …}`. The subscription is deleted with its pending deliveries; an already deleted one answers the same. A forged token, one of another page or another purpose: 400 SUBSCRIPTION_LINK_INVALID. Limited per client address as confirmations are (429 RATE_LIMITED).',
      security: [],
      parameters: [
        slugPath,
        queryParam('token', { type: 'string', minLength: 1, maxLength: 512 }, 'The token of the unsubscribe link.'),
      ],
      requestBody: {
        required: false,
        content: {
          'application/json': { schema: ref('SubscriptionToken') },
          'application/x-www-form-urlencoded': {
            schema: {
              type: 'object',
              properties: { 'List-Unsubscribe': { const: 'One-Click' } },
            },
          },
        },
      },
      responses: {
        '200': jsonOk('Unsubscribed (or gone already).', envelopeOf(obj({ state: { const: 'unsubscribed' } }))),
        ...publicErrors(...bodyErrors, 'SUBSCRIPTION_LINK_INVALID', 'RATE_LIMITED'),
      },
    },
  },
  '/api/status-domain': {
    get: {
      operationId: 'getStatusDomain',
      summary: 'The slug of the page a verified custom domain serves (by the Host header; no key)',
      description:
        "How the page's script finds its slug on a custom domain. A Host that is no verified custom domain: 404.",
      security: [],
      responses: {
        '200': jsonOk("The page's slug.", envelopeOf(obj({ slug: { type: 'string' } }))),
        ...errors(['INVALID_PARAMETER', 'NOT_FOUND', 'REGISTRY_UNAVAILABLE', ...storeErrors]),
      },
    },
  },
  '/status/{slug}/feed.rss': feed('getStatusFeedRss', 'RSS 2.0', 'application/rss+xml'),
  '/status/{slug}/feed.atom': feed('getStatusFeedAtom', 'Atom 1.0', 'application/atom+xml'),
  '/status/{slug}/badges/{monitor_id}/status.svg': badge(
    'getStatusBadge',
    "A badge of a monitor's status now (up, down, paused or pending)",
  ),
  '/status/{slug}/badges/{monitor_id}/uptime.svg': badge(
    'getUptimeBadge',
    "A badge of a monitor's uptime over a window (24h, 7d or 30d)",
    true,
  ),
  '/status/{slug}/badges/{monitor_id}/response-time.svg': badge(
    'getResponseTimeBadge',
    "A badge of a monitor's median response time over the last 24 hours",
  ),
};
