/**
 * What every benchmark, the fault suite and the soak share around their measurements:
 * smoke mode, settings from the environment, clean-up on the way out (also on Ctrl-C),
 * the stack with the processes to sample and the machine's description, and the end of a
 * run: tables on stdout, its section written (not in smoke mode), every figure as one JSON
 * object on the LAST line of stdout.
 */
import { execFileSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { DEFAULT_TENANT } from '@telemetry/contract';
import { createClickHouse } from '@telemetry/platform';
import { DEFAULT_MONITOR, newMonitorId, newWebhookSecret, type StoredMonitor } from '@telemetry/store';
import { KAFKA_VERSION } from '../tools/devstack/installers.js';
import { topicEnv } from '../tools/devstack/provision.js';
import { startStack, type Stack, type StackOptions } from '../tools/devstack/stack.js';
import { build, PRODUCTION_ENV, RUN_HEARTBEAT_KEY, RUN_SECRETS_KEYS } from './processes.js';
import { BENCHMARKS_MD, writeSection } from './report.js';
import { stackPids } from './sampler.js';

/**
 * Smoke mode (`--smoke` or BENCH_SMOKE=1): the same code path for a few seconds with tiny
 * counts, so that `npm test` notices a benchmark that no longer runs; writes no Markdown.
 */
export const SMOKE = process.argv.includes('--smoke') || process.env.BENCH_SMOKE === '1';

/** A number from the environment (`fallback`, or `smoke` in smoke mode, when unset), at least `min`. */
export function envNumber(name: string, fallback: number, min: number, integer = false, smoke = fallback): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return SMOKE ? smoke : fallback;
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
  return [...vars, `npm run ${script}${SMOKE ? ' -- --smoke' : ''}`].join(' ');
}

export const logger =
  (tag: string) =>
  (line: string): void => {
    process.stderr.write(`[${tag} ${new Date().toISOString().slice(11, 23)}] ${line}\n`);
  };

/** Clean-up steps run once, in reverse order: by run(), or on SIGINT / SIGTERM (then exit 130). */
export class Cleanups {
  private readonly steps: (() => Promise<unknown>)[] = [];
  private running: Promise<void> | undefined;

