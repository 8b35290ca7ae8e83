import { createRunOnceValidators, createValidators, DEFAULT_LOCATION } from '@telemetry/contract';
import {
  BatchingPublisher,
  clickhouseComponent,
  serviceKafka,
  egressPolicyFor,
  createRegistry,
  createPostgres,
  healthServer,
  PostgresComponent,
  HttpServerComponent,
  SecretBox,
  ServiceRunner,
  type Logger,
} from '@telemetry/platform';
import {
  ChannelStore,
  EscalationPolicyStore,
  IncidentAlertStore,
  layoutOf,
  MonitorStore,
  readSettingsOf,
  registryFeed,
} from '@telemetry/store';
import { StatusDeliveryStore, StatusPageStore, SubscriptionLinks } from '@telemetry/store';
import { GroupAssignment } from './assignment.js';
import { decideGroupId } from './decision.js';
import { BrowserPool } from './browser-pool.js';
import { AckLinks, CHANNELS, createMailer } from '@telemetry/alerting';
import { alertingData, monitorTargets } from './targets.js';
import { channelAlerting } from './channel-alerting.js';
import { longestDeliveryMs } from './delivery.js';
import { EscalationClock } from './escalation-clock.js';
import type { RunnerConfig } from './config.js';
import { findPing, missingPinger, probeMap, probeWith, systemPinger } from './probes/index.js';
import { AlertDispatcher } from './dispatcher.js';
import { httpCall } from '@telemetry/platform';
import { lastAlerts, lastHeartbeat, RegistryCache, slotChecks } from './registry.js';
import { RunOnceWorker, runnerCapabilities } from './run-once.js';
import { Scheduler } from './scheduler.js';
import { stateFromLastAlert } from './state.js';
import { StatusDeliverer } from './status-delivery.js';
import { StatusMaintenance } from './status-maintenance.js';

export interface CheckRunner {
  runner: ServiceRunner;
  http: HttpServerComponent;
  scheduler: Scheduler;
  assignment: GroupAssignment;
  /** The browser capability group and Chromium: only with RUNNER_CHROMIUM_PATH. */
  browserAssignment?: GroupAssignment;
  /** The decide group: every runner, whatever its location (decision.ts). */
  decideAssignment: GroupAssignment;
  browsers?: BrowserPool;
}

