import type { KafkaMessage, Message } from 'kafkajs';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Validators } from '@telemetry/contract';
import { OnGroupConsumer, retryDelayMs } from '@telemetry/platform';
import type { GroupBatch, GroupConsumer, GroupConsumerFactory, Logger } from '@telemetry/platform';
import type { BatchWriter } from './batch-writer.js';
import {
  decodeAlert,
  decodeCheck,
  decodeEvent,
  decodeWebhookDelivery,
  type Decoded,
  type EventRow,
} from '@telemetry/store';

/** At most this much is fetched from one partition per request (bench:consume reads with it too). */
export const FETCH_BYTES_PER_PARTITION = 2 * 1024 * 1024;

/** How long a batch waits for its table's room before it is handed back to be read again. */
export const ROOM_WAIT_MS = 1000;

export interface DeadLetterPublisher {
  send(topic: string, messages: Message[]): Promise<void>;
}

/** What the consumer needs of the batch writer (a fake in unit tests). */
export type RowWriter = Pick<BatchWriter, 'write' | 'waitForRoom' | 'pendingRowsOf' | 'drain'>;

export interface ConsumerDeps {
  /** Builds the group member (serviceKafka(...).groupConsumers in production: KAFKA_CLIENT picks the library). */
  consumers: GroupConsumerFactory;
  writer: RowWriter;
  deadLetters: DeadLetterPublisher;
  validators: Validators;
  logger: Logger;
  registry: Registry;
  groupId: string;
  eventsTopic: string;
  checksTopic: string;
  alertsTopic: string;
  webhookDeliveriesTopic: string;
  deadLetterTopic: string;
  eventsTable: string;
  checksTable: string;
  alertsTable: string;
  webhookDeliveriesTable: string;
  maxMessageBytes: number;
  partitionsConcurrently: number;
  sessionTimeoutMs: number;
  /** Rows of one table the writer may hold (buffered or being inserted) before eachBatch waits. */
  maxBufferedRows: number;
  /** Event times with milliseconds (the modern events table, see Engine). */
  modernEvents: boolean;
  /** Gives events whose copies share no time their first copy's (FirstSeen). */
  firstSeen: { resolve(rows: readonly EventRow[]): Promise<void> };
  /** Longest wait between attempts to resolve first-seen times while ClickHouse fails. */
  retryMaxMs: number;
}

interface Route {
  table: string;
  decode: (v: Buffer | null) => Decoded<object>;
  /** Completes the decoded rows before they are written (may ask ClickHouse). */
  prepare?: (rows: object[]) => Promise<void>;
}

/**
 * Reads the events, check-results, alerts and webhook-deliveries topics as one consumer group and writes them to
 * ClickHouse through the batch writer. Offsets are committed only after the rows of
 * every message up to them are inserted (or the message was dead-lettered), so a
 * crash at any point re-delivers rather than loses; duplicates are removed on read.
 */
export class KafkaToClickHouse extends OnGroupConsumer {
  readonly name = 'kafka-consumer';
  protected readonly consumer: GroupConsumer;
  private stopping = false;
  /** Per partition (`topic:partition`): the insert-then-commit step of its last batch. */
  private readonly chains = new Map<string, Promise<void>>();
  /** The message each row in the writer came from (rows ClickHouse rejects are dead-lettered as it). */
  private readonly origins = new WeakMap<object, { topic: string; partition: number; message: KafkaMessage }>();
  /** Offsets whose rows are all inserted, not yet committed (newest per partition). */
  private readonly committable = new Map<string, { topic: string; partition: number; offset: string }>();
  private committing: Promise<void> | undefined;
  private commitAgain = false;
  private readonly deadLettered: Counter<'topic' | 'reason'>;
  private readonly lag: Gauge<'topic' | 'partition'>;
  private readonly messages: Counter<'topic'>;
  private readonly prepareRetries: Counter<'topic'>;
  /** Each topic read, with its table and its decoder. */
  private readonly routes: Map<string, Route>;

