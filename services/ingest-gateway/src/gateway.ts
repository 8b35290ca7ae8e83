import { createValidators } from '@telemetry/contract';
import {
  BatchingPublisher,
  clickhouseComponent,
  serviceKafka,
  createRegistry,
  ensureTopics,
  HttpServerComponent,
  ServiceRunner,
  type Logger,
} from '@telemetry/platform';
import { ClickHouseKeySource, keysDatabase, KeyStore, migrateWith } from '@telemetry/store';
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
  // Its ClickHouse user may read the keys database only (docs/operations.md).
  const ch = clickhouseComponent(config, logger, {
    essential: false,
    database: keysDatabase(config.clickhouseDatabase),
  });
  const { kafka, producer: newProducer } = serviceKafka(config, 'gateway', logger);
  if (config.migrateOnStart) {
    await migrateWith(config, logger);
    await ensureTopics(kafka, [{ topic: config.eventsTopic, numPartitions: config.topicPartitions }]);
  }
  const keys = new KeyStore(new ClickHouseKeySource(ch.client, config.clickhouseDatabase), logger, config.keyRefreshMs);
  const producer = newProducer({ registry, ackTimeoutMs: config.ackTimeoutMs, partitioner: eventPartition });
  const runner = new ServiceRunner(logger, config.shutdownTimeoutMs);
  const app = createGatewayApp({
    config,
    logger,
    registry,
    keys,
    publisher: new BatchingPublisher(producer, {
      lingerMs: config.produceLingerMs,
      maxBatchMessages: config.produceMaxBatchMessages,
      maxBatchBytes: config.produceMaxBatchBytes,
      maxInFlightMessages: config.maxInFlightMessages,
      maxInFlightPerOwner: config.maxInFlightPerKey,
      registry,
      inFlightMetric: {
        name: 'ingest_inflight_messages',
        help: 'Messages accepted for publishing and not yet acknowledged by Kafka',
      },
    }),
    validators: createValidators(),
    ready: runner.ready,
    details: runner.health,
    sdk: loadSdkBundle(logger),
  });
  const http = new HttpServerComponent(app, config.port, config.host, config.shutdownDelayMs);
  // Start order; shutdown runs in reverse: stop accepting HTTP and drain in-flight
  // requests (each waits for its Kafka ack) -> disconnect the producer -> stop key
  // refresh -> close ClickHouse.
  runner.use(ch, keys, producer, http);
  await runner.start();
  logger.info('ingest gateway listening', { port: http.boundPort });
  return { runner, http };
}
