/**
 * A per-partition batcher, with no Kafka in it: messages are queued per partition as they
 * arrive; a partition whose previous batch is finished gets everything queued for it as
 * its next batch; at most `concurrency` partitions are in hand at once, served in turn
 * (a partition handed a batch goes to the back of the line); the bytes queued are
 * bounded (it asks its reader to pause past the bound, and to resume below half of it);
 * and a new generation (a rebalance, a crash, a stop) drops what was queued. The
 * @platformatic/kafka group member (platformatic-group-consumer.ts) feeds it from its
 * message stream.
 */

export interface PartitionBatcherOptions<M> {
  /** Partitions handled at once. */
  concurrency: number;
  /** Past this many bytes queued, reading pauses (and resumes below half of it). */
  maxQueuedBytes: number;
  sizeOf(message: M): number;
  /** Handles one batch of one partition, of `generation`. */
  handle(topic: string, partition: number, messages: M[], generation: number): Promise<void>;
  /** Reading must pause (true) or may resume (false). */
  backpressure(on: boolean): void;
}

/** The messages of one partition read and not yet handed over. */
interface Queue<M> {
  topic: string;
  partition: number;
  messages: M[];
  bytes: number;
}

const keyOf = (topic: string, partition: number): string => `${topic}:${partition}`;

export class PartitionBatcher<M> {
  private readonly queues = new Map<string, Queue<M>>();
  /** Partitions with a batch in hand (of any generation): one batch per partition at a time. */
  private readonly busy = new Set<string>();
  private queuedBytes = 0;
  private inHand = 0;
  private readonly inFlight = new Set<Promise<void>>();
  private dispatchScheduled = false;
  private paused = false;
  private pressing = false;
  private current = 0;

  constructor(private readonly opts: PartitionBatcherOptions<M>) {}

  /** The generation batches are handed out for now. */
  get generation(): number {
    return this.current;
  }

  /** Batches in hand. */
  get handling(): number {
    return this.inHand;
  }

  /** Bytes queued and not yet handed over. */
  get queued(): number {
    return this.queuedBytes;
  }

  enqueue(topic: string, partition: number, message: M): void {
    const q = this.queueOf(topic, partition);
    q.messages.push(message);
    this.count(q, this.opts.sizeOf(message));
    this.scheduleDispatch();
  }

  /** Puts messages a handler left unfinished back at the head of their partition's queue. */
  requeue(topic: string, partition: number, rest: M[]): void {
    const q = this.queueOf(topic, partition);
    q.messages = [...rest, ...q.messages];
    this.count(
      q,
      rest.reduce((n, m) => n + this.opts.sizeOf(m), 0),
    );
  }

  /** Drops what was queued; batches in hand belong to an older generation from now on. */
  newGeneration(): void {
    this.current++;
    this.queues.clear();
    this.queuedBytes = 0;
    this.relieve();
  }

  /** Hands out no more batches until resume(). */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.scheduleDispatch();
  }

  /** Resolves when every batch in hand now is finished. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  private queueOf(topic: string, partition: number): Queue<M> {
    const k = keyOf(topic, partition);
    let q = this.queues.get(k);
    if (!q) {
      q = { topic, partition, messages: [], bytes: 0 };
      this.queues.set(k, q);
    }
    return q;
  }

  /** Counts `bytes` more in `q`, asking to pause past the bound. */
  private count(q: Queue<M>, bytes: number): void {
    q.bytes += bytes;
    this.queuedBytes += bytes;
    if (this.queuedBytes > this.opts.maxQueuedBytes && !this.pressing) {
      this.pressing = true;
      this.opts.backpressure(true);
    }
  }

  private scheduleDispatch(): void {
    if (this.dispatchScheduled) return;
    this.dispatchScheduled = true;
    // After the rest of the fetch response is pushed: one batch per partition per fetch.
    setImmediate(() => {
      this.dispatchScheduled = false;
      this.dispatch();
    });
  }

  private dispatch(): void {
    if (this.paused) return;
    for (const [k, q] of [...this.queues]) {
      if (this.inHand >= this.opts.concurrency) break;
      if (this.busy.has(k) || q.messages.length === 0) continue;
      const messages = q.messages;
      q.messages = [];
      this.queuedBytes -= q.bytes;
      q.bytes = 0;
      // To the back of the line.
      this.queues.delete(k);
      this.queues.set(k, q);
      this.busy.add(k);
      this.inHand++;
      const done = this.opts.handle(q.topic, q.partition, messages, this.current).finally(() => {
        this.busy.delete(k);
        this.inHand--;
        this.inFlight.delete(done);
        this.relieve();
        // On the next turn of the event loop: a batch handed back unresolved must not
        // come round again in the same microtask queue (it would starve the loop).
        this.scheduleDispatch();
      });
      this.inFlight.add(done);
    }
    this.relieve();
  }

  /** Lets reading resume once the queues are below half their bound. */
  private relieve(): void {
    if (this.pressing && this.queuedBytes <= this.opts.maxQueuedBytes / 2) {
      this.pressing = false;
      this.opts.backpressure(false);
    }
  }
}
