import type { ProducerMessage } from './kafka-types.js';
import { Gauge, type Registry } from 'prom-client';
import { AppError, OverloadedError } from './errors.js';

/** Where messages go; resolves only once Kafka acknowledged them. */
export interface Publisher {
  send(topic: string, messages: ProducerMessage[]): Promise<void>;
}

/** A Publisher whose senders can be told apart, so no one sender takes all the room in flight. */
export interface FairPublisher extends Publisher {
  send(topic: string, messages: ProducerMessage[], owner?: string): Promise<void>;
}

interface Pending {
  messages: ProducerMessage[];
  resolve(): void;
  reject(err: unknown): void;
}

export interface BatchingOptions {
  /** How long the first message of a batch waits for others (kafkajs batches nothing itself). */
  lingerMs: number;
  /** A batch is sent at once when it reaches this many messages. */
  maxBatchMessages: number;
  /**
   * A batch is sent at once before its messages add up to more than this many bytes, and
   * one caller's messages beyond it are split over several requests: keep it below the
   * broker's max.message.bytes (a partition's share of a request can never exceed it).
   */
  maxBatchBytes?: number;
  /** Above this many messages waiting for an ack, send() fails with OverloadedError. */
  maxInFlightMessages: number;
  /**
   * Above this many bytes of messages waiting for an ack (messageBytes: keys, values,
   * headers), send() fails with OverloadedError: what stays alive until Kafka answers is
   * bounded by size too, whatever the messages weigh.
   */
  maxInFlightBytes?: number;
  /** The gauge of those bytes (each service names its own); none when absent. */
  inFlightBytesMetric?: { name: string; help: string };
  /** Above this many of one owner's messages waiting (send's `owner`), its send() fails with OverloadedError. */
  maxInFlightPerOwner?: number;
  registry: Registry;
  /** The gauge of messages waiting for an ack (each service names its own). */
  inFlightMetric: { name: string; help: string };
}

const REFUSALS = new Set<string>(['KAFKA_MESSAGE_TOO_LARGE', 'KAFKA_REJECTED']);

/**
 * Gathers the messages of concurrent senders (the gateway's requests, the runner's
 * checks) for up to `lingerMs` and sends them as one produce request. Each caller's
 * promise settles with its batch: resolved when Kafka acknowledged the batch, rejected
 * when it did not. Memory is bounded by `maxInFlightMessages` and `maxInFlightBytes`.
 */
export class BatchingPublisher implements FairPublisher {
  private readonly queues = new Map<
    string,
    { pending: Pending[]; count: number; bytes: number; timer: NodeJS.Timeout | undefined }
  >();
  private inFlight = 0;
  private inFlightByteCount = 0;
  private readonly byOwner = new Map<string, number>();
  private readonly maxBatchBytes: number;
  private readonly gauge: Gauge;
  private readonly bytesGauge: Gauge | undefined;
  private readonly maxInFlightBytes: number;

  constructor(
    private readonly target: Publisher,
    private readonly opts: BatchingOptions,
  ) {
    this.gauge = new Gauge({ ...opts.inFlightMetric, registers: [opts.registry] });
    this.maxBatchBytes = opts.maxBatchBytes ?? Infinity;
    this.maxInFlightBytes = opts.maxInFlightBytes ?? Infinity;
    this.bytesGauge = opts.inFlightBytesMetric
      ? new Gauge({ ...opts.inFlightBytesMetric, registers: [opts.registry] })
      : undefined;
  }

  get inFlightMessages(): number {
    return this.inFlight;
  }

  /** The messageBytes of every message waiting for an ack. */
  get inFlightBytes(): number {
    return this.inFlightByteCount;
  }

