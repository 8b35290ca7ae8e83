/**
 * `npm run bench:runner`: how many checks per second one check-runner process runs on
 * time, with how much interval jitter, CPU and memory, next to a minimal baseline doing
 * the same essential work (bench/runner/baseline.ts).
 *
 *   1. starts the stack (tools/devstack) and the target (bench/runner/target.ts, its own
 *      process: answers 200 `ok` at once and records every arrival);
 *   2. per level (BENCH_RUNNER_MONITORS): a fresh database and topics, N monitors saved
 *      with MonitorStore.saveMany (interval 1 s, timeout 500 ms, URL /m/<id> of the target);
 *   3. starts one check runner compiled, as production runs it (dist/main.js under plain node), waits
 *      until it owns every partition of the monitor-changes topic and the target has seen
 *      every monitor, warms up, measures a window, stops it;
 *   4. the same with the baseline, same monitors, same window;
 *   5. writes the bench:runner section of BENCHMARKS.md, prints the tables, and prints
 *      every figure as one JSON object on the last line of stdout; stops everything,
 *      also on error or Ctrl-C.
 *
 * Environment: BENCH_RUNNER_MONITORS (500,2000), BENCH_RUNNER_SECONDS (30) per window,
 * BENCH_RUNNER_WARMUP_SECONDS (5, after every monitor was checked once),
 * BENCH_RUNNER_INTERVAL_SECONDS (1), BENCH_RUNNER_TIMEOUT_MS (500),
 * BENCH_RUNNER_PARTITIONS (6), BENCH_WRITE (0: leave BENCHMARKS.md alone).
 * Only 127.0.0.1 is used. Exit code 0 when both sides ran every level and Kafka holds
 * every check they counted as acknowledged, 1 otherwise.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import { createClickHouse, createKafka, createLogger, sqlIdentifier, type ClickHouseClient } from '@telemetry/platform';
import { MonitorStore } from '@telemetry/store';
import { runnerSpec } from '@telemetry/check-runner';
import { provision } from '../../tools/devstack/provision.js';
import { storeEnv } from '../../tools/devstack/users.js';
import type { Stack } from '../../tools/devstack/stack.js';
import {
  Child,
  fetchJson,
  freePort,
  metricSum,
  runSecretBox,
  scriptCommand,
  serviceCommand,
  sleep,
  until,
} from '../../harness/processes.js';
import { fmt, quantiles } from '../../harness/report.js';
import {
  Benchmark,
  benchMonitor,
  type Cleanups,
  envNumber,
  pipelineTopics,
  serviceEnv,
  SMOKE,
} from '../../harness/run.js';
import { cpuMeter, mb } from '../../harness/sampler.js';
import {
  levelNotes,
  levelTable,
  renderSection,
  type KafkaCheck,
  type Level,
  type RunnerReport,
  type Side,
  type SideFigures,
} from './report.js';
import { withRegistry } from '../../tools/devstack/postgres.js';

function envLevels(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  return raw.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: expected monitor counts such as 500,2000, not ${raw}`);
    return n;
  });
}

const LEVELS = envLevels('BENCH_RUNNER_MONITORS', SMOKE ? [20] : [500, 2000]);
const SECONDS = envNumber('BENCH_RUNNER_SECONDS', 30, 1, true, 3);
const WARMUP_SECONDS = envNumber('BENCH_RUNNER_WARMUP_SECONDS', 5, 0, true, 0);
const INTERVAL_SECONDS = envNumber('BENCH_RUNNER_INTERVAL_SECONDS', 1, 1, true);
const TIMEOUT_MS = envNumber('BENCH_RUNNER_TIMEOUT_MS', 500, 100, true);
const PARTITIONS = envNumber('BENCH_RUNNER_PARTITIONS', 6, 1, true);
/** The runner's default (services/check-runner/src/config.ts); the benchmark does not change it. */
const MAX_CONCURRENT_CHECKS = Number(runnerSpec.maxConcurrentChecks.default);
const SKIP_REASONS = ['overlap', 'busy', 'unpublished', 'handed_over'] as const;
const START_DELAY = 'runner_check_start_delay_seconds';
if (TIMEOUT_MS > INTERVAL_SECONDS * 1000) throw new Error('BENCH_RUNNER_TIMEOUT_MS must not exceed the interval');

