import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * `ok` 200, `error` 500, `hang` never answers, `throttle` 429 with `Retry-After: 2` to the
 * first request and every other one after (1st, 3rd, …) and 200 to the rest: a provider's
 * rate limit, for senders that retry one request at a time.
 */
export type TargetMode = 'ok' | 'error' | 'hang' | 'throttle';

export interface SeenRequest {
  path: string;
  /** The request target as sent: path and query. */
  url: string;
  method: string;
  runner: string;
  checkId: string;
  monitorId: string;
  at: number;
  headers: IncomingMessage['headers'];
  body: string;
}

/**
 * A local HTTP server for monitors to check (and webhooks to reach). Each path answers
 * as its mode says: `ok` 200 with a body, `error` 500, `hang` never answers. Every
 * request is recorded with the runner (from the User-Agent) and the check id.
 */
export class TestTarget {
  readonly seen: SeenRequest[] = [];
  private readonly modes = new Map<string, TargetMode>();
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  private port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  set(path: string, mode: TargetMode): void {
    this.modes.set(path, mode);
  }

  requests(path: string): SeenRequest[] {
    return this.seen.filter((r) => r.path === path);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      this.seen.push({
        path,
        url: req.url ?? '/',
        method: req.method ?? '',
        runner: /runner=([^);\s]+)/.exec(req.headers['user-agent'] ?? '')?.[1] ?? '',
        checkId: String(req.headers['x-check-id'] ?? ''),
        monitorId: String(req.headers['x-monitor-id'] ?? ''),
        at: Date.now(),
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const mode = this.modes.get(path) ?? 'ok';
      if (mode === 'hang') return; // never answers
      if (mode === 'throttle' && this.requests(path).length % 2 === 1) {
        res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': '2' });
        res.end('rate limited');
        return;
      }
      res.writeHead(mode === 'error' ? 500 : 200, { 'content-type': 'text/plain' });
      res.end(mode === 'error' ? 'internal error' : 'all systems operational');
    });
  }
}
