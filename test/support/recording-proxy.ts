import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';

export interface Exchange {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body's bytes as sent (a gzipped body does not survive `body`'s decoding as text). */
  raw: Buffer;
  /** When the request arrived and when its answer was sent (Date.now()). */
  at: number;
  answeredAt: number;
  status: number;
  answerHeaders: IncomingHttpHeaders;
  /** The answer's body as text, once it has all arrived (the gateway's, or the proxy's 503). */
  answer: string;
  /** The gateway's own status when the proxy answered 503 instead (failNext). */
  gatewayStatus?: number;
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
  /**
   * The next request whose method and path match goes to the gateway as usual, and its
   * client gets a 503 instead of the gateway's answer: what a client sees when the answer is
   * lost after the gateway accepted the batch (a retry then sends copies the pipeline
   * must read once). Cleared once used.
   */
  failNext: RegExp | undefined;

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
            const fail = this.failNext !== undefined && this.failNext.test(`${req.method} ${req.url}`);
            if (fail) {
              this.failNext = undefined;
              answer.resume();
              // The gateway's CORS headers stay, so that a page reads the 503 (not a network error).
              const cors = Object.entries(answer.headers).filter(([h]) => h.startsWith('access-control-'));
              res
                .writeHead(503, { ...Object.fromEntries(cors), 'Content-Type': 'text/plain', 'Retry-After': '0' })
                .end('answer lost on purpose');
            } else {
              res.writeHead(answer.statusCode ?? 502, answer.headers);
              answer.pipe(res);
            }
            const exchange: Exchange = {
              method: req.method ?? '',
              path: req.url ?? '',
              headers: req.headers,
              body: body.toString(),
              raw: body,
              at,
              answeredAt: Date.now(),
              status: fail ? 503 : (answer.statusCode ?? 0),
              answerHeaders: answer.headers,
              answer: '',
              ...(fail ? { gatewayStatus: answer.statusCode ?? 0 } : {}),
            };
            this.seen.push(exchange);
            const answerParts: Buffer[] = [];
            answer.on('data', (d: Buffer) => answerParts.push(d));
            answer.on('end', () => {
              exchange.answer = fail ? 'answer lost on purpose' : Buffer.concat(answerParts).toString();
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
