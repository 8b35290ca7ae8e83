import { alertingSpec, mailSpec } from '@telemetry/alerting';
import { heartbeatSpec } from '@telemetry/store';
import { accessSpec } from './access/config.js';
import { statusFollowSpec } from './status/config.js';
import {
  clickhouseSpec,
  postgresSpec,
  egressSpec,
  discardBodySpec,
  httpSpec,
  kafkaSpec,
  logSpec,
  secretsSpec,
  serviceSpec,
  topicSpec,
  consumerGroupSpec,
  trustedProxiesSpec,
} from '@telemetry/platform';
import { RUN_ONCE_LIMITS } from '@telemetry/contract';
import { ConfigError, loadConfig, v } from '@telemetry/platform';
import type { ConfigOf, Env } from '@telemetry/platform';

export const querySpec = {
  ...logSpec,
  ...clickhouseSpec,
  ...postgresSpec,
  ...serviceSpec,
  ...secretsSpec,
  ...heartbeatSpec,
  // The same as the check runners': IP literals it denies are refused at once.
  ...egressSpec,
  kafkaBrokers: kafkaSpec.kafkaBrokers,
  kafkaClientId: kafkaSpec.kafkaClientId,
  kafkaClient: kafkaSpec.kafkaClient,
  monitorChangesTopic: topicSpec.monitorChangesTopic,
  checksTopic: topicSpec.checksTopic,
  // Acknowledgements are published there, for the runners' dispatchers and the alerts table.
  alertsTopic: topicSpec.alertsTopic,
  // The audit log's entries (docs/access.md).
  auditTopic: topicSpec.auditTopic,
  // "Run once now" (docs/monitors.md): requests to the runners, and their replies.
  runRequestsTopic: topicSpec.runRequestsTopic,
  runRepliesTopic: topicSpec.runRepliesTopic,
  runOnceTimeoutMs: v.int(
    'RUN_ONCE_TIMEOUT_MS',
    70_000,
    "longest wait of POST /api/monitors/run-once for a check runner's answer (it waits the monitor's timeout_ms and 5 s, at most this); past it the answer is 504 RUN_TIMEOUT",
    1000,
    600_000,
  ),
  runOncePerMinute: v.int(
    'RUN_ONCE_PER_MINUTE',
    RUN_ONCE_LIMITS.perTenantPerMinute,
    'checks a tenant may run with POST /api/monitors/run-once per minute (per replica); more answer 429 RATE_LIMITED',
    1,
    10_000,
  ),
  ...accessSpec,
  // Status reports, subscribers and custom domains (docs/console.md).
  ...statusFollowSpec,
  // Acknowledge links (PUBLIC_URL, ACK_LINK_TTL_SECONDS), the escalation minimum, and the
  // mail settings a test notification of an email channel is sent with.
  ...alertingSpec,
  ...mailSpec,
  channelTestTimeoutMs: v.int(
    'CHANNEL_TEST_TIMEOUT_MS',
    10_000,
    'a test notification (POST /api/channels/{id}/test) that has no answer after this long answers `timeout`',
    100,
    60_000,
  ),
  channelTestsPerMinute: v.int(
    'CHANNEL_TESTS_PER_MINUTE',
    10,
    "test notifications (POST /api/channels/{id}/test) a tenant may send per minute; more answer 429 (a test mails up to 20 addresses through the operator's server)",
    1,
    10_000,
  ),
  ...consumerGroupSpec,
  tailChecksPerMonitor: v.int(
    'TAIL_CHECKS_PER_MONITOR',
    128,
    'newest checks per monitor the hot tail keeps in memory (0: no tail); more than CHECKS_DEFAULT_LIMIT, for first pages',
    0,
    10_000,
  ),
  tailMaxMonitors: v.int(
    'TAIL_MAX_MONITORS',
    10_000,
    'monitors the hot tail keeps; the least recently read is dropped for a new one',
    1,
    10_000_000,
  ),
  summaryCacheBytes: v.int(
    'SUMMARY_CACHE_BYTES',
    32 * 1024 * 1024,
    'summaries of closed ranges (ended over an hour ago) kept in memory, in bytes of their JSON (0: none); the least recently read go first',
    0,
    16 * 1024 * 1024 * 1024,
  ),
  summaryBucketCacheBytes: v.int(
    'SUMMARY_BUCKET_CACHE_BYTES',
    64 * 1024 * 1024,
    'completed hours and days of summaries (ended over an hour ago: counts, quantiles and t-digest state per monitor and bucket) kept in memory, so that only the open part is asked of ClickHouse; in bytes, about 16 per centroid (0: none); the least recently read go first',
    0,
    16 * 1024 * 1024 * 1024,
  ),
  summaryBucketMaxAgeSeconds: v.int(
    'SUMMARY_BUCKET_MAX_AGE_SECONDS',
    3600,
    'how long a kept summary bucket is used before ClickHouse is asked again: the most a check later than an hour, a retention drop or a rewrite of checks_hourly stays unseen',
    1,
    7 * 86_400,
  ),
  tailMaxBuffered: v.int(
    'TAIL_MAX_BUFFERED',
    200_000,
    'checks read from Kafka but not yet committed by the stream consumer that the tail keeps for loads; past it, new monitors load once the consumer catches up',
    1000,
    10_000_000,
  ),
  pageCacheChecks: v.int(
    'PAGE_CACHE_CHECKS',
    100_000,
    'checks of history pages below the hot tail (newest first, with a cursor) kept in memory, with the pages read ahead of them (0: none; needs the tail); the least recently read pages go first',
    0,
    10_000_000,
  ),
  pageCacheTtlMs: v.int(
    'PAGE_CACHE_TTL_MS',
    60_000,
    'how long a kept history page is answered from memory (checks the reader sees arriving drop the pages they change at once; retention, which drops whole days or partitions, takes effect on kept pages within this)',
    100,
    600_000,
  ),
  pageReadAhead: v.int(
    'PAGE_READ_AHEAD',
    2,
    'pages read ahead (and kept, keyed by their cursors) when a history page below the hot tail is read from ClickHouse (0: only the page itself)',
    0,
    20,
  ),
  registryUser: v.str(
    'REGISTRY_CLICKHOUSE_USER',
    'default',
    'ClickHouse user that writes the monitors dimension table (CLICKHOUSE_USER only reads)',
  ),
  registryPassword: v.secret('REGISTRY_CLICKHOUSE_PASSWORD', '', 'its password'),
  monitorCacheMs: v.int(
    'MONITOR_CACHE_MS',
    3_600_000,
    'how often the set of monitor ids (for 404s) is loaded in full, a safety net: the registry change feed keeps it current',
    500,
    86_400_000,
  ),
  monitorsPerTenant: v.int(
    'MONITORS_PER_TENANT',
    1000,
    'monitors a tenant may have (MONITOR_QUOTAS overrides it per tenant); one more answers 403 QUOTA_EXCEEDED',
    1,
    1_000_000,
  ),
  monitorQuotas: v.str(
    'MONITOR_QUOTAS',
    '',
    'per-tenant monitor quotas, comma-separated tenant=count (e.g. ten_acme=5000,ten_trial=10)',
    /^$|^[A-Za-z0-9_-]{1,64}=\d{1,7}(,[A-Za-z0-9_-]{1,64}=\d{1,7})*$/,
  ),
  minIntervalSeconds: v.int(
    'MIN_INTERVAL_SECONDS',
    10,
    'shortest interval_seconds a monitor may be created or changed to (existing monitors keep theirs)',
    1,
    86_400,
  ),
  statusPageCacheSeconds: v.int(
    'STATUS_PAGE_CACHE_SECONDS',
    30,
    'a public status page is computed at most this often per replica (a failed computation is tried again no sooner; the last good page is answered stale meanwhile), and browsers and proxies may keep it this long',
    1,
    3600,
  ),
  statusPagesRefreshMs: v.int(
    'STATUS_PAGES_REFRESH_MS',
    10_000,
    'how often the slugs of public status pages are reloaded; a page created or deleted on another replica shows after this',
    500,
    600_000,
  ),
  ...httpSpec(8082),
  // Sign-in throttling, the audit log and status-page subscribe limits read the client's address.
  ...trustedProxiesSpec,
  ...discardBodySpec,
  queryTimeoutMs: v.int('QUERY_TIMEOUT_MS', 5000, 'a ClickHouse query slower than this answers 503', 100, 120_000),
  maxQueriesInFlight: v.int(
    'MAX_QUERIES_IN_FLIGHT',
    64,
    'ClickHouse connections of the list and summary routes',
    1,
    4096,
  ),
  exportTimeoutMs: v.int('EXPORT_TIMEOUT_MS', 300_000, 'longest an export may stream', 1000, 3_600_000),
  exportMaxConcurrent: v.int(
    'EXPORT_MAX_CONCURRENT',
    8,
    'exports streaming at once over all keys (their own ClickHouse connections); more answer 429',
    1,
    256,
  ),
  exportMaxPerKey: v.int('EXPORT_MAX_PER_KEY', 2, 'exports streaming at once for one API key; more answer 429', 1, 256),
  exportMaxRangeDays: v.int(
    'EXPORT_MAX_RANGE_DAYS',
    31,
    'longest `from`-`to` range of one export (without `from`, the export starts this long before `to`)',
    1,
    3660,
  ),
  exportMaxMemoryBytes: v.int(
    'EXPORT_MAX_MEMORY_BYTES',
    256 * 1024 * 1024,
    "ClickHouse's max_memory_usage for one export query",
    16 * 1024 * 1024,
    64 * 1024 * 1024 * 1024,
  ),
  exportStallTimeoutMs: v.int(
    'EXPORT_STALL_TIMEOUT_MS',
    30_000,
    'an export whose client reads nothing for this long is cut off (its slot and connection freed)',
    1000,
    600_000,
  ),
  defaultLimit: v.int('CHECKS_DEFAULT_LIMIT', 100, 'checks per page when `limit` is not given', 1, 1000),
  maxLimit: v.int('CHECKS_MAX_LIMIT', 1000, 'largest accepted `limit`', 1, 10_000),
} as const;

export type QueryConfig = ConfigOf<typeof querySpec>;

export function loadQueryConfig(env: Env): QueryConfig {
  const config = loadConfig(querySpec, env);
  if (config.tailChecksPerMonitor > 0 && config.tailChecksPerMonitor <= config.defaultLimit) {
    // A first page needs limit + 1 checks (the one more says whether a next page exists).
    throw new ConfigError([
      `TAIL_CHECKS_PER_MONITOR must be 0 or more than CHECKS_DEFAULT_LIMIT (${config.defaultLimit}), to hold a first page`,
    ]);
  }
  return config;
}

/** The monitor quota of each tenant: MONITOR_QUOTAS, else MONITORS_PER_TENANT. */
export function monitorQuotaOf(
  config: Pick<QueryConfig, 'monitorQuotas' | 'monitorsPerTenant'>,
): (tenantId: string) => number {
  const quotas = new Map(
    config.monitorQuotas
      .split(',')
      .filter((p) => p !== '')
      .map((p) => {
        const [tenant, n] = p.split('=');
        return [tenant!, Number(n)] as const;
      }),
  );
  return (tenantId) => quotas.get(tenantId) ?? config.monitorsPerTenant;
}
