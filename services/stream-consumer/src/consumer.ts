import type { Consumer, EachBatchPayload, Kafka, KafkaMessage, Message } from 'kafkajs';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Validators } from '@telemetry/contract';
import type { Component, Logger } from '@telemetry/runtime';
import type { BatchWriter } from './batch-writer.js';
import { decodeCheck, decodeEvent, type Decoded } from './rows.js';

export interface DeadLetterPublisher {
  send(topic: string, messages: Message[]): Promise<void>;
}

export interface ConsumerDeps {
  kafka: Kafka;
  writer: BatchWriter;
  deadLetters: DeadLetterPublisher;
  validators: Validators;
  logger: Logger;
  registry: Registry;
  groupId: string;
  eventsTopic: string;
  checksTopic: string;
  deadLetterTopic: string;
  eventsTable: string;
  checksTable: string;
  maxMessageBytes: number;
  partitionsConcurrently: number;
  sessionTimeoutMs: number;
}

/**
 * Reads the events and check-results topics as one consumer group and writes them to
 * ClickHouse through the batch writer. Offsets are committed only after the rows of
 * every message up to them are inserted (or the message was dead-lettered), so a
 * crash at any point re-delivers rather than loses; duplicates are removed on read.
 */
export class KafkaToClickHouse implements Component {
  readonly name = 'kafka-consumer';
  private readonly consumer: Consumer;
  private running = false;
  private readonly deadLettered: Counter<'topic' | 'reason'>;
  private readonly lag: Gauge<'topic' | 'partition'>;
  private readonly messages: Counter<'topic'>;

  constructor(private readonly deps: ConsumerDeps) {
    this.consumer = deps.kafka.consumer({
      groupId: deps.groupId,
      sessionTimeout: deps.sessionTimeoutMs,
      heartbeatInterval: 3000,
      maxBytesPerPartition: 2 * 1024 * 1024,
      allowAutoTopicCreation: false,
    });
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
    this.consumer.on(this.consumer.events.CRASH, (e) => {
      deps.logger.error('consumer crashed', { err: String(e.payload.error), restart: e.payload.restart });
      if (!e.payload.restart) this.running = false;
    });
  }

  async start(): Promise<void> {
    await this.consumer.connect();
    // NOTE: fromBeginning matters for a new group only: it must read what was
    // acknowledged before it first joined. Existing groups resume from their commits.
    await this.consumer.subscribe({ topics: [this.deps.eventsTopic, this.deps.checksTopic], fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.deps.partitionsConcurrently,
      eachBatch: (payload) => this.eachBatch(payload),
    });
    this.running = true;
  }

  health(): boolean {
    return this.running;
  }

  async stop(): Promise<void> {
    // Flush buffered rows now instead of waiting for their age, then let kafkajs
    // finish the running batches (they commit after their insert) and leave the group.
    this.deps.writer.drain();
    await this.consumer.disconnect();
    this.running = false;
  }

  private async eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    if (batch.messages.length === 0) return;
    const { topic, partition } = batch;
    this.messages.inc({ topic }, batch.messages.length);
    this.lag.set({ topic, partition: String(partition) }, Number(batch.offsetLag()));
    const isEvents = topic === this.deps.eventsTopic;
    const rows: object[] = [];
    const dead: Message[] = [];
    for (const m of batch.messages) {
      const d = this.decode(isEvents, m);
      if (d.ok) rows.push(d.row);
      else dead.push(this.deadLetter(topic, partition, m, d.reason));
    }
    // Heartbeat while waiting on ClickHouse so a slow insert does not cost us the partitions.
    const beat = setInterval(() => payload.heartbeat().catch(() => undefined), 3000);
    try {
      if (dead.length > 0) {
        await this.deps.deadLetters.send(this.deps.deadLetterTopic, dead);
        for (const m of dead) this.deadLettered.inc({ topic, reason: m.headers?.['x-dead-letter-kind'] as string });
        this.deps.logger.warn('messages dead-lettered', { topic, partition, count: dead.length });
      }
      await this.deps.writer.write(isEvents ? this.deps.eventsTable : this.deps.checksTable, rows);
    } finally {
      clearInterval(beat);
    }
    if (!payload.isRunning() || payload.isStale()) return; // partition revoked meanwhile: the new owner re-reads (dedup on read)
    const last = batch.lastOffset();
    payload.resolveOffset(last);
    await this.consumer.commitOffsets([{ topic, partition, offset: (BigInt(last) + 1n).toString() }]);
  }

  private decode(isEvents: boolean, m: KafkaMessage): Decoded<object> {
    if (m.value !== null && m.value.length > this.deps.maxMessageBytes) {
      return { ok: false, reason: `too large: ${m.value.length} bytes` };
    }
    return isEvents ? decodeEvent(this.deps.validators, m.value) : decodeCheck(this.deps.validators, m.value);
  }

  private deadLetter(topic: string, partition: number, m: KafkaMessage, reason: string): Message {
    const kind = reason.startsWith('not JSON') ? 'not_json' : reason.startsWith('too large') ? 'too_large' : 'invalid';
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
