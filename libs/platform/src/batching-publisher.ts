import type { Message } from 'kafkajs';
import { Gauge, type Registry } from 'prom-client';
import { AppError, OverloadedError } from './errors.js';

/** Where messages go; resolves only once Kafka acknowledged them. */
export interface Publisher {
  send(topic: string, messages: Message[]): Promise<void>;
}

interface Pending {
  messages: Message[];
  resolve(): void;
  reject(err: unknown): void;
}

export interface BatchingOptions {
  /** How long the first message of a batch waits for others (kafkajs batches nothing itself). */
  lingerMs: number;
  /** A batch is sent at once when it reaches this many messages. */
  maxBatchMessages: number;
  /** Above this many messages waiting for an ack, send() fails with OverloadedError. */
  maxInFlightMessages: number;
  registry: Registry;
  /** The gauge of messages waiting for an ack (each service names its own). */
  inFlightMetric: { name: string; help: string };
}

const REFUSALS = new Set<string>(['KAFKA_MESSAGE_TOO_LARGE', 'KAFKA_REJECTED']);

/**
 * Gathers the messages of concurrent senders (the gateway's requests, the runner's
 * checks) for up to `lingerMs` and sends them as one produce request. Each caller's
 * promise settles with its batch: resolved when Kafka acknowledged the batch, rejected
 * when it did not. Memory is bounded by `maxInFlightMessages`.
 */
export class BatchingPublisher implements Publisher {
  private readonly queues = new Map<string, { pending: Pending[]; count: number; timer: NodeJS.Timeout | undefined }>();
  private inFlight = 0;
  private readonly gauge: Gauge;

  constructor(
    private readonly target: Publisher,
    private readonly opts: BatchingOptions,
  ) {
    this.gauge = new Gauge({ ...opts.inFlightMetric, registers: [opts.registry] });
  }

  get inFlightMessages(): number {
    return this.inFlight;
  }

  send(topic: string, messages: Message[]): Promise<void> {
    if (this.inFlight + messages.length > this.opts.maxInFlightMessages) {
      return Promise.reject(new OverloadedError());
    }
    this.inFlight += messages.length;
    this.gauge.set(this.inFlight);
    let q = this.queues.get(topic);
    if (!q) {
      q = { pending: [], count: 0, timer: undefined };
      this.queues.set(topic, q);
    }
    const done = new Promise<void>((resolve, reject) => q.pending.push({ messages, resolve, reject }));
    q.count += messages.length;
    if (q.count >= this.opts.maxBatchMessages || this.opts.lingerMs === 0) this.flush(topic);
    else q.timer ??= setTimeout(() => this.flush(topic), this.opts.lingerMs);
    return done.finally(() => {
      this.inFlight -= messages.length;
      this.gauge.set(this.inFlight);
    });
  }

  private flush(topic: string): void {
    const q = this.queues.get(topic);
    if (!q || q.pending.length === 0) return;
    clearTimeout(q.timer);
    q.timer = undefined;
    const batch = q.pending;
    q.pending = [];
    q.count = 0;
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
