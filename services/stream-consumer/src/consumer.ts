import { Counter, Gauge, type Registry } from 'prom-client';
import type { Validators } from '@telemetry/contract';
import { DurableConsumer, HEARTBEAT_MS, OnGroupConsumer, retryDelayMs, ROOM_WAIT_MS } from '@telemetry/platform';
import type {
  DurableBatch,
  GroupConsumerFactory,
  Logger,
  ProducerMessage,
  StreamMessage,
  Table,
} from '@telemetry/platform';
import type { BatchWriter } from './batch-writer.js';
import {
  decodeAlert,
  decodeAuditEntry,
  canonicalEventDecoder,
  decodeCheck,
  decodeScreenshot,
  eventDecoder,
  eventsTopicDecoder,
  type EventDecoderKind,
  MAX_SCREENSHOT_MESSAGE_BYTES,
  decodeFailedEvent,
  isFailedEventRow,
  decodeWebhookDelivery,
  type Decoded,
  type Enricher,
  type EventRow,
  type StreamTables,
} from '@telemetry/store';

export interface DeadLetterPublisher {
  send(topic: string, messages: ProducerMessage[]): Promise<void>;
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
  /** Audit entries (docs/access.md), published by the query service. */
  auditTopic: string;
  /** Browser checks' failure screenshots (check_screenshots), published by the check runners. */
  screenshotsTopic: string;
  /** Screenshot rows the writer may hold before the screenshots topic's batches wait (they weigh up to 700 KB each). */
  maxBufferedScreenshots: number;
  deadLetterTopic: string;
  /** The tables rows go to, each typed with its row (streamTables). */
  tables: StreamTables;
  maxMessageBytes: number;
  /** Bytes fetched from one partition per request at most (FETCH_BYTES_PER_PARTITION). */
  fetchBytesPerPartition: number;
  partitionsConcurrently: number;
  sessionTimeoutMs: number;
  /** Rows of one table the writer may hold (buffered or being inserted) before eachBatch waits. */
  maxBufferedRows: number;
  /** Event times with milliseconds (the modern events table, see Engine). */
  modernEvents: boolean;
  /** The enrichment columns' look-ups (GeoIP, user agents: enrichment.ts). */
  enricher: Enricher;
  /** Gives events whose copies share no time their first copy's (FirstSeen). */
  firstSeen: { resolve(rows: readonly EventRow[]): Promise<void> };
  /** Longest wait between attempts to resolve first-seen times while ClickHouse fails. */
  retryMaxMs: number;
  /** EVENT_DECODER: `bytes` reads gateway-form event messages from their bytes (default), `json` parses every one. */
  eventDecoder?: EventDecoderKind;
}

/**
 * Where a row in the writer came from (rows ClickHouse rejects are dead-lettered as their
 * message), kept on the row under symbols: no column reads them (Object.keys and
 * JSON.stringify skip symbols), and unlike a WeakMap of a million rows they cost the
 * collector nothing more than the row.
 */
const ORIGIN_MESSAGE = Symbol('origin message');
const ORIGIN_PARTITION = Symbol('origin partition');
interface WithOrigin {
  [ORIGIN_MESSAGE]?: StreamMessage;
  [ORIGIN_PARTITION]?: { topic: string; partition: number };
}

/** A topic's table and how its messages become rows (made by route(), which types them). */
interface Route {
  table: string;
  decode: (v: Buffer | null) => Decoded<object>;
  /** Completes the decoded rows before they are written (may ask ClickHouse). */
  prepare?: (rows: object[]) => Promise<void>;
  /** Hands rows this route decoded to the writer. */
  write: (writer: RowWriter, rows: object[]) => Promise<void>;
  /** Larger messages are dead-lettered (default: MAX_MESSAGE_BYTES). */
  maxMessageBytes?: number;
  /** Rows of this table the writer may hold before the topic's batches wait (default: MAX_BUFFERED_ROWS). */
  maxBufferedRows?: number;
}

/** A route whose decoder, preparation and table agree on one row type (checked here, once). */
function route<Row extends object>(
  table: Table<Row>,
  decode: (v: Buffer | null) => Decoded<Row>,
  prepare?: (rows: Row[]) => Promise<void>,
  limits: Pick<Route, 'maxMessageBytes' | 'maxBufferedRows'> = {},
): Route {
  // The rows a route is handed back are the ones its own decode made: Row.
  return {
    table,
    decode,
    ...(prepare ? { prepare: (rows) => prepare(rows as Row[]) } : {}),
    write: (writer, rows) => writer.write(table, rows as Row[]),
    ...limits,
  };
}

