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
 *      set), once with BENCH_COMPARE_ENV over it (JSONEachRow inserts instead of RowBinary
 *      unless set), each into its own database, with its own consumer group;
 *   5. drains the same messages with a Kafka engine table + materialized views into a copy
 *      of `events`, measured the same way, and compares the tables' contents;
 *   6. sends half our drain rate through the real gateway with the consumer running, and
 *      measures per event: first seen in ClickHouse - gateway 200 (both settings, same rate);
 *   7. writes the bench:consume section of BENCHMARKS.md, prints the tables and every
 *      figure as one JSON object on the last line of stdout; stops everything.
 *
 * Environment: BENCH_EVENTS (1000000), BENCH_FRESHNESS_SECONDS (20),
 * BENCH_FRESHNESS_POLL_MS (50), BENCH_FRESHNESS_RATE (events/s; default half our drain
 * rate), BENCH_FRESHNESS_BATCH (events per request at least, 20), BENCH_ENGINE_CONSUMERS
 * (kafka_num_consumers, 1), BENCH_CLIENT_ROUNDS (turns of each Kafka client in the
 * client stage, 3), BENCH_CONSUMER_ENV (consumer settings of the measured
 * configuration, "KEY=VALUE,..."; default none: the service's defaults), BENCH_COMPARE_ENV
 * (what the comparison run changes; default INSERT_FORMAT=JSONEachRow), BENCH_BASELINE (0:
 * skip the comparison runs), BENCH_WRITE (0: leave BENCHMARKS.md
 * alone), BENCH_PROFILE=1 (the consumers write V8 CPU profiles into the log directory),
 * --smoke (harness/run.ts). Only 127.0.0.1 is used.
 */
import { DEFAULT_TENANT } from '@telemetry/contract';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import {
  createClickHouse,
  createKafka,
  createLogger,
  detectEngine,
  sqlIdentifier,
  type ClickHouseClient,
} from '@telemetry/platform';
import { issueKey, migrate } from '@telemetry/store';
import { consumerSpec, FETCH_BYTES_PER_PARTITION } from '@telemetry/stream-consumer';
import { provision } from '../../tools/devstack/provision.js';
import type { Stack } from '../../tools/devstack/stack.js';
import { Child, freePort, metricSum, ROOT, serviceCommand, sleep, until } from '../../harness/processes.js';
import { fmt } from '../../harness/report.js';
import { Benchmark, type Cleanups, envNumber, pipelineTopics, serviceEnv, SMOKE } from '../../harness/run.js';
import { cpuMeter, mb, type CpuWindow } from '../../harness/sampler.js';
import { produceBacklog } from './backlog.js';
import { measureClients, type ClientLibrary } from './clients.js';
import {
  copyTablesStatements,
  dropStatements,
  ENGINE_ROLLUP,
  ENGINE_TABLE,
  queueTableStatement,
  seedGroup,
  viewsSetupStatements,
} from './engine.js';
import { measureFreshness } from './freshness.js';
import {
  envText,
  clientsTable,
  figuresTable,
  renderSection,
  targetsTable,
  type ConsumeReport,
  type DrainFigures,
  type FreshnessRun,
  type OursDrain,
  type TargetCheck,
} from './report.js';
import { withRegistry } from '../../tools/devstack/postgres.js';

const PARTITIONS = 6;
const EVENTS = envNumber('BENCH_EVENTS', 1_000_000, 1000, true, 2000);
const FRESH_SECONDS = envNumber('BENCH_FRESHNESS_SECONDS', 20, 1, false, 2);
const FRESH_WARMUP_SECONDS = SMOKE ? 1 : 3;
const FRESH_POLL_MS = envNumber('BENCH_FRESHNESS_POLL_MS', 50, 5, true);
const FRESH_RATE = envNumber('BENCH_FRESHNESS_RATE', 0, 0);
const FRESH_BATCH = envNumber('BENCH_FRESHNESS_BATCH', 20, 1, true);
const ENGINE_CONSUMERS = envNumber('BENCH_ENGINE_CONSUMERS', 1, 1, true);
const CLIENT_ROUNDS = envNumber('BENCH_CLIENT_ROUNDS', 3, 1, true, 1);
/** Consumer settings from `name`, "KEY=VALUE,...". */
function settings(name: string, fallback: string): Record<string, string> {
  return Object.fromEntries(
    (process.env[name] ?? fallback)
      .split(',')
      .filter((p) => p.trim() !== '')
      .map((pair) => {
        const eq = pair.indexOf('=');
        if (eq <= 0) throw new Error(`${name}: expected KEY=VALUE pairs separated by commas, got ${pair}`);
        return [pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()];
      }),
  );
}
/** The measured configuration: the service as it ships unless set. */
const CONSUMER_ENV = settings('BENCH_CONSUMER_ENV', '');
/** What the comparison run changes over it: the insert format (RowBinary is the default). */
const COMPARE_ENV = settings('BENCH_COMPARE_ENV', 'INSERT_FORMAT=JSONEachRow');
const BASELINE = process.env.BENCH_BASELINE !== '0' && Object.keys(COMPARE_ENV).length > 0;
const PROFILE = process.env.BENCH_PROFILE === '1';
const STALL_MS = 120_000;
/** Issue 16: the consumer's peak RSS while it drains the backlog. */
const MAX_RSS_MB = 300;
const NOISE_PERCENT = 25;

const bench = new Benchmark('bench:consume');
const log = bench.log;

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

async function scalar(ch: ClickHouseClient, query: string): Promise<string> {
  return (await (await ch.query({ query, format: 'TabSeparated' })).text()).trim();
}

/** Waits until ClickHouse runs no merge (so one run does not pay for the previous one's parts). */
async function mergesSettled(ch: ClickHouseClient): Promise<void> {
  await until(
    'ClickHouse merges to settle',
    async () => (Number(await scalar(ch, 'SELECT count() FROM system.merges')) === 0 ? true : undefined),
    120_000,
    500,
  ).catch(() => log('merges still running after 120 s; going on'));
}

/** Counts `table` every 250 ms from `start` until it holds EVENTS rows; the figures of the drain. */
async function drain(
  ch: ClickHouseClient,
  table: string,
  start: number,
  what: string,
  cpu: () => CpuWindow,
  alive: () => void,
) {
  let firstRowsSeconds = NaN;
  let firstRows = 0;
  let last = -1;
  let lastChange = performance.now();
  let lastLog = lastChange;
  const timeline: number[] = [];
  for (;;) {
    const t = performance.now();
    alive();
    const rows = Number(await scalar(ch, `SELECT count() FROM ${table}`));
    const seconds = (performance.now() - start) / 1000;
    if (t - lastLog > 5000) [lastLog] = [t, log(`${what}: ${fmt(rows)} / ${fmt(EVENTS)} rows`)];
    while (timeline.length < Math.floor(seconds)) timeline.push(rows);
    if (rows > 0 && Number.isNaN(firstRowsSeconds)) [firstRowsSeconds, firstRows] = [seconds, rows];
    if (rows >= EVENTS) {
      timeline.push(rows); // the count at the end (after the whole seconds)
      const steady = seconds - firstRowsSeconds;
      return {
        rows,
        seconds,
        rowsPerSecond: rows / seconds,
        firstRowsSeconds,
        steadyRowsPerSecond: steady > 0 ? (rows - firstRows) / steady : NaN,
        cpu: cpu(),
        timeline,
      };
    }
    if (rows !== last) [last, lastChange] = [rows, performance.now()];
    else if (performance.now() - lastChange > STALL_MS)
      throw new Error(`${what}: no new rows for ${STALL_MS / 1000} s (${rows} of ${EVENTS})`);
    await sleep(Math.max(0, 250 - (performance.now() - t)));
  }
}

/** Waits until the consumer group is in `state` (with members, for Stable). */
async function groupState(kafka: Kafka, group: string, state: 'Stable' | 'Empty'): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await until(
      `consumer group ${group} ${state}`,
      async () => {
        const g = (await admin.describeGroups([group])).groups[0];
        return g?.state === state && (state === 'Empty' || g.members.length > 0) ? true : undefined;
      },
      60_000,
      200,
    );
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
  topics: ReturnType<typeof pipelineTopics>;
  logDir: string;
  pids: { kafka?: number; clickhouse?: number };
  cleanups: Cleanups;
}

