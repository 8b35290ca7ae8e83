import { Kafka, logLevel, type LogEntry } from 'kafkajs';
import { Counter, Histogram, type Registry } from 'prom-client';
import { KafkaMessageTooLargeError, KafkaRejectedError, KafkaUnavailableError, type AppError } from './errors.js';
import { producerDriver, type KafkaLibrary, type PartitionerChoice, type ProducerDriver } from './kafka-producers.js';
import { kafkajsAdmin, platformaticAdmin } from './kafka-admin.js';
import { kafkaGroupConsumers, type GroupConsumerFactory } from './kafka-group-consumer.js';
import type { KafkaAdmin, ProducerMessage, TopicSpec } from './kafka-types.js';
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

/** A service's Kafka: its admin calls, its producers and its group consumers, all on the library of KAFKA_CLIENT. */
export interface ServiceKafka {
  admin: KafkaAdmin;
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
    admin: config.kafkaClient === 'platformatic' ? platformaticAdmin(options) : kafkajsAdmin(kafka),
    producer: (o) => new AckedProducer({ kafka, ...options, library: config.kafkaClient, ...o }),
    groupConsumers:
      config.kafkaClient === 'platformatic'
        ? platformaticGroupConsumers(options, logger)
        : kafkaGroupConsumers(kafka, logger),
  };
}

/** ensureTopics on a kafkajs client (tools and tests; services use ServiceKafka.admin). */
export function ensureTopics(kafka: Kafka, topics: TopicSpec[], deadlineMs = 90_000): Promise<void> {
  return kafkajsAdmin(kafka).ensureTopics(topics, deadlineMs);
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

  async send(topic: string, messages: ProducerMessage[]): Promise<void> {
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

/** groupLags on a kafkajs client (tools and tests; services use ServiceKafka.admin). */
export function groupLags(kafka: Kafka, groupId: string, topics: string[]): Promise<Map<string, number>> {
  return kafkajsAdmin(kafka).groupLags(groupId, topics);
}