const bench = new Benchmark('bench:runner');
const log = bench.log;

// ------------------------------------------------------------------ the target

interface TargetStats {
  requests: number;
  monitors: number;
  seconds: number;
}

interface TargetWindow extends TargetStats {
  perSecond: number[];
  arrivals: Record<string, number[]>;
}

class Target {
  constructor(readonly server: Child) {}

  private call<T>(path: string, method = 'GET'): Promise<T> {
    return fetchJson<T>(`${this.server.url}${path}`, method);
  }

  reset(): Promise<TargetStats> {
    return this.call('/reset', 'POST');
  }

  stats(): Promise<TargetStats> {
    return this.call('/stats');
  }

  window(): Promise<TargetWindow> {
    return this.call('/window');
  }

  /** Resets, then waits until every one of `monitors` has been checked at least once. */
  async allSeen(monitors: number, timeoutMs: number): Promise<void> {
    await this.reset();
    let last: TargetStats | undefined;
    await until(
      () => `the target to see every monitor (${last?.monitors ?? 0} of ${monitors})`,
      async () => ((last = await this.stats()).monitors >= monitors ? true : undefined),
      timeoutMs,
      200,
    );
  }
}

// ------------------------------------------------------------------ measuring

/** The interval jitter: |gap - interval| between consecutive arrivals of each monitor. */
function jitter(arrivals: Record<string, number[]>, intervalMs: number) {
  const deviations: number[] = [];
  let lateGaps = 0;
  for (const ts of Object.values(arrivals)) {
    for (let i = 1; i < ts.length; i++) {
      const gap = ts[i]! - ts[i - 1]!;
      deviations.push(Math.abs(gap - intervalMs));
      if (gap > 1.5 * intervalMs) lateGaps++;
    }
  }
  return { jitterMs: quantiles(deviations), gaps: deviations.length, lateGaps };
}

/** A quantile of a Prometheus histogram's increase between two scrapes, as a bucket bound (ms). */
function histogramFigures(before: string, after: string, name: string) {
  const les = [...after.matchAll(new RegExp(`^${name}_bucket\\{[^}]*le="([^"]+)"`, 'gm'))].map((m) => m[1]!);
  const buckets = les.map((le) => ({
    boundMs: le === '+Inf' ? Infinity : Number(le) * 1000,
    n: metricSum(after, `${name}_bucket`, `le="${le}"`) - metricSum(before, `${name}_bucket`, `le="${le}"`),
  }));
  const count = metricSum(after, `${name}_count`) - metricSum(before, `${name}_count`);
  const at = (q: number): number => buckets.find((b) => b.n >= Math.ceil(q * count))?.boundMs ?? NaN;
  return { count, p50: at(0.5), p99: at(0.99), max: at(1) };
}

async function topicMessages(kafka: Kafka, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
  } finally {
    await admin.disconnect();
  }
}

/** What a side reports about itself (runner: /metrics; baseline: /stats) at one moment. */
interface Counters {
  published: number;
  notUp: number;
  kafkaFailed: number;
  /** Check messages acknowledged by Kafka since it started. */
  acked: number;
  metrics?: string;
}

/** The side under test, spawned: how the measurement reads and stops it. */
interface Subject {
  side: Side;
  proc: Child;
  topic: string;
  /** Resolves once it is ready to check (runner: owns every partition). */
  ready: () => Promise<void>;
  counters: () => Promise<Counters>;
}

interface Context {
  stack: Stack;
  kafka: Kafka;
  target: Target;
  logDir: string;
  pids: { kafka?: number; clickhouse?: number };
  cleanups: Cleanups;
}

