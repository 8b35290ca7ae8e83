/**
 * Figures of `npm run bench:runner` and its section of BENCHMARKS.md (between
 * `<!-- bench:runner -->` and `<!-- /bench:runner -->`; other sections are left alone).
 */
import { fmt, markdown, sectionHead, type Quantiles } from '../../harness/report.js';
import { DISTURBED_CPU, type CpuWindow } from '../../harness/sampler.js';
import { readingAndCaveats, type ReportHead } from '../common/report.js';

export type Side = 'runner' | 'baseline';

/** One side (our runner or the baseline) at one level, over the measured window. */
export interface SideFigures {
  side: Side;
  monitors: number;
  /** Length of the measured window (the target's clock), s. */
  seconds: number;
  /** Checks per second the monitors ask for (monitors / interval). */
  requiredPerSecond: number;
  /** Checks that reached the target in the window, and per second. */
  arrivals: number;
  checksPerSecond: number;
  /** Checks per whole second of the window at the target: lowest and highest. */
  perSecondMin: number;
  perSecondMax: number;
  /** Monitors checked at least once in the window. */
  monitorsSeen: number;
  /** |gap - interval| between consecutive arrivals of the same monitor, ms. */
  jitterMs: Quantiles;
  gaps: number;
  /** Gaps longer than 1.5 intervals: a slot that was not checked (or came very late). */
  lateGaps: number;
  /** Results published (runner: runner_checks_total; baseline: sends acknowledged) in the window. */
  published: number;
  /** Published results that were not `up` (the target always answers 200 at once). */
  notUp: number;
  /** Messages added to the side's checks topic in the window (partition high watermarks). */
  kafkaMessages: number;
  /** Produce calls that failed in the window. */
  kafkaFailed: number;
  /** CPU of the side's process: % of one core, and ms per check that reached the target. */
  cpuPercent: number;
  cpuMsPerCheck: number;
  cpu: CpuWindow;
  peakRssMB: number;
  lifePeakRssMB: number;
  /** From spawn until it owned all partitions (runner) and every monitor had been checked once. */
  warmupSeconds: number;
  /** Runner only: skipped slots by reason, start delay from its histogram (bucket bounds, ms), event-loop lag. */
  skipped?: Record<string, number>;
  startDelayMs?: { count: number; p50: number; p99: number; max: number };
  eventLoopLagP99Ms?: number;
}

export interface KafkaCheck {
  side: Side;
  topic: string;
  /** Messages in the topic at the end. */
  messages: number;
  /** Messages the side counted as acknowledged over its whole life. */
  acked: number;
  ok: boolean;
}

export interface Level {
  monitors: number;
  database: string;
  runner: SideFigures;
  baseline: SideFigures;
  /** runner / baseline checks per second. */
  checksRatio: number;
  /** runner / baseline CPU ms per check. */
  cpuRatio: number;
  kafka: KafkaCheck[];
}

export interface RunnerReport extends ReportHead {
  config: {
    levels: number[];
    seconds: number;
    warmupSeconds: number;
    intervalSeconds: number;
    timeoutMs: number;
    partitions: number;
    maxConcurrentChecks: number;
  };
  levels: Level[];
  /** Highest "other" CPU (processes outside the benchmark) of any window, % of one core. */
  maxOtherCpu: number;
  clean: boolean;
}

const ms = (x: number): string => (Number.isFinite(x) ? (x < 10 ? x.toFixed(1) : fmt(x)) : '-');
const bound = (x: number): string => (Number.isFinite(x) ? `≤ ${ms(x)}` : '> 5,000');
const ratio = (x: number): string => (Number.isFinite(x) ? `${fmt(x, 2)}x` : '-');