async function startConsumer(ctx: Context, s: Setup, phase: string): Promise<Child> {
  const port = await freePort();
  const c = new Child({
    name: `stream-consumer (${s.label})`,
    command: serviceCommand('stream-consumer', true),
    nodeArgs: PROFILE && phase === 'drain' ? ['--cpu-prof', `--cpu-prof-dir=${ctx.logDir}`] : [],
    env: serviceEnv(ctx.stack, s.database, port, { ...ctx.topics.env, CONSUMER_GROUP_ID: s.group, ...s.env }),
    url: `http://127.0.0.1:${port}`,
    logFile: join(ctx.logDir, `consumer-${s.label}-${phase}.log`),
  });
  ctx.cleanups.push(() => c.close());
  return c.start();
}

/** Drains the whole backlog with our consumer, from a new group, into `s.database`.events. */
async function drainOurs(ctx: Context, s: Setup): Promise<OursDrain> {
  await mergesSettled(ctx.ch);
  log(`drain: our stream consumer, ${s.label}...`);
  const consumer = await startConsumer(ctx, s, 'drain');
  const start = consumer.spawnedAt;
  const cpu = cpuMeter({ consumer: consumer.pid, ...ctx.pids });
  let readySeconds = NaN;
  void consumer.ready().then(
    () => (readySeconds = (performance.now() - start) / 1000),
    () => undefined,
  );
  const d = await drain(ctx.ch, `${sqlIdentifier(s.database)}.events`, start, s.label, cpu, () => {
    if (!consumer.running) throw new Error(`the consumer exited; see ${consumer.logFile}`);
  });
  const end = performance.now();
  const metrics = await consumer.metrics();
  await sleep(1000); // RSS once drained: a second of idling
  const afterKiB = consumer.rss.sample() ?? NaN;
  await consumer.stop();
  await groupState(ctx.kafka, s.group, 'Empty');
  // Peak RSS per quarter of the drain (first rows to last): a consumer whose memory
  // follows the backlog keeps growing; a bounded one levels off.
  const from = start + d.firstRowsSeconds * 1000;
  const quarter = (end - from) / 4;
  const quarters = [0, 1, 2, 3].map((i) => consumer.rss.peak(from + i * quarter, from + (i + 1) * quarter));
  const events = (name: string): number => metricSum(metrics, name, 'events');
  const inserts = events('consumer_insert_duration_seconds_count');
  const insertSeconds = events('consumer_insert_duration_seconds_sum');
  const o: OursDrain = {
    path: 'ours',
    ...d,
    label: s.label,
    env: s.env,
    readySeconds,
    peakRssMB: mb(consumer.rss.peak(0, end)),
    rssQuartersMB: quarters.map(mb),
    afterDrainRssMB: mb(afterKiB),
    rssBounded: Math.max(quarters[2]!, quarters[3]!) <= 1.2 * Math.max(quarters[0]!, quarters[1]!),
    inserts,
    meanInsertRows: events('consumer_insert_batch_rows_sum') / inserts,
    meanInsertMs: (insertSeconds / inserts) * 1000,
    insertBusyShare: insertSeconds / (d.seconds - d.firstRowsSeconds + insertSeconds / inserts),
    eventLoopLagP99Ms: metricSum(metrics, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    deadLettered: metricSum(metrics, 'consumer_dead_lettered_total'),
  };
  log(
    `${s.label}: ${fmt(o.rows)} rows in ${fmt(o.seconds, 1)} s = ${fmt(o.rowsPerSecond)} rows/s; peak RSS ${o.peakRssMB} MB`,
  );
  return o;
}

/** Drains the same backlog with a Kafka engine table and views into the copy of `events`. */
async function drainEngine(ctx: Context, database: string, run: string): Promise<DrainFigures> {
  await mergesSettled(ctx.ch);
  log('drain: the ClickHouse Kafka engine...');
  const group = `bench-consume-engine-${run}`;
  await seedGroup(ctx.kafka, group, ctx.topics.topics.events, 'start');
  const drop = async (): Promise<void> => {
    for (const q of dropStatements(database)) await ctx.ch.command({ query: q }).catch(() => undefined);
  };
  ctx.cleanups.push(drop);
  for (const q of viewsSetupStatements(database)) await ctx.ch.command({ query: q });
  const cpu = cpuMeter(ctx.pids);
  const start = performance.now();
  const { kafkaBrokers: brokers } = ctx.stack;
  const topic = ctx.topics.topics.events;
  await ctx.ch.command({
    query: queueTableStatement({ database, brokers, topic, group, consumers: ENGINE_CONSUMERS }),
  });
  const d = await drain(ctx.ch, `${sqlIdentifier(database)}.${ENGINE_TABLE}`, start, 'engine', cpu, () => undefined);
  await drop();
  log(`engine: ${fmt(d.rows)} rows in ${fmt(d.seconds, 1)} s = ${fmt(d.rowsPerSecond)} rows/s`);
  return { path: 'engine', ...d };
}

/** Events through the gateway at `rate` with our consumer (setup `s`) running, no backlog. */
async function freshnessAttempt(
  ctx: Context,
  s: Setup,
  gateway: Child,
  accessKey: string,
  rate: number,
  tag: string,
): Promise<FreshnessRun> {
  await mergesSettled(ctx.ch);
  // Messages produced since this group last ran (other runs' load) are not its backlog.
  await seedGroup(ctx.kafka, s.group, ctx.topics.topics.events, 'end');
  const perRequest = Math.max(FRESH_BATCH, Math.ceil(rate / 500)); // at most ~500 requests/s
  log(`freshness (${s.label}): ${fmt(rate)} events/s, ${perRequest} per request, ${FRESH_SECONDS} s...`);
  const consumer = await startConsumer(ctx, s, `freshness-${tag}`);
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
  };
  // Warm-up (JIT, connections, the consumer's first fetches), not measured.
  await measureFreshness({ ...opts, source: `warmup-${s.label}-${tag}`, idPrefix: 'w', seconds: FRESH_WARMUP_SECONDS });
  const cpu = cpuMeter({ consumer: consumer.pid, gateway: gateway.pid, ...ctx.pids });
  const from = performance.now();
  const result = await measureFreshness({
    ...opts,
    source: `fresh-${s.label}-${tag}`,
    idPrefix: 'f',
    seconds: FRESH_SECONDS,
  });
  const window = cpu();
  const metrics = await consumer.metrics();
  await consumer.stop();
  await groupState(ctx.kafka, s.group, 'Empty');
  // Over the consumer's life here: warm-up and measured load.
  const inserts = metricSum(metrics, 'consumer_insert_duration_seconds_count', 'events');
  log(
    `freshness (${s.label}): p50 ${fmt(result.freshnessMs.p50)} ms, p99 ${fmt(result.freshnessMs.p99)} ms over ` +
      `${fmt(result.seenEvents)} events${result.gatewayKeptUp ? '' : `; the gateway did not keep up: ${result.overload}`}`,
  );
  return {
    ...result,
    label: s.label,
    env: s.env,
    consumerPeakRssMB: mb(consumer.rss.peak(from)),
    cpu: window,
    inserts,
    meanInsertRows: metricSum(metrics, 'consumer_insert_batch_rows_sum', 'events') / inserts,
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
  gateway: Child,
  key: string,
  rate: number,
  run: string,
): Promise<FreshnessRun> {
  let attempt = await freshnessAttempt(ctx, s, gateway, key, rate, `${run}-1`);
  const first = attempt;
  for (let n = 2; n <= 3 && !attempt.gatewayKeptUp; n++) {
    const lower = Math.max(
      500,
      Math.round(Math.min(attempt.offeredEventsPerSecond / 2, 0.8 * attempt.achievedEventsPerSecond)),
    );
    log(
      `freshness (${s.label}): the gateway did not keep up at ${fmt(attempt.offeredEventsPerSecond)} events/s; again at ${fmt(lower)}`,
    );
    attempt = await freshnessAttempt(ctx, s, gateway, key, lower, `${run}-${n}`);
  }
  return attempt === first ? first : { ...attempt, overloadedAttempt: first };
}

async function main(cleanups: Cleanups): Promise<ConsumeReport> {
  const run = randomBytes(4).toString('hex');
  const database = `bench_${run}`;
  const logDir = mkdtempSync(join(tmpdir(), 'bench-consume-'));
  const quiet = createLogger({ service: 'bench-consume', level: 'warn', stream: process.stderr });
  const shown = [
    'BATCH_MAX_ROWS',
    'BATCH_MAX_AGE_MS',
    'MAX_BUFFERED_ROWS',
    'PARTITIONS_CONSUMED_CONCURRENTLY',
    'INSERT_FORMAT',
    'INSERT_CONCURRENCY',
    'KAFKA_CLIENT',
  ];
  const specs = Object.values(consumerSpec) as { name: string; default: string | undefined }[];
  const consumer = {
    version: consumerVersion(),
    defaults: Object.fromEntries(
      specs.filter((s) => shown.includes(s.name) && s.default !== undefined).map((s) => [s.name, s.default!]),
    ),
  };
  log(
    `events ${fmt(EVENTS)}, freshness ${FRESH_SECONDS} s; consumer at ${consumer.version}; service logs in ${logDir}`,
  );

  const { stack, pids, machine } = await bench.stack(cleanups);
  // Every topic the consumer subscribes to (events, checks, alerts) must exist, or it exits at start.
  const topics = pipelineTopics(`bench_${run}`);
  const provisioned = await provision(stack, { database, topics: topics.list, partitions: PARTITIONS, logger: quiet });
  const ch = createClickHouse({
    url: stack.clickhouseUrl,
    username: 'default',
    password: '',
    database,
    requestTimeoutMs: 300_000,
  });
  cleanups.push(() => ch.close());
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
  const librdkafka = (() => {
    try {
      return execFileSync('dpkg-query', ['-W', '-f=${Version}', 'librdkafka1'], { encoding: 'utf8' }).trim();
    } catch {
      return 'unknown';
    }
  })();

  log(`producing ${fmt(EVENTS)} event messages...`);
  const backlog = await produceBacklog(kafka, topics.topics.events, randomBytes(8).toString('hex'), EVENTS, {
    batchSize: 6000,
    parallel: 4,
    log,
  });
  const admin = kafka.admin();
  await admin.connect();
  const inTopic = (await admin.fetchTopicOffsets(topics.topics.events)).reduce(
    (n, o) => n + Number(o.high) - Number(o.low),
    0,
  );
  await admin.disconnect();
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
  const db = sqlIdentifier(database);
  const n = async (query: string): Promise<number> => Number(await scalar(ch, query));
  const checksumOf = (table: string): Promise<string> =>
    scalar(
      ch,
      `SELECT sum(cityHash64(toString(event_id), key_id, source, category, payload, client_event_id,
        toString(event_time), ifNull(toString(client_ts), ''), ifNull(toString(sent_at), ''), toString(received_at)))
      FROM ${table} FINAL`,
    );
  const rollupOf = (table: string): Promise<number> =>
    n(`SELECT sum(n) FROM (SELECT uniqExactMerge(events) AS n FROM ${table} GROUP BY minute, source, category)`);
  const check = {
    oursRows: await n(`SELECT count() FROM ${db}.events`),
    engineRows: await n(`SELECT count() FROM ${db}.${ENGINE_TABLE}`),
    oursDistinct: await n(`SELECT uniqExact(event_id) FROM ${db}.events`),
    engineDistinct: await n(`SELECT uniqExact(event_id) FROM ${db}.${ENGINE_TABLE}`),
    oursChecksum: await checksumOf(`${db}.events`),
    engineChecksum: await checksumOf(`${db}.${ENGINE_TABLE}`),
    compareChecksum: oursCompare ? await checksumOf(`${sqlIdentifier(compare.database)}.events`) : '',
    oursRollup: await rollupOf(`${db}.events_per_minute`),
    engineRollup: await rollupOf(`${db}.${ENGINE_ROLLUP}`),
    oursInsertedAtZero: await n(`SELECT countIf(toUInt32(inserted_at) = 0) FROM ${db}.events`),
    identical: false,
  };
  check.identical =
    [
      check.oursRows,
      check.engineRows,
      check.oursDistinct,
      check.engineDistinct,
      check.oursRollup,
      check.engineRollup,
    ].every((x) => x === EVENTS) &&
    check.oursChecksum === check.engineChecksum &&
    (oursCompare === undefined || check.compareChecksum === check.oursChecksum);
  log(`content check: ${JSON.stringify(check)}`);

  // Freshness through the real gateway.
  const rate = FRESH_RATE > 0 ? FRESH_RATE : Math.round(ours.rowsPerSecond / 2);
  const key = (
    await withRegistry(provisioned.postgres!.owner, (db) =>
      issueKey(db, { tenantId: DEFAULT_TENANT, kind: 'telemetry', name: 'bench-consume' }),
    )
  ).key;
  const gatewayPort = await freePort();
  const gateway = new Child({
    name: 'ingest-gateway',
    command: serviceCommand('ingest-gateway', true),
    env: serviceEnv(stack, database, gatewayPort, {
      EVENTS_TOPIC: topics.topics.events,
      DATABASE_URL: provisioned.postgres!.ingest,
    }),
    url: `http://127.0.0.1:${gatewayPort}`,
    logFile: join(logDir, 'gateway.log'),
  });
  cleanups.push(() => gateway.close());
  await gateway.start().ready();
  const freshness = await freshnessRun(ctx, tuned, gateway, key, rate, run);
  // The same offered load for both configurations (the one the gateway could answer).
  const freshnessCompare = BASELINE
    ? await freshnessRun(ctx, compare, gateway, key, freshness.offeredEventsPerSecond, run)
    : undefined;
  await gateway.stop();

  const targets: TargetCheck[] = [];
  for (const [o, f] of [
    [ours, freshness],
    [oursCompare, freshnessCompare],
  ] as const) {
    if (!o || !f) continue;
    const r = o.rowsPerSecond / engine.rowsPerSecond;
    const config = envText(o.env);
    targets.push(
      {
        config,
        name: 'drain rate, ours / Kafka engine',
        goal: '>= 1.0x, never below 0.7x',
        value: `${fmt(r, 2)}x (${fmt(o.rowsPerSecond)} vs ${fmt(engine.rowsPerSecond)} rows/s)`,
        met: r >= 1 ? 'yes' : r >= 0.7 ? 'floor only (>= 0.7x)' : 'no',
      },
      {
        config,
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
        config,
        name: 'consumer memory bounded',
        goal: 'RSS levels off (2nd half of the drain <= 1.2x the 1st)',
        value: `peak ${fmt(o.peakRssMB)} MB; per quarter ${o.rssQuartersMB.map((q) => fmt(q)).join(' / ')} MB`,
        met: o.rssBounded ? 'yes' : 'no',
      },
      {
        config,
        name: `consumer memory draining ${fmt(EVENTS)} messages`,
        goal: `peak RSS <= ${MAX_RSS_MB} MB`,
        value: `${fmt(o.peakRssMB)} MB`,
        met: o.peakRssMB <= MAX_RSS_MB ? 'yes' : `no: ${fmt(o.peakRssMB - MAX_RSS_MB)} MB over`,
      },
    );
  }
  const cheaper = clients.cpuRatio <= 1 ? 'kafkajs' : 'platformatic';
  targets.push({
    config: 'Kafka clients, reading only',
    name: 'the consumer reads with the cheaper client',
    goal: 'the library with less CPU per message read',
    value:
      `kafkajs ${fmt(clients.kafkajs.cpuMicrosPerMessage, 2)} µs, @platformatic/kafka ` +
      `${fmt(clients.platformatic.cpuMicrosPerMessage, 2)} µs per message (${fmt(clients.cpuRatio, 2)}x)`,
    met: cheaper === clients.consumerLibrary ? 'yes' : `no: ${cheaper} reads for less`,
  });
  targets.push({
    config: 'both paths',
    name: 'same rows',
    goal: `${fmt(EVENTS)} rows each, identical content`,
    value: `${fmt(check.oursRows)} / ${fmt(check.engineRows)} rows, checksums ${check.identical ? 'equal' : 'differ'}`,
    met: check.identical ? 'yes' : 'no',
  });
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
  ok: (report) => report.check.identical && report.freshness.missingEvents === 0,
});
