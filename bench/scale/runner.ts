/**
 * The runner part of `npm run bench:scale`: what one check-runner process costs per check,
 * and in memory, as its monitors grow (100, 1,000 and 10,000 HTTP monitors).
 *
 * One database and pipeline for the part; the monitors are saved with MonitorStore.saveMany
 * as bench:runner saves them (an HTTP monitor each, `/m/<id>` of bench:runner's target, its
 * own process answering 200 `ok` at once on loopback), added level by level, every one with
 * the same interval (BENCH_SCALE_RUNNER_INTERVAL_SECONDS, 30 s: 10,000 monitors are 333
 * checks/s, well inside what one runner does on these 2 shared cores, bench:runner). Per
 * level a fresh runner (compiled, bench:runner's spawnRunner) is started, waited for until
 * it owns every partition and the target has seen every monitor once (the first pass, with
 * its one-off work, is not measured), then a window of whole intervals, at least
 * BENCH_SCALE_RUNNER_MIN_CHECKS (200) checks long: CPU from /proc over the window divided
 * by the checks that reached the target, and the runner's RSS (VmRSS every 100 ms).
 *
 * Environment: BENCH_SCALE_RUNNER_MONITORS (100,1000,10000), BENCH_SCALE_RUNNER_INTERVAL_SECONDS
 * (30), BENCH_SCALE_RUNNER_MIN_CHECKS (200). Smoke: 5 and 20 monitors every second, 2 s windows.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createKafka, createLogger } from '@telemetry/platform';
import { MonitorStore } from '@telemetry/store';
import { withRegistry } from '../../tools/devstack/postgres.js';
import { provision } from '../../tools/devstack/provision.js';
import { storeEnv } from '../../tools/devstack/users.js';
import { freePort, metricSum, runSecretBox, scriptCommand, sleep } from '../../harness/processes.js';
import { fmt } from '../../harness/report.js';
import { benchMonitor, envNumber, pipelineTopics } from '../../harness/run.js';
import { cpuMeter, mb } from '../../harness/sampler.js';
import { startChild, topicMessages } from '../common/stack.js';
import type { Context } from '../runner/measure.js';
import { PARTITIONS } from '../runner/options.js';
import { spawnRunner, type LevelSetup } from '../runner/sides.js';
import { Target } from '../runner/target-client.js';
import type { Curve, CurvePart, CurvePoint, ScaleContext } from './curve.js';
import { dropRunData } from './query.js';

/** The references issue 48 gives. */
const GATUS_CPU_MS_PER_CHECK = 2;
const UPTIME_KUMA_MONITORS = 500;

function monitorLevels(smoke: boolean): number[] {
  const raw = process.env.BENCH_SCALE_RUNNER_MONITORS;
  if (raw === undefined || raw.trim() === '') return smoke ? [5, 20] : [100, 1000, 10_000];
  const levels = raw.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < 1)
      throw new Error(`BENCH_SCALE_RUNNER_MONITORS: counts such as 100,1000, not ${raw}`);
    return n;
  });
  return [...levels].sort((a, b) => a - b);
}

interface Level {
  monitors: number;
  requiredPerSecond: number;
  windowSeconds: number;
  checks: number;
  checksPerSecond: number;
  monitorsSeen: number;
  cpuPercent: number;
  cpuMsPerCheck: number;
  targetCpuMsPerCheck: number;
  peakRssMiB: number;
  endRssMiB: number;
  lagP99Ms: number;
  firstPassSeconds: number;
  skipped: number;
  kafkaOk: boolean;
  otherCpu: number;
}

