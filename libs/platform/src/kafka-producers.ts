import { compatibilityPartitioner, Producer as PlatformaticProducer, type MessageToProduce } from '@platformatic/kafka';
import { Partitioners, type ICustomPartitioner, type Kafka, type Producer } from 'kafkajs';
import type { ProducerMessage } from './kafka-types.js';

/** The Kafka client library a producer sends with (KAFKA_CLIENT, docs/configuration.md). */
export type KafkaLibrary = 'kafkajs' | 'platformatic';

/** Picks a partition from a message's key and the topic's partition count. */
export type KeyPartitioner = (key: string, partitions: number) => number;

/**
 * How messages find their partition. `murmur2`: by key, as the Java client (ordering per
 * key). A function: the domain's own mapping of keys (cheaper than murmur2 in JS).
 */
export type PartitionerChoice = 'murmur2' | KeyPartitioner;

/**
 * What AckedProducer needs of a client library: sends acknowledged by all in-sync
 * replicas, with the library's own retries inside `send` (AckedProducer bounds the wait).
 */
export interface ProducerDriver {
  readonly library: KafkaLibrary;
  /** Whether Kafka drops a resent batch it already wrote (the idempotent producer). */
  readonly idempotent: boolean;
  connect(): Promise<void>;
  connected(): boolean;
  send(topic: string, messages: ProducerMessage[], timeoutMs: number): Promise<void>;
  disconnect(): Promise<void>;
}

export interface DriverOptions {
  library: KafkaLibrary;
  /** The kafkajs client (its producer, or for `platformatic` nothing). */
  kafka: Kafka;
  brokers: string[];
  clientId: string;
  partitioner?: PartitionerChoice;
}

export function producerDriver(o: DriverOptions): ProducerDriver {
  return o.library === 'platformatic' ? new PlatformaticDriver(o) : new KafkajsDriver(o.kafka, o.partitioner);
}

function kafkajsPartitioner(p: PartitionerChoice | undefined): ICustomPartitioner {
  if (p === undefined || p === 'murmur2') return Partitioners.DefaultPartitioner;
  return () =>
    ({ partitionMetadata, message }) =>
      p(String(message.key), partitionMetadata.length);
}

/**
 * kafkajs 2.2: not idempotent here, because its idempotent producer is only correct with
 * one request in flight per connection, and it numbers batches as it builds them, so a
 * failed batch puts the ones after it out of sequence.
 */
class KafkajsDriver implements ProducerDriver {
  readonly library = 'kafkajs';
  readonly idempotent = false;
  private readonly producer: Producer;
  private isConnected = false;

  constructor(kafka: Kafka, partitioner: PartitionerChoice | undefined) {
    this.producer = kafka.producer({
      allowAutoTopicCreation: false,
      createPartitioner: kafkajsPartitioner(partitioner),
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 },
    });
    this.producer.on(this.producer.events.DISCONNECT, () => {
      this.isConnected = false;
    });
    this.producer.on(this.producer.events.CONNECT, () => {
      this.isConnected = true;
    });
  }

  async connect(): Promise<void> {
    await this.producer.connect();
    this.isConnected = true;
  }

  connected(): boolean {
    return this.isConnected;
  }

  async send(topic: string, messages: ProducerMessage[], timeoutMs: number): Promise<void> {
    await this.producer.send({ topic, messages, acks: -1, timeout: timeoutMs });
  }

  async disconnect(): Promise<void> {
    await this.producer.disconnect();
    this.isConnected = false;
  }
}

const toBuffer = (v: Buffer | string): Buffer => (typeof v === 'string' ? Buffer.from(v) : v);

/**
 * @platformatic/kafka with its idempotent producer: each batch carries the producer id
 * and a sequence per partition, so a batch resent after a lost acknowledgement is written
 * once; the library then keeps one request in flight per broker, as Kafka requires.
 */
class PlatformaticDriver implements ProducerDriver {
  readonly library = 'platformatic';
  readonly idempotent = true;
  private readonly producer: PlatformaticProducer<Buffer, Buffer, Buffer, Buffer>;
  private readonly keyPartitioner: KeyPartitioner | undefined;

  constructor(o: DriverOptions) {
    this.producer = new PlatformaticProducer({
      clientId: o.clientId,
      bootstrapBrokers: o.brokers,
      idempotent: true,
      acks: -1,
      autocreateTopics: false,
      connectTimeout: 3000,
      timeout: 10_000,
      // Bounded, unlike the library's default for idempotent producers (forever):
      // AckedProducer's deadline answers the caller; a send must not retry past it for long.
      retries: 5,
      retryDelay: 200,
    });
    this.keyPartitioner = typeof o.partitioner === 'function' ? o.partitioner : undefined;
  }

  async connect(): Promise<void> {
    await this.producer.connectToBrokers();
  }

  /**
   * Open until stop(): the library connects again on the next send after a broker went
   * away (a failed send is the caller's 503), so "no connection now" is no reason to
   * take a replica out of service; a producer that sends rarely (dead letters) would
   * otherwise stay unready after every broker restart.
   */
  connected(): boolean {
    return !this.producer.closed;
  }

  async send(topic: string, messages: ProducerMessage[]): Promise<void> {
    const partitions = this.keyPartitioner ? await this.partitionsOf(topic) : 0;
    const out: MessageToProduce<Buffer, Buffer, Buffer, Buffer>[] = messages.map((m) => {
      const msg: MessageToProduce<Buffer, Buffer, Buffer, Buffer> = { topic };
      if (m.value !== null) msg.value = toBuffer(m.value);
      if (m.key !== null && m.key !== undefined) {
        msg.key = toBuffer(m.key);
        if (this.keyPartitioner) msg.partition = this.keyPartitioner(String(m.key), partitions);
      }
      if (m.partition !== undefined) msg.partition = m.partition;
      if (m.headers) {
        const headers = new Map<Buffer, Buffer>();
        for (const [k, v] of Object.entries(m.headers)) {
          if (v === undefined) continue;
          for (const one of Array.isArray(v) ? v : [v]) headers.set(Buffer.from(k), toBuffer(one));
        }
        msg.headers = headers;
      }
      return msg;
    });
    await this.producer.send({ messages: out, partitioner: compatibilityPartitioner });
  }

  /** The topic's partition count, from the library's metadata (fetched when it has none). */
  private async partitionsOf(topic: string): Promise<number> {
    const known = this.producer.currentMetadata?.topics.get(topic)?.partitionsCount;
    if (known !== undefined) return known;
    const metadata = await this.producer.metadata({ topics: [topic] });
    return metadata.topics.get(topic)?.partitionsCount ?? 1;
  }

  async disconnect(): Promise<void> {
    await this.producer.close();
  }
}