  send(topic: string, messages: ProducerMessage[], owner?: string): Promise<void> {
    if (this.inFlight + messages.length > this.opts.maxInFlightMessages) {
      return Promise.reject(new OverloadedError());
    }
    const owned = owner === undefined ? 0 : (this.byOwner.get(owner) ?? 0);
    if (owner !== undefined && owned + messages.length > (this.opts.maxInFlightPerOwner ?? Infinity)) {
      return Promise.reject(new OverloadedError());
    }
    const chunks = this.chunks(messages);
    let bytes = 0;
    for (const c of chunks) bytes += c.bytes;
    if (this.inFlightByteCount + bytes > this.maxInFlightBytes) return Promise.reject(new OverloadedError());
    this.inFlight += messages.length;
    this.inFlightByteCount += bytes;
    if (owner !== undefined) this.byOwner.set(owner, owned + messages.length);
    this.gauge.set(this.inFlight);
    this.bytesGauge?.set(this.inFlightByteCount);
    // Every chunk settles before the caller hears (and before its room is given back).
    const done = Promise.allSettled(chunks.map((chunk) => this.enqueue(topic, chunk))).then((rs) => {
      const failed = rs.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    });
    return done.finally(() => {
      this.inFlight -= messages.length;
      this.inFlightByteCount -= bytes;
      this.bytesGauge?.set(this.inFlightByteCount);
      if (owner !== undefined) {
        const left = (this.byOwner.get(owner) ?? 0) - messages.length;
        if (left > 0) this.byOwner.set(owner, left);
        else this.byOwner.delete(owner);
      }
      this.gauge.set(this.inFlight);
    });
  }

  /** `messages` in runs of at most maxBatchBytes (a message larger than that alone). */
  private chunks(messages: ProducerMessage[]): { messages: ProducerMessage[]; bytes: number }[] {
    const max = this.maxBatchBytes;
    const out: { messages: ProducerMessage[]; bytes: number }[] = [];
    let current: { messages: ProducerMessage[]; bytes: number } = { messages: [], bytes: 0 };
    for (const m of messages) {
      const size = messageBytes(m);
      if (current.messages.length > 0 && current.bytes + size > max) {
        out.push(current);
        current = { messages: [], bytes: 0 };
      }
      current.messages.push(m);
      current.bytes += size;
    }
    if (current.messages.length > 0) out.push(current);
    return out;
  }

  private enqueue(topic: string, chunk: { messages: ProducerMessage[]; bytes: number }): Promise<void> {
    let q = this.queues.get(topic);
    if (!q) {
      q = { pending: [], count: 0, bytes: 0, timer: undefined };
      this.queues.set(topic, q);
    }
    // What is waiting goes first if this chunk would take the batch over its byte cap.
    if (q.pending.length > 0 && q.bytes + chunk.bytes > this.maxBatchBytes) this.flush(topic);
    const queue = q;
    const done = new Promise<void>((resolve, reject) =>
      queue.pending.push({ messages: chunk.messages, resolve, reject }),
    );
    q.count += chunk.messages.length;
    q.bytes += chunk.bytes;
    if (q.count >= this.opts.maxBatchMessages || q.bytes >= this.maxBatchBytes || this.opts.lingerMs === 0) {
      this.flush(topic);
    } else q.timer ??= setTimeout(() => this.flush(topic), this.opts.lingerMs);
    return done;
  }

  private flush(topic: string): void {
    const q = this.queues.get(topic);
    if (!q || q.pending.length === 0) return;
    clearTimeout(q.timer);
    q.timer = undefined;
    const batch = q.pending;
    q.pending = [];
    q.count = 0;
    q.bytes = 0;
    const messages = batch.length === 1 ? batch[0]!.messages : batch.flatMap((p) => p.messages);
    this.target.send(topic, messages).then(
      () => batch.forEach((p) => p.resolve()),
      (err: unknown) => {
        // A refusal of the messages themselves (too large, invalid) would fail every
        // caller of the batch: each caller's messages are sent again on their own, so
        // only the one whose messages are refused gets the error.
        if (batch.length > 1 && err instanceof AppError && REFUSALS.has(err.code)) {
          for (const p of batch) {
            this.target.send(topic, p.messages).then(
              () => p.resolve(),
              (e: unknown) => p.reject(e),
            );
          }
        } else {
          batch.forEach((p) => p.reject(err));
        }
      },
    );
  }
}

/** About what a message takes in a record batch: key, value, headers and per-record overhead. */
export function messageBytes(m: ProducerMessage): number {
  const len = (v: unknown): number =>
    v == null ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : Buffer.isBuffer(v) ? v.length : 0;
  let bytes = 32 + len(m.key) + len(m.value);
  for (const [k, v] of Object.entries(m.headers ?? {})) {
    bytes += 8 + Buffer.byteLength(k) + (Array.isArray(v) ? v.reduce((n: number, x) => n + len(x), 0) : len(v));
  }
  return bytes;
}
