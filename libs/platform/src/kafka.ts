import { Kafka, logLevel, type LogEntry, type Message } from 'kafkajs';
import { Counter, Histogram, type Registry } from 'prom-client';
import { KafkaMessageTooLargeError, KafkaRejectedError, KafkaUnavailableError, type AppError } from './errors.js';
import { producerDriver, type KafkaLibrary, type PartitionerChoice, type ProducerDriver } from './kafka-producers.js';
import { kafkaGroupConsumers, type GroupConsumerFactory } from './kafka-group-consumer.js';
import type { Component } from './lifecycle.js';
import type { Logger } from './logger.js';
import { platformaticGroupConsumers } from './platformatic-group-consumer.js';

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

/** A service's Kafka: its kafkajs client (admin), its producers and its group consumers. */
export interface ServiceKafka {
  kafka: Kafka;
  /** A producer with the library of KAFKA_CLIENT, connecting as this service. */
  producer: (o: Pick<ProducerOptions, 'registry' | 'ackTimeoutMs' | 'partitioner'>) => AckedProducer;
  /** Group members with the library of KAFKA_CLIENT. */
  groupConsumers: GroupConsumerFactory;
}

/** The Kafka of service `role` (its client id is KAFKA_CLIENT_ID-role). */
export function serviceKafka(
  config: { kafkaBrokers: string[]; kafkaClientId: string; kafkaClient: KafkaLibrary },
  role: string,
  logger: Logger,
): ServiceKafka {
  const options = { brokers: config.kafkaBrokers, clientId: `${config.kafkaClientId}-${role}`, logger };
  const kafka = createKafka(options);
  return {
    kafka,
    producer: (o) => new AckedProducer({ kafka, ...options, library: config.kafkaClient, ...o }),
    groupConsumers:
      config.kafkaClient === 'platformatic'
        ? platformaticGroupConsumers(options, logger)
        : kafkaGroupConsumers(kafka, logger),
  };
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
  /** The client library that sends (KAFKA_CLIENT); `platformatic` connects to `brokers` itself. */
  library: KafkaLibrary;
  brokers: string[];
  clientId: string;
  partitioner?: PartitionerChoice;
  registry: Registry;
  logger: Logger;
  /** A send that is not acknowledged within this many ms fails with KafkaUnavailableError. */
  ackTimeoutMs: number;
}

/**
 * A producer whose send() resolves only once every message is acknowledged by all
 * in-sync replicas (acks=-1), within its own deadline: the client library would otherwise
 * keep retrying for a long time while the HTTP client waits. The library is chosen by
 * KAFKA_CLIENT (kafka-producers.ts).
 */
export class AckedProducer implements Component {
  readonly name = 'kafka-producer';
  private readonly driver: ProducerDriver;
  private readonly sent: Counter<'topic' | 'result'>;
  private readonly latency: Histogram<'topic'>;
  private readonly batchSize: Histogram<'topic'>;

  constructor(private readonly opts: ProducerOptions) {
    this.driver = producerDriver(opts);
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
    await this.driver.connect();
    this.opts.logger.info('kafka producer connected', {
      library: this.driver.library,
      idempotent: this.driver.idempotent,
    });
  }

  health(): boolean {
    return this.driver.connected();
  }

  async stop(): Promise<void> {
    await this.driver.disconnect();
  }

  async send(topic: string, messages: Message[]): Promise<void> {
    const end = this.latency.startTimer({ topic });
    this.batchSize.observe({ topic }, messages.length);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new KafkaUnavailableError()), this.opts.ackTimeoutMs);
    });
    try {
      await Promise.race([this.driver.send(topic, messages, this.opts.ackTimeoutMs), deadline]);
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
 * What a failed send means for the caller. Both libraries wrap the broker's error in
 * retry or aggregate errors: kafkajs a KafkaJSProtocolError (`type`, `retriable`) under
 * `cause`; @platformatic/kafka a ProtocolError (`apiId`, `canRetry`) under `errors`. The
 * tree of causes is searched. "Too large" has its own code (413); any other error the
 * library marks non-retriable is KAFKA_REJECTED (500); the rest, our own deadline
 * included, is KAFKA_UNAVAILABLE (503: retry).
 */
export function produceError(err: unknown): AppError {
  if (err instanceof KafkaUnavailableError) return err;
  let rejected: string | undefined;
  const seen = new Set<unknown>();
  const visit = (e: unknown, depth: number): AppError | undefined => {
    if (!e || typeof e !== 'object' || depth > 6 || seen.has(e)) return undefined;
    seen.add(e);
    const { type, apiId, retriable, canRetry, cause, errors } = e as Record<string, unknown>;
    const name = typeof type === 'string' ? type : typeof apiId === 'string' ? apiId : undefined;
    if (name !== undefined) {
      if (TOO_LARGE.has(name)) return new KafkaMessageTooLargeError();
      if (retriable === false || canRetry === false) rejected ??= name;
    }
    for (const next of [cause, ...(Array.isArray(errors) ? (errors as unknown[]) : [])]) {
      const found = visit(next, depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  const found = visit(err, 0);
  if (found) return found;
  if (rejected !== undefined)
    return new KafkaRejectedError(`Kafka refused the events (${rejected}); nothing was accepted`);
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