function skippedText(s: Record<string, number> | undefined): string {
  if (!s) return '-';
  const parts = Object.entries(s)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${fmt(n)} ${k}`);
  return parts.length ? `**${parts.join(', ')}**` : '0';
}

function sideRow(f: SideFigures): string {
  const name = f.side === 'runner' ? 'check runner' : 'baseline';
  return (
    `| ${name} | ${fmt(f.checksPerSecond, 1)} / ${fmt(f.requiredPerSecond)} | ${fmt(f.perSecondMin)}-${fmt(f.perSecondMax)} | ` +
    `${fmt(f.monitorsSeen)} / ${fmt(f.monitors)} | ${ms(f.jitterMs.p50)} / ${ms(f.jitterMs.p99)} / ${ms(f.jitterMs.max)} | ` +
    `${f.lateGaps ? `**${fmt(f.lateGaps)}**` : '0'} | ${skippedText(f.skipped)} | ${fmt(f.cpuPercent)}% | ` +
    `${fmt(f.cpuMsPerCheck, 3)} | ${fmt(f.peakRssMB)} MB | ${fmt(f.kafkaMessages)}${f.kafkaFailed ? ` (**${fmt(f.kafkaFailed)} failed**)` : ''} | ` +
    `${fmt(f.cpu.processes.target ?? NaN)}% / ${fmt(f.cpu.processes.kafka ?? NaN)}% / ${fmt(f.cpu.processes.clickhouse ?? NaN)}% | ` +
    `${fmt(f.cpu.otherPercent)}%${f.cpu.otherPercent > DISTURBED_CPU ? ' **(disturbed)**' : ''} |`
  );
}

/** The table of one level: runner, baseline, and their ratios. */
export function levelTable(l: Level): string {
  return [
    '| | checks/s: achieved / required | checks per whole second (min-max) | monitors checked | interval jitter p50 / p99 / max ms | missed or late slots | skipped slots | CPU (one core = 100%) | CPU ms per check | peak RSS | Kafka messages in the window | CPU of target / Kafka / ClickHouse | other CPU (background) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    sideRow(l.runner),
    sideRow(l.baseline),
    `| runner / baseline | **${ratio(l.checksRatio)}** | | | ${ratio(l.runner.jitterMs.p50 / l.baseline.jitterMs.p50)} / ${ratio(l.runner.jitterMs.p99 / l.baseline.jitterMs.p99)} | | | | **${ratio(l.cpuRatio)}** | ${ratio(l.runner.peakRssMB / l.baseline.peakRssMB)} | | | |`,
  ].join('\n');
}

export function levelNotes(l: Level): string {
  const r = l.runner;
  const d = r.startDelayMs;
  return [
    `Runner: ${fmt(r.published)} checks published in the window (${fmt(r.notUp)} not up); start delay after the slot ` +
      `(its \`runner_check_start_delay_seconds\`, bucket bounds) p50 ${d ? bound(d.p50) : '-'} ms, p99 ${d ? bound(d.p99) : '-'} ms, ` +
      `max ${d ? bound(d.max) : '-'} ms over ${fmt(d?.count ?? NaN)} slots; event-loop lag p99 ${ms(r.eventLoopLagP99Ms ?? NaN)} ms; ` +
      `ready, owning all partitions and through every monitor once ${fmt(r.warmupSeconds, 1)} s after spawn; ` +
      `peak RSS over its life ${fmt(r.lifePeakRssMB)} MB.`,
    `Baseline: ${fmt(l.baseline.published)} sends acknowledged in the window (${fmt(l.baseline.notUp)} not up); ` +
      `peak RSS over its life ${fmt(l.baseline.lifePeakRssMB)} MB.`,
    `Kafka at the end: ${l.kafka
      .map(
        (k) =>
          `${k.side} \`${k.topic}\` holds ${fmt(k.messages)} messages for ${fmt(k.acked)} acknowledged${k.ok ? '' : ' (**fewer**)'}`,
      )
      .join('; ')}.`,
  ].join('\n');
}

/** What the figures say, in a few sentences (generated from them, so it stays true when they change). */
export function reading(r: RunnerReport): string[] {
  const out: string[] = [];
  for (const l of r.levels) {
    const a = l.runner;
    const b = l.baseline;
    const keeps = (f: SideFigures): boolean => f.checksPerSecond >= 0.99 * f.requiredPerSecond && f.lateGaps === 0;
    const skipped = Object.values(a.skipped ?? {}).reduce((x, y) => x + y, 0);
    const lines = [
      `**${fmt(l.monitors)} monitors** (${fmt(a.requiredPerSecond)} checks/s asked): the runner ` +
        (keeps(a)
          ? `kept up (${fmt(a.checksPerSecond, 1)} checks/s, no missed slot)`
          : `did **not** keep up (${fmt(a.checksPerSecond, 1)} checks/s, ${fmt(a.lateGaps)} missed or late slots, ${fmt(skipped)} skipped)`) +
        `; the baseline ${keeps(b) ? 'kept up' : `did **not** (${fmt(b.checksPerSecond, 1)} checks/s, ${fmt(b.lateGaps)} missed or late slots)`}. ` +
        `Interval jitter p99: runner ${ms(a.jitterMs.p99)} ms, baseline ${ms(b.jitterMs.p99)} ms. ` +
        `A check costs the runner ${fmt(a.cpuMsPerCheck, 3)} ms of CPU and the baseline ${fmt(b.cpuMsPerCheck, 3)} ms ` +
        `(${ratio(l.cpuRatio)}); at that cost one core would run about ${fmt(1000 / a.cpuMsPerCheck)} checks/s ` +
        `(runner) and ${fmt(1000 / b.cpuMsPerCheck)} (baseline), before Kafka's and the target's share of the ` +
        'machine; work that does not grow with the rate (group heartbeats and fetches, timers) is in these ' +
        'figures too, so at low rates they overstate the cost of a check.',
    ];
    const limits: string[] = [];
    if (a.cpuPercent >= 85) limits.push(`its one thread is nearly full (${fmt(a.cpuPercent)}% of a core)`);
    if ((a.skipped?.busy ?? 0) > 0) limits.push('MAX_CONCURRENT_CHECKS (slots skipped as busy)');
    if ((a.skipped?.overlap ?? 0) > 0) limits.push('checks still running at their next slot (overlap)');
    if ((a.skipped?.unpublished ?? 0) > 0) limits.push('Kafka acknowledgements (results not published)');
    if ((a.skipped?.handed_over ?? 0) > 0) limits.push('ownership lapses (handed_over: heartbeats late)');
    const busy = a.cpu.machinePercent;
    if (busy >= r.machine.nproc * 100 * 0.85)
      limits.push(`the machine's ${r.machine.nproc} cores (${fmt(busy)}% busy in all)`);
    const state =
      `${fmt(a.cpuPercent)}% of a core, the machine ${fmt(busy)}% busy of ${fmt(r.machine.nproc * 100)}%, ` +
      `event-loop lag p99 ${ms(a.eventLoopLagP99Ms ?? NaN)} ms`;
    lines.push(
      limits.length
        ? `What limits the runner here: ${limits.join('; ')}.`
        : keeps(a)
          ? `Nothing limited the runner at this rate (${state}, no skipped slot); its jitter is timer and ` +
            'event-loop delay plus connection set-up at both ends.'
          : `It fell behind with no skipped slot and its core not full (${state}): its timers fired late, ` +
            'which points at the event loop or the machine rather than at a limit of its own.',
    );
    out.push(lines.join(' '));
  }
  out.push(
    "Where the runner's CPU goes beyond the baseline's: per check it also computes the check id (SHA-256), " +
      'records metrics and runs the alert state machine; besides checks it heartbeats its consumer group, ' +
      'long-polls the monitor-changes topic (250 ms waits), serves /metrics, reloads the whole registry from ' +
      'ClickHouse every 30 s and runs the webhook consumer. It saves where the baseline pays: one acknowledged ' +
      'Kafka send per check (the runner sends the results of 5 ms together), which is why their costs are close.',
  );
  if (r.maxOtherCpu > DISTURBED_CPU) {
    out.push(
      `**Processes outside the benchmark used up to ${fmt(r.maxOtherCpu)}% CPU during some windows (more than ` +
        `${DISTURBED_CPU}% counts as disturbed): those figures are pessimistic; run again on a quiet machine.**`,
    );
  }
  return out;
}

