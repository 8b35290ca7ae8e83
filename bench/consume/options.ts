/**
 * The settings of `npm run bench:consume`, read once from the environment (see main.ts for
 * each variable and its default), its fixed limits, the benchmark (its name and log), and
 * which consumer it measures: the
 * commit its sources are at, the defaults of the settings the report shows, and the
 * librdkafka on the machine.
 */
import { execFileSync } from 'node:child_process';
import { consumerSpec } from '@telemetry/stream-consumer';
import { ROOT } from '../../harness/processes.js';
import { Benchmark, envNumber, SMOKE } from '../../harness/run.js';

export const bench = new Benchmark('bench:consume');
export const log = bench.log;

export const PARTITIONS = 6;
export const EVENTS = envNumber('BENCH_EVENTS', 1_000_000, 1000, true, 2000);
export const FRESH_SECONDS = envNumber('BENCH_FRESHNESS_SECONDS', 20, 1, false, 2);
export const FRESH_WARMUP_SECONDS = SMOKE ? 1 : 3;
export const FRESH_POLL_MS = envNumber('BENCH_FRESHNESS_POLL_MS', 50, 5, true);
export const FRESH_RATE = envNumber('BENCH_FRESHNESS_RATE', 0, 0);
export const FRESH_BATCH = envNumber('BENCH_FRESHNESS_BATCH', 20, 1, true);
export const ENGINE_CONSUMERS = envNumber('BENCH_ENGINE_CONSUMERS', 1, 1, true);
export const CLIENT_ROUNDS = envNumber('BENCH_CLIENT_ROUNDS', 3, 1, true, 1);
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
export const CONSUMER_ENV = settings('BENCH_CONSUMER_ENV', '');
/**
 * What the comparison run changes over it: by default every event message parsed as before
 * issue 48's byte decoder (EVENT_DECODER=json), so each run shows the decoder before/after;
 * BENCH_COMPARE_ENV=INSERT_FORMAT=JSONEachRow compares the insert formats instead.
 */
export const COMPARE_ENV = settings('BENCH_COMPARE_ENV', 'EVENT_DECODER=json');
export const BASELINE = process.env.BENCH_BASELINE !== '0' && Object.keys(COMPARE_ENV).length > 0;
export const PROFILE = process.env.BENCH_PROFILE === '1';
export const STALL_MS = 120_000;
/**
 * The Kafka engine path may stop a few rows short (seen: 999,999 of 1,000,000 on 18.16): once
 * at least ENGINE_MIN_SHARE of the rows arrived and none came for ENGINE_QUIET_MS, its drain
 * ends at its last row and the missing rows are reported (ours must deliver every row).
 */
export const ENGINE_QUIET_MS = SMOKE ? 5000 : 20_000;
export const ENGINE_MIN_SHARE = 0.999;
/** Issue 16: the consumer's peak RSS while it drains the backlog. */
export const MAX_RSS_MB = 300;
export const NOISE_PERCENT = 25;

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

/** The consumer measured: its version and the defaults of the settings the report shows. */
export function consumerUnderTest(): { version: string; defaults: Record<string, string> } {
  const shown = [
    'BATCH_MAX_ROWS',
    'BATCH_MAX_AGE_MS',
    'MAX_BUFFERED_ROWS',
    'PARTITIONS_CONSUMED_CONCURRENTLY',
    'INSERT_FORMAT',
    'EVENT_DECODER',
    'INSERT_CONCURRENCY',
    'KAFKA_CLIENT',
  ];
  const specs = Object.values(consumerSpec) as { name: string; default: string | undefined }[];
  return {
    version: consumerVersion(),
    defaults: Object.fromEntries(
      specs.filter((s) => shown.includes(s.name) && s.default !== undefined).map((s) => [s.name, s.default!]),
    ),
  };
}

/** The version of the machine's librdkafka package, or 'unknown'. */
export function librdkafkaVersion(): string {
  try {
    return execFileSync('dpkg-query', ['-W', '-f=${Version}', 'librdkafka1'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}
