import {
  createRunOnceValidators,
  createChannelValidators,
  createPeopleValidators,
  createStatusFollowValidators,
  createValidators,
  type Validators,
} from '@telemetry/contract';
import { AckLinks, createMailer, type ChannelContext } from '@telemetry/alerting';
import type { Registry } from 'prom-client';
import {
  clickhouseComponent,
  serviceKafka,
  ClickHouseReader,
  createRegistry,
  egressPolicyFor,
  httpCall,
  HttpServerComponent,
  createPostgres,
  Mirror,
  PeriodicJob,
  PostgresComponent,
  SecretBox,
  ServiceRunner,
  Slots,
  TopicReader,
  type Logger,
} from '@telemetry/platform';
import {
  ChannelStore,
  EscalationPolicyStore,
  EventSchemaStore,
  IncidentAlertStore,
  InvitationLinks,
  checksSql,
  decodeCheck,
  layoutOf,
  readSettingsOf,
  type CheckHistoryRow,
  KeyStore,
  loadKeyRecords,
  monitorPartition,
  MonitorStore,
  MonitorDimension,
  pruneRegistryChanges,
  pruneSignInRecords,
  registryFeed,
  resolveSession,
  SignInThrottle,
  TotpStore,
  StatusPageStore,
  type StoredStatusPage,
  type TableLayout,
  DomainStore,
  verifiedDomainMirror,
  RateBuckets,
  SubscriberStore,
  SubscriptionLinks,
} from '@telemetry/store';
import { ReportStore } from '@telemetry/store';
import { createQueryApp } from './app.js';
import { publishingAuditor } from './access/audit.js';
import { OidcRelyingParty } from './access/oidc.js';
import { invitationAcceptor } from './oidc.route.js';
import { cookieSecure } from './access/session-cookie.js';
import { CheckTail } from './check-tail.js';
import { PageCache } from './page-cache.js';
import { RunOnceClient } from './run-once-client.js';
import { loadConsoleAssets } from './console.route.js';
import { MonitorDirectory } from './monitor-directory.js';
import type { QueryConfig } from './config.js';
import { txtLookup } from './status/txt-lookup.js';

export interface QueryService {
  runner: ServiceRunner;
  http: HttpServerComponent;
}

