import { createHash, randomUUID } from 'node:crypto';
import { describeErrors, type EventMessage, type IngestRequest, type Validators } from '@telemetry/contract';
import { AppError, type ProducerMessage } from '@telemetry/platform';
import { NO_STAMP, stamp, type RequestStamp } from './request-stamp.js';

export function validateRequest(v: Validators, body: unknown, maxEvents: number): IngestRequest {
  if (
    typeof body === 'object' &&
    body !== null &&
    Array.isArray((body as { events?: unknown }).events) &&
    (body as { events: unknown[] }).events.length > maxEvents
  ) {
    throw new AppError('BATCH_TOO_LARGE', `at most ${maxEvents} events per request`, {
      limit: 'maxEventsPerRequest',
      max: maxEvents,
    });
  }
  if (!v.ingestRequest(body)) {
    const problems = describeErrors(v.ingestRequest.errors);
    throw new AppError('VALIDATION_FAILED', 'the request is invalid; nothing was accepted', {
      problems,
      invalid_events: invalidEventIndexes(problems.map((p) => p.path)),
    });
  }
  return body;
}

function invalidEventIndexes(paths: string[]): number[] {
  const out = new Set<number>();
  for (const p of paths) {
    const m = /^\/events\/(\d+)/.exec(p);
    if (m) out.add(Number(m[1]));
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * The stored event id. With a client event id it is derived from (key, client id), so
 * a retried request produces the same id and ClickHouse keeps one row; otherwise random.
 */
export function eventIdFor(keyId: string, clientId: string | undefined): string {
  if (clientId === undefined) return randomUUID();
  const h = createHash('sha256').update(keyId).update('\0').update(clientId).digest();
  h[6] = (h[6]! & 0x0f) | 0x80; // version 8 (custom, RFC 9562)
  h[8] = (h[8]! & 0x3f) | 0x80; // variant 10
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The partition of an event, from its id: every copy of an event (a client's retry maps
 * to the same id) lands on the same partition, so one consumer at a time resolves the
 * copies, in order (the first-seen times of libs/store's FirstSeen). The id's last 8 hex
 * digits are random (v4, v7) or hashed (ours): as even as round-robin, and far cheaper
 * than kafkajs's murmur2. Adding partitions moves ids: copies sent across that change may
 * land apart (docs/operations.md).
 */
export function eventPartition(eventId: string, partitions: number): number {
  const n = Number.parseInt(eventId.slice(-8), 16);
  return Number.isNaN(n) ? 0 : n % partitions;
}

/**
 * One Kafka message per event, keyed by event id (partitioned by eventPartition).
 * The event's tenant is its key's, whatever its `source` says. `requestStamp`: the
 * request's address, user agent and the key's ip_storage (request-stamp.ts).
 */
export function toMessages(
  req: IngestRequest,
  key: { keyId: string; tenantId: string },
  receivedAt: string,
  maxEventBytes: number,
  requestStamp: RequestStamp = NO_STAMP,
): EventProducerMessage[] {
  return req.events.map((e, index) => {
    const msg: EventMessage = {
      v: 1,
      event_id: eventIdFor(key.keyId, e.id),
      key_id: key.keyId,
      tenant_id: key.tenantId,
      source: e.source,
      category: e.category,
      payload: e.payload,
      received_at: receivedAt,
    };
    if (e.id !== undefined) msg.client_event_id = e.id;
    if (e.timestamp !== undefined) msg.client_ts = e.timestamp;
    if (req.sent_at !== undefined) msg.sent_at = req.sent_at;
    if (e.anonymous_id !== undefined) msg.anonymous_id = e.anonymous_id;
    if (e.user_id !== undefined) msg.user_id = e.user_id;
    stamp(msg, requestStamp);
    return producerMessage(msg, index, maxEventBytes);
  });
}

/**
 * A message for the events topic with the event it carries (`event`), so that the steps
 * after mapping (event schemas, suppression) read the event without parsing `value`
 * again. The producer sends only key and value. Without `event` they parse `value`.
 */
export interface EventProducerMessage extends ProducerMessage {
  event?: EventMessage;
}

/** The event a message carries. */
export function eventOf(m: EventProducerMessage): EventMessage {
  return m.event ?? (JSON.parse(String(m.value)) as EventMessage);
}

/** Event `index`'s message as Kafka gets it, keyed by its event id; EVENT_TOO_LARGE over `maxEventBytes`. */
export function producerMessage(msg: EventMessage, index: number, maxEventBytes: number): EventProducerMessage {
  const value = JSON.stringify(msg);
  if (Buffer.byteLength(value) > maxEventBytes) {
    throw new AppError('EVENT_TOO_LARGE', `event ${index} is larger than ${maxEventBytes} bytes`, {
      limit: 'maxEventBytes',
      max: maxEventBytes,
      invalid_events: [index],
    });
  }
  return { key: msg.event_id, value, event: msg };
}
