/**
 * `npm run bench:consume`: how fast the stream consumer drains a Kafka backlog into
 * ClickHouse compared with ClickHouse's own Kafka table engine, how much memory it takes,
 * and how fresh events are (gateway 200 -> visible in ClickHouse) under a steady load.
 *
 *   1. starts the stack (tools/devstack), fresh databases, 6-partition topics;
 *   2. produces a backlog of BENCH_EVENTS event messages in the gateway's format;
 *   3. drains it with the real consumer (child process), counting rows every 250 ms and
 *      sampling its VmRSS: once with the service's default settings, once with
 *      BENCH_CONSUMER_ENV (each into its own database, with its own consumer group);
 *   4. drains the same messages with a Kafka engine table + materialized views into a copy
 *      of `events`, measured the same way, and compares the tables' contents;
 *   5. sends half our drain rate through the real gateway with the consumer running, and
 *      measures per event: first seen in ClickHouse - gateway 200 (both settings, same rate);
 *   6. writes the bench:consume section of BENCHMARKS.md, prints the tables, and prints
 *      every figure as one JSON object on the last line of stdout; stops everything.
 *
 * Environment: BENCH_EVENTS (1000000), BENCH_FRESHNESS_SECONDS (20),
 * BENCH_FRESHNESS_POLL_MS (50), BENCH_FRESHNESS_RATE (events/s; default half our drain
 * rate), BENCH_FRESHNESS_BATCH (events per request at least, 20), BENCH_ENGINE_CONSUMERS
 * (kafka_num_consumers, 1), BENCH_CONSUMER_ENV (consumer settings of the measured
 * configuration, "KEY=VALUE,..."; default BATCH_MAX_AGE_MS=100), BENCH_BASELINE (0: skip
 * the runs with the service's default settings), BENCH_WRITE (0: leave BENCHMARKS.md
 * alone), BENCH_PROFILE=1 (the consumers write V8 CPU profiles into the log directory).
 * Only 127.0.0.1 is used.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Kafka } from 'kafkajs';
import {
  createClickHouse,
  createKafka,
  createLogger,
  sqlIdentifier,
  type ClickHouseClient,
  type Logger,
} from '@telemetry/platform';
import { issueKey, migrate } from '@telemetry/store';
import { consumerSpec } from '@telemetry/stream-consumer';
import { provision } from '../tools/devstack/provision.js';
import { freePort, KAFKA_VERSION, startStack, type Stack } from '../tools/devstack/stack.js';
import {
  copyTablesStatements,
  dropStatements,
  ENGINE_ROLLUP,
  ENGINE_TABLE,
  queueTableStatement,
  seedGroup,
  viewsSetupStatements,
} from './consume-engine.js';
import { benchCommand, Cleanups, envNumber, finish, serviceEnv } from './common.js';
import { measureFreshness } from './consume-freshness.js';
import { produceBacklog } from './consume-load.js';
import { childPids, CpuMeter, metricSum, ServiceProcess, type CpuWindow } from './consume-proc.js';
import {
  figuresTable,
  fmt,
  targetsTable,
  renderSection,
  SECTION,
  type ConsumeReport,
  type DrainFigures,
  type FreshnessRun,
  type OursDrain,
  type TargetCheck,
} from './consume-report.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PARTITIONS = 6;
const COUNT_POLL_MS = 250;

function envPairs(name: string, fallback: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (process.env[name] ?? fallback).split(',')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`${name}: expected KEY=VALUE pairs separated by commas, got ${pair}`);
    out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}

const EVENTS = Math.round(envNumber('BENCH_EVENTS', 1_000_000, 1000));
const FRESH_SECONDS = envNumber('BENCH_FRESHNESS_SECONDS', 20, 1);
const FRESH_POLL_MS = Math.round(envNumber('BENCH_FRESHNESS_POLL_MS', 50, 5));
const FRESH_RATE = envNumber('BENCH_FRESHNESS_RATE', 0, 0);
const FRESH_BATCH = Math.round(envNumber('BENCH_FRESHNESS_BATCH', 20, 1));
const ENGINE_CONSUMERS = Math.round(envNumber('BENCH_ENGINE_CONSUMERS', 1, 1));
/** The measured configuration. Why 100 ms: see "What limits ours" in BENCHMARKS.md. */
const CONSUMER_ENV = envPairs('BENCH_CONSUMER_ENV', 'BATCH_MAX_AGE_MS=100');
const BASELINE = process.env.BENCH_BASELINE !== '0' && Object.keys(CONSUMER_ENV).length > 0;
const PROFILE = process.env.BENCH_PROFILE === '1';
const STALL_MS = 120_000;
const NOISE_PERCENT = 25;

