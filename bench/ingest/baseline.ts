/**
 * The benchmark's baseline: the ingest gateway's per-request work on bare node:http, with
 * no Express, no middleware, no metrics and no access log. Same key check (KeyStore over
 * ClickHouse), same body parsing and Kafka messages (the gateway's own parseBody and
 * toMessages), same validation (ajv), and the same batched produce: the gateway's
 * BatchingPublisher over its AckedProducer, with the gateway's own settings
 * (PRODUCE_LINGER_MS, PRODUCE_MAX_BATCH_*, KAFKA_ACK_TIMEOUT_MS, KAFKA_CLIENT, the
 * event-id partitioner), awaited before answering 200. So gateway / baseline is the cost
 * of Express and our middleware, not of batching.
 *
 * Configured like the gateway (its own config loader): KAFKA_BROKERS, CLICKHOUSE_URL,
 * CLICKHOUSE_DATABASE, EVENTS_TOPIC, HOST, PORT, ... Started (compiled) by
 * bench/ingest/main.ts; SIGTERM stops it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Message } from 'kafkajs';
import { Registry } from 'prom-client';
import { createValidators, LIMITS, ok, type IngestRequest } from '@telemetry/contract';
import { eventPartition, loadGatewayConfig, toMessages } from '@telemetry/ingest-gateway';
import { BatchingPublisher, createLogger, createPostgres, parseBody, serviceKafka } from '@telemetry/platform';
import { KeyStore, loadKeyRecords, registryFeed } from '@telemetry/store';

const ROUTE = '/api/telemetry/events';
const OK_BODY = JSON.stringify(ok(null));
const ALLOWED_TYPES = new Set(['application/json', 'text/plain']);

const config = loadGatewayConfig(process.env);
const logger = createLogger({ service: 'bench-baseline', level: config.logLevel });
const topic = config.eventsTopic;
// The same copy of the keys as the gateway's: loaded from the registry, kept by its change feed.
const pool = createPostgres(config, logger, 'bench-baseline');
const keys = new KeyStore((ids) => loadKeyRecords(pool, ids));
const registry = new Registry();
const feed = registryFeed({ pool, config, name: 'bench-baseline', logger, registry });
feed.subscribe(keys.mirror);
const producer = serviceKafka(config, 'baseline', logger).producer({
  registry,
  ackTimeoutMs: config.ackTimeoutMs,
  partitioner: eventPartition,
});
const publisher = new BatchingPublisher(producer, {
  lingerMs: config.produceLingerMs,
  maxBatchMessages: config.produceMaxBatchMessages,
  maxBatchBytes: config.produceMaxBatchBytes,
  maxInFlightMessages: config.maxInFlightMessages,
  registry,
  inFlightMetric: { name: 'baseline_inflight_messages', help: 'messages waiting for Kafka' },
});
const validate = createValidators().ingestRequest;

function answer(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

function failure(res: ServerResponse, status: number, code: string): void {
  answer(res, status, JSON.stringify({ success: false, error: code, code }));
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        resolve(undefined);
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks, size)));
    req.on('error', reject);
  });
}

async function ingest(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = req.headers['x-access-key'];
  const key = typeof raw === 'string' ? keys.verify(raw.trim(), 'telemetry') : undefined;
  if (!key) return failure(res, 401, 'INVALID_CREDENTIALS');
  const origin = req.headers.origin;
  if (key.allowedOrigins.size > 0 && (!origin || !key.allowedOrigins.has(origin))) {
    return failure(res, 403, 'ORIGIN_NOT_ALLOWED');
  }
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (!ALLOWED_TYPES.has(type) || (req.headers['content-encoding'] ?? 'identity') !== 'identity') {
    return failure(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
  }
  const buf = await readBody(req, LIMITS.maxBodyBytes);
  if (!buf) return failure(res, 413, 'PAYLOAD_TOO_LARGE');
  let body: unknown;
  try {
    body = parseBody(buf);
  } catch {
    return failure(res, 400, 'INVALID_JSON');
  }
  if (!validate(body)) return failure(res, 400, 'VALIDATION_FAILED');
  const request: IngestRequest = body;
  if (request.events.length > LIMITS.maxEventsPerRequest) return failure(res, 413, 'BATCH_TOO_LARGE');
  if (key.allowedSources.size > 0 && request.events.some((e) => !key.allowedSources.has(e.source))) {
    return failure(res, 403, 'SOURCE_NOT_ALLOWED');
  }
  let messages: Message[];
  try {
    messages = toMessages(request, key, new Date().toISOString(), LIMITS.maxEventBytes);
  } catch {
    return failure(res, 413, 'EVENT_TOO_LARGE');
  }
  try {
    await publisher.send(topic, messages);
  } catch (err) {
    logger.warn('produce failed', { err: String(err) });
    return failure(res, 503, 'KAFKA_UNAVAILABLE');
  }
  answer(res, 200, OK_BODY);
}

const server = createServer((req, res) => {
  const path = (req.url ?? '').split('?')[0];
  if (req.method === 'POST' && path === ROUTE) {
    ingest(req, res).catch((err: unknown) => {
      logger.error('unhandled error', { err: String(err) });
      if (!res.headersSent) failure(res, 500, 'INTERNAL_ERROR');
      else res.destroy();
    });
  } else if (req.method === 'GET' && path === '/readyz') {
    answer(res, 200, JSON.stringify(ok({ status: 'ready' })));
  } else {
    failure(res, 404, 'NOT_FOUND');
  }
});
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;

await feed.start();
await producer.start();
await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  await closed;
  await producer.stop();
  await feed.stop();
  await pool.end();
}
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`baseline: stop failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  });
}
