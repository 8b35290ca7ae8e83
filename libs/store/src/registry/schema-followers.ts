import type { PgMigration } from '@telemetry/platform';

/**
 * Status pages people follow (migration 5, docs/console.md "Status reports" on): reports and
 * their updates, subscribers, the notices they are told of and each delivery, custom
 * domains (in the change feed, as entity `custom_domains` by host name: every query
 * service answers a verified domain) and the subscription endpoints' rate buckets.
 */
export const STATUS_FOLLOW_TABLES = [
  'status_reports',
  'status_report_updates',
  'status_subscribers',
  'status_notices',
  'status_deliveries',
  'custom_domains',
  'rate_buckets',
] as const;

/** Migration 5: the tables of STATUS_FOLLOW_TABLES. */
export const STATUS_FOLLOW_MIGRATION: PgMigration = {
  version: 5,
  name: 'status page followers',
  statements: [
    // A report of a page: its newest update's state is `state`; a draft is neither shown nor told.
    `CREATE TABLE status_reports (
       report_id text PRIMARY KEY CHECK (report_id ~ '^rpt_[a-z0-9]{20}$'),
       slug text NOT NULL REFERENCES status_pages ON DELETE CASCADE,
       tenant_id text NOT NULL REFERENCES tenants ON DELETE CASCADE,
       title text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
       impact text NOT NULL CHECK (impact IN ('none', 'minor', 'major', 'critical')),
       monitor_ids text[] NOT NULL DEFAULT '{}',
       state text NOT NULL CHECK (state IN ('investigating', 'identified', 'monitoring', 'resolved')),
       draft boolean NOT NULL DEFAULT false,
       incident_id text,
       created_by text NOT NULL DEFAULT '',
       created_at timestamptz NOT NULL DEFAULT now(),
       updated_at timestamptz NOT NULL DEFAULT now(),
       resolved_at timestamptz,
       version bigint NOT NULL DEFAULT 1 CHECK (version > 0))`,
    `CREATE INDEX status_reports_page ON status_reports (slug, created_at DESC)`,
    `CREATE TABLE status_report_updates (
       update_id text PRIMARY KEY CHECK (update_id ~ '^upd_[a-z0-9]{20}$'),
       report_id text NOT NULL REFERENCES status_reports ON DELETE CASCADE,
       state text NOT NULL CHECK (state IN ('investigating', 'identified', 'monitoring', 'resolved')),
       message text NOT NULL CHECK (length(message) BETWEEN 1 AND 5000),
       at timestamptz NOT NULL,
       created_by text NOT NULL DEFAULT '',
       created_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE INDEX status_report_updates_report ON status_report_updates (report_id, at DESC)`,
    // One row per address and page: address_hash is SHA-256 (hex) of the lower-case email or
    // of the webhook URL, so a second subscription of it finds the first. A webhook's URL and
    // signing secret are sealed (SECRETS_KEYS) in webhook_sealed; the owner sees its origin only.
    // Unsubscribing deletes the row.
    `CREATE TABLE status_subscribers (
       subscriber_id text PRIMARY KEY CHECK (subscriber_id ~ '^sub_[a-z0-9]{20}$'),
       slug text NOT NULL REFERENCES status_pages ON DELETE CASCADE,
       tenant_id text NOT NULL REFERENCES tenants ON DELETE CASCADE,
       kind text NOT NULL CHECK (kind IN ('email', 'webhook')),
       address_hash text NOT NULL CHECK (address_hash ~ '^[0-9a-f]{64}$'),
       email text CHECK (email = lower(email) AND length(email) <= 254),
       webhook_sealed text,
       webhook_origin text,
       monitor_ids text[] NOT NULL DEFAULT '{}',
       state text NOT NULL CHECK (state IN ('pending', 'active')),
       created_at timestamptz NOT NULL DEFAULT now(),
       confirmed_at timestamptz,
       CHECK ((kind = 'email') = (email IS NOT NULL)),
       CHECK ((kind = 'webhook') = (webhook_sealed IS NOT NULL)),
       UNIQUE (slug, kind, address_hash))`,
    // What subscribers are told: one email, one webhook call, one feed entry each. title and
    // body are the plain text as sent; payload the webhook's `data`. A maintenance notice has a
    // dedup_key (the monitor, the window's start and the kind), so runners make it once.
    `CREATE TABLE status_notices (
       notice_id text PRIMARY KEY CHECK (notice_id ~ '^ntc_[a-z0-9]{20}$'),
       slug text NOT NULL REFERENCES status_pages ON DELETE CASCADE,
       tenant_id text NOT NULL REFERENCES tenants ON DELETE CASCADE,
       kind text NOT NULL CHECK (kind IN ('report_opened', 'report_updated', 'maintenance_scheduled', 'maintenance_started')),
       report_id text REFERENCES status_reports ON DELETE CASCADE,
       update_id text REFERENCES status_report_updates ON DELETE CASCADE,
       monitor_ids text[] NOT NULL DEFAULT '{}',
       title text NOT NULL,
       body text NOT NULL,
       payload jsonb NOT NULL,
       dedup_key text UNIQUE,
       created_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE INDEX status_notices_page ON status_notices (slug, created_at DESC)`,
    // A notice to a subscriber: claimed under a lease by a runner, delivered or given up.
    `CREATE TABLE status_deliveries (
       notice_id text NOT NULL REFERENCES status_notices ON DELETE CASCADE,
       subscriber_id text NOT NULL REFERENCES status_subscribers ON DELETE CASCADE,
       state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
       attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
       next_at timestamptz NOT NULL DEFAULT now(),
       lease_until timestamptz,
       last_error text NOT NULL DEFAULT '' CHECK (length(last_error) <= 1000),
       delivered_at timestamptz,
       PRIMARY KEY (notice_id, subscriber_id))`,
    `CREATE INDEX status_deliveries_due ON status_deliveries (next_at) WHERE state = 'pending'`,
    `CREATE INDEX status_deliveries_subscriber ON status_deliveries (subscriber_id)`,
    // A host name a page answers on once verified (token: what the TXT record must say). Several
    // pages may claim one host name; only one may have it verified.
    `CREATE TABLE custom_domains (
       hostname text NOT NULL CHECK (hostname = lower(hostname) AND length(hostname) BETWEEN 4 AND 253),
       slug text NOT NULL REFERENCES status_pages ON DELETE CASCADE,
       tenant_id text NOT NULL REFERENCES tenants ON DELETE CASCADE,
       token text NOT NULL CHECK (token ~ '^[a-z0-9]{32}$'),
       verified_at timestamptz,
       checked_at timestamptz,
       created_at timestamptz NOT NULL DEFAULT now(),
       PRIMARY KEY (hostname, slug))`,
    `CREATE UNIQUE INDEX custom_domains_verified ON custom_domains (hostname) WHERE verified_at IS NOT NULL`,
    `CREATE INDEX custom_domains_page ON custom_domains (slug)`,
    `CREATE TRIGGER custom_domains_changed AFTER INSERT OR UPDATE OR DELETE ON custom_domains
       FOR EACH ROW EXECUTE FUNCTION registry_changed('custom_domains', 'hostname')`,
    // Fixed-window counters (the subscription endpoints' limits): bucket, its window's start, hits in it.
    `CREATE TABLE rate_buckets (
       bucket text PRIMARY KEY CHECK (length(bucket) <= 300),
       window_start timestamptz NOT NULL,
       hits integer NOT NULL CHECK (hits >= 0))`,
  ],
};