const log = (line: string): void => {
  process.stderr.write(`[bench:consume] ${line}\n`);
};
const mb = (kib: number): number => Math.round(kib / 1024);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function librdkafkaVersion(): string {
  try {
    return execFileSync('dpkg-query', ['-W', '-f=${Version}', 'librdkafka1'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/** The commit the consumer's sources are at, and whether they differ from it (read-only git). */
function consumerVersion(): string {
  const git = (args: string[]): string =>
    execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' } }).trim();
  try {
    const commit = git(['rev-parse', '--short', 'HEAD']);
    const changed = git(['diff', '--name-only', 'HEAD', '--', 'services/stream-consumer', 'libs']);
    return changed === ''
      ? `commit ${commit}`
      : `commit ${commit} with uncommitted changes (${changed.split('\n').join(', ')})`;
  } catch {
    return 'unknown commit';
  }
}

/** The consumer's defaults for the settings that shape its batches. */
function consumerDefaults(): Record<string, string> {
  const shown = ['BATCH_MAX_ROWS', 'BATCH_MAX_AGE_MS', 'MAX_BUFFERED_ROWS', 'PARTITIONS_CONSUMED_CONCURRENTLY'];
  const out: Record<string, string> = {};
  for (const s of Object.values(consumerSpec) as { name: string; default: string | undefined }[]) {
    if (shown.includes(s.name) && s.default !== undefined) out[s.name] = s.default;
  }
  return out;
}

async function scalar(ch: ClickHouseClient, query: string): Promise<string> {
  const rs = await ch.query({ query, format: 'TabSeparated' });
  return (await rs.text()).trim();
}

/** Waits until ClickHouse runs no merge (so one run does not pay for the previous one's parts). */
async function mergesSettled(ch: ClickHouseClient, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (Number(await scalar(ch, 'SELECT count() FROM system.merges')) === 0) return;
    await sleep(500);
  }
  log('merges still running after 120 s; going on');
}

interface DrainWatch {
  rows: number;
  seconds: number;
  firstRowsSeconds: number;
  firstRows: number;
  timeline: number[];
}

/** Counts `table` every 250 ms from `start` until it holds `expected` rows. */
async function watchDrain(
  ch: ClickHouseClient,
  table: string,
  expected: number,
  start: number,
  what: string,
  alive: () => void,
): Promise<DrainWatch> {
  let firstRowsSeconds = NaN;
  let firstRows = 0;
  let last = -1;
  let lastChange = performance.now();
  let lastLog = performance.now();
  const timeline: number[] = [];
  for (;;) {
    const t = performance.now();
    alive();
    const rows = Number(await scalar(ch, `SELECT count() FROM ${table}`));
    const elapsed = (performance.now() - start) / 1000;
    while (timeline.length < Math.floor(elapsed)) timeline.push(rows);
    if (rows > 0 && Number.isNaN(firstRowsSeconds)) {
      firstRowsSeconds = elapsed;
      firstRows = rows;
    }
    if (rows >= expected) {
      timeline.push(rows); // the count at the end (after the whole seconds)
      return { rows, seconds: elapsed, firstRowsSeconds, firstRows, timeline };
    }
    if (rows !== last) {
      last = rows;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > STALL_MS) {
      throw new Error(`${what}: no new rows for ${STALL_MS / 1000} s (${rows} of ${expected})`);
    }
    if (performance.now() - lastLog > 5000) {
      lastLog = performance.now();
      log(`${what}: ${fmt(rows)} / ${fmt(expected)} rows after ${fmt(elapsed, 1)} s`);
    }
    const wait = COUNT_POLL_MS - (performance.now() - t);
    if (wait > 0) await sleep(wait);
  }
}

function drainFigures(path: DrainFigures['path'], w: DrainWatch, cpu: CpuWindow): DrainFigures {
  const steadySeconds = w.seconds - w.firstRowsSeconds;
  return {
    path,
    rows: w.rows,
    seconds: w.seconds,
    rowsPerSecond: w.rows / w.seconds,
    firstRowsSeconds: w.firstRowsSeconds,
    steadyRowsPerSecond: steadySeconds > 0 ? (w.rows - w.firstRows) / steadySeconds : NaN,
    cpu,
    timeline: w.timeline,
  };
}

/** Waits until the consumer group is in `state` (with members, for Stable). */
async function groupState(kafka: Kafka, group: string, state: 'Stable' | 'Empty', timeoutMs = 60_000): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const g = (await admin.describeGroups([group])).groups[0];
      if (g?.state === state && (state === 'Empty' || g.members.length > 0)) return;
      await sleep(200);
    }
    throw new Error(`consumer group ${group} did not become ${state} within ${timeoutMs} ms`);
  } finally {
    await admin.disconnect();
  }
}

