/**
 * Load of `npm run bench:consume`: events as clients send them, and the backlog of event
 * messages produced straight into Kafka in the exact format the gateway writes
 * (`toMessages` of @telemetry/ingest-gateway), keyed by event id.
 */
import { Partitioners, type Kafka } from 'kafkajs';
import { DEFAULT_TENANT, LIMITS, type IngestRequest, type TelemetryEvent } from '@telemetry/contract';
import { toMessages } from '@telemetry/ingest-gateway';

const SOURCES = ['web', 'ios', 'android', 'shop-plugin'] as const;
const CATEGORIES = ['page_view', 'click', 'add_to_cart', 'checkout', 'search'] as const;

/** Zero-padded, so ids sort as their sequence numbers do (`f000000042`). */
export const clientId = (prefix: string, seq: number): string => `${prefix}${String(seq).padStart(9, '0')}`;

/**
 * One event as an SDK sends it: a client id and timestamp (ISO-8601 with milliseconds)
 * and a ~150-byte payload object.
 */
export function benchEvent(seq: number, idPrefix: string, source: string | undefined, nowMs: number): TelemetryEvent {
  const item = seq % 5000;
  return {
    source: source ?? SOURCES[seq % SOURCES.length]!,
    category: CATEGORIES[seq % CATEGORIES.length]!,
    id: clientId(idPrefix, seq),
    timestamp: new Date(nowMs - (seq % 997)).toISOString(),
    payload: {
      path: `/products/${item}`,
      referrer: 'https://www.example.com/search?q=running+shoes',
      title: `Product ${item} - Example Shop`,
      session: (seq * 2654435761).toString(16).padStart(12, '0').slice(-12),
      screen: '1920x1080',
      n: seq,
    },
  };
}

export function benchRequest(
  firstSeq: number,
  count: number,
  idPrefix: string,
  source: string | undefined,
  nowMs = Date.now(),
): IngestRequest {
  const events: TelemetryEvent[] = [];
  for (let i = 0; i < count; i++) events.push(benchEvent(firstSeq + i, idPrefix, source, nowMs));
  return { events, sent_at: new Date(nowMs).toISOString() };
}

export interface BacklogResult {
  messages: number;
  seconds: number;
  bytes: number;
  payloadBytes: number;
}

/**
 * Produces `total` event messages into `topic`: batches of `batchSize` messages, `parallel`
 * sends in flight, acks -1 (every in-sync replica), as the gateway's producer sends them.
 */
export async function produceBacklog(
  kafka: Kafka,
  topic: string,
  keyId: string,
  total: number,
  opts: { batchSize: number; parallel: number; log: (line: string) => void },
): Promise<BacklogResult> {
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  const started = performance.now();
  let next = 0;
  let bytes = 0;
  let payloadBytes = 0;
  let lastLog = started;
  try {
    const worker = async (): Promise<void> => {
      while (next < total) {
        const first = next;
        const count = Math.min(opts.batchSize, total - first);
        next += count;
        const now = Date.now();
        const req = benchRequest(first, count, 'b', undefined, now);
        const messages = toMessages(
          req,
          { keyId, tenantId: DEFAULT_TENANT },
          new Date(now).toISOString(),
          LIMITS.maxEventBytes,
        );
        for (const m of messages) bytes += Buffer.byteLength(m.value as string);
        if (first === 0) payloadBytes = Buffer.byteLength(JSON.stringify(req.events[0]!.payload));
        await producer.send({ topic, messages, acks: -1, timeout: 30_000 });
        if (performance.now() - lastLog > 5000) {
          lastLog = performance.now();
          opts.log(`backlog: ${next.toLocaleString('en-US')} / ${total.toLocaleString('en-US')} messages`);
        }
      }
    };
    await Promise.all(Array.from({ length: opts.parallel }, () => worker()));
  } finally {
    await producer.disconnect();
  }
  return { messages: total, seconds: (performance.now() - started) / 1000, bytes, payloadBytes };
}
