import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';

export interface Exchange {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** When the request arrived and when its answer was sent (Date.now()). */
  at: number;
  answeredAt: number;
  status: number;
  answerHeaders: IncomingHttpHeaders;
}

/**
 * A loopback reverse proxy that records every request and answer on the way to `target`
 * (the real gateway): what a browser sent, even from a page that is gone (a beacon or a
 * keepalive request after navigation, which the browser's own tooling may not report).
 * It changes nothing: headers, bodies and statuses pass through as they are.
 */
export class RecordingProxy {
  readonly seen: Exchange[] = [];
  private server: Server | undefined;
  url = '';

  constructor(private readonly target: string) {}

  async start(): Promise<void> {
    const target = new URL(this.target);
    this.server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => {
        const body = Buffer.concat(parts);
        const at = Date.now();
        const up = request(
          { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
            this.seen.push({
              method: req.method ?? '',
              path: req.url ?? '',
              headers: req.headers,
              body: body.toString(),
              at,
              answeredAt: Date.now(),
              status: answer.statusCode ?? 0,
              answerHeaders: answer.headers,
            });
          },
        );
        up.on('error', () => res.writeHead(502).end());
        up.end(body);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  /** Exchanges on the events route. */
  events(): Exchange[] {
    return this.seen.filter((e) => e.path.startsWith('/api/telemetry/events'));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
