import { LOCATION_PATTERN } from '@telemetry/contract';
import { hostname } from 'node:os';
import {
  clickhouseSpec,
  egressSpec,
  httpSpec,
  kafkaSpec,
  logSpec,
  postgresSpec,
  secretsSpec,
  serviceSpec,
  topicSpec,
} from '@telemetry/platform';
import { loadConfig, v } from '@telemetry/platform';
import { alertingSpec, mailSpec } from '@telemetry/alerting';
import type { ConfigOf, Env } from '@telemetry/platform';

export const runnerSpec = {
  ...logSpec,
  ...postgresSpec,
  ...kafkaSpec,
  checksTopic: topicSpec.checksTopic,
  alertsTopic: topicSpec.alertsTopic,
  webhookDeliveriesTopic: topicSpec.webhookDeliveriesTopic,
  monitorChangesTopic: topicSpec.monitorChangesTopic,
  // "Run once now" (docs/monitors.md): requests from the query service, and the replies.
  runRequestsTopic: topicSpec.runRequestsTopic,
  runRepliesTopic: topicSpec.runRepliesTopic,
  screenshotsTopic: topicSpec.screenshotsTopic,
  ...clickhouseSpec,
  ...secretsSpec,
  ...egressSpec,
  shutdownTimeoutMs: serviceSpec.shutdownTimeoutMs,
  runnerId: v.str('RUNNER_ID', '', 'name of this runner in logs, metrics and the User-Agent (default host-pid)'),
  location: v.str(
    'RUNNER_LOCATION',
    'default',
    'where this runner checks from (e.g. eu-west; lower-case letters, digits, -): it checks the monitors whose locations list it, and records it in every check',
    new RegExp(LOCATION_PATTERN),
  ),
  groupId: v.str(
    'RUNNER_GROUP_ID',
    'telemetry-check-runners',
    'Kafka consumer group whose members divide the monitors among them (`.<location>` appended outside default); every runner also joins `<RUNNER_GROUP_ID>.all.decide`, whose members divide the deciding of the monitors of several locations',
  ),
  sessionTimeoutMs: v.int(
    'RUNNER_SESSION_TIMEOUT_MS',
    10_000,
    "how long a killed runner's monitors wait before another runner takes them over",
    6000,
    300_000,
  ),
  publishLingerMs: v.int(
    'RUNNER_PUBLISH_LINGER_MS',
    5,
    'how long a check result waits for others to share its produce request',
    0,
    1000,
  ),
  stateSettleMs: v.int(
    'RUNNER_STATE_SETTLE_MS',
    2000,
    "wait before reading a newly owned monitor's last alert (lets the previous owner's last alert reach ClickHouse); also how long other locations' checks of a slot get to reach ClickHouse before it is decided",
    0,
    60_000,
  ),
  maxConcurrentChecks: v.int(
    'MAX_CONCURRENT_CHECKS',
    500,
    'checks in flight at once, shared fairly among tenants (docs/operations.md, "Fair check slots"); a check without a slot is skipped',
    1,
    100_000,
  ),
  maxBodyBytes: v.int(
    'CHECK_MAX_BODY_BYTES',
    1024 * 1024,
    'bytes of a response searched for the keyword; the rest is not read',
    1024,
    64 * 1024 * 1024,
  ),
  pingPath: v.str(
    'RUNNER_PING_PATH',
    'ping',
    'the iputils ping that icmp checks run: a path, or a name looked up in PATH at start (missing: icmp checks fail with network, logged once)',
    /^[^\0]{1,1000}$/,
  ),
  runOnceMaxConcurrent: v.int(
    'RUN_ONCE_MAX_CONCURRENT',
    4,
    'run-once checks (POST /api/monitors/run-once) this runner runs at once; more wait (and answer 504 RUN_TIMEOUT if they wait past their expiry)',
    1,
    1000,
  ),
  chromiumPath: v.str(
    'RUNNER_CHROMIUM_PATH',
    '',
    "Chromium for browser checks (Debian's: /usr/bin/chromium); empty: this runner has no browser and never takes browser monitors (docs/browser-checks.md)",
  ),
  browserConcurrency: v.int(
    'RUNNER_BROWSER_CONCURRENCY',
    2,
    'browser checks running at once (one Chromium, a fresh context each); the others wait up to their timeout_ms',
    1,
    64,
  ),
  webhookGroupId: v.str('WEBHOOK_GROUP_ID', 'telemetry-webhooks', 'Kafka consumer group that delivers webhooks'),
  webhookTimeoutMs: v.int('WEBHOOK_TIMEOUT_MS', 5000, 'one webhook attempt fails after this long', 100, 60_000),
  webhookMaxAttempts: v.int('WEBHOOK_MAX_ATTEMPTS', 6, 'attempts per webhook before it is given up', 1, 20),
  webhookMaxPending: v.int(
    'WEBHOOK_MAX_PENDING',
    10_000,
    'alerts read whose webhooks are not all delivered or given up; reading the alerts waits beyond this',
    1,
    1_000_000,
  ),
  webhookRetryBaseMs: v.int(
    'WEBHOOK_RETRY_BASE_MS',
    1000,
    'wait before the second attempt; doubles each time (up to 60 s)',
    10,
    60_000,
  ),
  ...alertingSpec,
  ...mailSpec,
  alertGroupWaitMs: v.int(
    'ALERT_GROUP_WAIT_MS',
    2000,
    'how long the first notification to a channel that groups (chat, email) waits for others to the same channel',
    0,
    60_000,
  ),
  alertGroupThreshold: v.int(
    'ALERT_GROUP_THRESHOLD',
    3,
    'more notifications than this gathered for one channel within ALERT_GROUP_WAIT_MS go as one grouped message',
    1,
    1000,
  ),
  escalationTickMs: v.int(
    'ESCALATION_TICK_MS',
    1000,
    'how often the escalation clock looks for incidents with a step or a reminder due',
    50,
    60_000,
  ),
  statusDeliveryIntervalMs: v.int(
    'STATUS_DELIVERY_INTERVAL_MS',
    5000,
    'how often a runner claims due status-page notices to send to subscribers (docs/console.md, "Delivery")',
    50,
    600_000,
  ),
  statusDeliveryAttempts: v.int(
    'STATUS_DELIVERY_ATTEMPTS',
    10,
    'attempts per status-page notice and subscriber before it is given up (failed)',
    1,
    50,
  ),
  statusDeliveryRetryBaseMs: v.int(
    'STATUS_DELIVERY_RETRY_BASE_MS',
    30_000,
    "wait before a status-page notice's second attempt; doubles each time (up to an hour)",
    10,
    3_600_000,
  ),
  statusDeliveryLeaseSeconds: v.int(
    'STATUS_DELIVERY_LEASE_SECONDS',
    120,
    "how long a claimed status-page delivery is this runner's; one that dies leaves it to another after this (longer than one send)",
    1,
    3600,
  ),
  statusMaintenanceNoticeHours: v.int(
    'STATUS_MAINTENANCE_NOTICE_HOURS',
    24,
    "how long before a maintenance window of a status page's monitor starts its subscribers are told (0: only when it starts)",
    0,
    24 * 30,
  ),
  ...httpSpec(8083, 'HTTP port for /healthz, /readyz, /metrics'),
} as const;

export type RunnerConfig = ConfigOf<typeof runnerSpec>;

export function loadRunnerConfig(env: Env): RunnerConfig {
  const config = loadConfig(runnerSpec, env);
  return { ...config, runnerId: config.runnerId || `${hostname()}-${process.pid}` };
}
