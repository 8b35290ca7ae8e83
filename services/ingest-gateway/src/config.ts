import {
  clickhouseSpec,
  discardBodySpec,
  httpSpec,
  kafkaSpec,
  logSpec,
  postgresSpec,
  serviceSpec,
  topicSpec,
  trustedProxiesSpec,
} from '@telemetry/platform';
import { ConfigError, loadConfig, v } from '@telemetry/platform';
import type { ConfigOf, Env } from '@telemetry/platform';
import { LIMITS } from '@telemetry/contract';
import { heartbeatSpec } from '@telemetry/store';

export const gatewaySpec = {
  ...logSpec,
  ...kafkaSpec,
  eventsTopic: topicSpec.eventsTopic,
  // Heartbeat calls are stored as checks of their monitor.
  checksTopic: topicSpec.checksTopic,
  ...heartbeatSpec,
  ...clickhouseSpec,
  ...postgresSpec,
  ...serviceSpec,
  ...httpSpec(8080),
  ...trustedProxiesSpec,
  ...discardBodySpec,
  ackTimeoutMs: v.int(
    'KAFKA_ACK_TIMEOUT_MS',
    5000,
    'deadline for Kafka to acknowledge a request (then 503)',
    100,
    120_000,
  ),
  maxBodyBytes: v.int(
    'MAX_BODY_BYTES',
    LIMITS.maxBodyBytes,
    'request body limit after decompression',
    1024,
    16 * 1024 * 1024,
  ),
  maxEventsPerRequest: v.int('MAX_EVENTS_PER_REQUEST', LIMITS.maxEventsPerRequest, 'events in one request', 1, 10_000),
  maxGzipRatio: v.int('MAX_GZIP_RATIO', 200, 'largest decompressed/compressed ratio of a gzip body', 2, 10_000),
  rateLimitPerSecond: v.int(
    'RATE_LIMIT_PER_SECOND',
    1000,
    'requests per second per access key, per replica (0: off)',
    0,
    1_000_000,
  ),
  rateLimitBurst: v.int(
    'RATE_LIMIT_BURST',
    2000,
    'requests a key may send at once before the rate applies',
    1,
    10_000_000,
  ),
  produceLingerMs: v.int(
    'PRODUCE_LINGER_MS',
    2,
    'how long a message waits for others to share its produce request',
    0,
    1000,
  ),
  produceMaxBatchMessages: v.int(
    'PRODUCE_MAX_BATCH_MESSAGES',
    1000,
    'messages per produce request at most',
    1,
    100_000,
  ),
  maxInFlightMessages: v.int(
    'MAX_INFLIGHT_MESSAGES',
    100_000,
    'messages waiting for Kafka before new requests get 503',
    1,
    10_000_000,
  ),
  maxInFlightBytes: v.int(
    'MAX_INFLIGHT_BYTES',
    32 * 1024 * 1024,
    'bytes of messages (keys and values) waiting for Kafka before new requests get 503 (what requests hold until the ack is about 4 times this in heap); at least MAX_EVENTS_PER_REQUEST times 65,664 (an event of the largest size with its key), so a largest request fits when nothing else waits',
    1024 * 1024,
    1024 * 1024 * 1024,
  ),
  maxInFlightPerKey: v.int(
    'MAX_INFLIGHT_PER_KEY',
    25_000,
    "one access key's messages waiting for Kafka before its new requests get 503 (the others keep the rest)",
    1,
    10_000_000,
  ),
  produceMaxBatchBytes: v.int(
    'PRODUCE_MAX_BATCH_BYTES',
    900_000,
    "bytes per produce request at most (a larger request is split); keep below the broker's message.max.bytes (1 MiB by default)",
    1024,
    100_000_000,
  ),
  corsMaxAgeS: v.int('CORS_MAX_AGE_S', 600, 'how long browsers may cache a CORS preflight', 0, 86_400),
  sdkCacheSeconds: v.int(
    'SDK_CACHE_SECONDS',
    86_400,
    'how long browsers and CDNs may keep /sdk/v1.js before revalidating it (by ETag)',
    0,
    31_536_000,
  ),
  migrateOnStart: v.bool(
    'MIGRATE_ON_START',
    true,
    'apply ClickHouse and PostgreSQL migrations and create topics at start-up (the PostgreSQL ones need DATABASE_URL to be the database owner: leave it false with per-service roles, and run npm run migrate)',
  ),
} as const;

export type GatewayConfig = ConfigOf<typeof gatewaySpec>;

/** What a message takes beyond its value in `messageBytes`: a 36-character key and the per-record 32, rounded up. */
const MESSAGE_OVERHEAD_BYTES = 128;

/** The bytes of messages a largest request can hold: its events at the largest size, each with its key. */
function largestRequestMessageBytes(config: Pick<GatewayConfig, 'maxEventsPerRequest'>): number {
  return config.maxEventsPerRequest * (LIMITS.maxEventBytes + MESSAGE_OVERHEAD_BYTES);
}

export function loadGatewayConfig(env: Env): GatewayConfig {
  const config = loadConfig(gatewaySpec, env);
  const largest = largestRequestMessageBytes(config);
  if (config.maxInFlightBytes < largest) {
    // Such a request could never fit: its sender would get 503 OVERLOADED on every retry.
    throw new ConfigError([
      `MAX_INFLIGHT_BYTES (${config.maxInFlightBytes}) must be at least MAX_EVENTS_PER_REQUEST (${config.maxEventsPerRequest}) ` +
        `times ${LIMITS.maxEventBytes + MESSAGE_OVERHEAD_BYTES} = ${largest}, so that a largest request fits when nothing else waits`,
    ]);
  }
  return config;
}
