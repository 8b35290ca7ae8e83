/**
 * `npm run bench:consume`: how fast the stream consumer (compiled, `tsc -b`, under plain
 * node) drains a Kafka backlog into ClickHouse compared with ClickHouse's own Kafka table
 * engine, how much memory it takes, and how fresh events are (gateway 200 -> visible in
 * ClickHouse) under a steady load.
 *
 *   1. builds, starts the stack, fresh databases, 6-partition topics (every topic the
 *      services subscribe to: events, checks, alerts, monitor changes, dead letters);
 *   2. produces a backlog of BENCH_EVENTS event messages in the gateway's format;
 *   3. reads it with kafkajs and with @platformatic/kafka alone, taking turns, for the
 *      CPU per message of each client library (clients.ts);
 *   4. drains it with the real consumer (child process), counting rows every 250 ms and
 *      sampling its VmRSS: once with BENCH_CONSUMER_ENV (the service's defaults unless
 *      set), once with BENCH_COMPARE_ENV over it (EVENT_DECODER=json unless set: every event
 *      message parsed as before the byte decoder, so each run is its before/after), each into
 *      its own database, with its own consumer group;
 *   5. drains the same messages with a Kafka engine table + materialized views into a copy
 *      of `events`, measured the same way (should it stop a few rows short, its drain ends at
 *      its last row and the missing rows are reported), and compares the tables' contents;
 *   6. sends half our drain rate through the real gateway with the consumer running, and
 *      measures per event: first seen in ClickHouse - gateway 200 (both settings, same rate);
 *   7. writes the bench:consume section of BENCHMARKS.md, prints the tables and every
 *      figure as one JSON object on the last line of stdout; stops everything.
 *
 * The stages live in their own files: options.ts (the settings below), context.ts,
 * backlog.ts, clients.ts, drain.ts (ours and the engine), content-check.ts,
 * freshness-run.ts, targets.ts, report.ts; this file composes them.
 *
 * Environment: BENCH_EVENTS (1000000), BENCH_FRESHNESS_SECONDS (20),
 * BENCH_FRESHNESS_POLL_MS (50), BENCH_FRESHNESS_RATE (events/s; default half our drain
 * rate), BENCH_FRESHNESS_BATCH (events per request at least, 20), BENCH_ENGINE_CONSUMERS
 * (kafka_num_consumers, 1), BENCH_CLIENT_ROUNDS (turns of each Kafka client in the
 * client stage, 3), BENCH_CONSUMER_ENV (consumer settings of the measured
 * configuration, "KEY=VALUE,..."; default none: the service's defaults), BENCH_COMPARE_ENV
 * (what the comparison run changes; default EVENT_DECODER=json; INSERT_FORMAT=JSONEachRow
 * compares the insert formats), BENCH_BASELINE (0:
 * skip the comparison runs), BENCH_WRITE (0: leave BENCHMARKS.md
 * alone), BENCH_PROFILE=1 (the consumers write V8 CPU profiles into the log directory),
 * --smoke (harness/run.ts). Only 127.0.0.1 is used.
 */
import { DEFAULT_TENANT } from '@telemetry/contract';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKafka, createLogger, detectEngine } from '@telemetry/platform';
import { issueKey, migrate } from '@telemetry/store';
import { consumerSpec, FETCH_BYTES_PER_PARTITION } from '@telemetry/stream-consumer';
import { provision } from '../../tools/devstack/provision.js';
import { withRegistry } from '../../tools/devstack/postgres.js';
import { freePort, serviceCommand } from '../../harness/processes.js';
import { fmt } from '../../harness/report.js';
import { type Cleanups, pipelineTopics, serviceEnv } from '../../harness/run.js';
import { adminClickHouse, startChild, topicMessages } from '../common/stack.js';
import { produceBacklog } from './backlog.js';
import { measureClients, type ClientLibrary } from './clients.js';
import { sameRows } from './content-check.js';
import type { Context, Setup } from './context.js';
import { drainEngine, drainOurs } from './drain.js';
import { copyTablesStatements } from './engine.js';
import { freshnessRun } from './freshness-run.js';
import {
  BASELINE,
  bench,
  CLIENT_ROUNDS,
  COMPARE_ENV,
  CONSUMER_ENV,
  consumerUnderTest,
  ENGINE_CONSUMERS,
  EVENTS,
  FRESH_POLL_MS,
  FRESH_RATE,
  FRESH_SECONDS,
  librdkafkaVersion,
  log,
  NOISE_PERCENT,
  PARTITIONS,
  STALL_MS,
} from './options.js';
import { clientsTable, figuresTable, renderSection, targetsTable, type ConsumeReport } from './report.js';
import { judge } from './targets.js';

