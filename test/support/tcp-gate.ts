import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP pass-through to a real server (ClickHouse, say) that a test can shut:
 * while shut, every connection through it, open or new, is cut at once, so the service
 * behind it sees the server go away, deterministically, and the server itself is untouched.
 */
export class TcpGate {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private open = true;
  /** host:port to use instead of the target's. */
  address = '';

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** A gate in front of the http(s) URL `url`; rewrite(url) points a URL through it. */
  static for(url: string): TcpGate {
    const u = new URL(url);
    return new TcpGate(u.hostname, Number(u.port || 80));
  }

  rewrite(url: string): string {
    const u = new URL(url);
    u.host = this.address;
    return u.toString().replace(/\/$/, '');
  }

  async start(): Promise<void> {
    this.server = createServer((client) => {
      if (!this.open) {
        client.destroy();
        return;
      }
      const upstream = connect(this.port, this.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.address = `127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  /** Cuts every connection and refuses new ones until reopen(). */
  shut(): void {
    this.open = false;
    for (const s of this.sockets) s.destroy();
  }

  reopen(): void {
    this.open = true;
  }

  async stop(): Promise<void> {
    this.shut();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