/**
 * The events topic's route: an event that violated its schema (`schema_failure`, action
 * `route`, docs/event-schemas.md) goes to `failed_events`, never to `events`; the others
 * to `events`, their first-seen times resolved. Once a batch's events rows are written,
 * `consumer_events_enriched_total{is_bot}` counts them (one pass over the batch, two
 * increments: services/stream-consumer/README.md, "Metrics").
 */
function eventsRoute(deps: ConsumerDeps): Route {
  // Messages in the gateway's form are read straight from their bytes (event-bytes.ts);
  // anything else (a schema_failure, another form) takes the general path, which decides.
  // EVENT_DECODER=json sends every message down the general path.
  const fast = canonicalEventDecoder(deps.modernEvents, deps.enricher);
  const decodeEvent = eventDecoder(deps.validators, deps.modernEvents, deps.enricher);
  const v = deps.validators;
  const events = deps.tables.events;
  const failed = deps.tables.failed_events;
  const enriched = new Counter({
    name: 'consumer_events_enriched_total',
    help: 'Events rows written to ClickHouse, by is_bot (1: a crawler or bot by its user agent, docs/enrichment.md)',
    labelNames: ['is_bot'],
    registers: [deps.registry],
  });
  const [humans, bots] = [enriched.labels('0'), enriched.labels('1')];
  const writeEvents = async (writer: RowWriter, rows: EventRow[]): Promise<void> => {
    await writer.write(events, rows);
    let nBots = 0;
    for (const r of rows) nBots += r.is_bot;
    if (rows.length > nBots) humans.inc(rows.length - nBots);
    if (nBots > 0) bots.inc(nBots);
  };
  return {
    table: events,
    decode: eventsTopicDecoder<object>(
      deps.eventDecoder ?? 'bytes',
      fast,
      (b) => decodeFailedEvent(v, b) ?? decodeEvent(b),
    ),
    prepare: (rows) => deps.firstSeen.resolve(rows.filter((r) => !isFailedEventRow(r)) as EventRow[]),
    write: async (writer, rows) => {
      const toFailed = rows.filter(isFailedEventRow);
      if (toFailed.length === 0) return writeEvents(writer, rows as EventRow[]);
      await Promise.all([
        writeEvents(writer, rows.filter((r) => !isFailedEventRow(r)) as EventRow[]),
        writer.write(failed, toFailed),
      ]);
    },
  };
}

/**
 * Reads the events, check-results, alerts, webhook-deliveries, audit and screenshots topics as one consumer group and writes them to
 * ClickHouse through the batch writer. Offsets are committed only after the rows of
 * every message up to them are inserted (or the message was dead-lettered), so a
 * crash at any point re-delivers rather than loses; duplicates are removed on read.
 */
