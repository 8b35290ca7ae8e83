import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { paced, rawRequest, RawHttpClient } from '../../harness/load.js';

/** A loopback server recording each request's socket, key header and body. */
async function server(handler: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const s = http.createServer(handler);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  return {
    url,
    close: () =>
      new Promise<void>((r) => {
        s.closeAllConnections();
        s.close(() => r());
      }),
  };
}

describe('RawHttpClient, the open loop of bench:ingest (unit)', () => {
  it('sends each connection its own request bytes, reads status and body, and queues beyond its sockets', async () => {
    const seen: { key: string; body: string; port: number }[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const s = await server((req, res) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ key: String(req.headers['x-key']), body, port: req.socket.remotePort! });
        // Two writes, so the answer reaches the client in pieces.
        setTimeout(() => {
          inFlight--;
          res.writeHead(req.headers['x-key'] === 'k1' ? 202 : 200, {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength('{"ok":"é"}'),
          });
          res.write('{"ok":');
          res.end('"é"}');
        }, 5);
      });
    });
    const client = await RawHttpClient.open(s.url, 2, (i) =>
      rawRequest(`${s.url}/p?q=1`, 'POST', { 'x-key': `k${i}` }, `{"n":${i}}`),
    );
    try {
      const replies = await Promise.all(Array.from({ length: 10 }, () => client.send()));
      expect(replies.map((r) => r.body)).to.deep.equal(Array(10).fill('{"ok":"é"}'));
      expect(replies.filter((r) => r.status === 202)).to.have.length(5);
      expect(replies.filter((r) => r.status === 200)).to.have.length(5);
      // Never more requests at once than sockets, and each socket keeps its own bytes.
      expect(maxInFlight).to.equal(2);
      expect(new Set(seen.map((x) => x.port)).size).to.equal(2);
      for (const x of seen) expect(x.body).to.equal(`{"n":${x.key.slice(1)}}`);
    } finally {
      client.close();
      await s.close();
    }
  });

  it('fails a request whose connection closes, and every waiting one when no socket is left', async () => {
    const s = await server((req) => req.socket.destroy());
    const client = await RawHttpClient.open(s.url, 1, () => rawRequest(`${s.url}/`, 'POST', {}, '{}'));
    try {
      const outcomes = await Promise.allSettled([client.send(), client.send()]);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['rejected', 'rejected']);
      const err: unknown = await client.send().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(String(err)).to.contain('every connection is closed');
    } finally {
      client.close();
      await s.close();
    }
  });

  it('drives paced(): an open loop at a set rate, latency from each scheduled time', async () => {
    let answered = 0;
    const s = await server((_req, res) => {
      answered++;
      res.end('ok');
    });
    const client = await RawHttpClient.open(s.url, 4, () => rawRequest(`${s.url}/`, 'POST', {}, 'x'));
    try {
      const r = await paced(
        async () => {
          const reply = await client.send();
          return { status: reply.status, ok: reply.body === 'ok' };
        },
        400,
        0.5,
        100,
      );
      expect(r.ok).to.equal(200);
      expect(answered).to.equal(200);
      expect(r.latencies).to.have.length(200);
      expect(r.seconds).to.be.within(0.45, 5);
    } finally {
      client.close();
      await s.close();
    }
  });
});
