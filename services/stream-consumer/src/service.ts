import { createValidators } from '@telemetry/contract';
import {
  clickhouseComponent,
  ClickHouseInserter,
  createPostgres,
  PostgresComponent,
  serviceKafka,
  createRegistry,
  detectEngine,
  healthServer,
  HttpServerComponent,
  PeriodicJob,
  ServiceRunner,
  type Component,
  type Logger,
} from '@telemetry/platform';
import { hostname } from 'node:os';
import {
  auditDatabase,
  DeletionQueue,
  FirstSeen,
  insertSettingsOf,
  readSettingsOf,
  layoutOf,
  migrateWith,
  retentionJob,
  retentionRules,
  MAX_SCREENSHOT_MESSAGE_BYTES,
  screenshotRowBytes,
  streamTables,
  tableRef,
} from '@telemetry/store';
import { DeletionExecutor } from './deletions.js';
import { BatchWriter, byteLimit } from './batch-writer.js';
import type { ConsumerConfig } from './config.js';
import { KafkaToClickHouse } from './consumer.js';
import { Freshness } from './freshness.js';
import { loadEnricher } from './enrichment.js';

/** The writer as a component: stop() flushes what it holds. */
class WriterComponent implements Component {
  readonly name = 'batch-writer';
  constructor(readonly writer: BatchWriter) {}
  async start(): Promise<void> {}
  health(): boolean {
    return true;
  }
  stop(): Promise<void> {
    return this.writer.stop();
  }
}

export interface StreamConsumer {
  runner: ServiceRunner;
  http: HttpServerComponent;
  writer: BatchWriter;
}

