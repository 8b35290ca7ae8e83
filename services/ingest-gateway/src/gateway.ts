import { createValidators } from '@telemetry/contract';
import {
  BatchingPublisher,
  createPostgres,
  migratePostgres,
  PostgresComponent,
  serviceKafka,
  createRegistry,
  HttpServerComponent,
  ServiceRunner,
  type Logger,
} from '@telemetry/platform';
import {
  EventSchemaIndex,
  HeartbeatTokens,
  KeyStore,
  loadEventSchemaRecords,
  loadKeyRecords,
  migrateWith,
  REGISTRY_MIGRATIONS,
  registryFeed,
  SuppressionList,
} from '@telemetry/store';
import { createGatewayApp } from './app.js';
import { eventPartition } from './ingest.js';
import { loadSdkBundle } from './sdk.route.js';
import type { GatewayConfig } from './config.js';

export interface Gateway {
  runner: ServiceRunner;
  http: HttpServerComponent;
}

/** Builds and starts the gateway. main.ts adds signal handling; tests call this directly. */
export async function startGateway(config: GatewayConfig, logger: Logger): Promise<Gateway> {
  const registry = createRegistry('ingest-gateway');
  // Its PostgreSQL role reads access keys and heartbeat tokens only (docs/operations.md).
  const pool = createPostgres(config, logger, 'ingest-gateway');
  const { admin, producer: newProducer } = serviceKafka(config, 'gateway', logger);
  if (config.migrateOnStart) {
    await migrateWith(config, logger);
    await migratePostgres(pool, REGISTRY_MIGRATIONS, logger);
    await admin.ensureTopics([{ topic: config.eventsTopic, numPartitions: config.topicPartitions }]);
  }
  // Copies of the keys and heartbeat tokens, kept current by the registry's change feed:
  // checking a key costs no I/O, a revocation reaches this replica within a second, and
  // while PostgreSQL is away the last copy stays in force.
  const keys = new KeyStore((ids) => loadKeyRecords(pool, ids));
  const heartbeatTokens = new HeartbeatTokens(pool);
  const feed = registryFeed({ pool, config, name: 'ingest-gateway', logger, registry });
  feed.subscribe(keys.mirror);
  feed.subscribe(heartbeatTokens.mirror);
  // Each tenant's suppressed ids (docs/deletions.md): a deletion's ids reach every gateway
  // within a second of its request, and their new events are answered but not published.
  const suppressions = new SuppressionList(pool);
  feed.subscribe(suppressions.mirror);
  // Event schemas likewise: a change reaches this replica within a second (docs/event-schemas.md).
  const eventSchemas = new EventSchemaIndex((ids) => loadEventSchemaRecords(pool, ids));
  feed.subscribe(eventSchemas.mirror);
  const producer = newProducer({ registry, ackTimeoutMs: config.ackTimeoutMs, partitioner: eventPartition });
  const runner = new ServiceRunner(logger, config.shutdownTimeoutMs);
  const app = createGatewayApp({
    config,
    logger,
    registry,
    keys,
    suppressions,
    heartbeatTokens,
    eventSchemas,
    publisher: new BatchingPublisher(producer, {
      lingerMs: config.produceLingerMs,
      maxBatchMessages: config.produceMaxBatchMessages,
      maxBatchBytes: config.produceMaxBatchBytes,
      maxInFlightMessages: config.maxInFlightMessages,
      maxInFlightBytes: config.maxInFlightBytes,
      maxInFlightPerOwner: config.maxInFlightPerKey,
      registry,
      inFlightMetric: {
        name: 'ingest_inflight_messages',
        help: 'Messages accepted for publishing and not yet acknowledged by Kafka',
      },
      inFlightBytesMetric: {
        name: 'ingest_inflight_bytes',
        help: 'Bytes of the messages (keys and values) accepted for publishing and not yet acknowledged by Kafka',
      },
    }),
    validators: createValidators(),
    ready: runner.ready,
    details: runner.health,
    sdk: loadSdkBundle(logger),
  });
  const http = new HttpServerComponent(app, config.port, config.host, config.shutdownDelayMs);
  // Start order; shutdown runs in reverse: stop accepting HTTP and drain in-flight
  // requests (each waits for its Kafka ack) -> disconnect the producer -> stop following
  // the registry -> close the PostgreSQL pool.
  runner.use(new PostgresComponent(pool), feed, producer, http);
  await runner.start();
  logger.info('ingest gateway listening', { port: http.boundPort });
  return { runner, http };
}