async function measure(ctx: Context, s: Subject, monitors: number, spawnedAt: number): Promise<SideFigures> {
  const { target } = ctx;
  await target.allSeen(monitors, 60_000);
  const warmupSeconds = (performance.now() - spawnedAt) / 1000;
  log(`  ${s.side}: every monitor checked ${fmt(warmupSeconds, 1)} s after spawn; warming up ${WARMUP_SECONDS} s`);
  await sleep(WARMUP_SECONDS * 1000);

  const before = await s.counters();
  const messagesBefore = await topicMessages(ctx.kafka, s.topic);
  await target.reset();
  const from = performance.now();
  const cpu = cpuMeter({ [s.side]: s.proc.pid, target: target.server.pid, ...ctx.pids });
  await sleep(SECONDS * 1000); // the measured window
  const cpuWindow = cpu();
  const used = ((cpuWindow.processes[s.side] ?? NaN) * cpuWindow.seconds) / 100;
  const w = await target.window();
  const after = await s.counters();
  const messagesAfter = await topicMessages(ctx.kafka, s.topic);
  if (!s.proc.running) throw new Error(`${s.side} exited during the window; see ${s.proc.logFile}`);

  const whole = w.perSecond.slice(0, Math.floor(w.seconds));
  const required = monitors / INTERVAL_SECONDS;
  const figures: SideFigures = {
    side: s.side,
    monitors,
    seconds: w.seconds,
    requiredPerSecond: required,
    arrivals: w.requests,
    checksPerSecond: w.requests / w.seconds,
    perSecondMin: whole.length ? Math.min(...whole) : NaN,
    perSecondMax: whole.length ? Math.max(...whole) : NaN,
    monitorsSeen: w.monitors,
    ...jitter(w.arrivals, INTERVAL_SECONDS * 1000),
    published: after.published - before.published,
    notUp: after.notUp - before.notUp,
    kafkaMessages: messagesAfter - messagesBefore,
    kafkaFailed: after.kafkaFailed - before.kafkaFailed,
    cpuPercent: (used / cpuWindow.seconds) * 100,
    cpuMsPerCheck: (used * 1000) / w.requests,
    cpu: cpuWindow,
    peakRssMB: Math.round(mb(s.proc.rss.peak(from))),
    lifePeakRssMB: Math.round(mb(s.proc.rss.peak())),
    warmupSeconds,
  };
  if (before.metrics !== undefined && after.metrics !== undefined) {
    const [a, b] = [after.metrics, before.metrics];
    figures.skipped = Object.fromEntries(
      SKIP_REASONS.map((r) => [
        r,
        metricSum(a, 'runner_checks_skipped_total', `reason="${r}"`) -
          metricSum(b, 'runner_checks_skipped_total', `reason="${r}"`),
      ]),
    );
    figures.startDelayMs = histogramFigures(b, a, START_DELAY);
    figures.eventLoopLagP99Ms = metricSum(a, 'nodejs_eventloop_lag_p99_seconds') * 1000;
  }
  log(
    `  ${s.side}: ${fmt(figures.checksPerSecond, 1)} / ${fmt(required)} checks/s, jitter p50/p99/max ` +
      `${fmt(figures.jitterMs.p50, 1)}/${fmt(figures.jitterMs.p99, 1)}/${fmt(figures.jitterMs.max, 1)} ms, ` +
      `${figures.lateGaps} late gaps, cpu ${fmt(figures.cpuPercent)}% (${fmt(figures.cpuMsPerCheck, 3)} ms/check), ` +
      `rss ${figures.peakRssMB} MB, kafka +${figures.kafkaMessages}, skipped ${JSON.stringify(figures.skipped ?? {})}, ` +
      `cpu ${JSON.stringify(cpuWindow)}`,
  );
  return figures;
}

// ------------------------------------------------------------------ the two sides

interface LevelSetup {
  database: string;
  group: string;
  topics: ReturnType<typeof pipelineTopics>;
  baselineChecks: string;
  monitorsFile: string;
  /** The runner's ClickHouse variables (its own user, tools/devstack/users.ts). */
  storeEnv: Record<string, string>;
}

