/**
 * Process helpers of `npm run bench:consume`: a service (main.ts) in a child process with
 * its RSS sampled, and CPU accounting from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { serviceCommand, type ServiceName } from '../tools/devstack/service-command.js';

// The /proc readers are shared with bench:ingest (bench/proc.ts).
export { childPids, cpuSeconds, machineBusySeconds, rssKiB } from './proc.js';
import { cpuSeconds, machineBusySeconds, rssKiB } from './proc.js';

/** CPU used by a set of processes and by the whole machine between two points in time. */
export interface CpuWindow {
  seconds: number;
  /** % of one core, per named process. */
  processes: Record<string, number>;
  /** What the rest of the machine used meanwhile (processes outside the benchmark), % of one core. */
  otherPercent: number;
  /** All cores together, % of one core. */
  machinePercent: number;
}

export class CpuMeter {
  private readonly start: { t: number; busy: number; proc: Map<string, number> };

  constructor(private readonly pids: Record<string, number | undefined>) {
    this.start = { t: performance.now(), busy: machineBusySeconds(), proc: this.read() };
  }

  private read(): Map<string, number> {
    const m = new Map<string, number>();
    for (const [name, pid] of Object.entries(this.pids)) {
      if (pid === undefined) continue;
      const s = cpuSeconds(pid);
      if (s !== undefined) m.set(name, s);
    }
    return m;
  }

  stop(): CpuWindow {
    const seconds = (performance.now() - this.start.t) / 1000;
    const now = this.read();
    const busy = machineBusySeconds() - this.start.busy;
    const processes: Record<string, number> = {};
    let ours = 0;
    for (const [name, s] of now) {
      const used = s - (this.start.proc.get(name) ?? s);
      ours += used;
      processes[name] = Math.round((used / seconds) * 100);
    }
    return {
      seconds,
      processes,
      otherPercent: Math.max(0, Math.round(((busy - ours) / seconds) * 100)),
      machinePercent: Math.round((busy / seconds) * 100),
    };
  }
}

export interface RssSample {
  /** ms since the process was spawned. */
  t: number;
  kib: number;
}

export interface ServiceSpec {
  name: string;
  service: ServiceName;
  cwd: string;
  env: NodeJS.ProcessEnv;
  port: number;
  logFile: string;
  /** Node options before the shared ones (e.g. --cpu-prof). */
  nodeArgs?: string[];
}

const live = new Set<ServiceProcess>();
process.once('exit', () => {
  for (const s of live) s.kill();
});

/**
 * A service started the way the dev tools and tests start it (tools/devstack/service-command:
 * its main.ts, signal handlers on), in its own process, its VmRSS sampled every 100 ms.
 */
export class ServiceProcess {
  readonly url: string;
  readonly spawnedAt = performance.now();
  readonly samples: RssSample[] = [];
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  private readonly sampler: NodeJS.Timeout;

  constructor(readonly spec: ServiceSpec) {
    this.url = `http://127.0.0.1:${spec.port}`;
    const out = openSync(spec.logFile, 'a');
    const [command, args] = serviceCommand(spec.service);
    this.child = spawn(command, [...(spec.nodeArgs ?? []), ...args], {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ['ignore', out, out],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    live.add(this);
    void this.exited.then(() => live.delete(this));
    this.sampler = setInterval(() => this.sample(), 100);
    this.sampler.unref();
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error(`${this.spec.name} did not start`);
    return this.child.pid;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  sample(): number | undefined {
    if (this.child.pid === undefined) return undefined;
    const kib = rssKiB(this.child.pid);
    if (kib !== undefined) this.samples.push({ t: performance.now() - this.spawnedAt, kib });
    return kib;
  }

  /** Highest VmRSS (KiB) sampled between two times (ms since spawn). */
  peakKiB(fromMs = 0, toMs = Number.POSITIVE_INFINITY): number {
    let peak = 0;
    for (const s of this.samples) if (s.t >= fromMs && s.t <= toMs && s.kib > peak) peak = s.kib;
    return peak;
  }

  /** Waits for GET /readyz to answer 200. */
  async ready(timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.running) throw new Error(`${this.spec.name} exited during start-up; see ${this.spec.logFile}`);
      const ok = await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${this.spec.name} was not ready within ${timeoutMs} ms; see ${this.spec.logFile}`);
  }

  /** The service's Prometheus text (/metrics), or '' when it does not answer. */
  async metrics(): Promise<string> {
    try {
      const r = await fetch(`${this.url}/metrics`, { signal: AbortSignal.timeout(3000) });
      return r.ok ? await r.text() : '';
    } catch {
      return '';
    }
  }

  /** SIGTERM (the services drain and commit), then SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 20_000): Promise<void> {
    clearInterval(this.sampler);
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(t);
  }

  /** Last resort when the bench process itself exits. */
  kill(): void {
    if (this.running) this.child.kill('SIGKILL');
  }
}

/**
 * Sum of a Prometheus metric's samples whose name (and labels, if given: each filter such
 * as `topic="x"` must appear) match.
 */
export function metricSum(text: string, name: string, labelFilter?: string | readonly string[]): number {
  const filters = labelFilter === undefined ? [] : typeof labelFilter === 'string' ? [labelFilter] : labelFilter;
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    if (!filters.every((f) => rest.includes(f))) continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) sum += v;
  }
  return sum;
}