export async function startCheckRunner(config: RunnerConfig, logger: Logger): Promise<CheckRunner> {
  const registry = createRegistry('check-runner');
  // With CLICKHOUSE_CLUSTER its reads (checks, last alerts) go through the `_all` tables,
  // with the settings that keep them exact (distributed-reads.ts).
  const layout = layoutOf(config);
  // Checks go on from the last copy of the registry while ClickHouse is away.
  const ch = clickhouseComponent(config, logger, { essential: false, settings: readSettingsOf(layout) });
  const { admin, producer: newProducer, groupConsumers } = serviceKafka(config, 'runner', logger);
  const producer = newProducer({ registry, ackTimeoutMs: 10_000 });
  // Results of checks that end together share a produce request (one per check would
  // cost the runner more CPU than the checks themselves).
  const publisher = new BatchingPublisher(producer, {
    lingerMs: config.publishLingerMs,
    maxBatchMessages: 1000,
    maxInFlightMessages: 100_000,
    registry,
    inFlightMetric: {
      name: 'runner_inflight_messages',
      help: 'Check results and alerts handed to Kafka and not yet acknowledged',
    },
  });
  const userAgent = `telemetry-check-runner/0.1 (+runner=${config.runnerId}; location=${config.location})`;
  // What checks and webhooks may reach: never Kafka, ClickHouse or this runner itself.
  const { policy, refresh: egressRefresh } = await egressPolicyFor(config, logger, [`127.0.0.1:${config.port}`]);

  // The registry and the group call the scheduler (built below) when they change.
  const reconcile = (): void => scheduler.reconcile();
  // Its PostgreSQL role reads the monitors, channels and escalation policies and keeps the
  // incidents' rows (schema.ts); the monitors' copy follows the change feed.
  const pool = createPostgres(config, logger, 'check-runner');
  const feed = registryFeed({ pool, config, name: 'check-runner', logger, registry });
  const box = new SecretBox(config.secretsKeys);
  const monitors = new RegistryCache(new MonitorStore(pool, box), reconcile);
  feed.subscribe(monitors.mirror);
  // The runners of one location divide its monitors among them.
  const groupId = config.location === DEFAULT_LOCATION ? config.groupId : `${config.groupId}.${config.location}`;
  const groupDeps = {
    consumers: groupConsumers,
    countPartitions: (topic: string) => admin.countPartitions(topic),
    logger,
    registry,
    topic: config.monitorChangesTopic,
    sessionTimeoutMs: config.sessionTimeoutMs,
    onNotice: (change: { id: string }) => {
      monitors.reload(change.id).catch((err: unknown) => {
        logger.warn('monitor reload failed', { monitor_id: change.id, err: String(err) });
      });
    },
    onChange: reconcile,
  };
  const assignment = new GroupAssignment({ ...groupDeps, groupId });
  // Every runner, whatever its location, divides the deciding of the monitors of several
  // locations with all the others (docs/monitors.md, "Who decides"): losing a whole
  // location moves its share to the runners left.
  const decideAssignment = new GroupAssignment({
    ...groupDeps,
    groupId: decideGroupId(config.groupId),
    capability: 'decide',
    gaugeHelp: 'Partitions of the monitor-changes topic this runner owns in the decide group (every runner)',
  });
  // Browser monitors need Chromium: the runners that have it divide them among themselves in
  // a group of their own (docs/browser-checks.md, "Capacity"); a runner without it never joins.
  const browsers = config.chromiumPath
    ? new BrowserPool({
        executablePath: config.chromiumPath,
        concurrency: config.browserConcurrency,
        logger,
        registry,
      })
    : undefined;
  const browserAssignment = browsers
    ? // `<group>.<location>.browser` even for the default location: its main group is plain
      // `<group>`, and `<group>.browser` is the main group of a location named `browser`.
      new GroupAssignment({
        ...groupDeps,
        groupId: `${config.groupId}.${config.location}.browser`,
        capability: 'browser',
      })
    : undefined;
  // A browser monitor belongs to the browser group's owner, every other to the main group's.
  const owns = (id: string): boolean =>
    monitors.get(id)?.type === 'browser' ? (browserAssignment?.owns(id) ?? false) : assignment.owns(id);
  // icmp checks run the system ping, found once now: without one they fail, and this says why once.
  const ping = await findPing(config.pingPath);
  if (!ping) logger.error('no ping program: icmp checks fail with network', { ping_path: config.pingPath });
  const probe = probeWith(
    probeMap(
      {
        lastCall: (m, since) => lastHeartbeat(ch.client, config.clickhouseDatabase, layout, m, since),
        settleMs: config.stateSettleMs,
        now: () => Date.now(),
      },
      ping ? systemPinger(ping) : missingPinger(config.pingPath),
      browsers,
    ),
  );
  const scheduler: Scheduler = new Scheduler({
    monitors,
    owns,
    decides: (id) => decideAssignment.owns(id),
    loadStates: async (ids) => {
      const last = await lastAlerts(ch.client, config.clickhouseDatabase, layout, ids);
      return new Map(ids.map((id) => [id, stateFromLastAlert(last.get(id))]));
    },
    probe: (m, ctx) => probe(m, { ...ctx, policy }),
    slotChecks: (m, ids, slot) => slotChecks(ch.client, config.clickhouseDatabase, layout, m, ids, slot),
    publishCheck: (c) => publisher.send(config.checksTopic, [{ key: c.monitor_id, value: JSON.stringify(c) }]),
    // One screenshot per produce request (up to 700 KB encoded): never batched with others.
    publishScreenshot: (shot) =>
      producer.send(config.screenshotsTopic, [{ key: shot.monitor_id, value: JSON.stringify(shot) }]),
    publishAlert: (a) => publisher.send(config.alertsTopic, [{ key: a.monitor_id, value: JSON.stringify(a) }]),
    logger,
    registry,
    runnerId: config.runnerId,
    location: config.location,
    maxConcurrentChecks: config.maxConcurrentChecks,
    maxBodyBytes: config.maxBodyBytes,
    stateSettleMs: config.stateSettleMs,
  });
  // "Run once now": a check of settings not saved, asked for by the query service.
  const runOnce = new RunOnceWorker({
    consumers: groupConsumers,
    topic: config.runRequestsTopic,
    groupId: config.groupId,
    location: config.location,
    capabilities: runnerCapabilities(config),
    box,
    validators: createRunOnceValidators(),
    probe: (m, ctx) => probe(m, { ...ctx, policy }),
    reply: (m) => producer.send(config.runRepliesTopic, [{ key: m.id, value: JSON.stringify(m) }]),
    runnerId: config.runnerId,
    maxBodyBytes: config.maxBodyBytes,
    maxConcurrent: config.runOnceMaxConcurrent,
    sessionTimeoutMs: config.sessionTimeoutMs,
    logger: logger.child({ component: 'run-once' }),
    registry,
  });
  const mail = createMailer(config, { policy, logger });
  const alerting = channelAlerting({
    logger,
    registry,
    channels: CHANNELS,
    http: (call) => httpCall({ ...call, policy }),
    mail,
    userAgent,
    timeoutMs: config.webhookTimeoutMs,
    maxAttempts: config.webhookMaxAttempts,
    retryBaseMs: config.webhookRetryBaseMs,
    record: (d) => publisher.send(config.webhookDeliveriesTopic, [{ key: d.monitor_id, value: JSON.stringify(d) }]),
    groupWaitMs: config.alertGroupWaitMs,
    groupThreshold: config.alertGroupThreshold,
    publicUrl: config.publicUrl,
    ackLinks: new AckLinks(config.secretsKeys, config.publicUrl, config.ackLinkTtlSeconds),
  });
  const data = alertingData({
    monitors,
    channels: new ChannelStore(pool, box),
    policies: new EscalationPolicyStore(pool),
    incidents: new IncidentAlertStore(pool),
  });
  const webhooks = new AlertDispatcher({
    consumers: groupConsumers,
    logger,
    registry,
    validators: createValidators(),
    topic: config.alertsTopic,
    groupId: config.webhookGroupId,
    targets: monitorTargets(monitors),
    data,
    delivery: alerting.delivery,
    notifier: alerting.notifier,
    minDelaySeconds: config.alertMinDelaySeconds,
    silenced: alerting.silenced,
    maxPending: config.webhookMaxPending,
  });
  const clock = new EscalationClock({
    data,
    notifier: alerting.notifier,
    logger,
    registry,
    owner: config.runnerId,
    tickMs: config.escalationTickMs,
    // A claimed row stays this runner's through its longest delivery (and its group's wait).
    leaseMs:
      longestDeliveryMs({
        timeoutMs: config.webhookTimeoutMs,
        maxAttempts: config.webhookMaxAttempts,
        retryBaseMs: config.webhookRetryBaseMs,
      }) +
      config.alertGroupWaitMs +
      30_000,
    minDelaySeconds: config.alertMinDelaySeconds,
    silenced: alerting.silenced,
    stopDeliveries: () => alerting.delivery.stop(),
  });

  // Status-page subscribers: notices delivered (docs/console.md, "Delivery"), maintenance announced.
  const statusDeliverer = new StatusDeliverer({
    store: new StatusDeliveryStore(pool),
    mail,
    http: (call) => httpCall({ ...call, policy }),
    box,
    links: new SubscriptionLinks(config.secretsKeys, config.publicUrl),
    publicUrl: config.publicUrl,
    logger,
    registry,
    userAgent,
    timeoutMs: config.webhookTimeoutMs,
    intervalMs: config.statusDeliveryIntervalMs,
    maxAttempts: config.statusDeliveryAttempts,
    retryBaseMs: config.statusDeliveryRetryBaseMs,
    leaseSeconds: config.statusDeliveryLeaseSeconds,
  });
  const statusPages = new StatusPageStore(pool);
  const statusMaintenance = new StatusMaintenance({
    pool,
    pages: () => statusPages.all(),
    monitor: (id) => monitors.get(id),
    noticeHours: config.statusMaintenanceNoticeHours,
    intervalMs: 60_000,
    logger,
  });

  const runner = new ServiceRunner(logger, config.shutdownTimeoutMs);
  const http = healthServer({ runner, registry, logger, ...config });
  // Start in this order; stop in reverse: run-once stops taking requests (runs in flight
  // reply), the scheduler stops checking and deciding (in-flight checks and decisions
  // finish and publish), then the runner leaves its groups (its monitors and its decisions
  // move to the others at once), then the escalation clock stops (a row cut short is sent again by
  // another runner once its lease ends), then webhooks stop (uncommitted alerts are delivered by another),
  // then the producer, the registry feed, PostgreSQL, ClickHouse, the egress re-resolution, and HTTP last.
  // The status-page deliverer and maintenance notices stop first (a send in flight finishes
  // within its timeout; a row left claimed is sent by another runner once its lease ends).
  runner.use(
    http,
    egressRefresh,
    ch,
    new PostgresComponent(pool),
    feed,
    producer,
    webhooks,
    clock,
    // Chromium stops after the checks that use it (the scheduler, below).
    ...(browsers ? [browsers] : []),
    // The decide group is left after the location's group: checks move first.
    decideAssignment,
    assignment,
    ...(browserAssignment ? [browserAssignment] : []),
    scheduler,
    runOnce,
    statusMaintenance,
    statusDeliverer,
  );
  await runner.start();
  logger.info('check runner running', {
    port: http.boundPort,
    runner_id: config.runnerId,
    browser: browsers ? config.chromiumPath : 'none',
  });
  return { runner, http, scheduler, assignment, browserAssignment, decideAssignment, browsers };
}
