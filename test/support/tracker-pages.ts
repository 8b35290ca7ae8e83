import { createServer, type Server } from 'node:http';
import { build } from 'esbuild';
import type { Socket } from 'node:net';
import type { Browser, BrowserContext, BrowserContextOptions, Request } from 'playwright-core';

/**
 * The trackers' own browser SDKs, as a site bundles them from npm (never from a CDN):
 * `@segment/analytics-next` exposed as `window.AnalyticsBrowser`, `posthog-js` as
 * `window.posthog`. Each is one IIFE script: esbuild inlines the SDKs' dynamic imports,
 * so the page loads no chunk from anywhere.
 */
export interface TrackerBundles {
  segment: string;
  posthog: string;
}

/** Where the bundled scripts are served on the test's site. */
export const SCRIPT_PATHS = { segment: '/js/analytics-next.js', posthog: '/js/posthog.js' } as const;

async function bundle(entry: string): Promise<string> {
  const out = await build({
    stdin: { contents: entry, resolveDir: process.cwd(), loader: 'js', sourcefile: 'entry.js' },
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: ['es2020'],
    define: { 'process.env.NODE_ENV': '"production"' },
    legalComments: 'none',
    logLevel: 'warning',
  });
  return out.outputFiles[0]!.text;
}

export async function bundleTrackers(): Promise<TrackerBundles> {
  const [segment, posthog] = await Promise.all([
    bundle("import { AnalyticsBrowser } from '@segment/analytics-next'; window.AnalyticsBrowser = AnalyticsBrowser;"),
    bundle("import posthog from 'posthog-js'; window.posthog = posthog;"),
  ]);
  return { segment, posthog };
}

/**
 * The test's own site on loopback: the bundles at SCRIPT_PATHS and each page of `pages`
 * at /p/<name>; an empty favicon. Nothing else (404).
 */
export class TrackerSite {
  readonly pages = new Map<string, string>();
  private server: Server | undefined;
  url = '';

  constructor(private readonly bundles: TrackerBundles) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const path = (req.url ?? '').split('?')[0]!;
      if (path === '/favicon.ico') return void res.writeHead(204).end();
      const script =
        path === SCRIPT_PATHS.segment
          ? this.bundles.segment
          : path === SCRIPT_PATHS.posthog
            ? this.bundles.posthog
            : undefined;
      if (script !== undefined) {
        return void res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(script);
      }
      const html = this.pages.get(/^\/p\/([\w-]+)$/.exec(path)?.[1] ?? '');
      res.writeHead(html ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' }).end(html ?? 'not found');
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  /** A page at /p/`name` that loads the bundle of `sdk`, then runs `script`. Returns its URL. */
  page(name: string, sdk: keyof TrackerBundles, script: string): string {
    this.pages.set(
      name,
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${name}</title>` +
        `<script src="${SCRIPT_PATHS[sdk]}"></script><script>${script}</script></head>` +
        `<body><h1>${name}</h1></body></html>`,
    );
    return `${this.url}/p/${name}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/** Every request a browser context made (as the page saw it), and those the refuser turned away. */
export interface Traffic {
  requests: { url: string; origin: string; resourceType: string; method: string }[];
  refused: string[];
}

/**
 * Where a confined context's requests to any origin but the allowed ones go: a loopback
 * HTTP proxy that records each (`METHOD URL`, or `CONNECT host:port` for TLS) and refuses
 * it with a 403. A browser-level proxy, not Playwright's routing: while a route is set,
 * Playwright answers every CORS preflight itself, and the gateway's own OPTIONS answer
 * would go untested.
 */
export class Refuser {
  readonly seen: string[] = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.seen.push(`${req.method} ${req.url}`);
      res.writeHead(403, { 'content-type': 'text/plain' }).end('outside the test');
    });
    this.server.on('connect', (req: { url?: string }, socket: Socket) => {
      this.seen.push(`CONNECT ${req.url}`);
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/**
 * A new browser context (a new visitor) whose requests reach only the `allowed` origins
 * (loopback `http://127.0.0.1:port` ones): any other, loopback included, goes to
 * `refuser`. Every request the context makes (pages, workers, beacons) is recorded.
 */
export async function confinedContext(
  browser: Browser,
  allowed: readonly string[],
  refuser: Refuser,
  options: BrowserContextOptions = {},
): Promise<{ ctx: BrowserContext; traffic: Traffic }> {
  const ctx = await browser.newContext({
    ...options,
    // `<-loopback>`: loopback is proxied too, but for the allowed host:port pairs.
    proxy: { server: refuser.url, bypass: ['<-loopback>', ...allowed.map((o) => new URL(o).host)].join(',') },
  });
  const traffic: Traffic = { requests: [], refused: refuser.seen };
  const originOf = (url: string): string => {
    try {
      return new URL(url).origin;
    } catch {
      return url;
    }
  };
  ctx.on('request', (r: Request) =>
    traffic.requests.push({
      url: r.url(),
      origin: originOf(r.url()),
      resourceType: r.resourceType(),
      method: r.method(),
    }),
  );
  return { ctx, traffic };
}
