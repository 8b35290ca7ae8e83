/**
 * What the benchmark commands share: their settings from the environment, the command
 * line that reproduces a run, clean-up on the way out, and their BENCHMARKS.md sections.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeSection } from '../tools/devstack/sections.js';
import type { Stack } from '../tools/devstack/stack.js';

const BENCHMARKS_MD = join(dirname(fileURLToPath(import.meta.url)), '..', 'BENCHMARKS.md');

/** A number from the environment (`fallback` when unset), at least `min`; an integer if asked. */
export function envNumber(name: string, fallback: number, min: number, integer = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < min || (integer && !Number.isInteger(v))) {
    throw new Error(`${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, not ${raw}`);
  }
  return v;
}

/** The command that reproduces this run: every BENCH_* variable set, then `npm run <script>`. */
export function benchCommand(script: string): string {
  const vars = Object.entries(process.env)
    .filter(([k]) => k.startsWith('BENCH_'))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`);
  return [...vars, `npm run ${script}`].join(' ');
}

/**
 * Clean-up steps (stop servers, close clients), run once in reverse order: by run(), or
 * on SIGINT / SIGTERM, after which the process exits with 130.
 */
export class Cleanups {
  private readonly steps: (() => Promise<void>)[] = [];
  private running: Promise<void> | undefined;

  constructor(private readonly log: (line: string) => void) {
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      process.once(sig, () => {
        log(`${sig}: stopping...`);
        void this.run().finally(() => process.exit(130));
      });
    }
  }

  push(step: () => Promise<void>): void {
    this.steps.push(step);
  }

  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.reverse()) {
        await step().catch((err: unknown) => this.log(`cleanup: ${String(err)}`));
      }
    })();
    return this.running;
  }
}

/** Markdown from lines, with runs of blank lines (left by empty optional parts) made one. */
export function markdown(lines: readonly string[]): string {
  return lines.filter((l, i, all) => !(l === '' && all[i - 1] === '')).join('\n');
}

/** Replaces only the `name` section of BENCHMARKS.md-like `file` (appended with its markers when missing). */
function writeBenchSection(file: string, name: string, body: string): void {
  writeSection(file, name, body, '# Benchmarks\n');
}

/**
 * The environment of a service a benchmark starts: the stack's Kafka and ClickHouse,
 * `database`, warn-level logs, listening on 127.0.0.1:`port`; `extra` on top.
 */
export function serviceEnv(
  stack: Pick<Stack, 'kafkaBrokers' | 'clickhouseUrl'>,
  database: string,
  port: number,
  extra: Record<string, string>,
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    LOG_LEVEL: 'warn',
    KAFKA_BROKERS: stack.kafkaBrokers,
    CLICKHOUSE_URL: stack.clickhouseUrl,
    CLICKHOUSE_DATABASE: database,
    HOST: '127.0.0.1',
    PORT: String(port),
    ...extra,
  };
}

export interface FinishOptions<R> {
  log: (line: string) => void;
  cleanups: Cleanups;
  /** The report's section of BENCHMARKS.md (written unless BENCH_WRITE=0). */
  section: { name: string; render: (report: R) => string };
  /** The tables printed to stdout. */
  tables: (report: R) => string;
  /** Exit code 0 or 1 for a report. */
  ok: (report: R) => boolean;
}

/**
 * Runs a benchmark's main, cleans up, writes its section (BENCH_WRITE=0: not), prints its tables and then every
 * figure as one JSON object on the last line of stdout, and exits (1 on error).
 */
export async function finish<R extends object>(main: () => Promise<R>, o: FinishOptions<R>): Promise<never> {
  let exitCode = 1;
  try {
    const report = await main();
    await o.cleanups.run();
    if (process.env.BENCH_WRITE !== '0') {
      writeBenchSection(BENCHMARKS_MD, o.section.name, o.section.render(report));
      o.log(`wrote the ${o.section.name} section of BENCHMARKS.md`);
    }
    const ok = o.ok(report);
    process.stdout.write(`${o.tables(report)}\n\n`);
    process.stdout.write(`${JSON.stringify({ ok, ...report })}\n`);
    exitCode = ok ? 0 : 1;
  } catch (err) {
    o.log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await o.cleanups.run();
    process.stdout.write(`${JSON.stringify({ ok: false, error: String(err) })}\n`);
  }
  process.exit(exitCode);
}
