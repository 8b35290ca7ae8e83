/**
 * The services as real OS processes, started the way production starts them (their
 * main.ts, signal handlers on), with a fixed port each so that a restarted service keeps
 * its URL. Output goes to one log file per service (every start is marked in it), and
 * the last lines are kept in memory for error messages.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { serviceCommand, type ServiceName } from '../devstack/service-command.js';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';

export type { ServiceName };

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

// Services must not outlive the run, even when it crashes.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export class ServiceProcess {
  private child: ChildProcess | undefined;
  private exitPromise: Promise<Exit> = Promise.resolve({ code: null, signal: null });
  private tail: string[] = [];
  private readonly log: WriteStream;
  /** Exits of earlier runs of this service, in order (evidence for the report). */
  readonly exits: (Exit & { pid: number | undefined; at: string })[] = [];

  constructor(
    /** A name for logs and the report, e.g. `consumer-2`. */
    readonly label: string,
    readonly service: ServiceName,
    readonly port: number,
    private readonly env: Record<string, string>,
    logDir: string,
    private readonly cwd: string,
  ) {
    this.log = createWriteStream(join(logDir, `${label}.log`), { flags: 'a' });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get logFile(): string {
    return this.log.path.toString();
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The last lines the service wrote (stdout and stderr). */
  output(): string {
    return this.tail.join('');
  }

  /** Spawns the process and waits until its /readyz answers 200. */
  async start(readyTimeoutMs = 90_000): Promise<void> {
    if (this.running) throw new Error(`${this.label} is already running`);
    const [command, args] = serviceCommand(this.service);
    const child = spawn(command, args, {
      cwd: this.cwd,
      env: { ...process.env, ...this.env, PORT: String(this.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    live.add(child);
    this.log.write(`\n=== ${new Date().toISOString()} start pid ${child.pid} port ${this.port}\n`);
    const keep = (d: Buffer): void => {
      this.log.write(d);
      this.tail.push(d.toString());
      if (this.tail.length > 200) this.tail.splice(0, this.tail.length - 200);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exitPromise = new Promise<Exit>((resolve) =>
      child.once('exit', (code, signal) => {
        live.delete(child);
        const exit = { code, signal };
        this.exits.push({ ...exit, pid: child.pid, at: new Date().toISOString() });
        this.log.write(`=== ${new Date().toISOString()} pid ${child.pid} exited code ${code} signal ${signal}\n`);
        resolve(exit);
      }),
    );
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      if (!this.running) {
        throw new Error(`${this.label} exited while starting; see ${this.logFile}:\n${this.output().slice(-2000)}`);
      }
      if ((await readyStatus(this.url)) === 200) return;
      if (Date.now() > deadline) {
        throw new Error(`${this.label} not ready within ${readyTimeoutMs} ms; see ${this.logFile}`);
      }
      await sleep(200);
    }
  }

  /** Sends `signal` without waiting. */
  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child?.kill(signal);
  }

  /** Resolves when the current process has exited. */
  exited(): Promise<Exit> {
    return this.exitPromise;
  }

  /**
   * Sends `signal` and waits for the exit (see waitExit). Sends it only once: a second
   * SIGTERM makes our services exit at once.
   */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 40_000): Promise<Exit & { forced: boolean }> {
    if (!this.running) return { ...(await this.exitPromise), forced: false };
    this.child?.kill(signal);
    return this.waitExit(timeoutMs);
  }

  /** Waits for the exit; after `timeoutMs` sends SIGKILL and says so (a hung shutdown shows). */
  async waitExit(timeoutMs: number): Promise<Exit & { forced: boolean }> {
    let forced = false;
    const t = setTimeout(() => {
      if (!this.running) return;
      forced = true;
      this.child?.kill('SIGKILL');
    }, timeoutMs);
    const exit = await this.exitPromise;
    clearTimeout(t);
    return { ...exit, forced };
  }

  /** Stops the service (SIGTERM, SIGKILL after 10 s) and closes its log. */
  async close(): Promise<void> {
    await this.stop('SIGTERM', 10_000);
    await new Promise<void>((resolve) => this.log.end(() => resolve()));
  }
}

/** The /readyz status of a service, or a short error name when it does not answer. */
export async function readyStatus(url: string): Promise<number | string> {
  try {
    const r = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
    await r.arrayBuffer();
    return r.status;
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    return cause?.code ?? (err as Error).name;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
