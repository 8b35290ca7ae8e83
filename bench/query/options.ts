/**
 * The settings of `npm run bench:query`, read once from the environment (see main.ts for
 * each variable and its default), the benchmark (its name and log), and the goals its
 * targets are judged against.
 */
import { Benchmark, envNumber } from '../../harness/run.js';

export const bench = new Benchmark('bench:query');
export const log = bench.log;

/** The service passes this to ClickHouse with every query; the direct requests send it too. */
export const SERVICE_MAX_RESULT_ROWS = 100_000;
export const cfg = {
  checks: envNumber('BENCH_CHECKS', 10_000_000, 1, true, 24_000),
  monitors: envNumber('BENCH_MONITORS', 5000, 1, true, 8),
  seconds: envNumber('BENCH_SECONDS', 10, 0.5, false, 1),
  rounds: envNumber('BENCH_ROUNDS', 2, 1, true, 1),
  connections: envNumber('BENCH_CONNECTIONS', 16, 1, true, 4),
  rate: envNumber('BENCH_RATE', 500, 1, true, 50),
  rateConnections: envNumber('BENCH_RATE_CONNECTIONS', 10, 1, true, 2),
  warmup: envNumber('BENCH_WARMUP_SECONDS', 2, 0, false, 0),
  fixtures: envNumber('BENCH_FIXTURES', 200, 1, true, 4),
  deepPage: envNumber('BENCH_DEEP_PAGE', 10, 1, true, 2),
  rangeHours: envNumber('BENCH_RANGE_HOURS', 4, 1, true),
  serialSeconds: envNumber('BENCH_SERIAL_SECONDS', 3, 0.5, false, 0.5),
  profile: process.env.BENCH_PROFILE === '1',
  /** BENCH_TRACE_GC=1: the service runs with --trace-gc, its output kept in a file (logged). */
  traceGc: process.env.BENCH_TRACE_GC === '1',
  /**
   * BENCH_SCENARIOS=first_page,deep_page: only these closed-loop scenarios (keys as in the
   * scenario table; all when unset). The fixed-rate first page always runs.
   */
  scenarios: (process.env.BENCH_SCENARIOS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
  /** BENCH_SERVICE_NODE_ARGS="--min-semi-space-size=16": extra node flags for the query service (experiments). */
  serviceNodeArgs: (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(/\s+/).filter(Boolean),
};
/** Paced runs: requests waiting at once before the schedule's next ones are dropped. */
export const PACED_MAX_IN_FLIGHT = 256;
export const TARGET_P99_MS = 10;
/** Issue 17: the first page beats ClickHouse (the hot tail); summaries keep up with it. Issue 48: deep pages too (>= 1.0x). */
export function throughputGoal(scenario: string): number {
  return scenario === 'first_page' ? 1.5 : scenario === 'deep_page' ? 1.0 : scenario.startsWith('summary') ? 1.0 : 0.8;
}
export const TARGET_P99_RATIO = 2;
/** Issue 48's name for the summary_day throughput target (judged against throughputGoal, 1.0x). */
export const SUMMARY_DAY_GOAL = '30-day summary by day / direct ClickHouse (same checks_hourly SQL)';
