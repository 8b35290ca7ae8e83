import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on Linux everywhere). */
const CLK_TCK = 100;

/** VmRSS of a process in KiB, or undefined once it is gone. */
export function rssKiB(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** User + system CPU seconds a process has used, or undefined once it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: count fields after its closing paren.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime, stime (fields 14, 15)
  } catch {
    return undefined;
  }
}

/** CPU seconds all cores of the machine have spent busy (not idle or waiting on I/O). */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const [user, nice, system, _idle, _iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / CLK_TCK;
}

/** Child processes of `ppid` whose command name (15 chars at most) is `comm`. */
export function childPids(ppid: number, comm: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === ppid && name === comm) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The first child process of `ppid` whose command name is `comm` (e.g. the Kafka JVM). */
export function childPid(ppid: number, comm: string): number | undefined {
  return childPids(ppid, comm)[0];
}

export interface ServerSpec {
  name: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  port: number;
  logFile: string;
}

/** A server in a child process, with its RSS sampled while it runs. */
export class ChildServer {
  readonly url: string;
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  private readonly sampler: NodeJS.Timeout;
  /** Highest VmRSS seen since start, and since the last resetWindow(), in KiB. */
  peakKiB = 0;
  windowPeakKiB = 0;

  constructor(readonly spec: ServerSpec) {
    this.url = `http://127.0.0.1:${spec.port}`;
    const out = openSync(spec.logFile, 'a');
    this.child = spawn(process.execPath, spec.args, {
      cwd: spec.cwd,
      stdio: ['ignore', out, out],
      env: spec.env,
    });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
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

  sample(): void {
    if (this.child.pid === undefined) return;
    const kib = rssKiB(this.child.pid);
    if (kib === undefined) return;
    if (kib > this.peakKiB) this.peakKiB = kib;
    if (kib > this.windowPeakKiB) this.windowPeakKiB = kib;
  }

  resetWindow(): void {
    this.windowPeakKiB = 0;
    this.sample();
  }

  cpuSeconds(): number {
    return this.child.pid === undefined ? Number.NaN : (cpuSeconds(this.child.pid) ?? Number.NaN);
  }

  /** Waits for GET /readyz to answer 200. */
  async ready(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.running) throw new Error(`${this.spec.name} exited during start-up; see ${this.spec.logFile}`);
      const ok = await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`${this.spec.name} was not ready within ${timeoutMs} ms; see ${this.spec.logFile}`);
  }

  /** SIGTERM (the servers drain), then SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 15_000): Promise<void> {
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
