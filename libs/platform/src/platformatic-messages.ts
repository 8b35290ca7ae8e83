/**
 * What the @platformatic/kafka group member (platformatic-group-consumer.ts) maps between
 * the library and us: our consumer settings to the library's options, with the group
 * protocol kafkajs's members offer, and the library's messages to our StreamMessage.
 */
import type { ConsumerOptions, Message } from '@platformatic/kafka';
import type { GroupConsumerSpec } from './kafka-group-consumer.js';
import type { StreamMessage } from './kafka-types.js';

export type PlatformaticMessage = Message<Buffer, Buffer, Buffer, Buffer>;

/**
 * The group protocol kafkajs's members offer (its RoundRobinAssigner): members of both
 * libraries then form one group, so a rolling change of KAFKA_CLIENT (or an upgrade from a
 * kafkajs consumer) needs no stop. Both encode the standard consumer-protocol metadata.
 */
const GROUP_PROTOCOLS = [{ name: 'RoundRobinAssigner', version: 0 }];

/** The library's consumer options for `spec` (defaults as kafkajs's). */
export function libraryOptions(
  options: { brokers: string[]; clientId: string },
  spec: GroupConsumerSpec,
): ConsumerOptions<Buffer, Buffer, Buffer, Buffer> {
  const c = spec.consumer;
  return {
    clientId: options.clientId,
    bootstrapBrokers: options.brokers,
    groupId: spec.groupId,
    sessionTimeout: c.sessionTimeout ?? 30_000,
    heartbeatInterval: c.heartbeatInterval ?? 3000,
    rebalanceTimeout: c.rebalanceTimeout ?? 60_000,
    maxBytesPerPartition: c.maxBytesPerPartition ?? 1_048_576,
    maxWaitTime: c.maxWaitTimeInMs ?? 5000,
    autocommit: false,
    connectTimeout: 3000,
    timeout: 10_000,
    retries: 5,
    retryDelay: 500,
    protocols: GROUP_PROTOCOLS,
  };
}

/** The library's message as our users read it (kafka-types.ts). */
export function toStreamMessage(m: PlatformaticMessage): StreamMessage {
  const headers: Record<string, Buffer> = {};
  for (const [k, v] of m.headers) headers[k.toString()] = v;
  return {
    key: m.key ?? null,
    value: m.value ?? null,
    timestamp: m.timestamp.toString(),
    offset: m.offset.toString(),
    headers,
  };
}