export async function startQueryService(config: QueryConfig, logger: Logger): Promise<QueryService> {
  const registry = createRegistry('query-service');
  // With CLICKHOUSE_CLUSTER every read goes through the `_all` tables, with the settings
  // that keep its answers exact (distributed-reads.ts): one layout for every read below.
  const layout = layoutOf(config);
  const reads = readSettingsOf(layout);
  // Three pools, so that no user query can hold a socket readiness needs:
  // `ch` (readiness pings only), `reader` (list, summary, incidents) and
  // `exports` (one socket per export slot). The registry writer is a fourth.
  const ch = clickhouseComponent(config, logger, {
    requestTimeoutMs: config.queryTimeoutMs + 1000,
    // Bounds every query on the server side too (ClickHouse 18.16 knows these).
    settings: { max_execution_time: Math.ceil(config.queryTimeoutMs / 1000), max_result_rows: 100_000, ...reads },
    maxOpenConnections: 2,
  });
  const exports = clickhouseComponent(config, logger, {
    requestTimeoutMs: config.exportTimeoutMs + 1000,
    maxOpenConnections: config.exportMaxConcurrent,
    settings: reads,
    name: 'clickhouse-export',
    ping: false,
  });
  // The hot read routes use the lean reader (see clickhouse-reader.ts for why).
  const reader = new ClickHouseReader({
    url: config.clickhouseUrl,
    username: config.clickhouseUser,
    password: config.clickhousePassword,
    database: config.clickhouseDatabase,
    settings: { max_execution_time: Math.ceil(config.queryTimeoutMs / 1000), max_result_rows: 100_000, ...reads },
    maxSockets: config.maxQueriesInFlight,
  });
  // The registry is written with its own user, allowed the registry database only:
  // CLICKHOUSE_USER may only read.
  const registryCh = clickhouseComponent(config, logger, {
    username: config.registryUser,
    password: config.registryPassword,
    requestTimeoutMs: config.queryTimeoutMs + 1000,
    name: 'clickhouse-registry',
    database: config.clickhouseDatabase,
    // The monitors dimension's reads (of monitors_all on a cluster) are exact too.
    settings: reads,
    // Serves monitor writes, which users send: readiness is `ch`'s.
    ping: false,
  });
  // The registry (PostgreSQL): this service's role writes monitors, heartbeat tokens and
  // status pages, and reads keys; its copies of the keys and of the status pages follow
  // the change feed.
  const pool = createPostgres(config, logger, 'query-service');
  const feed = registryFeed({ pool, config, name: 'query-service', logger, registry });
  const monitors = new MonitorStore(pool, new SecretBox(config.secretsKeys), true);
  const { producer: newProducer } = serviceKafka(config, 'query', logger);
  const changes = newProducer({ registry, ackTimeoutMs: 5000, partitioner: monitorPartition });
  const notifier = {
    notify: (c: { id: string; version: number; deleted: boolean }) =>
      changes.send(config.monitorChangesTopic, [{ key: c.id, value: JSON.stringify(c) }]),
  };
  const directory = new MonitorDirectory(
    (ids) => monitors.idsOf(ids),
    config.monitorCacheMs,
    logger,
    undefined,
    registry,
  );
  const validators = createValidators();
  const tail = config.tailChecksPerMonitor > 0 ? hotTail(config, layout, logger, registry, reader, validators) : [];
  // Deep pages need the tail: its reader tells of every check that could change a kept page.
  const pages = tail[0] && config.pageCacheChecks > 0 ? pageCache(config, registry, tail[0]) : undefined;
  const keys = new KeyStore((ids) => loadKeyRecords(pool, ids));
  feed.subscribe(keys.mirror);
  // Monitor and webhook URLs that are IP literals the runners would refuse, or our own
  // Kafka and ClickHouse, are refused at once (the runners judge names when they connect).
  const { policy, refresh: egressRefresh } = await egressPolicyFor(config, logger);
  const statusPages = new StatusPageStore(pool);
  // Every tenant's pages by slug: the public routes read only this copy.
  const statusDirectory = new Mirror<StoredStatusPage>(
    'status_pages',
    (slugs) => statusPages.all(slugs),
    (p) => p.slug,
    (p) => p.version,
  );
  feed.subscribe(statusDirectory);
  // Every verified custom domain: each replica routes a Host by it (status/host.ts).
  const domainStore = new DomainStore(pool);
  const verifiedDomains = verifiedDomainMirror(domainStore);
  feed.subscribe(verifiedDomains);
  // A monitor deleted or made on another replica: its id is looked up again here.
  feed.subscribe(directory.feedSubscriber());
  // Analysts' monitors table in ClickHouse follows every change (no secrets in it).
  feed.subscribe(
    // On a cluster written through monitors_all (sharded by id).
    new MonitorDimension(registryCh.client, config.clickhouseDatabase, (ids) => monitors.summaries(ids), logger, {
      ...config,
      readSettings: reads,
    }),
  );
  // The change log keeps a week: any replica away longer loads everything again.
  const prune = new PeriodicJob('registry change log pruning', 3_600_000, () => pruneRegistryChanges(pool, 7), logger);
  // Quiet throttle buckets, old reset links and expired sessions go hourly.
  const signInPrune = new PeriodicJob('sign-in records pruning', 3_600_000, () => pruneSignInRecords(pool), logger);
  // Alerting: test notifications go out through this service's own egress-bound client and
  // mailer (a tenant's SMTP server is judged by the policy too); acknowledge links are
  // signed with the SECRETS_KEYS ring, as the runners sign them.
  const mailer = createMailer(config, { policy, logger, timeoutMs: config.channelTestTimeoutMs });
  const channelContext = (): ChannelContext => ({
    http: (call) => httpCall({ ...call, policy }),
    mail: mailer,
    userAgent: 'telemetry-query-service/0.1 (channel test)',
    timeoutMs: config.channelTestTimeoutMs,
    signal: AbortSignal.timeout(config.channelTestTimeoutMs + 1000),
    now: Date.now,
  });
  // "Run once now": sealed requests to the runners, their replies read by this replica.
  const runOnceValidators = createRunOnceValidators();
  const runOnce = new RunOnceClient({
    send: (m) => changes.send(config.runRequestsTopic, [{ key: m.id, value: JSON.stringify(m) }]),
    box: new SecretBox(config.secretsKeys),
    validators: runOnceValidators,
    brokers: config.kafkaBrokers,
    clientId: `${config.kafkaClientId}-query-run-once`,
    topic: config.runRepliesTopic,
    groupId: `${config.consumerGroupId}.run-once`,
    logger: logger.child({ component: 'run-once' }),
    registry,
  });
  const runner = new ServiceRunner(logger, config.shutdownTimeoutMs);
  const statusFollowValidators = createStatusFollowValidators();
  // Status page subscribers: unconfirmed ones and old rate buckets are forgotten hourly.
  const subscribers = new SubscriberStore(pool, new SecretBox(config.secretsKeys), {
    confirmTtlSeconds: config.subscriptionConfirmTtlSeconds,
  });
  const rateBuckets = new RateBuckets(pool);
  const subscriberPrune = new PeriodicJob(
    'status subscribers pruning',
    3_600_000,
    async () => {
      await subscribers.forgetExpired();
      await rateBuckets.prune(86_400);
    },
    logger,
  );
  // Invitation links are signed with the SECRETS_KEYS ring; members and SSO accept them.
  const invitationLinks = new InvitationLinks(config.secretsKeys, config.publicUrl);
  // One throttle of failed password checks: sign-in, password changes, invitations accepted.
  const signInThrottle = new SignInThrottle(pool);
  const app = createQueryApp({
    channels: new ChannelStore(pool, new SecretBox(config.secretsKeys)),
    policies: new EscalationPolicyStore(pool),
    eventSchemas: new EventSchemaStore(pool),
    incidentAlerts: new IncidentAlertStore(pool),
    ackLinks: new AckLinks(config.secretsKeys, config.publicUrl, config.ackLinkTtlSeconds),
    channelValidators: createChannelValidators(),
    publishAlert: (a) => changes.send(config.alertsTopic, [{ key: a.monitor_id, value: JSON.stringify(a) }]),
    channelContext,
    sessions: { resolve: (token) => resolveSession(pool, token, config.sessionIdleSeconds) },
    // Audit entries are keyed by tenant: one tenant's entries stay in order.
    audit: publishingAuditor(
      (e) => changes.send(config.auditTopic, [{ key: e.tenant_id, value: JSON.stringify(e) }]),
      logger,
    ),
    signIn: {
      pool,
      throttle: signInThrottle,
      totp: new TotpStore(pool, new SecretBox(config.secretsKeys)),
      mailer,
      secureCookie: cookieSecure(config.publicUrl),
      publicUrl: config.publicUrl,
      sessionMaxSeconds: config.sessionMaxSeconds,
      passwordResetTtlSeconds: config.passwordResetTtlSeconds,
    },
    oidc: {
      rp:
        config.oidcIssuer === ''
          ? undefined
          : new OidcRelyingParty(
              {
                issuer: config.oidcIssuer,
                clientId: config.oidcClientId,
                clientSecret: config.oidcClientSecret,
                scopes: config.oidcScopes,
                publicUrl: config.publicUrl,
                timeoutMs: 10_000,
              },
              logger,
            ),
      displayName: config.oidcDisplayName,
      db: pool,
      publicUrl: config.publicUrl,
      sessionMaxSeconds: config.sessionMaxSeconds,
      invitations: invitationAcceptor(pool, invitationLinks),
    },
    people: {
      db: pool,
      validators: createPeopleValidators(),
      cookieSecure: cookieSecure(config.publicUrl),
      links: invitationLinks,
      mailer,
      ttlSeconds: config.invitationTtlSeconds,
      sessionMaxSeconds: config.sessionMaxSeconds,
      sso: config.oidcIssuer !== '',
      throttle: signInThrottle,
    },
    pool,
    statusPages,
    statusPageDirectory: statusDirectory,
    customDomains: {
      store: domainStore,
      verified: verifiedDomains,
      lookupTxt: txtLookup(config.domainResolver, config.domainVerifyTimeoutMs),
      validators: statusFollowValidators,
    },
    consoleAssets: loadConsoleAssets(logger),
    policy,
    config,
    layout,
    logger,
    registry,
    keys,
    exportClient: exports.client,
    exportSlots: new Slots(config.exportMaxConcurrent, config.exportMaxPerKey),
    reader,
    validators,
    tail: tail[0],
    pages,
    monitors,
    directory,
    notifier,
    ready: runner.ready,
    details: runner.health,
    statusSubscribers: {
      subscribers,
      buckets: rateBuckets,
      links: new SubscriptionLinks(config.secretsKeys, config.publicUrl),
      mailer,
      validators: statusFollowValidators,
    },
    followValidators: statusFollowValidators,
    statusReports: new ReportStore(pool),
    runOnce: { client: runOnce, validators: runOnceValidators },
    secretBox: new SecretBox(config.secretsKeys),
  });
  const http = new HttpServerComponent(app, config.port, config.host, config.shutdownDelayMs);
  // Shutdown in reverse: HTTP (stop accepting, answer in-flight) -> run-once replies (a run
  // still waiting answers 504) -> change notices -> the
  // registry feed (keys, status pages) -> directory -> the tail's topic reader -> the tail ->
  // reader sockets -> the egress re-resolution -> PostgreSQL -> ClickHouse clients.
  runner.use(
    ch,
    registryCh,
    new PostgresComponent(pool),
    exports,
    egressRefresh,
    reader,
    ...tail,
    directory,
    feed,
    prune,
    signInPrune,
    subscriberPrune,
    changes,
    runOnce,
    http,
  );
  await runner.start();
  // Monitors sealed with a retired key (or copied with plain secrets) are sealed anew
  // with the ring's first key.
  try {
    const resealed = await monitors.reseal();
    if (resealed > 0) logger.info('monitor secrets re-sealed', { monitors: resealed, key: config.secretsKeys[0]!.id });
  } catch (err) {
    logger.warn('monitor secrets not re-sealed; retried at the next start', { err: String(err) });
  }
  logger.info('query service listening', { port: http.boundPort });
  return { runner, http };
}

