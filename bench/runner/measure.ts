/**
 * One measured window of `npm run bench:runner`: a side (the runner or the baseline) warmed
 * up until the target saw every monitor, then a window in which the target records every
 * arrival and the CPU, RSS, Kafka messages and the side's own counters are read; the
 * interval jitter and the runner's start delay computed from them.
 */
import type { Kafka } from 'kafkajs';
import { metricSum, sleep, type Child } from '../../harness/processes.js';
import { fmt, quantiles } from '../../harness/report.js';
import { cpuMeter, mb } from '../../harness/sampler.js';
import { topicMessages, type BenchContext } from '../common/stack.js';
import { INTERVAL_SECONDS, log, SECONDS, SKIP_REASONS, START_DELAY, WARMUP_SECONDS } from './options.js';
import type { Side, SideFigures } from './report.js';
import type { Target } from './target-client.js';

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

/** What a side reports about itself (runner: /metrics; baseline: /stats) at one moment. */
export interface Counters {
  published: number;
  notUp: number;
  kafkaFailed: number;
  /** Check messages acknowledged by Kafka since it started. */
  acked: number;
  metrics?: string;
}

/** The side under test, spawned: how the measurement reads and stops it. */
export interface Subject {
  side: Side;
  proc: Child;
  topic: string;
  /** Resolves once it is ready to check (runner: owns every partition). */
  ready: () => Promise<void>;
  counters: () => Promise<Counters>;
}

/** The run's context, with its Kafka client and the target. */
export interface Context extends BenchContext {
  kafka: Kafka;
  target: Target;
}

export async function measure(ctx: Context, s: Subject, monitors: number, spawnedAt: number): Promise<SideFigures> {
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