  constructor(private readonly log: (line: string) => void) {
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      process.once(sig, () => {
        log(`${sig}: stopping...`);
        void this.run().finally(() => process.exit(130));
      });
    }
  }

  push(step: () => Promise<unknown>): void {
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

export interface Machine {
  nproc: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  kafka: string;
  clickhouse: string;
}

export interface BenchStack {
  stack: Stack;
  /** The Kafka JVM and ClickHouse when they are our children (local mode), for the CPU meter. */
  pids: { kafka?: number; clickhouse?: number };
  machine: Machine;
}

/** The stack (tools/devstack), the processes to sample, and the machine's description. */
export async function benchStack(
  cleanups: Cleanups,
  log: (line: string) => void,
  o: StackOptions = {},
): Promise<BenchStack> {
  const stack = await startStack({ log: (l) => log(`stack: ${l}`), ...o });
  cleanups.push(() => stack.stop());
  const ch = createClickHouse({ url: stack.clickhouseUrl, username: 'default', password: '', database: 'default' });
  const rs = await ch.query({ query: 'SELECT version() AS v', format: 'JSONEachRow' });
  const clickhouse = (await rs.json<{ v: string }>())[0]?.v ?? 'unknown';
  await ch.close();
  let nproc = cpus().length;
  try {
    nproc = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {
    // keep os.cpus()
  }
  const pids = stack.mode === 'local' ? stackPids() : {};
  log(`stack ${stack.mode}: kafka ${stack.kafkaBrokers}, clickhouse ${stack.clickhouseUrl} ${clickhouse}`);
  return {
    stack,
    pids,
    machine: {
      nproc,
      cpuModel: (cpus()[0]?.model ?? 'unknown').trim(),
      memoryGiB: totalmem() / 2 ** 30,
      node: process.version,
      kafka: stack.mode === 'local' ? KAFKA_VERSION : `${stack.mode} (${stack.kafkaBrokers})`,
      clickhouse,
    },
  };
}

/** Every topic a service subscribes to or writes, under `prefix`, and the services' env for them. */
export function pipelineTopics(prefix: string) {
  const topics = {
    events: `${prefix}.events`,
    checks: `${prefix}.checks`,
    deadLetter: `${prefix}.dead-letter`,
    alerts: `${prefix}.alerts`,
    webhookDeliveries: `${prefix}.webhook-deliveries`,
    audit: `${prefix}.audit`,
    monitorChanges: `${prefix}.monitor-changes`,
    screenshots: `${prefix}.screenshots`,
    runRequests: `${prefix}.run-requests`,
    runReplies: `${prefix}.run-replies`,
  };
  return { topics, list: Object.values(topics), env: topicEnv(topics) };
}

/**
 * Monitor `i` of a benchmark's registry: an HTTP monitor of the default tenant named
 * `bench <i>`, with a webhook secret to seal, its URL made from its id, `extra` on top.
 */
export function benchMonitor(
  i: number,
  url: (id: string) => string,
  now: string,
  extra: Partial<StoredMonitor> = {},
): Omit<StoredMonitor, 'version'> {
  const id = newMonitorId();
  return {
    ...DEFAULT_MONITOR,
    tenant_id: DEFAULT_TENANT,
    id,
    key: null,
    name: `bench ${i}`,
    url: url(id),
    webhook_secret: newWebhookSecret(),
    created_at: now,
    updated_at: now,
    ...extra,
  };
}

/**
 * The environment of a service a benchmark starts: the stack's Kafka and ClickHouse,
 * `database`, warn-level logs, no migrations, listening on 127.0.0.1:`port`; `extra` on top.
 */
export function serviceEnv(
  stack: Pick<Stack, 'kafkaBrokers' | 'clickhouseUrl'>,
  database: string,
  port: number,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...PRODUCTION_ENV,
    NODE_OPTIONS: [process.env.NODE_OPTIONS, PRODUCTION_ENV.NODE_OPTIONS].filter(Boolean).join(' '),
    LOG_LEVEL: 'warn',
    KAFKA_BROKERS: stack.kafkaBrokers,
    CLICKHOUSE_URL: stack.clickhouseUrl,
    CLICKHOUSE_DATABASE: database,
    MIGRATE_ON_START: 'false',
    HOST: '127.0.0.1',
    PORT: String(port),
    SECRETS_KEYS: RUN_SECRETS_KEYS,
    HEARTBEAT_KEY: RUN_HEARTBEAT_KEY,
    ...extra,
  };
}

export interface FinishOptions<R> {
  log: (line: string) => void;
  cleanups: Cleanups;
  /** The run's Markdown section (written unless smoke mode or BENCH_WRITE=0). */
  section?: { file: string; name: string; title?: string; render: (report: R) => string };
  /** What is printed to stdout before the JSON line. */
  tables: (report: R) => string;
  /** Exit code 0 or 1 for a report. */
  ok: (report: R) => boolean;
}

/**
 * Runs `main`, cleans up, writes its section, prints its tables and then every figure as
 * one JSON object on the last line of stdout, and exits (1 on error or when not ok).
 */
export async function finish<R extends object>(main: () => Promise<R>, o: FinishOptions<R>): Promise<never> {
  let exitCode = 1;
  try {
    const report = await main();
    await o.cleanups.run();
    const s = o.section;
    if (s && !SMOKE && process.env.BENCH_WRITE !== '0') {
      writeSection(s.file, s.name, s.render(report), s.title);
      o.log(`wrote the ${s.name} section of ${s.file}`);
    }
    const ok = o.ok(report);
    process.stdout.write(`${o.tables(report)}\n\n`);
    process.stdout.write(`${JSON.stringify({ ok, smoke: SMOKE, ...report })}\n`);
    exitCode = ok ? 0 : 1;
  } catch (err) {
    o.log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await o.cleanups.run();
    process.stdout.write(`${JSON.stringify({ ok: false, smoke: SMOKE, error: String(err) })}\n`);
  }
  process.exit(exitCode);
}

/** What a benchmark prints and writes from its report (see FinishOptions). */
export interface BenchOutput<R> {
  /** Its section of BENCHMARKS.md. */
  render: (report: R) => string;
  tables: (report: R) => string;
  ok: (report: R) => boolean;
}

/**
 * One benchmark, `npm run <script>`: its logger, the head of its report (the command that
 * reproduces it, the date, the machine) and its run: build, `main`, then finish() with its
 * section (named `script`) of BENCHMARKS.md.
 */
export class Benchmark {
  readonly log: (line: string) => void;

  constructor(readonly script: string) {
    this.log = logger(script);
  }

  head<M extends Machine>(machine: M, date = new Date().toISOString()): { command: string; date: string; machine: M } {
    return { command: benchCommand(this.script), date, machine };
  }

  /** The stack, logged under this benchmark's tag (benchStack). */
  stack(cleanups: Cleanups, o: StackOptions = {}): Promise<BenchStack> {
    return benchStack(cleanups, this.log, o);
  }

  run<R extends object>(main: (cleanups: Cleanups) => Promise<R>, out: BenchOutput<R>): Promise<never> {
    const { log, script } = this;
    const cleanups = new Cleanups(log);
    return finish(
      async () => {
        await build(log);
        return main(cleanups);
      },
      {
        log,
        cleanups,
        section: { file: BENCHMARKS_MD, name: script, title: '# Benchmarks\n', render: out.render },
        tables: out.tables,
        ok: out.ok,
      },
    );
  }
}