/** The page cache (page-cache.ts), told by the tail of every check it reads. */
function pageCache(config: QueryConfig, registry: Registry, tail: CheckTail): PageCache {
  const pages = new PageCache({
    maxChecks: config.pageCacheChecks,
    ttlMs: config.pageCacheTtlMs,
    readAhead: config.pageReadAhead,
    settled: (tenantId, monitorId, t) => tail.settled(tenantId, monitorId, t),
    caughtUp: () => tail.health(),
    registry,
  });
  tail.watch(pages);
  return pages;
}

/**
 * The hot tail (check-tail.ts) and the topic reader that feeds it: every partition of the
 * check-results topic, from the stream consumer's committed offsets.
 */
function hotTail(
  config: QueryConfig,
  layout: TableLayout,
  logger: Logger,
  registry: Registry,
  reader: ClickHouseReader,
  validators: Validators,
): [CheckTail, TopicReader] {
  const tail = new CheckTail({
    load: async (tenantId, monitorId, limit) =>
      (
        await reader.query<CheckHistoryRow>(
          checksSql(config.clickhouseDatabase, layout, {
            tenantId,
            monitorId,
            // checksSql asks for one row more than its limit.
            limit: limit - 1,
            order: 'desc',
            from: undefined,
            to: undefined,
            statuses: [],
            cursor: undefined,
          }),
          AbortSignal.timeout(config.queryTimeoutMs),
        )
      ).data,
    decode: (value) => decodeCheck(validators, value),
    perMonitor: config.tailChecksPerMonitor,
    maxMonitors: config.tailMaxMonitors,
    maxBuffered: config.tailMaxBuffered,
    committedEveryMs: 1000,
    staleAfterMs: 10_000,
    logger: logger.child({ component: 'check-tail' }),
    registry,
  });
  const topicReader = new TopicReader({
    brokers: config.kafkaBrokers,
    clientId: `${config.kafkaClientId}-query-tail`,
    topic: config.checksTopic,
    groupId: config.consumerGroupId,
    logger: logger.child({ component: 'check-tail' }),
    startAt: (_reader, partitions) => tail.startAt(partitions),
    onStart: (offsets) => tail.onStart(offsets),
    onRecords: (partition, records) => tail.onRecords(partition, records),
  });
  tail.attach(topicReader);
  return [tail, topicReader];
}
