import {
  Kafka,
  logLevel,
  Partitioners,
  type ICustomPartitioner,
  type LogEntry,
  type Message,
  type Producer,
} from 'kafkajs';
import { Counter, Histogram, type Registry } from 'prom-client';
import { KafkaMessageTooLargeError, KafkaRejectedError, KafkaUnavailableError, type AppError } from './errors.js';
import type { Component } from './lifecycle.js';
import type { Logger } from './logger.js';

export interface KafkaOptions {
  brokers: string[];
  clientId: string;
  logger: Logger;
}

/** A kafkajs client whose own log lines go through our JSON logger (warn and above). */
export function createKafka(opts: KafkaOptions): Kafka {
  const log = opts.logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId: opts.clientId,
    brokers: opts.brokers,
    connectionTimeout: 3000,
    requestTimeout: 10_000,
    retry: { initialRetryTime: 100, retries: 5, maxRetryTime: 2000 },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log: entry }: LogEntry) => {
        const { message, ...rest } = entry;
        const lvl = level <= logLevel.ERROR ? 'error' : level === logLevel.WARN ? 'warn' : 'debug';
        log.log(lvl, String(message), rest);
      },
  });
}

export interface TopicSpec {
  topic: string;
  numPartitions: number;
}

/**
 * Creates missing topics; never changes existing ones (adding partitions is an operator
 * step). Retries for up to `deadlineMs`: a broker that just restarted can time out a
 * CreateTopics request that it then completes, so each try starts by listing topics.
 */
export async function ensureTopics(kafka: Kafka, topics: TopicSpec[], deadlineMs = 90_000): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  const deadline = Date.now() + deadlineMs;
  try {
    for (;;) {
      try {
        const existing = new Set(await admin.listTopics());
        const missing = topics.filter((t) => !existing.has(t.topic));
        if (missing.length > 0) {
          await admin.createTopics({
            waitForLeaders: true,
            timeout: 30_000,
            topics: missing.map((t) => ({ topic: t.topic, numPartitions: t.numPartitions, replicationFactor: -1 })),
          });
        }
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  } finally {
    await admin.disconnect();
  }
}

export interface ProducerOptions {
  kafka: Kafka;
  /**
   * `murmur2`: by key, as the Java client (ordering per key). A function: the domain's own
   * mapping of keys (cheaper than kafkajs's murmur2).
   */
  partitioner?: 'murmur2' | KeyPartitioner;
  registry: Registry;
  logger: Logger;
  /** A send that is not acknowledged within this many ms fails with KafkaUnavailableError. */
  ackTimeoutMs: number;
}

/** Picks a partition from a message's key and the topic's partition count. */
export type KeyPartitioner = (key: string, partitions: number) => number;

function partitionerOf(p: ProducerOptions['partitioner']): ICustomPartitioner {
  if (p === undefined || p === 'murmur2') return Partitioners.DefaultPartitioner;
  return () =>
    ({ partitionMetadata, message }) =>
      p(String(message.key), partitionMetadata.length);
}

/**
 * A producer whose send() resolves only once every message is acknowledged by all
 * in-sync replicas (acks=-1), within its own deadline: kafkajs would otherwise keep
 * retrying for a long time while the HTTP client waits.
 */
export class AckedProducer implements Component {
  readonly name = 'kafka-producer';
  private readonly producer: Producer;
  private connected = false;
  private readonly sent: Counter<'topic' | 'result'>;
  private readonly latency: Histogram<'topic'>;
  private readonly batchSize: Histogram<'topic'>;

  constructor(private readonly opts: ProducerOptions) {
    this.producer = opts.kafka.producer({
      allowAutoTopicCreation: false,
      createPartitioner: partitionerOf(opts.partitioner),
      // NOTE: kafkajs retries inside send(); our deadline (ackTimeoutMs) bounds the wait.
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 },
    });
    this.producer.on(this.producer.events.DISCONNECT, () => {
      this.connected = false;
    });
    this.producer.on(this.producer.events.CONNECT, () => {
      this.connected = true;
    });
    this.sent = new Counter({
      name: 'kafka_produced_messages_total',
      help: 'Messages handed to Kafka, by topic and result (acked, failed)',
      labelNames: ['topic', 'result'],
      registers: [opts.registry],
    });
    this.latency = new Histogram({
      name: 'kafka_produce_duration_seconds',
      help: 'Time from send to acknowledgement of one produce request',
      labelNames: ['topic'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [opts.registry],
    });
    this.batchSize = new Histogram({
      name: 'kafka_produce_batch_messages',
      help: 'Messages per produce request',
      labelNames: ['topic'],
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
      registers: [opts.registry],
    });
  }

  async start(): Promise<void> {
    await this.producer.connect();
    this.connected = true;
  }

  health(): boolean {
    return this.connected;
  }

  async stop(): Promise<void> {
    await this.producer.disconnect();
    this.connected = false;
  }

  async send(topic: string, messages: Message[]): Promise<void> {
    const end = this.latency.startTimer({ topic });
    this.batchSize.observe({ topic }, messages.length);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new KafkaUnavailableError()), this.opts.ackTimeoutMs);
    });
    try {
      await Promise.race([
        this.producer.send({ topic, messages, acks: -1, timeout: this.opts.ackTimeoutMs }),
        deadline,
      ]);
      this.sent.inc({ topic, result: 'acked' }, messages.length);
      end();
    } catch (err) {
      this.sent.inc({ topic, result: 'failed' }, messages.length);
      this.opts.logger.warn('produce failed', { topic, messages: messages.length, err: String(err) });
      throw produceError(err);
    } finally {
      clearTimeout(timer);
    }
  }
}

