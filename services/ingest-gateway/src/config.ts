import {
  clickhouseSpec,
  kafkaSpec,
  loadConfig,
  logSpec,
  serviceSpec,
  topicSpec,
  v,
  type ConfigOf,
  type Env,
} from '@telemetry/runtime';
import { LIMITS } from '@telemetry/contract';

export const gatewaySpec = {
  ...logSpec,
  ...kafkaSpec,
  eventsTopic: topicSpec.eventsTopic,
  ...clickhouseSpec,
  ...serviceSpec,
  host: v.str('HOST', '0.0.0.0', 'address to listen on'),
  port: v.int('PORT', 8080, 'HTTP port (0 picks a free one)', 0, 65535),
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
  corsMaxAgeS: v.int('CORS_MAX_AGE_S', 600, 'how long browsers may cache a CORS preflight', 0, 86_400),
  migrateOnStart: v.bool('MIGRATE_ON_START', true, 'apply ClickHouse migrations and create topics at start-up'),
  shutdownDelayMs: v.int(
    'SHUTDOWN_DELAY_MS',
    0,
    'after SIGTERM, fail /readyz this long before closing (k8s: 5000)',
    0,
    60_000,
  ),
} as const;

export type GatewayConfig = ConfigOf<typeof gatewaySpec>;

export function loadGatewayConfig(env: Env): GatewayConfig {
  return loadConfig(gatewaySpec, env);
}