/** One configuration of our consumer: its own database (same migrations) and consumer group. */
interface Setup {
  label: string;
  database: string;
  group: string;
  env: Record<string, string>;
}

interface Context {
  stack: Stack;
  ch: ClickHouseClient;
  kafka: Kafka;
  topics: { events: string; checks: string; deadLetter: string };
  logDir: string;
  pids: Record<string, number | undefined>;
  cleanups: Cleanups;
}

function startConsumer(ctx: Context, s: Setup, phase: string, port: number, nodeArgs: string[]): ServiceProcess {
  const c = new ServiceProcess({
    name: `stream-consumer (${s.label})`,
    service: 'stream-consumer',
    cwd: ROOT,
    env: serviceEnv(ctx.stack, s.database, port, {
      EVENTS_TOPIC: ctx.topics.events,
      CHECKS_TOPIC: ctx.topics.checks,
      DEAD_LETTER_TOPIC: ctx.topics.deadLetter,
      MIGRATE_ON_START: 'false',
      CONSUMER_GROUP_ID: s.group,
      ...s.env,
    }),
    port,
    logFile: join(ctx.logDir, `consumer-${s.label}-${phase}.log`),
    nodeArgs,
  });
  ctx.cleanups.push(() => c.stop());
  return c;
}

/** Drains the whole backlog with our consumer, from a new group, into `s.database`.events. */
async function drainOurs(ctx: Context, s: Setup): Promise<OursDrain> {
  await mergesSettled(ctx.ch);
  log(`drain: our stream consumer, ${s.label}...`);
  const profileArgs = PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${ctx.logDir}`] : [];
  const port = await freePort();
  const start = performance.now();
  const consumer = startConsumer(ctx, s, 'drain', port, profileArgs);
  const cpu = new CpuMeter({ consumer: consumer.pid, clickhouse: ctx.pids.clickhouse, kafka: ctx.pids.kafka });
  let readySeconds = NaN;
  void consumer.ready().then(
    () => (readySeconds = (performance.now() - start) / 1000),
    () => undefined,
  );
  const watch = await watchDrain(ctx.ch, `${sqlIdentifier(s.database)}.events`, EVENTS, start, s.label, () => {
    if (!consumer.running) throw new Error(`the consumer exited; see ${consumer.spec.logFile}`);
  });
  const cpuWindow = cpu.stop();
  const endMs = performance.now() - consumer.spawnedAt;
  const metrics = await consumer.metrics();
  await sleep(1000);
  const afterKiB = consumer.sample() ?? NaN;
  await consumer.stop();
  await groupState(ctx.kafka, s.group, 'Empty');
  const figures = drainFigures('ours', watch, cpuWindow);
  // Peak RSS per quarter of the drain (first rows to last): a consumer whose memory
  // follows the backlog keeps growing; a bounded one levels off.
  const from = watch.firstRowsSeconds * 1000;
  const quarter = (endMs - from) / 4;
  const quarters = [0, 1, 2, 3].map((i) => consumer.peakKiB(from + i * quarter, from + (i + 1) * quarter));
  const inserts = metricSum(metrics, 'consumer_insert_duration_seconds_count', 'events');
  const insertSeconds = metricSum(metrics, 'consumer_insert_duration_seconds_sum', 'events');
  const drain: OursDrain = {
    ...figures,
    label: s.label,
    env: s.env,
    readySeconds,
    peakRssMB: mb(consumer.peakKiB(0, endMs)),
    rssQuartersMB: quarters.map(mb),
    afterDrainRssMB: mb(afterKiB),
    rssBounded: Math.max(quarters[2]!, quarters[3]!) <= 1.2 * Math.max(quarters[0]!, quarters[1]!),
    inserts,
    meanInsertRows: metricSum(metrics, 'consumer_insert_batch_rows_sum', 'events') / inserts,
    meanInsertMs: (insertSeconds / inserts) * 1000,
    insertBusyShare: insertSeconds / (figures.seconds - figures.firstRowsSeconds + insertSeconds / inserts),
    eventLoopLagP99Ms: metricSum(metrics, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    deadLettered: metricSum(metrics, 'consumer_dead_lettered_total'),
  };
  log(
    `${s.label}: ${fmt(drain.rows)} rows in ${fmt(drain.seconds, 1)} s = ${fmt(drain.rowsPerSecond)} rows/s ` +
      `(steady ${fmt(drain.steadyRowsPerSecond)}); peak RSS ${drain.peakRssMB} MB; CPU ${JSON.stringify(drain.cpu)}; ` +
      `${fmt(inserts)} inserts of ${fmt(drain.meanInsertRows)} rows, ${fmt(drain.meanInsertMs)} ms each`,
  );
  return drain;
}

/** Drains the same backlog with a Kafka engine table and views into the copy of `events`. */
async function drainEngine(ctx: Context, database: string, run: string): Promise<DrainFigures> {
  await mergesSettled(ctx.ch);
  log('drain: the ClickHouse Kafka engine...');
  const group = `bench-consume-engine-${run}`;
  await seedGroup(ctx.kafka, group, ctx.topics.events, 'start');
  ctx.cleanups.push(async () => {
    for (const q of dropStatements(database)) await ctx.ch.command({ query: q }).catch(() => undefined);
  });
  for (const q of viewsSetupStatements(database)) await ctx.ch.command({ query: q });
  const cpu = new CpuMeter({ clickhouse: ctx.pids.clickhouse, kafka: ctx.pids.kafka });
  const start = performance.now();
  await ctx.ch.command({
    query: queueTableStatement({
      database,
      brokers: ctx.stack.kafkaBrokers,
      topic: ctx.topics.events,
      group,
      consumers: ENGINE_CONSUMERS,
    }),
  });
  const table = `${sqlIdentifier(database)}.${ENGINE_TABLE}`;
  const watch = await watchDrain(ctx.ch, table, EVENTS, start, 'engine', () => undefined);
  const engine = drainFigures('engine', watch, cpu.stop());
  for (const q of dropStatements(database)) await ctx.ch.command({ query: q });
  log(
    `engine: ${fmt(engine.rows)} rows in ${fmt(engine.seconds, 1)} s = ${fmt(engine.rowsPerSecond)} rows/s ` +
      `(steady ${fmt(engine.steadyRowsPerSecond)}); CPU ${JSON.stringify(engine.cpu)}`,
  );
  return engine;
}

/** Events through the gateway at `rate` with our consumer (setup `s`) running, no backlog. */
async function freshnessAttempt(
  ctx: Context,
  s: Setup,
  gateway: ServiceProcess,
  accessKey: string,
  rate: number,
  tag: string,
): Promise<FreshnessRun> {
  await mergesSettled(ctx.ch);
  // Messages produced since this group last ran (other runs' load) are not its backlog.
  await seedGroup(ctx.kafka, s.group, ctx.topics.events, 'end');
  const perRequest = Math.max(FRESH_BATCH, Math.ceil(rate / 500)); // at most ~500 requests/s
  log(`freshness (${s.label}): ${fmt(rate)} events/s, ${perRequest} per request, ${FRESH_SECONDS} s...`);
  const consumer = startConsumer(ctx, s, `freshness-${tag}`, await freePort(), []);
  await consumer.ready();
  await groupState(ctx.kafka, s.group, 'Stable');
  const opts = {
    gatewayUrl: gateway.url,
    accessKey,
    ch: ctx.ch,
    database: s.database,
    ratePerSecond: rate,
    eventsPerRequest: perRequest,
    pollMs: FRESH_POLL_MS,
    maxInFlight: 1024,
    settleMs: 30_000,
    log,
  };
  // Warm-up (JIT, connections, the consumer's first fetches), not measured.
  await measureFreshness({ ...opts, source: `warmup-${s.label}-${tag}`, idPrefix: 'w', seconds: 3 });
  const cpu = new CpuMeter({
    consumer: consumer.pid,
    gateway: gateway.pid,
    bench: process.pid,
    clickhouse: ctx.pids.clickhouse,
    kafka: ctx.pids.kafka,
  });
  const from = performance.now() - consumer.spawnedAt;
  const result = await measureFreshness({
    ...opts,
    source: `fresh-${s.label}-${tag}`,
    idPrefix: 'f',
    seconds: FRESH_SECONDS,
  });
  const cpuWindow = cpu.stop();
  const peak = mb(consumer.peakKiB(from));
  const metrics = await consumer.metrics();
  await consumer.stop();
  await groupState(ctx.kafka, s.group, 'Empty');
  // Over the consumer's life here: warm-up and measured load.
  const inserts = metricSum(metrics, 'consumer_insert_duration_seconds_count', 'events');
  const insertRows = metricSum(metrics, 'consumer_insert_batch_rows_sum', 'events');
  log(
    `freshness (${s.label}): p50 ${fmt(result.freshnessMs.p50)} ms, p99 ${fmt(result.freshnessMs.p99)} ms over ` +
      `${fmt(result.seenEvents)} events (${fmt(result.achievedEventsPerSecond)} events/s acked), ` +
      `${fmt(metricSum(metrics, 'consumer_insert_duration_seconds_count', 'events'))} inserts` +
      `${result.gatewayKeptUp ? '' : `; the gateway did not keep up: ${result.overload}`}; CPU ${JSON.stringify(cpuWindow)}`,
  );
  return {
    ...result,
    label: s.label,
    env: s.env,
    consumerPeakRssMB: peak,
    cpu: cpuWindow,
    inserts,
    meanInsertRows: insertRows / inserts,
  };
}

/**
 * A freshness run at `rate`; while the gateway cannot keep up with the rate on this
 * machine (then the 200s say little about when Kafka took the events), again at a rate it
 * showed it can answer: 80% of what it acknowledged, at most half the rate before; three
 * attempts at most. The last attempt is the figure, the first one is kept for the report.
 */
async function freshnessRun(
  ctx: Context,
  s: Setup,
  gateway: ServiceProcess,
  accessKey: string,
  rate: number,
  run: string,
): Promise<FreshnessRun> {
  let attempt = await freshnessAttempt(ctx, s, gateway, accessKey, rate, `${run}-1`);
  const first = attempt;
  for (let n = 2; n <= 3 && !attempt.gatewayKeptUp; n++) {
    const lower = Math.max(
      500,
      Math.round(Math.min(attempt.offeredEventsPerSecond / 2, 0.8 * attempt.achievedEventsPerSecond)),
    );
    log(
      `freshness (${s.label}): the gateway did not keep up at ${fmt(attempt.offeredEventsPerSecond)} events/s; ` +
        `again at ${fmt(lower)}`,
    );
    attempt = await freshnessAttempt(ctx, s, gateway, accessKey, lower, `${run}-${n}`);
  }
  return attempt === first ? first : { ...attempt, overloadedAttempt: first };
}

async function main(cleanups: Cleanups): Promise<ConsumeReport> {
  const run = randomBytes(4).toString('hex');
  const database = `bench_${run}`;
  const topics = {
    events: `bench_${run}.events`,
    checks: `bench_${run}.checks`,
    deadLetter: `bench_${run}.dead-letter`,
  };
  const logDir = mkdtempSync(join(tmpdir(), 'bench-consume-'));
  const logger: Logger = createLogger({ service: 'bench-consume', level: 'warn', stream: process.stderr });
  log(`events ${fmt(EVENTS)}, freshness ${FRESH_SECONDS} s; service logs in ${logDir}`);
  const consumer = { version: consumerVersion(), defaults: consumerDefaults() };
  log(`consumer at ${consumer.version}; defaults ${JSON.stringify(consumer.defaults)}`);

  log('starting Kafka and ClickHouse...');
  const stack = await startStack({ log: (l) => log(`stack: ${l}`) });
  cleanups.push(() => stack.stop());
  await provision(stack, {
    database,
    topics: [topics.events, topics.checks, topics.deadLetter],
    partitions: PARTITIONS,
    logger,
  });
  const ch = createClickHouse({
    url: stack.clickhouseUrl,
    username: 'default',
    password: '',
    database,
    requestTimeoutMs: 300_000,
  });
  cleanups.push(() => ch.close());
  for (const q of copyTablesStatements(database)) await ch.command({ query: q });
  const tuned: Setup = { label: 'tuned', database, group: `bench-consume-${run}`, env: CONSUMER_ENV };
  const defaults: Setup = {
    label: 'defaults',
    database: `${database}_defaults`,
    group: `bench-consume-d-${run}`,
    env: {},
  };
  if (BASELINE) await migrate(ch, defaults.database, logger);
  const kafka = createKafka({ brokers: stack.kafkaBrokers.split(','), clientId: 'bench-consume', logger });
  const ctx: Context = {
    stack,
    ch,
    kafka,
    topics,
    logDir,
    pids: { clickhouse: childPids(process.pid, 'clickhouse-serv')[0], kafka: childPids(process.pid, 'java')[0] },
    cleanups,
  };
  const machine = {
    nproc: cpus().length,
    cpuModel: (cpus()[0]?.model ?? 'unknown').trim(),
    memoryGiB: totalmem() / 1024 ** 3,
    node: process.version,
    kafka: stack.mode === 'local' ? KAFKA_VERSION : `${stack.mode} (${stack.kafkaBrokers})`,
    clickhouse: await scalar(ch, 'SELECT version()'),
    librdkafka: librdkafkaVersion(),
  };

  // ------------------------------------------------------------------ backlog
  log(`producing ${fmt(EVENTS)} event messages...`);
  const backlog = await produceBacklog(kafka, topics.events, randomBytes(8).toString('hex'), EVENTS, {
    batchSize: 6000,
    parallel: 4,
    log,
  });
  log(`backlog: ${fmt(EVENTS)} messages in ${fmt(backlog.seconds, 1)} s (${fmt(EVENTS / backlog.seconds)}/s)`);
  {
    const admin = kafka.admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(topics.events);
    await admin.disconnect();
    const inTopic = offsets.reduce((sum, o) => sum + Number(o.high) - Number(o.low), 0);
    if (inTopic !== EVENTS) throw new Error(`the topic holds ${inTopic} messages, not ${EVENTS}`);
  }

  // ------------------------------------------------------------------ drains
  const oursDefaults = BASELINE ? await drainOurs(ctx, defaults) : undefined;
  const ours = await drainOurs(ctx, tuned);
  const engine = await drainEngine(ctx, database, run);

  // ------------------------------------------------------------------ same rows?
  const db = sqlIdentifier(database);
  const checksumOf = (table: string): Promise<string> =>
    scalar(
      ch,
      `SELECT sum(cityHash64(toString(event_id), key_id, source, category, payload, client_event_id,
        toString(event_time), ifNull(toString(client_ts), ''), ifNull(toString(sent_at), ''), toString(received_at)))
      FROM ${table} FINAL`,
    );
  const rollupOf = async (table: string): Promise<number> =>
    Number(
      await scalar(
        ch,
        `SELECT sum(n) FROM (SELECT uniqExactMerge(events) AS n FROM ${table} GROUP BY minute, source, category)`,
      ),
    );
  const check = {
    oursRows: Number(await scalar(ch, `SELECT count() FROM ${db}.events`)),
    engineRows: Number(await scalar(ch, `SELECT count() FROM ${db}.${ENGINE_TABLE}`)),
    oursDistinct: Number(await scalar(ch, `SELECT uniqExact(event_id) FROM ${db}.events`)),
    engineDistinct: Number(await scalar(ch, `SELECT uniqExact(event_id) FROM ${db}.${ENGINE_TABLE}`)),
    oursChecksum: await checksumOf(`${db}.events`),
    engineChecksum: await checksumOf(`${db}.${ENGINE_TABLE}`),
    defaultsChecksum: oursDefaults ? await checksumOf(`${sqlIdentifier(defaults.database)}.events`) : '',
    oursRollup: await rollupOf(`${db}.events_per_minute`),
    engineRollup: await rollupOf(`${db}.${ENGINE_ROLLUP}`),
    oursInsertedAtZero: Number(await scalar(ch, `SELECT countIf(toUInt32(inserted_at) = 0) FROM ${db}.events`)),
    identical: false,
  };
  check.identical =
    check.oursRows === EVENTS &&
    check.engineRows === EVENTS &&
    check.oursDistinct === EVENTS &&
    check.engineDistinct === EVENTS &&
    check.oursChecksum === check.engineChecksum &&
    (oursDefaults === undefined || check.defaultsChecksum === check.oursChecksum) &&
    check.oursRollup === EVENTS &&
    check.engineRollup === EVENTS;
  log(`content check: ${JSON.stringify(check)}`);

  // ------------------------------------------------------------------ freshness
  const rate = FRESH_RATE > 0 ? FRESH_RATE : Math.round(ours.rowsPerSecond / 2);
  const key = (await issueKey(ch, database, { kind: 'telemetry', name: 'bench-consume' })).key;
  const gatewayPort = await freePort();
  const gateway = new ServiceProcess({
    name: 'ingest-gateway',
    service: 'ingest-gateway',
    cwd: ROOT,
    env: serviceEnv(stack, database, gatewayPort, { EVENTS_TOPIC: topics.events, MIGRATE_ON_START: 'false' }),
    port: gatewayPort,
    logFile: join(logDir, 'gateway.log'),
  });
  cleanups.push(() => gateway.stop());
  await gateway.ready();
  const freshness = await freshnessRun(ctx, tuned, gateway, key, rate, run);
  // The same offered load for both configurations (the one the gateway could answer).
  const freshnessDefaults = BASELINE
    ? await freshnessRun(ctx, defaults, gateway, key, freshness.offeredEventsPerSecond, run)
    : undefined;
  await gateway.stop();

  // ------------------------------------------------------------------ report
  const ratio = ours.rowsPerSecond / engine.rowsPerSecond;
  const envText = (env: Record<string, string>): string =>
    Object.keys(env).length === 0
      ? 'service defaults'
      : Object.entries(env)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ');
  const targets: TargetCheck[] = [];
  const addTargets = (o: OursDrain, f: FreshnessRun): void => {
    const r = o.rowsPerSecond / engine.rowsPerSecond;
    targets.push(
      {
        config: envText(o.env),
        name: 'drain rate, ours / Kafka engine',
        goal: '>= 1.0x, never below 0.7x',
        value: `${fmt(r, 2)}x (${fmt(o.rowsPerSecond)} vs ${fmt(engine.rowsPerSecond)} rows/s)`,
        met: r >= 1 ? 'yes' : r >= 0.7 ? 'floor only (>= 0.7x)' : 'no',
      },
      {
        config: envText(o.env),
        name: 'freshness p99, gateway 200 -> visible',
        goal: '<= 1,000 ms',
        value: `${fmt(f.freshnessMs.p99)} ms (p50 ${fmt(f.freshnessMs.p50)} ms) at ${fmt(f.offeredEventsPerSecond)} events/s`,
        met: !f.gatewayKeptUp
          ? `not measured: the gateway did not keep up (${f.overload})`
          : f.freshnessMs.p99 <= 1000 && f.missingEvents === 0
            ? 'yes'
            : 'no',
      },
      {
        config: envText(o.env),
        name: 'consumer memory bounded',
        goal: 'RSS levels off (2nd half of the drain <= 1.2x the 1st)',
        value: `peak ${fmt(o.peakRssMB)} MB; per quarter ${o.rssQuartersMB.map((q) => fmt(q)).join(' / ')} MB`,
        met: o.rssBounded ? 'yes' : 'no',
      },
    );
  };
  addTargets(ours, freshness);
  if (oursDefaults && freshnessDefaults) addTargets(oursDefaults, freshnessDefaults);
  targets.push({
    config: 'both paths',
    name: 'same rows',
    goal: `${fmt(EVENTS)} rows each, identical content`,
    value: `${fmt(check.oursRows)} / ${fmt(check.engineRows)} rows, checksums ${check.identical ? 'equal' : 'differ'}`,
    met: check.identical ? 'yes' : 'no',
  });
  const phases = [ours.cpu, engine.cpu, freshness.cpu, oursDefaults?.cpu, freshnessDefaults?.cpu];
  const noisy = phases.some((c) => c !== undefined && c.otherPercent > NOISE_PERCENT);
  return {
    command: benchCommand('bench:consume'),
    date: new Date().toISOString(),
    machine,
    consumer,
    config: {
      events: EVENTS,
      partitions: PARTITIONS,
      consumerEnv: CONSUMER_ENV,
      engineConsumers: ENGINE_CONSUMERS,
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
    ours,
    ...(oursDefaults ? { oursDefaults } : {}),
    engine,
    ratio,
    steadyRatio: ours.steadyRowsPerSecond / engine.steadyRowsPerSecond,
    check,
    freshness,
    ...(freshnessDefaults ? { freshnessDefaults } : {}),
    targets,
    noisy,
  };
}

const cleanups = new Cleanups(log);
await finish(() => main(cleanups), {
  log,
  cleanups,
  section: { name: SECTION, render: renderSection },
  tables: (report) => `${figuresTable(report)}\n\n${targetsTable(report)}`,
  ok: () => true,
});
