import { Gauge, type Registry } from 'prom-client';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import type { Component, Logger } from '@telemetry/platform';

export interface BrowserPoolDeps {
  /** RUNNER_CHROMIUM_PATH. */
  executablePath: string;
  /** RUNNER_BROWSER_CONCURRENCY: checks with a context at once. */
  concurrency: number;
  logger: Logger;
  registry: Registry;
  /** Checks waiting for a context at most (beyond: refused at once). Default concurrency × 20. */
  maxQueue?: number;
}

/** A check could not get a browser context in time (or the queue was full, or the runner stops). */
export class BrowserBusyError extends Error {}

/** A check was still running at its deadline: given up, its context closed. */
export class BrowserDeadlineError extends BrowserBusyError {}

/** How long closing a context may hold a slot at most. */
const CONTEXT_CLOSE_WAIT_MS = 2000;

/** `p`, or nothing once `ms` have passed. */
function bounded(p: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/**
 * Chromium's flags. The browser never reaches the network by itself: every request of a
 * page is intercepted (context.route) and fetched by the runner through the egress
 * policy (probes/browser.ts). Around that interception, anything Chromium would send on
 * its own (a request the interception misses, a WebSocket, DNS prefetch, background
 * services) goes to a proxy that is a closed loopback port, loopback included (`<-loopback>`
 * takes loopback off the implicit bypass list), and no host name resolves
 * (`--host-resolver-rules`), and WebRTC may send no UDP but through that proxy (which
 * carries none: `--webrtc-ip-handling-policy=disable_non_proxied_udp`; STUN/TURN datagrams
 * would pass the interception): Chromium itself can open no connection anywhere.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-extensions',
  '--disable-dev-shm-usage',
  '--disable-features=Translate,MediaRouter,OptimizationHints,DnsOverHttps',
  '--proxy-server=http://127.0.0.1:9',
  '--proxy-bypass-list=<-loopback>',
  '--host-resolver-rules=MAP * ~NOTFOUND',
  '--webrtc-ip-handling-policy=disable_non_proxied_udp',
];

/**
 * One headless Chromium for the runner's browser checks, each in a fresh context (no
 * cookie, cache or storage shared between checks), at most `concurrency` at once; the
 * others queue (bounded) and give up at their own deadline. A browser that crashes or
 * exits is launched again for the next check.
 */
export class BrowserPool implements Component {
  readonly name = 'browser-pool';
  private browser: Promise<Browser> | undefined;
  private running = 0;
  private readonly waiting: { resolve: () => void; timer: NodeJS.Timeout }[] = [];
  private stopping = false;
  private launchFailed = false;
  private readonly maxQueue: number;
  private readonly busy: Gauge;

  constructor(private readonly deps: BrowserPoolDeps) {
    this.maxQueue = deps.maxQueue ?? deps.concurrency * 20;
    this.busy = new Gauge({
      name: 'runner_browser_checks',
      help: 'Browser checks running (state=running) and waiting for a browser context (state=queued)',
      labelNames: ['state'],
      registers: [deps.registry],
      collect: () => {
        this.busy.set({ state: 'running' }, this.running);
        this.busy.set({ state: 'queued' }, this.waiting.length);
      },
    });
  }

  async start(): Promise<void> {
    // Launched now so that a wrong RUNNER_CHROMIUM_PATH stops the runner at start-up.
    await this.launch();
  }

  health(): boolean {
    return !this.stopping && !this.launchFailed;
  }

  /** Checks running and queued now. */
  load(): { running: number; queued: number } {
    return { running: this.running, queued: this.waiting.length };
  }

  /**
   * Runs `use` with a fresh context once a slot is free. Waits at most `waitMs` for the
   * slot (BrowserBusyError after); the context is closed whatever `use` does. With a
   * `deadline` (epoch ms), a `use` still running then is given up: its context is closed
   * (which ends whatever the page was doing, an endless script included) and the call
   * fails with BrowserDeadlineError; `signal` (the runner stopping) does the same at once.
   * The slot is free again in every case.
   */
  async withContext<T>(
    waitMs: number,
    use: (context: BrowserContext) => Promise<T>,
    opts: { deadline?: number; signal?: AbortSignal } = {},
  ): Promise<T> {
    if (this.stopping || opts.signal?.aborted) throw new BrowserBusyError('the runner is stopping');
    await this.acquire(waitMs);
    try {
      const browser = await this.launch();
      const context = await browser.newContext({
        // Requests from service workers would not pass context.route.
        serviceWorkers: 'block',
        viewport: { width: 1280, height: 720 },
        ignoreHTTPSErrors: false,
        acceptDownloads: false,
      });
      const ends: (() => void)[] = [];
      try {
        const work = use(context);
        // Whatever `use` does once given up is of no interest (its context is closed under it).
        work.catch(() => undefined);
        const cut = new Promise<never>((_resolve, reject) => {
          if (opts.deadline !== undefined) {
            const timer = setTimeout(
              () => reject(new BrowserDeadlineError('the check ran past its deadline')),
              Math.max(0, opts.deadline - Date.now()),
            );
            ends.push(() => clearTimeout(timer));
          }
          if (opts.signal) {
            const abort = () => reject(new BrowserBusyError('the runner is stopping'));
            if (opts.signal.aborted) abort();
            opts.signal.addEventListener('abort', abort, { once: true });
            ends.push(() => opts.signal?.removeEventListener('abort', abort));
          }
        });
        return await Promise.race([work, cut]);
      } finally {
        for (const end of ends) end();
        // Closing a context whose page hangs is bounded too: the slot never waits on it for long.
        await bounded(
          context.close().catch(() => undefined),
          CONTEXT_CLOSE_WAIT_MS,
        );
      }
    } finally {
      this.release();
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const w of this.waiting.splice(0)) {
      clearTimeout(w.timer);
      w.resolve();
    }
    const browser = this.browser;
    this.browser = undefined;
    if (browser) await (await browser.catch(() => undefined))?.close().catch(() => undefined);
  }

  private acquire(waitMs: number): Promise<void> {
    if (this.running < this.deps.concurrency) {
      this.running++;
      return Promise.resolve();
    }
    if (this.waiting.length >= this.maxQueue) {
      return Promise.reject(new BrowserBusyError(`${this.waiting.length} browser checks already wait for a browser`));
    }
    return new Promise((resolve, reject) => {
      const entry = {
        // The slot is handed over by release(): `running` stays counted.
        resolve: () => (this.stopping ? reject(new BrowserBusyError('the runner is stopping')) : resolve()),
        timer: setTimeout(() => {
          const i = this.waiting.indexOf(entry);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(new BrowserBusyError(`no browser free within ${waitMs} ms`));
        }, waitMs),
      };
      this.waiting.push(entry);
    });
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) {
      clearTimeout(next.timer);
      next.resolve();
    } else this.running--;
  }

  /** The running browser, launched (again) when there is none. */
  private launch(): Promise<Browser> {
    if (this.browser) return this.browser;
    const { executablePath, logger } = this.deps;
    const root = typeof process.getuid === 'function' && process.getuid() === 0;
    const launching = chromium
      .launch({
        executablePath,
        headless: true,
        // Chromium's sandbox needs user namespaces, which it cannot have as root.
        args: [...CHROMIUM_ARGS, ...(root ? ['--no-sandbox'] : [])],
        // The runner stops the browser itself (stop()), after the checks in flight.
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
      })
      .then((b) => {
        this.launchFailed = false;
        b.on('disconnected', () => {
          if (this.browser === launching) this.browser = undefined;
          if (!this.stopping) logger.warn('chromium exited; it is launched again for the next browser check');
        });
        logger.info('chromium launched', { executable: executablePath, version: b.version() });
        return b;
      })
      .catch((err: unknown) => {
        if (this.browser === launching) this.browser = undefined;
        this.launchFailed = true;
        logger.error('chromium could not be launched', { executable: executablePath, err: String(err) });
        throw err;
      });
    this.browser = launching;
    return launching;
  }
}
