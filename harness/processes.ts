import { randomBytes } from 'node:crypto';
/**
 * The one child-process module of the benchmarks, the fault suite, the soak and the tests:
 * how a service or one of our scripts is started (compiled or from source), a process that
 * can be started, polled until ready, signalled, restarted and stopped (SIGTERM, then
 * SIGKILL), with its output in a log file and its last lines kept for error messages.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { newSealingKeyText, parseSealingKeys, SecretBox } from '@telemetry/platform';
import { RssTrack } from './sampler.js';

export { freePort } from '../tools/devstack/stack.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

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
export type ServiceName = 'ingest-gateway' | 'stream-consumer' | 'query-service' | 'check-runner';
export type Command = [command: string, args: string[]];

// NOTE: kafkajs 2.2.4 schedules a negative timeout when idle (harmless; it fires at once).
const NODE_FLAGS = ['--disable-warning=TimeoutNegativeWarning'];

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
/** Node arguments that run our TypeScript sources (tsx, the `source` export condition). */
export const SOURCE_NODE_ARGS: readonly string[] = ['--conditions=source', ...NODE_FLAGS, '--import', 'tsx'];

/**
 * A service's composition root under the pinned Node: `compiled`, its `tsc -b` output
 * (services/<name>/dist/main.js) under plain node, as production runs it; else its main.ts
 * through tsx (npm start, the tests).
 */
export function serviceCommand(name: ServiceName, compiled = false): Command {
  const dir = join(ROOT, 'services', name);
  return compiled
    ? [process.execPath, [...NODE_FLAGS, join(dir, 'dist', 'main.js')]]
    : [process.execPath, [...SOURCE_NODE_ARGS, join(dir, 'src', 'main.ts')]];
}

/** One of our scripts (e.g. bench/ingest/baseline.ts): compiled by tsconfig.dev.json into .tsout/, or through tsx. */
export function scriptCommand(path: string, compiled = false): Command {
  return compiled
    ? [process.execPath, [...NODE_FLAGS, join(ROOT, '.tsout', path.replace(/\.ts$/, '.js'))]]
    : [process.execPath, [...SOURCE_NODE_ARGS, join(ROOT, path)]];
}

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
  for (const name of ['ingest-gateway', 'stream-consumer', 'query-service', 'check-runner'] as const) {
    const main = serviceCommand(name, true)[1].at(-1)!;
    if (!existsSync(main)) throw new Error(`${main} is missing after npm run build`);
  }
  log(`build up to date (tsc -b, ${((performance.now() - t) / 1000).toFixed(1)} s); services run from dist/`);
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Polls `probe` until it returns a value (errors count as "not yet"); throws at the deadline. */
export async function until<T>(
  what: string | (() => string),
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      if (err instanceof Fatal) throw err;
      last = err;
    }
    if (Date.now() > deadline) {
      const w = typeof what === 'string' ? what : what();
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${w}${last instanceof Error ? `: ${last.message}` : ''}`,
      );
    }
    await sleep(everyMs);
  }
}

/** An error that ends an `until` at once (e.g. the process exited). */
export class Fatal extends Error {}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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

// Children must not outlive the process that started them, even when it crashes.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export interface ChildOptions {
  name: string;
  command: Command;
  env?: NodeJS.ProcessEnv;
  /** Output goes here too (appended; every start is marked). */
  logFile?: string;
  /** Where it answers /readyz and /metrics. */
  url?: string;
  /** Node options before the command's own (e.g. --cpu-prof). */
  nodeArgs?: string[];
}

/** A child process that can be started again (same command, env and URL) after it exited. */
export class Child {
  private child: ChildProcess | undefined;
  private exitPromise: Promise<Exit> = Promise.resolve({ code: null, signal: null });
  private tail: string[] = [];
  private readonly log: WriteStream | undefined;
  /** VmRSS of the current process, sampled every 100 ms. */
  rss = new RssTrack(undefined);
  /** performance.now() at the last start. */
  spawnedAt = 0;
  readonly exits: (Exit & { pid: number | undefined; at: string })[] = [];

  constructor(readonly o: ChildOptions) {
    this.log = o.logFile ? createWriteStream(o.logFile, { flags: 'a' }) : undefined;
  }

  get name(): string {
    return this.o.name;
  }

  get url(): string {
    return this.o.url ?? '';
  }

  get port(): number {
    return Number(new URL(this.url).port);
  }

  get logFile(): string {
    return this.o.logFile ?? '(no log file)';
  }

  get pid(): number {
    if (this.child?.pid === undefined) throw new Error(`${this.name} is not started`);
    return this.child.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The last lines it wrote (stdout and stderr). */
  output(): string {
    return this.tail.join('');
  }

  start(): this {
    if (this.running) throw new Error(`${this.name} is already running`);
    const [command, args] = this.o.command;
    const child = spawn(command, [...(this.o.nodeArgs ?? []), ...args], {
      cwd: ROOT,
      env: this.o.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.spawnedAt = performance.now();
    live.add(child);
    this.rss.stop();
    this.rss = new RssTrack(child.pid);
    this.log?.write(`\n=== ${new Date().toISOString()} start pid ${child.pid} ${this.url}\n`);
    const keep = (d: Buffer): void => {
      this.log?.write(d);
      this.tail.push(d.toString());
      if (this.tail.length > 200) this.tail.splice(0, this.tail.length - 200);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exitPromise = new Promise<Exit>((resolve) =>
      child.once('exit', (code, signal) => {
        live.delete(child);
        this.rss.stop();
        this.exits.push({ code, signal, pid: child.pid, at: new Date().toISOString() });
        this.log?.write(`=== ${new Date().toISOString()} pid ${child.pid} exited code ${code} signal ${signal}\n`);
        resolve({ code, signal });
      }),
    );
    return this;
  }

  /** Polls GET /readyz until 200; fails at once when the process exits meanwhile. */
  async ready(timeoutMs = 90_000): Promise<this> {
    await until(
      `${this.name} ready at ${this.url}; see ${this.logFile}`,
      async () => {
        if (!this.running) throw new Fatal(`${this.name} exited while starting:\n${this.output().slice(-3000)}`);
        return (await readyStatus(this.url)) === 200 ? true : undefined;
      },
      timeoutMs,
      100,
    );
    return this;
  }

  metrics(): Promise<string> {
    return metricsText(this.url);
  }

  /** Sends `signal` without waiting. */
  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child?.kill(signal);
  }

  exited(): Promise<Exit> {
    return this.exitPromise;
  }

  /** Sends `signal` once (a second SIGTERM makes our services exit at once) and waits (see waitExit). */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 20_000): Promise<Exit & { forced: boolean }> {
    if (!this.running) return { ...(await this.exitPromise), forced: false };
    this.child?.kill(signal);
    return this.waitExit(timeoutMs);
  }

  /** Waits for the exit; after `timeoutMs` sends SIGKILL and says so (a hung shutdown shows). */
  async waitExit(timeoutMs: number): Promise<Exit & { forced: boolean }> {
    let forced = false;
    const t = setTimeout(() => {
      forced = this.running;
      this.child?.kill('SIGKILL');
    }, timeoutMs);
    const exit = await this.exitPromise;
    clearTimeout(t);
    return { ...exit, forced };
  }

  /** Stops it and closes its log. */
  async close(timeoutMs = 10_000): Promise<void> {
    await this.stop('SIGTERM', timeoutMs);
    await new Promise<void>((resolve) => (this.log ? this.log.end(() => resolve()) : resolve()));
  }
}