export const runnerCurve: CurvePart = async (ctx: ScaleContext): Promise<Curve> => {
  const { smoke, log, cleanups, logDir } = ctx;
  const { stack, pids } = ctx.bench;
  const levels = monitorLevels(smoke);
  const interval = smoke ? 1 : envNumber('BENCH_SCALE_RUNNER_INTERVAL_SECONDS', 30, 1, true);
  const minChecks = envNumber('BENCH_SCALE_RUNNER_MIN_CHECKS', 200, 1, true, 10);
  const timeoutMs = Math.min(5000, interval * 1000);
  const started = performance.now();
  const quiet = createLogger({ service: 'bench-scale', level: 'warn', stream: process.stderr });

  const prefix = `bench_scale_r_${randomBytes(4).toString('hex')}`;
  const setup: LevelSetup = {
    database: prefix,
    group: `${prefix}-runners`,
    topics: pipelineTopics(prefix),
    baselineChecks: `${prefix}.checks-baseline`,
    monitorsFile: join(logDir, `${prefix}-monitors.json`),
    storeEnv: {},
  };
  log(`runner: ${levels.map((n) => fmt(n)).join(', ')} monitors every ${interval} s; database ${prefix}`);
  const users = await provision(stack, {
    database: prefix,
    topics: setup.topics.list,
    partitions: PARTITIONS,
    logger: quiet,
  });
  cleanups.push(() => dropRunData(stack, prefix, setup.topics.list, quiet));
  setup.storeEnv = storeEnv(users, 'check-runner');
  const kafka = createKafka({ brokers: stack.kafkaBrokers.split(','), clientId: 'bench-scale', logger: quiet });
  const targetPort = await freePort();
  const server = await startChild(cleanups, {
    name: 'target',
    command: scriptCommand('bench/runner/target.ts', true),
    url: `http://127.0.0.1:${targetPort}`,
    logFile: join(logDir, 'runner-target.log'),
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(targetPort) },
  });
  const target = new Target(server);
  const rctx: Context = { stack, kafka, target, logDir, pids, cleanups };

  const results: Level[] = [];
  let saved = 0;
  for (const monitors of levels) {
    // The monitors of the levels before stay: add the ones this level needs.
    const now = new Date().toISOString();
    const list = Array.from({ length: monitors - saved }, (_, i) =>
      benchMonitor(saved + i, (id) => `${server.url}/m/${id}`, now, {
        interval_seconds: interval,
        timeout_ms: timeoutMs,
      }),
    );
    await withRegistry(users.postgres!.owner, async (db) => {
      const store = new MonitorStore(db, runSecretBox());
      for (let i = 0; i < list.length; i += 1000) await store.saveMany(list.slice(i, i + 1000));
    });
    saved = monitors;

    const messagesBefore = await topicMessages(kafka, setup.topics.topics.checks);
    const s = spawnRunner(rctx, setup, monitors, await freePort());
    cleanups.push(() => s.proc.close());
    try {
      await s.proc.start().ready(60_000);
      await s.ready();
      // The first pass (every monitor's first check, its state read) is not measured.
      await target.allSeen(monitors, interval * 1000 + 60_000);
      const firstPassSeconds = (performance.now() - s.proc.spawnedAt) / 1000;
      await sleep(Math.min(2000, interval * 1000));

      const windowSeconds = interval * Math.max(1, Math.ceil(minChecks / monitors));
      const before = await s.counters();
      await target.reset();
      const from = performance.now();
      const cpu = cpuMeter({ runner: s.proc.pid, target: server.pid, ...pids });
      await sleep(windowSeconds * 1000);
      const w = cpu();
      const stats = await target.stats();
      const after = await s.counters();
      const endRss = s.proc.rss.sample();
      if (!s.proc.running) throw new Error(`the runner exited during the window; see ${s.proc.logFile}`);
      const used = ((w.processes.runner ?? NaN) * w.seconds) / 100;
      const targetUsed = ((w.processes.target ?? NaN) * w.seconds) / 100;
      const skipped =
        metricSum(after.metrics ?? '', 'runner_checks_skipped_total') -
        metricSum(before.metrics ?? '', 'runner_checks_skipped_total');
      await s.proc.stop();
      const messages = await topicMessages(kafka, s.topic);
      const level: Level = {
        monitors,
        requiredPerSecond: monitors / interval,
        windowSeconds: w.seconds,
        checks: stats.requests,
        checksPerSecond: stats.requests / stats.seconds,
        monitorsSeen: stats.monitors,
        cpuPercent: (used / w.seconds) * 100,
        cpuMsPerCheck: (used * 1000) / Math.max(1, stats.requests),
        targetCpuMsPerCheck: (targetUsed * 1000) / Math.max(1, stats.requests),
        peakRssMiB: Math.round(mb(s.proc.rss.peak(from))),
        endRssMiB: Math.round(mb(endRss ?? NaN)),
        lagP99Ms: metricSum(after.metrics ?? '', 'nodejs_eventloop_lag_p99_seconds') * 1000,
        firstPassSeconds,
        skipped,
        kafkaOk: messages - messagesBefore >= after.acked,
        otherCpu: w.otherPercent,
      };
      results.push(level);
      log(
        `runner: ${fmt(monitors)} monitors: ${fmt(level.checksPerSecond, 1)} / ${fmt(level.requiredPerSecond, 1)} checks/s over ${fmt(level.windowSeconds)} s ` +
          `(${fmt(level.checks)} checks, ${fmt(level.monitorsSeen)} monitors), CPU ${fmt(level.cpuPercent, 1)}% = ${fmt(level.cpuMsPerCheck, 3)} ms/check, ` +
          `RSS peak ${level.peakRssMiB} MiB, lag p99 ${fmt(level.lagP99Ms, 1)} ms, skipped ${skipped}, Kafka +${messages - messagesBefore} messages for ${after.acked} acked, other CPU ${fmt(level.otherCpu)}%`,
      );
    } finally {
      await s.proc.stop();
    }
  }
  const minutes = (performance.now() - started) / 60_000;
  log(`runner: done in ${minutes.toFixed(1)} min`);

  const points: CurvePoint[] = results.map((l) => ({
    x: l.monitors,
    values: {
      cpu_ms: round(l.cpuMsPerCheck, 3),
      rss: l.peakRssMiB,
      cpu_pct: round(l.cpuPercent, 1),
      checks_s: round(l.checksPerSecond, 1),
      required_s: round(l.requiredPerSecond, 1),
      checks: l.checks,
      lag_p99: round(l.lagP99Ms, 1),
      target_cpu_ms: round(Math.max(0, l.targetCpuMsPerCheck), 3),
      skipped: l.skipped,
    },
    note: `${fmt(l.windowSeconds)} s window; first pass ${fmt(l.firstPassSeconds)} s after spawn${l.kafkaOk ? '' : '; Kafka holds fewer checks than acknowledged'}`,
  }));
  const [lo, hi] = [results.at(-2), results.at(-1)];
  const marginal =
    lo && hi && hi.checksPerSecond > lo.checksPerSecond
      ? ((hi.cpuPercent - lo.cpuPercent) * 10) / (hi.checksPerSecond - lo.checksPerSecond)
      : NaN;
  const last = results.at(-1);
  return {
    id: 'runner-monitors',
    title: 'Check runner: CPU per check and memory by monitors',
    xLabel: 'monitors',
    series: [
      { key: 'cpu_ms', label: 'runner CPU per check', unit: 'ms' },
      { key: 'rss', label: 'runner peak RSS', unit: 'MiB' },
      { key: 'cpu_pct', label: 'runner CPU (one core = 100%)', unit: '%', chart: false },
      { key: 'checks_s', label: 'checks/s reaching the target', unit: 'checks/s', chart: false },
      { key: 'required_s', label: 'checks/s asked (monitors / interval)', unit: 'checks/s', chart: false },
      { key: 'checks', label: 'checks in the window', unit: 'checks', chart: false },
      { key: 'lag_p99', label: 'runner event-loop lag p99', unit: 'ms', chart: false },
      { key: 'target_cpu_ms', label: 'target CPU per check (not the runner)', unit: 'ms', chart: false },
      { key: 'skipped', label: 'skipped slots in the window', unit: 'slots', chart: false },
    ],
    points,
    notes: [
      `HTTP monitors (MonitorStore.saveMany, as bench:runner), every one checked every ${interval} s (timeout ${fmt(timeoutMs)} ms) against bench:runner's target on 127.0.0.1 (its own process: 200 \`ok\` at once, a new connection per check): ${results.map((l) => `${fmt(l.monitors)} monitors = ${fmt(l.requiredPerSecond, 1)} checks/s`).join(', ')}. One check runner (compiled, as production runs it: LOG_LEVEL=warn, MAX_CONCURRENT_CHECKS default, ${PARTITIONS} partitions), started afresh per level; the monitors of a level are added to those of the level before.`,
      `Each level's window starts after the runner owns every partition and the target saw every monitor once (the first pass, with its one-off work, is left out), and lasts whole intervals, at least ${minChecks} checks: ${results.map((l) => `${fmt(l.windowSeconds)} s at ${fmt(l.monitors)}`).join(', ')}. CPU per check is the runner's CPU (user + system, /proc) in the window divided by the checks that reached the target; RSS is the runner's VmRSS, sampled every 100 ms.`,
      `CPU per check includes what does not grow with the checks (consumer-group heartbeats, the monitor-changes long poll, the registry reload, /metrics), so it falls as the monitors grow: at few monitors it is mostly that fixed cost.${Number.isFinite(marginal) && lo && hi ? ` From ${fmt(lo.monitors)} to ${fmt(hi.monitors)} monitors each added check cost ${fmt(marginal, 3)} ms of CPU (the slope).` : ''}`,
      `References the issue gives: Gatus's maintainer measured about ${GATUS_CPU_MS_PER_CHECK} ms of CPU per check; Uptime Kuma's practical limit is about ${fmt(UPTIME_KUMA_MONITORS)} monitors per instance.${last ? ` Here one runner ran ${fmt(last.monitors)} monitors (${fmt(last.checksPerSecond, 1)} checks/s) at ${fmt(last.cpuMsPerCheck, 3)} ms of CPU per check, ${fmt(last.cpuPercent, 1)}% of one core, ${last.peakRssMiB} MiB RSS.` : ''}`,
      `The target's own CPU (a TCP connection per check) is measured apart and not counted in the runner's figures. The part took ${minutes.toFixed(1)} min.`,
    ],
    otherCpuPercent: Math.max(0, ...results.map((l) => l.otherCpu)),
  };
};

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