export async function startConsumer(config: ConsumerConfig, logger: Logger): Promise<StreamConsumer> {
  // First: a GeoIP file that cannot be read stops the start, before anything connects.
  const { enricher, geoIp } = loadEnricher(config);
  logger.info('geoip database loaded', { files: geoIp.describe() });
  const registry = createRegistry('stream-consumer');
  const ch = clickhouseComponent(config, logger);
  const { admin, producer: newProducer, groupConsumers } = serviceKafka(config, 'consumer', logger);
  if (config.migrateOnStart) {
    await migrateWith(config, logger);
    await admin.ensureTopics(
      [
        config.eventsTopic,
        config.checksTopic,
        config.alertsTopic,
        config.webhookDeliveriesTopic,
        config.auditTopic,
        config.screenshotsTopic,
        config.deadLetterTopic,
      ].map((topic) => ({
        topic,
        numPartitions: config.topicPartitions,
      })),
    );
  }
  // With CLICKHOUSE_CLUSTER every table is written through its Distributed `_all` table,
  // synchronously (docs/clickhouse.md, "On a cluster"): a committed offset means the rows
  // are on their shard. Mutations (retention, deletions) run ON CLUSTER on the local tables.
  const layout = layoutOf(config);
  const cluster = config.clickhouseCluster ?? '';
  const inserts = insertSettingsOf(layout);
  // Its reads (first-seen look-ups, a deletion's planning and checks) are exact on a cluster.
  const reads = readSettingsOf(layout);
  // The events table's shape follows the server (migration 7): times with milliseconds on current ClickHouse.
  const engine = await detectEngine(ch.client);
  const dataInserter = new ClickHouseInserter(ch.client, config.insertFormat, inserts);
  // The audit log is written as its own user, which may only INSERT there (databases.ts):
  // CLICKHOUSE_USER, which drops the data tables' partitions, cannot reach it.
  const auditCh = clickhouseComponent(config, logger, {
    username: config.auditUser,
    password: config.auditPassword,
    name: 'clickhouse-audit',
    database: auditDatabase(config.clickhouseDatabase),
    ping: false,
  });
  const auditInserter = new ClickHouseInserter(auditCh.client, config.insertFormat, inserts);
  const tables = streamTables(config.clickhouseDatabase, layout);
  const inserter = {
    insert: (table: string, rows: readonly object[]): Promise<void> =>
      (table === tables.audit_log ? auditInserter : dataInserter).insert(table, rows),
  };
  const writer: BatchWriter = new BatchWriter({
    sink: inserter,
    logger,
    registry,
    maxRows: config.batchMaxRows,
    maxAgeMs: config.batchMaxAgeMs,
    concurrency: config.insertConcurrency,
    retryMaxMs: config.insertRetryMaxMs,
    // Screenshots weigh up to 700 KB a row: their inserts are capped by bytes too.
    byteLimits: new Map([byteLimit(tables.check_screenshots, config.screenshotBatchMaxBytes, screenshotRowBytes)]),
    // Bound late: the consumer knows which message each row came from.
    onRejected: (table, rows, reason): Promise<void> => consumer.deadLetterRows(table, rows, reason),
  });
  const deadLetters = newProducer({ registry, ackTimeoutMs: 10_000 });
  const consumer = new KafkaToClickHouse({
    consumers: groupConsumers,
    writer,
    deadLetters,
    validators: createValidators(),
    logger,
    registry,
    groupId: config.groupId,
    eventsTopic: config.eventsTopic,
    checksTopic: config.checksTopic,
    alertsTopic: config.alertsTopic,
    webhookDeliveriesTopic: config.webhookDeliveriesTopic,
    auditTopic: config.auditTopic,
    screenshotsTopic: config.screenshotsTopic,
    // About two inserts' worth of the largest screenshots (SCREENSHOT_BATCH_MAX_BYTES).
    maxBufferedScreenshots: Math.max(
      1,
      Math.floor((2 * config.screenshotBatchMaxBytes) / MAX_SCREENSHOT_MESSAGE_BYTES),
    ),
    deadLetterTopic: config.deadLetterTopic,
    tables,
    maxMessageBytes: config.maxMessageBytes,
    fetchBytesPerPartition: config.fetchBytesPerPartition,
    partitionsConcurrently: config.partitionsConcurrently,
    sessionTimeoutMs: config.sessionTimeoutMs,
    maxBufferedRows: config.maxBufferedRows,
    eventDecoder: config.eventDecoder,
    modernEvents: engine.modern,
    enricher,
    firstSeen: new FirstSeen(
      ch.client,
      tableRef(config.clickhouseDatabase, 'event_first_seen', layout),
      engine.modern,
      {
        insertSettings: inserts,
        readSettings: reads,
      },
    ),
    retryMaxMs: config.insertRetryMaxMs,
  });
  const runner = new ServiceRunner(logger, config.shutdownTimeoutMs);
  const http = healthServer({ runner, registry, logger, ...config });
  // Shutdown runs in reverse: consumer (stop fetching, flush, commit, leave group) ->
  // writer (flush leftovers) -> dead-letter producer -> ClickHouse client -> HTTP last,
  // so /metrics and /healthz answer until the end.
  const retention = retentionJob(
    ch.client,
    config.clickhouseDatabase,
    retentionRules({
      events: config.retentionEventsDays,
      checks: config.retentionChecksDays,
      rollups: config.retentionRollupsDays,
      screenshots: config.screenshotRetentionDays,
    }),
    config.retentionIntervalMs,
    logger,
    engine,
    cluster,
  );
  const freshness = new Freshness({
    tables: () => consumer.tables(),
    lags: (topics) => admin.groupLags(config.groupId, topics),
    lastInsertAt: (table) => writer.lastInsertAt(table),
    consumer: `${hostname()}-${process.pid}`,
    insert: (rows) => dataInserter.insert(tableRef(config.clickhouseDatabase, 'freshness', layout), rows),
    registry,
  });
  const reporter = new PeriodicJob('freshness', config.freshnessIntervalMs, () => freshness.report(), logger);
  // Deletion on request (docs/deletions.md): this service writes the data tables and holds
  // ALTER DELETE there already (retention), so it runs the deletes; PostgreSQL (its own
  // role: the deletions table only) says which. Without DATABASE_URL a replica runs none.
  const deletionParts: Component[] = [];
  if (config.databaseUrl !== '') {
    const pool = createPostgres(config, logger, 'stream-consumer');
    const executor = new DeletionExecutor({
      queue: new DeletionQueue(pool),
      ch: ch.client,
      engine,
      database: config.clickhouseDatabase,
      place: { cluster, readSettings: reads },
      leaseSeconds: config.deletionLeaseSeconds,
      mutationTimeoutMs: config.deletionMutationTimeoutMs,
      logger,
      registry,
    });
    deletionParts.push(
      new PostgresComponent(pool),
      new PeriodicJob('deletions', config.deletionsPollMs, () => executor.runPending(), logger),
    );
  }
  // The deletions job stops first (its statement ends), then its pool closes.
  runner.use(
    http,
    ch,
    auditCh,
    ...deletionParts,
    retention,
    reporter,
    deadLetters,
    new WriterComponent(writer),
    consumer,
  );
  await runner.start();
  logger.info('stream consumer running', { port: http.boundPort, group: config.groupId });
  return { runner, http, writer };
}