export class KafkaToClickHouse extends OnGroupConsumer {
  readonly name = 'kafka-consumer';
  protected readonly consumer: DurableConsumer;
  private stopping = false;
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
      [deps.eventsTopic, eventsRoute(deps)],
      [deps.checksTopic, route(deps.tables.checks, (b) => decodeCheck(v, b))],
      [deps.alertsTopic, route(deps.tables.alerts, (b) => decodeAlert(v, b))],
      [deps.webhookDeliveriesTopic, route(deps.tables.webhook_deliveries, (b) => decodeWebhookDelivery(v, b))],
      [deps.auditTopic, route(deps.tables.audit_log, (b) => decodeAuditEntry(v, b))],
      // A screenshot message may hold 680 KB of base64, past MAX_MESSAGE_BYTES's default;
      // few of them are held at once (the writer caps their inserts by bytes too).
      [
        deps.screenshotsTopic,
        route(deps.tables.check_screenshots, (b) => decodeScreenshot(v, b), undefined, {
          maxMessageBytes: Math.max(deps.maxMessageBytes, MAX_SCREENSHOT_MESSAGE_BYTES),
          maxBufferedRows: deps.maxBufferedScreenshots,
        }),
      ],
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
    this.consumer = new DurableConsumer(
      deps.consumers,
      {
        name: 'kafka-consumer-group',
        groupId: deps.groupId,
        // NOTE: fromBeginning matters for a new group only: it must read what was
        // acknowledged before it first joined. Existing groups resume from their commits.
        topics: [...this.routes.keys()],
        fromBeginning: true,
        consumer: {
          sessionTimeout: deps.sessionTimeoutMs,
          heartbeatInterval: 3000,
          maxBytesPerPartition: deps.fetchBytesPerPartition,
          allowAutoTopicCreation: false,
        },
        partitionsConsumedConcurrently: deps.partitionsConcurrently,
        eachBatch: (batch) => this.eachBatch(batch),
        // Per topic (one topic, one table), in messages whose rows are not yet inserted.
        // The writer's room per table (maxBufferedRows rows, checked before each batch)
        // is the bound that acts; batches let in just below it overshoot it by up to
        // partitionsConcurrently whole batches, so this backstop is four times it.
        maxPending: 4 * deps.maxBufferedRows,
        // eachBatch heartbeats every 3 s even while it waits for the writer: a session
        // without one means the loop is stuck.
        stallAfterMs: deps.sessionTimeoutMs,
        // The partitions may go to another replica: it reports their lag from now on.
        onRevoked: () => this.lag.reset(),
        crashMessage: 'consumer crashed',
      },
      deps.logger,
    );
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
    await this.consumer.settle();
    await this.consumer.stop();
  }

  /**
   * Decodes a batch, dead-letters what can never be written, hands the rows to the
   * writer and returns without waiting for the insert, so that kafkajs fetches and
   * decodes the next batches while ClickHouse inserts these (fetching, decoding and
   * inserting overlap). The insert is tracked as the batch's durable completion: the
   * platform (DurableConsumer) commits a partition's offset only once every row up to
   * it is in ClickHouse, in offset order, all partitions in one request at a time. The
   * writer holds at most `maxBufferedRows` of each table; past that, eachBatch waits
   * (heartbeating) up to ROOM_WAIT_MS, then hands the batch back unresolved (the group
   * consumer reads it again) so that a table whose inserts keep failing holds its own
   * partitions only, never the handling slots of the other topics'.
   */
  private async eachBatch(batch: DurableBatch): Promise<void> {
    const payload = batch;
    if (batch.messages.length === 0 || this.stopping) return;
    const { topic, partition } = batch;
    this.lag.set({ topic, partition: String(partition) }, Number(batch.offsetLag()));
    const route = this.routes.get(topic);
    if (!route) return; // not subscribed to it
    // Bounded memory per table: wait while the writer already holds enough of its rows.
    if (!(await this.roomFor(route.table, route.maxBufferedRows ?? this.deps.maxBufferedRows, payload))) return;
    this.messages.inc({ topic }, batch.messages.length);
    const rows: object[] = [];
    const dead: ProducerMessage[] = [];
    const origin = { topic, partition };
    for (const m of batch.messages) {
      const d = this.decode(route, m);
      if (d.ok) {
        rows.push(d.row);
        (d.row as WithOrigin)[ORIGIN_MESSAGE] = m;
        (d.row as WithOrigin)[ORIGIN_PARTITION] = origin;
      } else dead.push(this.deadLetter(topic, partition, m, d.reason));
    }
    const beat = setInterval(() => payload.heartbeat().catch(() => undefined), HEARTBEAT_MS);
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
    // Not awaited: the next batches are read while this one is inserted. A failed insert
    // (only when the writer stops) is never committed: read again after a restart.
    payload.track(batch.lastOffset(), route.write(this.deps.writer, rows), batch.messages.length);
  }

  /**
   * Waits (heartbeating) until the writer has room for `table`'s rows; false after
   * ROOM_WAIT_MS without, or once the batch is revoked or the consumer stops.
   */
  private async roomFor(table: string, limit: number, payload: DurableBatch): Promise<boolean> {
    if (this.deps.writer.pendingRowsOf(table) < limit) return true;
    const beat = setInterval(() => payload.heartbeat().catch(() => undefined), HEARTBEAT_MS);
    try {
      const room = await this.deps.writer.waitForRoom(table, limit, ROOM_WAIT_MS);
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
  private async untilDone(step: () => Promise<void>, payload: DurableBatch, topic: string): Promise<boolean> {
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

  private decode(route: Route, m: StreamMessage): Decoded<object> {
    if (m.value !== null && m.value.length > (route.maxMessageBytes ?? this.deps.maxMessageBytes)) {
      return { ok: false, reason: `too large: ${m.value.length} bytes` };
    }
    return route.decode(m.value);
  }

  /**
   * The batch writer's RejectedRowsHandler: rows ClickHouse refused for their data go to
   * the dead-letter topic as the messages they came from (kind `rejected`), with
   * ClickHouse's reason, so `npm run dlq:replay` can send them back once fixed.
   */
  readonly deadLetterRows = async (table: string, rows: readonly object[], reason: string): Promise<void> => {
    const dead = rows.map((row) => {
      const message = (row as WithOrigin)[ORIGIN_MESSAGE];
      const o = (row as WithOrigin)[ORIGIN_PARTITION];
      const why = `rejected by ClickHouse (${table}): ${reason}`;
      return message && o
        ? this.deadLetter(o.topic, o.partition, message, why)
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
    m: StreamMessage,
    reason: string,
  ): ProducerMessage & { headers: Record<string, string> } {
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
