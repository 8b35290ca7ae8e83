/**
 * Status pages people follow (docs/console.md, "Status reports" to "Custom domains";
 * docs/api.md, "Status reports and subscribers"): the one definition of the states,
 * impacts, limits and API shapes of status reports, maintenance notices, subscribers,
 * feeds, badges and custom domains.
 */

/** The states of a status report's updates, in their usual order. */
export const REPORT_STATES = ['investigating', 'identified', 'monitoring', 'resolved'] as const;
export type ReportState = (typeof REPORT_STATES)[number];

/** How badly a report says the page's service is hurt (Statuspage's words). */
export const REPORT_IMPACTS = ['none', 'minor', 'major', 'critical'] as const;
export type ReportImpact = (typeof REPORT_IMPACTS)[number];

/** How a subscriber is told (feeds need no subscription). */
export const SUBSCRIBER_KINDS = ['email', 'webhook'] as const;
export type SubscriberKind = (typeof SUBSCRIBER_KINDS)[number];

/** pending: an email subscriber who has not confirmed yet; active: told of every notice. */
export const SUBSCRIBER_STATES = ['pending', 'active'] as const;
export type SubscriberState = (typeof SUBSCRIBER_STATES)[number];

/**
 * What subscribers are told of (a row of `status_notices`; each is one email, one webhook
 * call and one feed entry): a report published, an update of one, a maintenance window
 * coming up (within the runners' look-ahead) or starting.
 */
export const NOTICE_KINDS = [
  'report_opened',
  'report_updated',
  'maintenance_scheduled',
  'maintenance_started',
] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];

/** The windows of uptime badges. */
export const BADGE_WINDOWS = ['24h', '7d', '30d'] as const;
export type BadgeWindow = (typeof BADGE_WINDOWS)[number];

/** Ids: a prefix and 20 lower-case letters or digits, as channels' and people's. */
export const REPORT_ID_PATTERN = '^rpt_[a-z0-9]{20}$';
export const UPDATE_ID_PATTERN = '^upd_[a-z0-9]{20}$';
export const SUBSCRIBER_ID_PATTERN = '^sub_[a-z0-9]{20}$';
export const NOTICE_ID_PATTERN = '^ntc_[a-z0-9]{20}$';
/**
 * A custom domain: a lower-case DNS host name of two labels or more (letters, digits,
 * inner hyphens; no trailing dot, no IP literal, no wildcard).
 */
export const HOSTNAME_PATTERN =
  '^(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$';
/** The TXT record a tenant publishes to prove a custom domain: its name is this prefix and the host name. */
export const DOMAIN_TXT_PREFIX = '_telemetry-verify.';

/** The limits of status reports, subscribers, feeds and custom domains (docs/api.md). */
export const STATUS_FOLLOW_LIMITS = {
  maxReportTitleLength: 200,
  maxUpdateMessageLength: 5000,
  /** Updates of one report. */
  maxUpdatesPerReport: 100,
  /** Reports of one page that are not resolved (drafts included). */
  maxOpenReportsPerPage: 20,
  /** Reports per page of GET /api/status/{slug}/history and of the owner's list. */
  historyPageSize: 20,
  maxHistoryPageSize: 100,
  /** Subscribers of one page, pending and active (the rest are refused QUOTA_EXCEEDED). */
  maxSubscribersPerPage: 10_000,
  maxWebhookUrlLength: 2048,
  /** Entries of a feed (the newest notices). */
  feedEntries: 50,
  /** Custom domains of one page. */
  maxDomainsPerPage: 5,
  /** Days ahead the public page lists maintenance windows. */
  maintenanceDaysShown: 7,
  maxMaintenanceMessageLength: 500,
} as const;

/** One update of a report: its state then, what was said, and when (the time it is about, given or now). */
export interface ReportUpdateView {
  id: string;
  state: ReportState;
  message: string;
  at: string;
  created_at: string;
}

/** A status report as the page's owner reads it (GET /api/status-pages/{slug}/reports/{id}). */
export interface StatusReportView {
  id: string;
  slug: string;
  title: string;
  impact: ReportImpact;
  /** Affected monitors of the page ([]: the page as a whole). */
  monitor_ids: string[];
  /** The state of its newest update. */
  state: ReportState;
  /** true: not public and nobody told until published (PATCH {"draft": false}). */
  draft: boolean;
  /** The incident it was started from (POST …/reports/from-incident), if any. */
  incident_id: string | null;
  created_at: string;
  updated_at: string;
  /** When an update said `resolved` (null while open). */
  resolved_at: string | null;
  /** Newest first. */
  updates: ReportUpdateView[];
}

/** A report as anyone sees it on the page, its history and its feeds: names, no ids of the tenant's. */
export interface PublicReport {
  id: string;
  title: string;
  impact: ReportImpact;
  state: ReportState;
  monitors: { id: string; name: string }[];
  created_at: string;
  updated_at: string;
  resolved_at: string | null;
  updates: { id: string; state: ReportState; message: string; at: string }[];
}

/** A maintenance window of a monitor of the page: coming up (within maintenanceDaysShown) or in progress. */
export interface PublicMaintenance {
  monitor: { id: string; name: string };
  starts_at: string;
  ends_at: string;
  in_progress: boolean;
  message: string | null;
}

/** A subscriber as the page's owner sees it: an email, or only the origin of a webhook's URL. */
export interface SubscriberView {
  id: string;
  kind: SubscriberKind;
  /** The email address, or the webhook URL's scheme, host and port (its path and query may hold secrets). */
  address: string;
  monitor_ids: string[];
  state: SubscriberState;
  created_at: string;
  confirmed_at: string | null;
}

/** A custom domain of a page: the TXT record that proves it, and whether it was seen. */
export interface DomainView {
  hostname: string;
  slug: string;
  /** Publish TXT `txt_value` at `txt_name`, then POST …/domains/{hostname}/verify. */
  txt_name: string;
  txt_value: string;
  verified: boolean;
  verified_at: string | null;
  created_at: string;
}

/** The page a webhook call is about. */
export interface NoticePage {
  slug: string;
  title: string;
  /** The page's address (PUBLIC_URL/status/{slug}). */
  url: string;
}

/**
 * The body of a notice's webhook call (docs/api.md, "Webhook subscribers"): JSON, signed
 * `X-Telemetry-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` with the
 * subscriber's secret (as webhook channels are), `X-Telemetry-Event: <id>` (stable across
 * retries: the receiver drops a second copy by it).
 */
export interface StatusNoticeWebhook {
  id: string;
  type: NoticeKind;
  created_at: string;
  page: NoticePage;
  title: string;
  body: string;
  report?: PublicReport;
  /** report_updated: the update (report_opened: its first). */
  update?: PublicReport['updates'][number];
  maintenance?: PublicMaintenance;
}

/**
 * The verification request a webhook subscriber's URL gets before anything else: the URL
 * must answer 2xx within WEBHOOK_VERIFY_TIMEOUT_MS with the challenge, as the whole body
 * (text) or as JSON `{"challenge": "…"}`. Signed as notices are.
 */
export interface SubscriptionVerifyWebhook {
  type: 'subscription.verify';
  challenge: string;
  page: NoticePage;
}
