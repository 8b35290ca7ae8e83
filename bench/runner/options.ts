/**
 * The settings of `npm run bench:runner`, read once from the environment (see main.ts for
 * each variable and its default) and reported as its `config`, the benchmark (its name
 * and log), and the runner's metrics the measurement reads.
 */
import { runnerSpec } from '@telemetry/check-runner';
import { Benchmark, envNumber, SMOKE } from '../../harness/run.js';
import type { RunnerReport } from './report.js';

export const bench = new Benchmark('bench:runner');
export const log = bench.log;

function envLevels(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  return raw.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: expected monitor counts such as 500,2000, not ${raw}`);
    return n;
  });
}

export const LEVELS = envLevels('BENCH_RUNNER_MONITORS', SMOKE ? [20] : [500, 2000]);
export const SECONDS = envNumber('BENCH_RUNNER_SECONDS', 30, 1, true, 3);
export const WARMUP_SECONDS = envNumber('BENCH_RUNNER_WARMUP_SECONDS', 5, 0, true, 0);
export const INTERVAL_SECONDS = envNumber('BENCH_RUNNER_INTERVAL_SECONDS', 1, 1, true);
export const TIMEOUT_MS = envNumber('BENCH_RUNNER_TIMEOUT_MS', 500, 100, true);
export const PARTITIONS = envNumber('BENCH_RUNNER_PARTITIONS', 6, 1, true);
/** The runner's default (services/check-runner/src/config.ts); the benchmark does not change it. */
export const MAX_CONCURRENT_CHECKS = Number(runnerSpec.maxConcurrentChecks.default);
export const SKIP_REASONS = ['overlap', 'busy', 'unpublished', 'handed_over'] as const;
export const START_DELAY = 'runner_check_start_delay_seconds';
if (TIMEOUT_MS > INTERVAL_SECONDS * 1000) throw new Error('BENCH_RUNNER_TIMEOUT_MS must not exceed the interval');

/** The settings as the report shows them. */
export const config: RunnerReport['config'] = {
  levels: LEVELS,
  seconds: SECONDS,
  warmupSeconds: WARMUP_SECONDS,
  intervalSeconds: INTERVAL_SECONDS,
  timeoutMs: TIMEOUT_MS,
  partitions: PARTITIONS,
  maxConcurrentChecks: MAX_CONCURRENT_CHECKS,
};
