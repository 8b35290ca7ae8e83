import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { readBody } from '@telemetry/platform';

const LIMITS = { maxBytes: 1000, maxRatio: 100 };

/** A loopback server whose handler hands each request's readBody outcome to `seen`. */
async function serve(seen: (outcome: Promise<Buffer>, req: IncomingMessage) => void): Promise<Server> {
  const server = createServer((req, res) => {
    const outcome = readBody(req, LIMITS);
    seen(outcome, req);
    outcome.then(
      (b) => res.end(`ok ${b.length}`),
      (err: { status?: number }) => {
        res.statusCode = err.status ?? 500;
        res.end('refused');
      },
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

/** The outcome once the request arrived: a settled value, never the promise itself (await would flatten it). */
async function arrived(get: () => Promise<Buffer> | undefined): Promise<{ outcome: Promise<unknown> }> {
  const deadline = Date.now() + 5000;
  while (!get() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  const p = get();
  if (!p) throw new Error('no request arrived within 5 s');
  return {
    outcome: p.then(
      () => undefined,
      (e: unknown) => e,
    ),
  };
}

function port(server: Server): number {
  return (server.address() as AddressInfo).port;
}

describe('readBody', () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  it('joins a chunked body and inflates gzip', async () => {
    const outcomes: Promise<Buffer>[] = [];
    server = await serve((o) => outcomes.push(o));
    const body = Buffer.from(JSON.stringify({ a: 'x'.repeat(300) }));
    for (const gzip of [false, true]) {
      await new Promise<void>((resolve, reject) => {
        const req = request(
          {
            port: port(server!),
            host: '127.0.0.1',
            method: 'POST',
            headers: gzip ? { 'Content-Encoding': 'gzip' } : {},
          },
          (res) => res.resume().on('end', resolve),
        );
        req.on('error', reject);
        const sent = gzip ? gzipSync(body) : body;
        req.write(sent.subarray(0, 10));
        setImmediate(() => req.end(sent.subarray(10)));
      });
    }
    const got = await Promise.all(outcomes);
    expect(got.map((b) => b.toString())).to.deep.equal([body.toString(), body.toString()]);
  });

  it('refuses a body over the limit without closing the connection first', async () => {
    let outcome: Promise<Buffer> | undefined;
    let req: IncomingMessage | undefined;
    server = await serve((o, r) => ((outcome = o), (req = r)));
    const client = request({ port: port(server), host: '127.0.0.1', method: 'POST' });
    client.on('error', () => {});
    client.write(Buffer.alloc(1500, 'a'));
    const err = (await (await arrived(() => outcome)).outcome) as { code?: string; status?: number };
    expect(err.code).to.equal('PAYLOAD_TOO_LARGE');
    expect(req!.socket.destroyed).to.equal(false);
    client.destroy();
  });

  it('rejects when the client goes away before the body ends', async () => {
    let outcome: Promise<Buffer> | undefined;
    server = await serve((o) => (outcome = o));
    const client = request({
      port: port(server),
      host: '127.0.0.1',
      method: 'POST',
      headers: { 'Content-Length': 500 },
    });
    client.on('error', () => {});
    client.write(Buffer.alloc(100, 'a'));
    const read = await arrived(() => outcome);
    client.destroy();
    const err = (await read.outcome) as { code?: string };
    expect(err.code).to.be.oneOf(['ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE']);
  });
});
