/**
 * The one process wrapper of the dev stack, the harness (benchmarks, fault suite, soak,
 * cluster suite) and the tests: spawns a command with its environment, keeps its output
 * (straight into a log file, or piped: the last chunks in memory and, when asked, appended
 * to a log file with every start and exit marked), waits for it with a deadline (a probe,
 * a line of output, a port, a URL) and fails at once when it exits meanwhile, stops it
 * with one signal and SIGKILL after a timeout, records every exit, and can be started
 * again with the same command. No child outlives the process that started it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, createWriteStream, openSync, type WriteStream } from 'node:fs';
import { Fatal, until } from './poll.js';
import { httpOk, portOpen } from './probes.js';

export type Command = [command: string, args: string[]];

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ProcessOptions {
  name: string;
  command: Command;
  /** The whole environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /**
   * `file`: the child writes straight into `logFile` (servers: nothing passes through this
   * process, so a busy or dying parent never holds their output up); `pipe` (default): read
   * here, the last `keepChunks` chunks kept for output(), appended to `logFile` when given;
   * `stderr`: its stderr is ours, its stdout dropped (npm start's services).
   */
  output?: 'file' | 'pipe' | 'stderr';
  logFile?: string;
  /** Pipe mode: how many chunks of output output() keeps (default 200). */
  keepChunks?: number;
  /** Its own process group (a terminal's Ctrl-C then reaches only us). */
  detached?: boolean;
  /** Where to read why it did not come up (default: `logFile`), e.g. a server's own error log. */
  logHint?: string;
}

// Children must not outlive the process that started them, even when it crashes.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** A child process that can be started again (same command, environment and log) after it exited. */
export class ManagedProcess {
  private proc: ChildProcess | undefined;
  /** The current process exited or could not be spawned. */
  private ended = false;
  private exitPromise: Promise<Exit> = Promise.resolve({ code: null, signal: null });
  private readonly tail: string[] = [];
  private readonly log: WriteStream | undefined;
  /** performance.now() at the last start. */
  spawnedAt = 0;
  readonly exits: (Exit & { pid: number | undefined; at: string })[] = [];

  constructor(readonly o: ProcessOptions) {
    this.log = o.logFile && o.output !== 'file' ? createWriteStream(o.logFile, { flags: 'a' }) : undefined;
  }

  get name(): string {
    return this.o.name;
  }

  get logFile(): string {
    return this.o.logFile ?? '(no log file)';
  }

  /** The current (or last) OS process. */
  get child(): ChildProcess | undefined {
    return this.proc;
  }

  get pid(): number {
    if (this.proc?.pid === undefined) throw new Error(`${this.name} is not started`);
    return this.proc.pid;
  }

  get running(): boolean {
    return this.proc !== undefined && !this.ended;
  }

  /** The last chunks it wrote (stdout and stderr; pipe mode). */
  output(): string {
    return this.tail.join('');
  }

  /** Starts it; throws when it is running. */
  start(): this {
    if (this.running) throw new Error(`${this.name} is already running`);
    const [command, args] = this.o.command;
    const mode = this.o.output ?? 'pipe';
    if (mode === 'file' && !this.o.logFile) throw new Error(`${this.name}: output 'file' needs a logFile`);
    const fd = mode === 'file' ? openSync(this.o.logFile!, 'a') : undefined;
    const stdio =
      fd !== undefined
        ? (['ignore', fd, fd] as const)
        : mode === 'stderr'
          ? (['ignore', 'ignore', 'inherit'] as const)
          : (['ignore', 'pipe', 'pipe'] as const);
    const child = spawn(command, args, {
      cwd: this.o.cwd,
      env: this.o.env ?? process.env,
      stdio: [...stdio],
      detached: this.o.detached ?? false,
    });
    if (fd !== undefined) closeSync(fd); // the child has its own copy
    this.proc = child;
    this.ended = false;
    this.spawnedAt = performance.now();
    live.add(child);
    this.log?.write(`\n=== ${new Date().toISOString()} start pid ${child.pid}\n`);
    const keep = (d: Buffer): void => {
      this.log?.write(d);
      this.tail.push(d.toString());
      const most = this.o.keepChunks ?? 200;
      if (this.tail.length > most) this.tail.splice(0, this.tail.length - most);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exitPromise = new Promise<Exit>((resolve) => {
      const ended = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (this.proc === child) this.ended = true;
        live.delete(child);
        this.exits.push({ code, signal, pid: child.pid, at: new Date().toISOString() });
        this.log?.write(`=== ${new Date().toISOString()} pid ${child.pid} exited code ${code} signal ${signal}\n`);
        resolve({ code, signal });
      };
      child.once('exit', ended);
      // Not spawned at all (e.g. ENOENT): no 'exit' follows.
      child.once('error', (err) => {
        keep(Buffer.from(`${this.name}: ${err.message}\n`));
        if (child.pid === undefined) ended(null, null);
      });
    });
    return this;
  }