export function renderSection(r: RunnerReport): string {
  const m = r.machine;
  const c = r.config;
  return markdown([
    ...sectionHead('Check runner: checks per second, interval jitter, CPU and memory', r),
    `- Monitors: ${c.levels.map((n) => fmt(n)).join(' and ')}, registered with \`MonitorStore.saveMany\` in a fresh ` +
      `database per level; interval ${c.intervalSeconds} s, timeout ${fmt(c.timeoutMs)} ms, each pointing at ` +
      '`/m/<id>` of the target (bench/runner/target.ts, its own process: 200 `ok` at once, every arrival recorded)',
    `- Per level and side: warm-up until the runner owns all ${c.partitions} partitions of the monitor-changes ` +
      `topic (\`runner_owned_partitions\`) and the target has seen every monitor, then ${c.warmupSeconds} s more, ` +
      `then a ${c.seconds} s window; the runner first, then the baseline, one after the other`,
    '',
    'The **check runner** is one process started as in production',
    '(`services/check-runner/dist/main.js`, compiled, plain node; LOG_LEVEL=warn, its own consumer groups, the read-only ClickHouse user,',
    `MAX_CONCURRENT_CHECKS=${fmt(c.maxConcurrentChecks)}). The **baseline** (\`bench/runner/baseline.ts\`, its own process) does the`,
    "essential work without our scheduling: for each monitor, from the runner's phase on, a `setInterval` of the",
    'interval, one GET on a fresh connection (node:http, `agent: false`) and then one kafkajs `send` with',
    '`acks: -1` of the JSON check message (one send per check; its own topic of the same partitions). The runner',
    'instead gathers the results that end within RUNNER_PUBLISH_LINGER_MS (5 ms) into one send.',
    '"checks/s" counts the checks that reached the target in the window. "Interval jitter" is |gap - interval|',
    'between consecutive arrivals of the same monitor at the target; "missed or late slots" counts gaps over 1.5',
    "intervals. CPU is from /proc (user + system) in % of one core; CPU ms per check divides the process's CPU",
    'in the window by the checks that reached the target; "other CPU" is what processes outside the benchmark',
    'used meanwhile (noise). Peak RSS is VmRSS sampled every 100 ms during the window.',
    '',
    ...r.levels.flatMap((l) => [`### ${fmt(l.monitors)} monitors`, '', levelTable(l), '', levelNotes(l), '']),
    ...readingAndCaveats(reading(r), [
      `- One ${m.nproc}-core machine runs the side under test, the target, Kafka, ClickHouse and this command; the`,
      '  target accepts every check on a new TCP connection, so its CPU grows with the rate too.',
      '- One window per side and level, runner first: run the command again to see the spread.',
      '- Both sides (and the target) run compiled (`npm run build` = `tsc -b`, which the command runs first) under',
      '  plain node, as production does: the runner from `services/check-runner/dist/`, the others from `.tsout/bench/runner/`.',
      '- Kafka is one local broker, replication factor 1: `acks=-1` waits for one replica only.',
    ]),
  ]);
}