  constructor(private readonly deps: ConsumerDeps) {
    super();
    const v = deps.validators;
    this.routes = new Map<string, Route>([
      [
        deps.eventsTopic,
        {
          table: deps.eventsTable,
          decode: (b) => decodeEvent(v, b, deps.modernEvents),
          prepare: (rows) => deps.firstSeen.resolve(rows as EventRow[]),
        },
      ],
      [deps.checksTopic, { table: deps.checksTable, decode: (b) => decodeCheck(v, b) }],
      [deps.alertsTopic, { table: deps.alertsTable, decode: (b) => decodeAlert(v, b) }],
      [deps.webhookDeliveriesTopic, { table: deps.webhookDeliveriesTable, decode: (b) => decodeWebhookDelivery(v, b) }],
    ]);
    const registers = [deps.registry];
    this.deadLettered = new Counter({
      name: 'consumer_dead_lettered_total',
      help: 'Messages sent to the dead-letter topic',
      labelNames: ['topic', 'reason'],
      registers,
    });
    this.lag = new Gauge({
      name: 'consumer_partition_lag_messages',
      help: 'Messages behind the high watermark, per partition, at the last batch',
      labelNames: ['topic', 'partition'],
      registers,
    });
    this.messages = new Counter({
      name: 'consumer_messages_total',
      help: 'Messages consumed',
      labelNames: ['topic'],
      registers,
    });
    this.prepareRetries = new Counter({
      name: 'consumer_prepare_retries_total',
      help: 'Batches whose rows could not be prepared (first-seen look-ups in ClickHouse), retried',
      labelNames: ['topic'],
      registers,
    });
    this.consumer = deps.consumers({
      name: 'kafka-consumer-group',
      groupId: deps.groupId,
      // NOTE: fromBeginning matters for a new group only: it must read what was
      // acknowledged before it first joined. Existing groups resume from their commits.
      topics: [...this.routes.keys()],
      fromBeginning: true,
      consumer: {
        sessionTimeout: deps.sessionTimeoutMs,
        heartbeatInterval: 3000,
        maxBytesPerPartition: FETCH_BYTES_PER_PARTITION,
        allowAutoTopicCreation: false,
      },
      manualCommit: true,
      partitionsConsumedConcurrently: deps.partitionsConcurrently,
      eachBatch: (batch) => this.eachBatch(batch),
      // eachBatch heartbeats every 3 s even while it waits for the writer: a session
      // without one means the loop is stuck.
      stallAfterMs: deps.sessionTimeoutMs,
      // The partitions may go to another replica: it reports their lag from now on.
      onRevoked: () => this.lag.reset(),
      crashMessage: 'consumer crashed',
    });
  }

  /** Each topic read and the table its rows go to. */
  tables(): { topic: string; table: string }[] {
    return [...this.routes].map(([topic, r]) => ({ topic, table: r.table }));
  }

  async stop(): Promise<void> {
    // Stop fetching, flush what the writer holds, wait for those inserts and the
    // commits that follow them (we are still a group member), then leave the group.
    this.stopping = true;
    this.consumer.pause();
    this.deps.writer.drain();
    await this.settle();
    await this.consumer.stop();
  }

  /**
   * Decodes a batch, dead-letters what can never be written, hands the rows to the
   * writer and returns without waiting for the insert, so that kafkajs fetches and
   * decodes the next batches while ClickHouse inserts these (fetching, decoding and
   * inserting overlap). A partition's offset becomes committable only once every row
   * up to it is in ClickHouse (chained per partition, in offset order); commits of all
   * partitions go out together, one request at a time (scheduleCommit). The
   * writer holds at most `maxBufferedRows` of each table; past that, eachBatch waits
   * (heartbeating) up to ROOM_WAIT_MS, then hands the batch back unresolved (the group
   * consumer reads it again) so that a table whose inserts keep failing holds its own
   * partitions only, never the handling slots of the other topics'.
   */
  private async eachBatch(payload: GroupBatch): Promise<void> {
    const { batch } = payload;
    if (batch.messages.length === 0 || this.stopping) return;
    const { topic, partition } = batch;
    this.lag.set({ topic, partition: String(partition) }, Number(batch.offsetLag()));
    const route = this.routes.get(topic);
    if (!route) return; // not subscribed to it
    // Bounded memory per table: wait while the writer already holds enough of its rows.
    if (!(await this.roomFor(route.table, payload))) return;
    this.messages.inc({ topic }, batch.messages.length);
    const rows: object[] = [];
    const dead: Message[] = [];
    for (const m of batch.messages) {
      const d = this.decode(route.decode, m);
      if (d.ok) {
        rows.push(d.row);
        this.origins.set(d.row, { topic, partition, message: m });
      } else dead.push(this.deadLetter(topic, partition, m, d.reason));
    }
    const beat = setInterval(() => payload.heartbeat().catch(() => undefined), 3000);
    try {
      if (route.prepare && rows.length > 0) {
        const prepare = route.prepare;
        if (!(await this.untilDone(() => prepare(rows), payload, topic))) return;
      }
      if (dead.length > 0) {
        // Acknowledged by Kafka before the offsets past them can be committed.
        await this.deps.deadLetters.send(this.deps.deadLetterTopic, dead);
        for (const m of dead) this.deadLettered.inc({ topic, reason: m.headers?.['x-dead-letter-kind'] as string });
        this.deps.logger.warn('messages dead-lettered', { topic, partition, count: dead.length });
      }
    } finally {
      clearInterval(beat);
    }
    if (!payload.isRunning() || payload.isStale()) return; // revoked meanwhile: the new owner re-reads
    const inserted = this.deps.writer.write(route.table, rows);
    const last = batch.lastOffset();
    payload.resolveOffset(last);
    const key = `${topic}:${partition}`;
    const previous = this.chains.get(key) ?? Promise.resolve();
    const next = Promise.all([previous, inserted]).then(
      () => {
        // Every row up to `last` is in ClickHouse: its successor may be committed.
        this.committable.set(key, { topic, partition, offset: (BigInt(last) + 1n).toString() });
        this.scheduleCommit();
      },
      () => {
        // Not inserted (the writer stopped): never committed; read again after a restart.
      },
    );
    this.chains.set(key, next);
    void next.finally(() => {
      if (this.chains.get(key) === next) this.chains.delete(key);
    });
  }