/** Spawns one side, measures it, stops it, and checks that Kafka holds what it counted as acknowledged. */
async function runSide(
  ctx: Context,
  monitors: number,
  spawn: (port: number) => Subject,
): Promise<[SideFigures, KafkaCheck]> {
  const s = spawn(await freePort());
  ctx.cleanups.push(() => s.proc.close());
  try {
    await s.proc.start().ready(60_000);
    await s.ready();
    const figures = await measure(ctx, s, monitors, s.proc.spawnedAt);
    const { acked } = await s.counters();
    await s.proc.stop();
    const messages = await topicMessages(ctx.kafka, s.topic);
    return [figures, { side: s.side, topic: s.topic, messages, acked, ok: messages >= acked }];
  } finally {
    await s.proc.stop();
  }
}

function spawnRunner(ctx: Context, l: LevelSetup, monitors: number, port: number): Subject {
  const runner = new Child({
    name: 'check-runner',
    command: serviceCommand('check-runner', true),
    env: serviceEnv(ctx.stack, l.database, port, {
      ...l.topics.env,
      ...l.storeEnv,
      // The benchmark's target listens on loopback.
      EGRESS_ALLOW: '127.0.0.1/32',
      RUNNER_GROUP_ID: l.group,
      WEBHOOK_GROUP_ID: `${l.group}-webhooks`,
      RUNNER_ID: `bench-${monitors}`,
    }),
    url: `http://127.0.0.1:${port}`,
    logFile: join(ctx.logDir, `runner-${monitors}.log`),
  });
  const checks = `topic="${l.topics.topics.checks}"`;
  return {
    side: 'runner',
    proc: runner,
    topic: l.topics.topics.checks,
    ready: async () => {
      let owned = 0;
      await until(
        () => `the runner to own all ${PARTITIONS} partitions (${owned}); see ${runner.logFile}`,
        async () =>
          (owned = metricSum(await runner.metrics(), 'runner_owned_partitions')) === PARTITIONS ? true : undefined,
        60_000,
        200,
      );
    },
    counters: async () => {
      const m = await runner.metrics();
      const published = metricSum(m, 'runner_checks_total');
      return {
        published,
        notUp: published - metricSum(m, 'runner_checks_total', 'status="up"'),
        kafkaFailed: metricSum(m, 'kafka_produced_messages_total', [checks, 'result="failed"']),
        acked: metricSum(m, 'kafka_produced_messages_total', [checks, 'result="acked"']),
        metrics: m,
      };
    },
  };
}

/** GET /stats of bench/runner-baseline.ts. */
interface BaselineStats {
  checks: number;
  down: number;
  produced: number;
  failed: number;
  httpErrors: number;
}

function spawnBaseline(ctx: Context, l: LevelSetup, monitors: number, port: number): Subject {
  const baseline = new Child({
    name: 'baseline',
    command: scriptCommand('bench/runner/baseline.ts', true),
    url: `http://127.0.0.1:${port}`,
    logFile: join(ctx.logDir, `baseline-${monitors}.log`),
    env: serviceEnv(ctx.stack, l.database, port, { CHECKS_TOPIC: l.baselineChecks, MONITORS_FILE: l.monitorsFile }),
  });
  return {
    side: 'baseline',
    proc: baseline,
    topic: l.baselineChecks,
    ready: () => Promise.resolve(),
    counters: async () => {
      const s = await fetchJson<BaselineStats>(`${baseline.url}/stats`, 'GET', 5000);
      return { published: s.produced, notUp: s.down, kafkaFailed: s.failed, acked: s.produced };
    },
  };
}

