import { createValidators, type Validators } from '@telemetry/contract';
import type { Registry } from 'prom-client';
import {
  clickhouseComponent,
  serviceKafka,
  ClickHouseReader,
  createRegistry,
  egressPolicyFor,
  HttpServerComponent,
  SecretBox,
  ServiceRunner,
  Slots,
  Snapshot,
  TopicReader,
  type Logger,
} from '@telemetry/platform';
import {
  checksSql,
  ClickHouseKeySource,
  currentMonitorIdsSql,
  decodeCheck,
  type CheckHistoryRow,
  KeyStore,
  monitorPartition,
  MonitorStore,
  registryDatabase,
  StatusPageStore,
} from '@telemetry/store';
import { createQueryApp } from './app.js';
import { CheckTail } from './check-tail.js';
import { loadConsoleAssets } from './console.route.js';
import { statusPageDirectory } from './status-pages.route.js';
import { MonitorDirectory } from './monitor-directory.js';
import type { QueryConfig } from './config.js';

export interface QueryService {
  runner: ServiceRunner;
  http: HttpServerComponent;
}

export async function startQueryService(config: QueryConfig, logger: Logger): Promise<QueryService> {
  const registry = createRegistry('query-service');
  // Three pools, so that no user query can hold a socket readiness or key refresh needs:
  // `ch` (readiness pings and key refresh only), `reader` (list, summary, incidents) and
  // `exports` (one socket per export slot). The registry writer is a fourth.
  const ch = clickhouseComponent(config, logger, {
    requestTimeoutMs: config.queryTimeoutMs + 1000,
    // Bounds every query on the server side too (ClickHouse 18.16 knows these).
    settings: { max_execution_time: Math.ceil(config.queryTimeoutMs / 1000), max_result_rows: 100_000 },
    maxOpenConnections: 2,
  });
  const exports = clickhouseComponent(config, logger, {
    requestTimeoutMs: config.exportTimeoutMs + 1000,
    maxOpenConnections: config.exportMaxConcurrent,
    name: 'clickhouse-export',
    ping: false,
  });
  // The hot read routes use the lean reader (see clickhouse-reader.ts for why).
  const reader = new ClickHouseReader({
    url: config.clickhouseUrl,
    username: config.clickhouseUser,
    password: config.clickhousePassword,
    database: config.clickhouseDatabase,
    settings: { max_execution_time: Math.ceil(config.queryTimeoutMs / 1000), max_result_rows: 100_000 },
    maxSockets: config.maxQueriesInFlight,
  });
  // The registry is written with its own user, allowed the registry database only:
  // CLICKHOUSE_USER may only read.
  const registryCh = clickhouseComponent(config, logger, {
    username: config.registryUser,
    password: config.registryPassword,
    requestTimeoutMs: config.queryTimeoutMs + 1000,
    name: 'clickhouse-registry',
    database: registryDatabase(config.clickhouseDatabase),
    // Serves monitor writes, which users send: readiness is `ch`'s.
    ping: false,
  });
  const monitors = new MonitorStore(registryCh.client, config.clickhouseDatabase, new SecretBox(config.secretsKeys));
  const { producer: newProducer } = serviceKafka(config, 'query', logger);
  const changes = newProducer({ registry, ackTimeoutMs: 5000, partitioner: monitorPartition });
  const notifier = {
    notify: (c: { id: string; version: number; deleted: boolean }) =>
      changes.send(config.monitorChangesTopic, [{ key: c.id, value: JSON.stringify(c) }]),
  };
  const directory = new MonitorDirectory(
    async (ids) =>
      (
        await reader.query<{ id: string; t: string }>(
          currentMonitorIdsSql(config.clickhouseDatabase, ids),
          AbortSignal.timeout(config.queryTimeoutMs),
        )
      ).data.map((r) => ({ id: r.id, tenantId: r.t })),
    config.monitorCacheMs,
    logger,
    undefined,
    registry,
  );
  const validators = createValidators();
  const tail = config.tailChecksPerMonitor > 0 ? hotTail(config, logger, registry, reader, validators) : [];
  const keys = new KeyStore(new ClickHouseKeySource(ch.client, config.clickhouseDatabase), logger, config.keyRefreshMs);
  // Monitor and webhook URLs that are IP literals the runners would refuse, or our own
  // Kafka and ClickHouse, are refused at once (the runners judge names when they connect).
  const { policy, refresh: egressRefresh } = await egressPolicyFor(config, logger);
  const statusPages = new StatusPageStore(registryCh.client, config.clickhouseDatabase);
  const statusDirectory = new Snapshot({
    name: 'status-pages',
    load: statusPageDirectory(statusPages),
    intervalMs: config.statusPagesRefreshMs,
    logger,
    failureMessage: 'status pages not reloaded; the last copy stays',
    // Public pages answer 503 until the first load; nothing else waits for it.
    requireFirstLoad: false,
    essential: false,
  });
  const runner = new ServiceRunner(logger, config.shutdownTimeoutMs);
  const app = createQueryApp({
    statusPages,
    statusPageDirectory: statusDirectory,
    consoleAssets: loadConsoleAssets(logger),
    policy,
    config,
    logger,
    registry,
    keys,
    exportClient: exports.client,
    exportSlots: new Slots(config.exportMaxConcurrent, config.exportMaxPerKey),
    reader,
    validators,
    tail: tail[0],
    monitors,
    directory,
    notifier,
    ready: runner.ready,
    details: runner.health,
  });
  const http = new HttpServerComponent(app, config.port, config.host, config.shutdownDelayMs);
  // Shutdown in reverse: HTTP (stop accepting, answer in-flight) -> keys -> change
  // notices -> status pages -> directory -> the tail's topic reader -> the tail -> reader sockets ->
  // the egress re-resolution -> ClickHouse clients.
  runner.use(ch, registryCh, exports, egressRefresh, reader, ...tail, directory, statusDirectory, changes, keys, http);
  await runner.start();
  // Monitors copied by migration 4 (plain secrets) or sealed with a retired key are
  // sealed anew with the ring's first key; then the older rows are merged away.
  try {
    const { resealed, merged } = await monitors.reseal();
    if (resealed > 0) logger.info('monitor secrets re-sealed', { monitors: resealed, key: config.secretsKeys[0]!.id });
    if (!merged) {
      logger.warn('rows sealed with older keys remain until ClickHouse merges them', {
        hint: 'the registry user may not OPTIMIZE; see docs/operations.md, "Rotating the sealing key"',
      });
    }
  } catch (err) {
    logger.warn('monitor secrets not re-sealed; retried at the next start', { err: String(err) });
  }
  logger.info('query service listening', { port: http.boundPort });
  return { runner, http };
}

/**
 * The hot tail (check-tail.ts) and the topic reader that feeds it: every partition of the
 * check-results topic, from the stream consumer's committed offsets.
 */
function hotTail(
  config: QueryConfig,
  logger: Logger,
  registry: Registry,
  reader: ClickHouseReader,
  validators: Validators,
): [CheckTail, TopicReader] {
  const tail = new CheckTail({
    load: async (tenantId, monitorId, limit) =>
      (
        await reader.query<CheckHistoryRow>(
          checksSql(config.clickhouseDatabase, {
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