  /**
   * Waits (heartbeating) until the writer has room for `table`'s rows; false after
   * ROOM_WAIT_MS without, or once the batch is revoked or the consumer stops.
   */
  private async roomFor(table: string, payload: GroupBatch): Promise<boolean> {
    if (this.deps.writer.pendingRowsOf(table) < this.deps.maxBufferedRows) return true;
    const beat = setInterval(() => payload.heartbeat().catch(() => undefined), 3000);
    try {
      const room = await this.deps.writer.waitForRoom(table, this.deps.maxBufferedRows, ROOM_WAIT_MS);
      return room && !this.stopping && payload.isRunning() && !payload.isStale();
    } finally {
      clearInterval(beat);
    }
  }

  /**
   * Runs `step` until it succeeds, with capped exponential backoff and jitter (the
   * writer's policy); false once the batch is revoked or the consumer stops (the
   * partition's new owner reads it again).
   */
  private async untilDone(step: () => Promise<void>, payload: GroupBatch, topic: string): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        await step();
        return true;
      } catch (err) {
        if (this.stopping || !payload.isRunning() || payload.isStale()) return false;
        this.prepareRetries.inc({ topic });
        this.deps.logger.warn('could not prepare rows; retrying', { topic, error: (err as Error).message });
        await new Promise((r) => setTimeout(r, retryDelayMs(attempt, this.deps.retryMaxMs)));
      }
    }
  }

  /**
   * One commit request at a time, carrying the newest committable offset of every
   * partition: commits keep up however small the batches are (one request per batch,
   * chained, fell behind under a steady trickle).
   */
  private scheduleCommit(): void {
    if (this.committing) {
      this.commitAgain = true;
      return;
    }
    const offsets = [...this.committable.values()];
    this.committable.clear();
    if (offsets.length === 0) return;
    this.commitAgain = false;
    this.committing = this.consumer
      .commitOffsets(offsets)
      .catch((err: unknown) => {
        // Not committed: after a restart or rebalance these messages are read again
        // (and their copies hidden on read). Nothing is lost.
        if (!this.stopping) this.deps.logger.warn('commit skipped', { offsets, err: String(err) });
      })
      .finally(() => {
        this.committing = undefined;
        if (this.commitAgain || this.committable.size > 0) this.scheduleCommit();
      });
  }

  /** Resolves when every insert handed to the writer so far is in and committed. */
  private async settle(): Promise<void> {
    await Promise.all(this.chains.values());
    while (this.committing || this.committable.size > 0) {
      if (!this.committing) this.scheduleCommit();
      await this.committing;
    }
  }

  private decode(decode: (v: Buffer | null) => Decoded<object>, m: KafkaMessage): Decoded<object> {
    if (m.value !== null && m.value.length > this.deps.maxMessageBytes) {
      return { ok: false, reason: `too large: ${m.value.length} bytes` };
    }
    return decode(m.value);
  }

  /**
   * The batch writer's RejectedRowsHandler: rows ClickHouse refused for their data go to
   * the dead-letter topic as the messages they came from (kind `rejected`), with
   * ClickHouse's reason, so `npm run dlq:replay` can send them back once fixed.
   */
  readonly deadLetterRows = async (table: string, rows: readonly object[], reason: string): Promise<void> => {
    const dead = rows.map((row) => {
      const o = this.origins.get(row);
      const why = `rejected by ClickHouse (${table}): ${reason}`;
      return o
        ? this.deadLetter(o.topic, o.partition, o.message, why)
        : {
            value: JSON.stringify(row),
            headers: { 'x-dead-letter-reason': why.slice(0, 500), 'x-dead-letter-kind': 'rejected' },
          };
    });
    await this.deps.deadLetters.send(this.deps.deadLetterTopic, dead);
    for (const m of dead)
      this.deadLettered.inc({ topic: String(m.headers['x-source-topic'] ?? table), reason: 'rejected' });
  };

  private deadLetter(
    topic: string,
    partition: number,
    m: KafkaMessage,
    reason: string,
  ): Message & { headers: Record<string, string> } {
    const kind = reason.startsWith('not JSON')
      ? 'not_json'
      : reason.startsWith('too large')
        ? 'too_large'
        : reason.startsWith('rejected')
          ? 'rejected'
          : 'invalid';
    return {
      key: m.key,
      value: m.value,
      headers: {
        'x-dead-letter-reason': reason.slice(0, 500),
        'x-dead-letter-kind': kind,
        'x-source-topic': topic,
        'x-source-partition': String(partition),
        'x-source-offset': m.offset,
        'x-dead-lettered-at': new Date().toISOString(),
      },
    };
  }
}