  /**
   * Starts it unless it runs: a second server on the same ports and data would fight the
   * first (a fault test's clean-up may "restart" a server that is already back).
   */
  ensureStarted(): this {
    return this.running ? this : this.start();
  }

  /** Polls `probe` until it returns a value; fails at once, with its last output, when the process exits. */
  waitUntil<T>(
    what: string,
    probe: () => Promise<T | undefined> | T | undefined,
    timeoutMs: number,
    everyMs = 200,
  ): Promise<T> {
    const hint = this.o.logHint ?? this.logFile;
    return until(
      `${what}; see ${hint}`,
      async () => {
        if (!this.running) {
          throw new Fatal(`${this.name} exited while starting; see ${hint}\n${this.output().slice(-3000)}`);
        }
        return probe();
      },
      timeoutMs,
      everyMs,
    );
  }

  /** Polls `probe` until it says yes (a readiness probe, probes.ts). */
  async waitAnswers(what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    await this.waitUntil(`${what} to answer`, async () => (await probe()) || undefined, timeoutMs);
  }

  /** Waits for output (pipe mode) that matches `line`; returns the match. */
  waitForLine(line: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
    return this.waitUntil(`${this.name} to print ${line}`, () => line.exec(this.output()) ?? undefined, timeoutMs, 50);
  }

  /** Waits until something listens on 127.0.0.1:`port`. */
  waitForPort(port: number, timeoutMs: number): Promise<void> {
    return this.waitAnswers(`${this.name} on port ${port}`, () => portOpen(port), timeoutMs);
  }

  /** Waits until GET `url` answers 2xx. */
  waitForUrl(url: string, timeoutMs: number): Promise<void> {
    return this.waitAnswers(`${this.name} at ${url}`, () => httpOk(url), timeoutMs);
  }

  /** Sends `signal` without waiting. */
  signal(signal: NodeJS.Signals): void {
    if (this.running) this.proc?.kill(signal);
  }

  /** The exit of the current (or last) run. */
  exited(): Promise<Exit> {
    return this.exitPromise;
  }

  /**
   * Sends `signal` once (a second SIGTERM makes our services exit at once) and waits for
   * the exit; after `timeoutMs` (never when null) sends SIGKILL and says so.
   */
  async stop(
    signal: NodeJS.Signals = 'SIGTERM',
    timeoutMs: number | null = 15_000,
  ): Promise<Exit & { forced: boolean }> {
    if (!this.running) return { ...(await this.exitPromise), forced: false };
    this.proc?.kill(signal);
    if (timeoutMs === null) return { ...(await this.exitPromise), forced: false };
    return this.waitExit(timeoutMs);
  }

  /** Waits for the exit; after `timeoutMs` sends SIGKILL and says so (a hung shutdown shows). */
  async waitExit(timeoutMs: number): Promise<Exit & { forced: boolean }> {
    let forced = false;
    const t = setTimeout(() => {
      forced = this.running;
      this.proc?.kill('SIGKILL');
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