const TOO_LARGE = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);

/**
 * What a failed send means for the caller. kafkajs wraps the broker's error (a
 * KafkaJSProtocolError with a `type` and `retriable`) in retry errors, so the chain
 * of causes is searched. "Too large" has its own code (413); any other error kafkajs
 * marks non-retriable is KAFKA_REJECTED (500); the rest, our own deadline included,
 * is KAFKA_UNAVAILABLE (503: retry).
 */
export function produceError(err: unknown): AppError {
  if (err instanceof KafkaUnavailableError) return err;
  for (let e: unknown = err, depth = 0; e && depth < 6; depth++) {
    const { type, retriable, cause } = e as { type?: unknown; retriable?: unknown; cause?: unknown };
    if (typeof type === 'string') {
      if (TOO_LARGE.has(type)) return new KafkaMessageTooLargeError();
      if (retriable === false)
        return new KafkaRejectedError(`Kafka refused the events (${type}); nothing was accepted`);
    }
    e = cause;
  }
  return new KafkaUnavailableError();
}

/**
 * Per topic, the messages consumer group `groupId` has not committed: per partition, the
 * high watermark minus the committed offset (the low watermark when none is committed),
 * summed. A group that commits only after writing (the stream consumer) thereby counts
 * what is read but not yet written too. One admin connection for all the topics.
 */
export async function groupLags(kafka: Kafka, groupId: string, topics: string[]): Promise<Map<string, number>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [ends, committed] = await Promise.all([
      Promise.all(topics.map((t) => admin.fetchTopicOffsets(t))),
      admin.fetchOffsets({ groupId, topics }),
    ]);
    return new Map(
      topics.map((topic, i) => {
        const parts = committed.find((c) => c.topic === topic)?.partitions ?? [];
        const done = new Map(parts.map((p) => [p.partition, Number(p.offset)]));
        let lag = 0;
        for (const p of ends[i]!) {
          const at = done.get(p.partition) ?? -1;
          lag += Math.max(0, Number(p.high) - (at >= 0 ? at : Number(p.low)));
        }
        return [topic, lag];
      }),
    );
  } finally {
    await admin.disconnect();
  }
}
