/**
 * The one /proc sampler: CPU seconds (user, system) and VmRSS per process, the machine's
 * busy time, a CPU meter over a window (per process, the benchmark itself, and what the
 * rest of the machine used: noise), and RSS tracked over time.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on Linux everywhere). */
const CLK_TCK = 100;

/** User and system CPU seconds of a process, or undefined once it is gone. */
export function procCpu(pid: number): { user: number; system: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: count fields after its closing paren.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(f[11]) / CLK_TCK, system: Number(f[12]) / CLK_TCK };
  } catch {
    return undefined;
  }
}

/** VmRSS of a process in KiB, or undefined once it is gone. */
export function rssKiB(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** CPU seconds all cores of the machine have spent busy (not idle or waiting on I/O). */
export function machineBusySeconds(): number {
  const v = (readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  return [0, 1, 2, 5, 6, 7].reduce((sum, i) => sum + (v[i] ?? 0), 0) / CLK_TCK;
}

/** The first child process of `ppid` whose command name (15 chars at most) is `comm`. */
export function childPid(ppid: number, comm: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (name === comm && Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === ppid) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** The Kafka JVM and ClickHouse when the stack runs them as our children (local mode). */
export function stackPids(): { kafka?: number; clickhouse?: number } {
  const kafka = childPid(process.pid, 'java');
  const clickhouse = childPid(process.pid, 'clickhouse-serv');
  return { ...(kafka ? { kafka } : {}), ...(clickhouse ? { clickhouse } : {}) };
}

/** "Other CPU" (% of one core) above which a window counts as disturbed by the rest of the machine. */
export const DISTURBED_CPU = 15;

/** CPU over a window, in % of one core (unrounded). */
export interface CpuWindow {
  seconds: number;
  /** Per named process, and `bench` (this process: the load generator). */
  processes: Record<string, number>;
  /** The kernel's part of `processes`. */
  kernel: Record<string, number>;
  /** What processes outside the benchmark used meanwhile (noise). */
  otherPercent: number;
  /** All cores together. */
  machinePercent: number;
}

/** Starts a CPU window over named processes; the returned function ends it. */
export function cpuMeter(pids: Record<string, number | undefined>): () => CpuWindow {
  const t0 = performance.now();
  const machine0 = machineBusySeconds();
  const self0 = process.cpuUsage();
  const named = Object.entries(pids).filter((e): e is [string, number] => e[1] !== undefined && e[1] !== process.pid);
  const before = new Map(named.map(([n, pid]) => [n, procCpu(pid)]));
  return () => {
    const seconds = (performance.now() - t0) / 1000;
    const pct = (s: number): number => (s / seconds) * 100;
    const w: CpuWindow = { seconds, processes: {}, kernel: {}, otherPercent: 0, machinePercent: 0 };
    const self = process.cpuUsage(self0);
    let ours = (self.user + self.system) / 1e6;
    w.processes.bench = pct(ours);
    w.kernel.bench = pct(self.system / 1e6);
    for (const [name, pid] of named) {
      const a = procCpu(pid);
      const b = before.get(name);
      if (!a || !b) continue;
      const used = a.user + a.system - b.user - b.system;
      w.processes[name] = pct(used);
      w.kernel[name] = pct(a.system - b.system);
      ours += used;
    }
    const machine = machineBusySeconds() - machine0;
    w.machinePercent = pct(machine);
    w.otherPercent = Math.max(0, pct(machine - ours));
    return w;
  };
}

/** VmRSS of one process sampled every 100 ms, with the time of each sample (performance.now()). */
export class RssTrack {
  readonly samples: { t: number; kib: number }[] = [];
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(private readonly pid: number | undefined) {
    if (pid === undefined) return;
    this.timer = setInterval(() => this.sample(), 100);
    this.timer.unref();
  }

  sample(): number | undefined {
    const kib = this.pid === undefined ? undefined : rssKiB(this.pid);
    if (kib !== undefined) this.samples.push({ t: performance.now(), kib });
    return kib;
  }

  /** Highest VmRSS (KiB) sampled between two times (performance.now()), 0 if none. */
  peak(from = 0, to = Number.POSITIVE_INFINITY): number {
    let peak = 0;
    for (const s of this.samples) if (s.t >= from && s.t <= to && s.kib > peak) peak = s.kib;
    return peak;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

export const mb = (kib: number): number => Math.round((kib / 1024) * 10) / 10;
