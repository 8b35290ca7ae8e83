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
 * The parts live in their own files: options.ts (the settings below), target-client.ts,
 * measure.ts (one window), sides.ts (the runner and the baseline), report.ts; this file
 * sets up each level and composes them.
 *
 * Environment: BENCH_RUNNER_MONITORS (500,2000), BENCH_RUNNER_SECONDS (30) per window,
 * BENCH_RUNNER_WARMUP_SECONDS (5, after every monitor was checked once),
 * BENCH_RUNNER_INTERVAL_SECONDS (1), BENCH_RUNNER_TIMEOUT_MS (500),
 * BENCH_RUNNER_PARTITIONS (6), BENCH_WRITE (0: leave BENCHMARKS.md alone).
 * BENCH_RUNNER_SCENARIO=browser runs the browser-check scenario instead (bench/runner/browser.ts).
 * Only 127.0.0.1 is used. Exit code 0 when both sides ran every level and Kafka holds
 * every check they counted as acknowledged, 1 otherwise.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKafka, createLogger, sqlIdentifier, type ClickHouseClient } from '@telemetry/platform';
import { MonitorStore } from '@telemetry/store';
import { provision } from '../../tools/devstack/provision.js';
import { withRegistry } from '../../tools/devstack/postgres.js';
import { storeEnv } from '../../tools/devstack/users.js';
import { freePort, runSecretBox, scriptCommand } from '../../harness/processes.js';
import { fmt } from '../../harness/report.js';
import { benchMonitor, type Cleanups, pipelineTopics } from '../../harness/run.js';
import { adminClickHouse, startChild } from '../common/stack.js';
import type { Context } from './measure.js';
import { bench, config, INTERVAL_SECONDS, LEVELS, log, PARTITIONS, SECONDS, TIMEOUT_MS } from './options.js';
import { levelNotes, levelTable, renderSection, type Level, type RunnerReport } from './report.js';
import { runSide, spawnBaseline, spawnRunner, type LevelSetup } from './sides.js';
import { Target } from './target-client.js';

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
  const admin = adminClickHouse(cleanups, stack);
  const targetPort = await freePort();
  const server = await startChild(cleanups, {
    name: 'target',
    command: scriptCommand('bench/runner/target.ts', true),
    url: `http://127.0.0.1:${targetPort}`,
    logFile: join(logDir, 'target.log'),
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(targetPort) },
  });
  const ctx: Context = { stack, kafka, target: new Target(server), logDir, pids, cleanups };
  log(`target ${server.url} (pid ${server.pid})`);

  const levels: Level[] = [];
  for (const n of LEVELS) levels.push(await level(ctx, admin, n));
  const windows = levels.flatMap((l) => [l.runner.cpu.otherPercent, l.baseline.cpu.otherPercent]);
  return {
    ...bench.head(machine),
    config,
    levels,
    maxOtherCpu: Math.max(0, ...windows),
    clean: levels.every((l) => l.kafka.every((k) => k.ok)),
  };
}

// The browser-check scenario is its own benchmark, with its own section (bench/runner/browser.ts).
if (process.env.BENCH_RUNNER_SCENARIO === 'browser') await import('./browser.js');
else
  await bench.run(main, {
    render: renderSection,
    tables: (report) =>
      report.levels.map((l) => `${fmt(l.monitors)} monitors\n\n${levelTable(l)}\n\n${levelNotes(l)}`).join('\n\n'),
    ok: (report) => report.clean,
  });
