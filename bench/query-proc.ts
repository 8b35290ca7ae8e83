/**
 * Processes for `npm run bench:query`: the query service as a real child process (its
 * main.ts, the way production starts it) and CPU accounting from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** USER_HZ: clock ticks per second of /proc/<pid>/stat times (100 on Linux). */
const CLK_TCK = 100;

/** User and system CPU seconds of a process, or undefined once it is gone. */
export function processCpu(pid: number): { user: number; system: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: count fields after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) / CLK_TCK, system: Number(fields[12]) / CLK_TCK };
  } catch {
    return undefined;
  }
}

/** CPU seconds all cores have spent busy (neither idle nor waiting for I/O). */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const at = (i: number): number => v[i] ?? 0;
  // user nice system idle iowait irq softirq steal
  return (at(0) + at(1) + at(2) + at(5) + at(6) + at(7)) / CLK_TCK;
}

/** Child processes of `ppid` whose command line contains `needle`. */
export function childPids(ppid: number, needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent !== ppid) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmdline.includes(needle)) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** CPU use of named processes (and the machine) between two points in time. */
export class CpuMeter {
  private readonly pids = new Map<string, number | undefined>();

  constructor(pids: Record<string, number | undefined>) {
    for (const [name, pid] of Object.entries(pids)) this.pids.set(name, pid);
  }

  /**
   * Starts a window; the returned function ends it, giving % of one core per process
   * (`<name>` in total, `<name>_sys` of it in the kernel), the benchmark's own process
   * (`bench`), the machine (`machine`) and everything else (`other`).
   */
  start(): () => Record<string, number> {
    const t0 = performance.now();
    const machine0 = machineBusySeconds();
    const self0 = process.cpuUsage();
    const before = new Map([...this.pids].map(([name, pid]) => [name, pid ? processCpu(pid) : undefined]));
    return () => {
      const seconds = (performance.now() - t0) / 1000;
      const pct = (cpu: number): number => Math.round((cpu / seconds) * 100);
      const out: Record<string, number> = {};
      let known = 0;
      for (const [name, pid] of this.pids) {
        const b = before.get(name);
        const a = pid ? processCpu(pid) : undefined;
        if (a === undefined || b === undefined) continue;
        const total = a.user + a.system - b.user - b.system;
        out[name] = pct(total);
        out[`${name}_sys`] = pct(a.system - b.system);
        known += total;
      }
      const self = process.cpuUsage(self0);
      const selfSeconds = (self.user + self.system) / 1e6;
      out.bench = pct(selfSeconds);
      known += selfSeconds;
      const machine = machineBusySeconds() - machine0;
      out.machine = pct(machine);
      out.other = Math.max(0, pct(machine - known));
      return out;
    };
  }
}

export interface ServiceProcessOptions {
  cwd: string;
  /** Node arguments before the script (loader, conditions, profiling). */
  nodeArgs: string[];
  script: string;
  env: NodeJS.ProcessEnv;
  url: string;
  readyTimeoutMs?: number;
}

/** A service in its own OS process; output is kept (the last 64 KiB) for error messages. */
export class ServiceProcess {
  readonly child: ChildProcess;
  private out = '';
  private readonly exited: Promise<void>;

  constructor(private readonly opts: ServiceProcessOptions) {
    this.child = spawn(process.execPath, [...opts.nodeArgs, opts.script], {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (d: Buffer): void => {
      this.out = (this.out + d.toString()).slice(-65_536);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    // Never outlive the benchmark, even when it crashes.
    const child = this.child;
    process.once('exit', () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  output(): string {
    return this.out;
  }

  /** Lines of output that look like warnings or errors (LOG_LEVEL=warn logs nothing else). */
  warningLines(): string[] {
    return this.out.split('\n').filter((l) => l.trim() !== '');
  }

  async ready(): Promise<void> {
    const deadline = Date.now() + (this.opts.readyTimeoutMs ?? 60_000);
    for (;;) {
      if (!this.running) throw new Error(`the service exited during start:\n${this.out}`);
      try {
        const r = await fetch(`${this.opts.url}/readyz`, { signal: AbortSignal.timeout(1000) });
        if (r.ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`the service was not ready in time:\n${this.out}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** SIGTERM (graceful: drains and writes a CPU profile when asked), SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 15_000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(t);
  }
}
