/**
 * What the benchmarks, the fault suite, the soak and the tests add to the one process
 * wrapper (tools/devstack/process.ts): the run's secrets, the production environment of
 * a service, `npm run build`, a service's readiness and metrics over HTTP, and Child, a
 * service process with its URL, its /readyz and its memory sampled.
 */
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { newSealingKeyText, parseSealingKeys, SecretBox } from '@telemetry/platform';
import { ROOT, SERVICE_NAMES, serviceCommand } from '../tools/devstack/commands.js';
import { ManagedProcess, type Command } from '../tools/devstack/process.js';
import { RssTrack } from './sampler.js';

// The dev stack's pieces the benchmarks, the suites and the tests use through the harness.
export { freePort } from '../tools/devstack/ports.js';
export { Fatal, sleep, until } from '../tools/devstack/poll.js';
export type { Command, Exit } from '../tools/devstack/process.js';
export { ROOT, scriptCommand, serviceCommand, SOURCE_NODE_ARGS, type ServiceName } from '../tools/devstack/commands.js';

/**
 * The key ring (SECRETS_KEYS) of the services a benchmark, the soak, the fault suite or
 * the tests start: made anew per process, since their data lives no longer than the run.
 */
export const RUN_SECRETS_KEYS = newSealingKeyText('run');

/** The heartbeat key (HEARTBEAT_KEY) of the services a run starts. */
export const RUN_HEARTBEAT_KEY = randomBytes(32).toString('hex');

/** A SecretBox with RUN_SECRETS_KEYS: writes monitors those services can read. */
export function runSecretBox(): SecretBox {
  return new SecretBox(parseSealingKeys(RUN_SECRETS_KEYS));
}

/**
 * The environment the Dockerfile gives every service, so that benchmarks measure what
 * production runs: glibc keeps at most 2 malloc arenas (one per thread by default, whose
 * freed Kafka fetch buffers stay resident: the consumer's RSS fell from about 490 MB to
 * about 340 MB draining a backlog in bench:consume), and V8's young generation is held to
 * 16 MB semi-spaces (Node 24 grows them to 64 MB on a large machine: 128 MB of the heap
 * mostly empty; the consumer's peak RSS draining 1M messages fell from 436 to 363 MB at the
 * same drain rate, bench:consume). serviceEnv puts NODE_OPTIONS after the caller's own.
 */
export const PRODUCTION_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  NODE_OPTIONS: '--max-semi-space-size=16',
};

/**
 * `npm run build` (tsc -b): the benchmarks measure the compiled services. Fails with the
 * compiler's output when the build fails or leaves a main.js missing.
 */
export async function build(log: (line: string) => void): Promise<void> {
  const t = performance.now();
  try {
    await promisify(execFile)(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b'], {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    const out = (err as { stdout?: string }).stdout ?? String(err);
    throw new Error(`npm run build (tsc -b) failed; the benchmarks run the compiled services:\n${out.slice(-4000)}`);
  }
  for (const name of SERVICE_NAMES) {
    const main = serviceCommand(name, true)[1].at(-1)!;
    if (!existsSync(main)) throw new Error(`${main} is missing after npm run build`);
  }
  log(`build up to date (tsc -b, ${((performance.now() - t) / 1000).toFixed(1)} s); services run from dist/`);
}

/** The /readyz status of a service, or a short error name when it does not answer. */
export async function readyStatus(url: string): Promise<number | string> {
  try {
    const r = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
    await r.arrayBuffer();
    return r.status;
  } catch (err) {
    return (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
  }
}

/** The JSON answer of `method` `url` (a process's stats endpoint); throws on a status other than 2xx. */
export async function fetchJson<T>(url: string, method = 'GET', timeoutMs = 30_000): Promise<T> {
  const r = await fetch(url, { method, signal: AbortSignal.timeout(timeoutMs) });
  if (!r.ok) throw new Error(`${method} ${url}: ${r.status}`);
  return (await r.json()) as T;
}

/** A service's Prometheus text (/metrics), or '' when it does not answer. */
export async function metricsText(url: string): Promise<string> {
  try {
    const r = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(3000) });
    return r.ok ? await r.text() : '';
  } catch {
    return '';
  }
}

/** Sum of a Prometheus metric's samples whose labels contain every filter (e.g. `topic="x"`). */
export function metricSum(text: string, name: string, labelFilter?: string | readonly string[]): number {
  const filters = labelFilter === undefined ? [] : typeof labelFilter === 'string' ? [labelFilter] : labelFilter;
  let sum = 0;
  for (const line of text.split('\n')) {
    const rest = line.slice(name.length);
    if (!line.startsWith(name) || (rest[0] !== ' ' && rest[0] !== '{')) continue;
    if (!filters.every((f) => rest.includes(f))) continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) sum += v;
  }
  return sum;
}

export interface ChildOptions {
  name: string;
  command: Command;
  env?: NodeJS.ProcessEnv;
  /** Output goes here too (appended; every start is marked). */
  logFile?: string;
  /** Where it answers /readyz and /metrics. */
  url?: string;
  /**
   * Node options (e.g. --cpu-prof), after the command's own flags and before its script, so
   * a V8 flag here wins over the same flag in the command (the last one counts).
   */
  nodeArgs?: string[];
}

/** A service (or one of our scripts) as a process that can be started again, with its URL and its memory sampled. */
export class Child extends ManagedProcess {
  /** VmRSS of the current process, sampled every 100 ms. */
  rss = new RssTrack(undefined);

  constructor(readonly options: ChildOptions) {
    const [command, args] = options.command;
    super({
      name: options.name,
      command: [command, [...args.slice(0, -1), ...(options.nodeArgs ?? []), ...args.slice(-1)]],
      env: options.env,
      cwd: ROOT,
      logFile: options.logFile,
    });
  }

  get url(): string {
    return this.options.url ?? '';
  }

  get port(): number {
    return Number(new URL(this.url).port);
  }

  override start(): this {
    super.start();
    this.rss.stop();
    const rss = (this.rss = new RssTrack(this.pid));
    void this.exited().then(() => rss.stop());
    return this;
  }

  /**
   * As ManagedProcess.stop, with 20 s before SIGKILL (as this harness always gave our
   * services to drain, under load too: a forced stop must mean a hung one).
   */
  override stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs: number | null = 20_000) {
    return super.stop(signal, timeoutMs);
  }

  /** Polls GET /readyz until 200; fails at once when the process exits meanwhile. */
  async ready(timeoutMs = 90_000): Promise<this> {
    const ok = async (): Promise<true | undefined> => ((await readyStatus(this.url)) === 200 ? true : undefined);
    await this.waitUntil(`${this.name} ready at ${this.url}`, ok, timeoutMs, 100);
    return this;
  }

  metrics(): Promise<string> {
    return metricsText(this.url);
  }
}