async function main(cleanups: Cleanups): Promise<ConsumeReport> {
  const run = randomBytes(4).toString('hex');
  const database = `bench_${run}`;
  const logDir = mkdtempSync(join(tmpdir(), 'bench-consume-'));
  const quiet = createLogger({ service: 'bench-consume', level: 'warn', stream: process.stderr });
  const consumer = consumerUnderTest();
  log(
    `events ${fmt(EVENTS)}, freshness ${FRESH_SECONDS} s; consumer at ${consumer.version}; service logs in ${logDir}`,
  );

  const { stack, pids, machine } = await bench.stack(cleanups);
  // Every topic the consumer subscribes to (events, checks, alerts) must exist, or it exits at start.
  const topics = pipelineTopics(`bench_${run}`);
  const provisioned = await provision(stack, { database, topics: topics.list, partitions: PARTITIONS, logger: quiet });
  const ch = adminClickHouse(cleanups, stack, database, 300_000);
  for (const q of copyTablesStatements(database, await detectEngine(ch))) await ch.command({ query: q });
  const tuned: Setup = { label: 'tuned', database, group: `bench-consume-${run}`, env: CONSUMER_ENV };
  const compare: Setup = {
    label: 'compare',
    database: `${database}_compare`,
    group: `bench-consume-c-${run}`,
    env: { ...CONSUMER_ENV, ...COMPARE_ENV },
  };
  if (BASELINE) await migrate(ch, compare.database, quiet);
  const kafka = createKafka({ brokers: stack.kafkaBrokers.split(','), clientId: 'bench-consume', logger: quiet });
  const ctx: Context = { stack, ch, kafka, topics, logDir, pids, cleanups };
  const librdkafka = librdkafkaVersion();

  log(`producing ${fmt(EVENTS)} event messages...`);
  const backlog = await produceBacklog(kafka, topics.topics.events, randomBytes(8).toString('hex'), EVENTS, {
    batchSize: 6000,
    parallel: 4,
    log,
  });
  const inTopic = await topicMessages(kafka, topics.topics.events);
  if (inTopic !== EVENTS) throw new Error(`the topic holds ${inTopic} messages, not ${EVENTS}`);

  // Which Kafka client reads the backlog for less CPU (the consumer's fetch settings).
  const clients = await measureClients(
    {
      kafka,
      brokers: stack.kafkaBrokers.split(','),
      topic: topics.topics.events,
      messages: EVENTS,
      partitionsConcurrently: Number(consumerSpec.partitionsConcurrently.default),
      maxBytesPerPartition: FETCH_BYTES_PER_PARTITION,
      deadlineMs: STALL_MS,
    },
    CLIENT_ROUNDS,
    (process.env.KAFKA_CLIENT ?? consumerSpec.kafkaClient.default) as ClientLibrary,
    `bench-consume-client-${run}`,
    log,
  );

  const oursCompare = BASELINE ? await drainOurs(ctx, compare) : undefined;
  const ours = await drainOurs(ctx, tuned);
  const engine = await drainEngine(ctx, database, run);

  // Same rows?
  const check = await sameRows(ch, database, oursCompare ? compare.database : undefined);

  // Freshness through the real gateway.
  const rate = FRESH_RATE > 0 ? FRESH_RATE : Math.round(ours.rowsPerSecond / 2);
  const key = (
    await withRegistry(provisioned.postgres!.owner, (db) =>
      issueKey(db, { tenantId: DEFAULT_TENANT, kind: 'telemetry', name: 'bench-consume' }),
    )
  ).key;
  const gatewayPort = await freePort();
  const gateway = await startChild(cleanups, {
    name: 'ingest-gateway',
    command: serviceCommand('ingest-gateway', true),
    env: serviceEnv(stack, database, gatewayPort, {
      EVENTS_TOPIC: topics.topics.events,
      DATABASE_URL: provisioned.postgres!.ingest,
    }),
    url: `http://127.0.0.1:${gatewayPort}`,
    logFile: join(logDir, 'gateway.log'),
  });
  const freshness = await freshnessRun(ctx, tuned, gateway, key, rate, run);
  // The same offered load for both configurations (the one the gateway could answer).
  const freshnessCompare = BASELINE
    ? await freshnessRun(ctx, compare, gateway, key, freshness.offeredEventsPerSecond, run)
    : undefined;
  await gateway.stop();

  const targets = judge({ ours, oursCompare, engine, freshness, freshnessCompare, clients, check });
  const phases = [ours.cpu, engine.cpu, freshness.cpu, oursCompare?.cpu, freshnessCompare?.cpu];
  return {
    ...bench.head({ ...machine, librdkafka }),
    consumer,
    config: {
      events: EVENTS,
      partitions: PARTITIONS,
      consumerEnv: CONSUMER_ENV,
      compareEnv: COMPARE_ENV,
      engineConsumers: ENGINE_CONSUMERS,
      clientRounds: CLIENT_ROUNDS,
      freshnessSeconds: FRESH_SECONDS,
      freshnessPollMs: FRESH_POLL_MS,
      freshnessRateFrom: FRESH_RATE > 0 ? 'BENCH_FRESHNESS_RATE' : 'half of our drain rate',
    },
    backlog: {
      messages: backlog.messages,
      seconds: backlog.seconds,
      meanMessageBytes: backlog.bytes / backlog.messages,
      payloadBytes: backlog.payloadBytes,
    },
    clients,
    ours,
    ...(oursCompare ? { oursCompare } : {}),
    engine,
    ratio: ours.rowsPerSecond / engine.rowsPerSecond,
    ...(oursCompare ? { compareRatio: ours.rowsPerSecond / oursCompare.rowsPerSecond } : {}),
    steadyRatio: ours.steadyRowsPerSecond / engine.steadyRowsPerSecond,
    check,
    freshness,
    ...(freshnessCompare ? { freshnessCompare } : {}),
    targets,
    noisy: phases.some((c) => c !== undefined && c.otherPercent > NOISE_PERCENT),
  };
}

await bench.run(main, {
  render: renderSection,
  tables: (report) => `${figuresTable(report)}\n\n${clientsTable(report)}\n\n${targetsTable(report)}`,
  // An engine that stopped a few rows short is reported (the "same rows" target), not a failed run.
  ok: (report) =>
    (report.check.identical || (report.engine.missingRows > 0 && report.check.oursComplete)) &&
    report.freshness.missingEvents === 0,
});