async function level(ctx: Context, admin: ClickHouseClient, monitors: number): Promise<Level> {
  const run = randomBytes(4).toString('hex');
  const prefix = `bench_runner_${run}`;
  const setup: LevelSetup = {
    database: prefix,
    group: `${prefix}-runners`,
    topics: pipelineTopics(prefix),
    baselineChecks: `${prefix}.checks-baseline`,
    monitorsFile: join(ctx.logDir, `monitors-${monitors}.json`),
    storeEnv: {},
  };
  log(`${fmt(monitors)} monitors: database ${setup.database}, topics ${prefix}.*`);
  const logger = createLogger({ service: 'bench-runner', level: 'warn', stream: process.stderr });
  const users = await provision(ctx.stack, {
    database: setup.database,
    topics: [...setup.topics.list, setup.baselineChecks],
    partitions: PARTITIONS,
    logger,
  });
  setup.storeEnv = storeEnv(users, 'check-runner');
  const now = new Date().toISOString();
  const list = Array.from({ length: monitors }, (_, i) =>
    benchMonitor(i, (id) => `${ctx.target.server.url}/m/${id}`, now, {
      interval_seconds: INTERVAL_SECONDS,
      timeout_ms: TIMEOUT_MS,
    }),
  );
  await withRegistry(users.postgres!.owner, (db) => new MonitorStore(db, runSecretBox()).saveMany(list));
  writeFileSync(
    setup.monitorsFile,
    JSON.stringify(
      list.map((m) => ({ id: m.id, url: m.url, interval_seconds: m.interval_seconds, timeout_ms: m.timeout_ms })),
    ),
  );

  log(`  runner (one process)...`);
  const [runner, runnerKafka] = await runSide(ctx, monitors, (port) => spawnRunner(ctx, setup, monitors, port));
  log(`  baseline...`);
  const [baseline, baselineKafka] = await runSide(ctx, monitors, (port) => spawnBaseline(ctx, setup, monitors, port));
  if (ctx.stack.mode === 'external') {
    await admin.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(setup.database)}` }).catch(() => undefined);
  }
  const level: Level = {
    monitors,
    database: setup.database,
    runner,
    baseline,
    checksRatio: runner.checksPerSecond / baseline.checksPerSecond,
    cpuRatio: runner.cpuMsPerCheck / baseline.cpuMsPerCheck,
    kafka: [runnerKafka, baselineKafka],
  };
  log(`  Kafka: ${JSON.stringify(level.kafka)}`);
  return level;
}

// ------------------------------------------------------------------ main

async function main(cleanups: Cleanups): Promise<RunnerReport> {
  const logDir = mkdtempSync(join(tmpdir(), 'bench-runner-'));
  log(`levels ${LEVELS.join(', ')} monitors, ${SECONDS} s windows; logs in ${logDir}`);
  const { stack, pids, machine } = await bench.stack(cleanups);
  const quiet = createLogger({ service: 'bench-runner', level: 'warn', stream: process.stderr });
  const kafka = createKafka({ brokers: stack.kafkaBrokers.split(','), clientId: 'bench-runner', logger: quiet });
  const admin = createClickHouse({ url: stack.clickhouseUrl, username: 'default', password: '', database: 'default' });
  cleanups.push(() => admin.close());
  const targetPort = await freePort();
  const server = new Child({
    name: 'target',
    command: scriptCommand('bench/runner/target.ts', true),
    url: `http://127.0.0.1:${targetPort}`,
    logFile: join(logDir, 'target.log'),
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(targetPort) },
  });
  cleanups.push(() => server.close());
  await server.start().ready();
  const ctx: Context = { stack, kafka, target: new Target(server), logDir, pids, cleanups };
  log(`target ${server.url} (pid ${server.pid})`);

  const levels: Level[] = [];
  for (const n of LEVELS) levels.push(await level(ctx, admin, n));
  const windows = levels.flatMap((l) => [l.runner.cpu.otherPercent, l.baseline.cpu.otherPercent]);
  return {
    ...bench.head(machine),
    config: {
      levels: LEVELS,
      seconds: SECONDS,
      warmupSeconds: WARMUP_SECONDS,
      intervalSeconds: INTERVAL_SECONDS,
      timeoutMs: TIMEOUT_MS,
      partitions: PARTITIONS,
      maxConcurrentChecks: MAX_CONCURRENT_CHECKS,
    },
    levels,
    maxOtherCpu: Math.max(0, ...windows),
    clean: levels.every((l) => l.kafka.every((k) => k.ok)),
  };
}

await bench.run(main, {
  render: renderSection,
  tables: (report) =>
    report.levels.map((l) => `${fmt(l.monitors)} monitors\n\n${levelTable(l)}\n\n${levelNotes(l)}`).join('\n\n'),
  ok: (report) => report.clean,
});
