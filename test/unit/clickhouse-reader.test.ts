/**
 * The lean ClickHouse reader against a small HTTP/1.1 server of our own on loopback that
 * behaves as ClickHouse does at its keep-alive timeout: it closes a kept-alive connection
 * as the next request arrives on it, without an answer.
 */
import { expect } from 'chai';
import { createServer, type Server, type Socket } from 'node:net';
import { ClickHouseReader } from '@telemetry/platform';

interface FakeServer {
  url: string;
  connections: number;
  /** Connections the client closed. */
  closedByClient: number;
  close(): Promise<void>;
}

const ANSWER = JSON.stringify({ data: [{ x: 1 }], rows: 1 });

/**
 * Answers requests with ANSWER; `drop(connection, request)` (both counted from 1) says
 * which requests it closes the connection on instead, unanswered.
 */
async function fakeServer(drop: (connection: number, request: number) => boolean): Promise<FakeServer> {
  const state = { connections: 0, closedByClient: 0 };
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    const connection = ++state.connections;
    sockets.add(socket);
    let requests = 0;
    let buffered = '';
    let closing = false;
    socket.on('end', () => {
      if (!closing) state.closedByClient++;
      socket.end();
    });
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      for (;;) {
        const head = buffered.indexOf('\r\n\r\n');
        if (head < 0) return;
        const length = Number(/content-length: *(\d+)/i.exec(buffered.slice(0, head))?.[1] ?? 0);
        if (buffered.length < head + 4 + length) return;
        buffered = buffered.slice(head + 4 + length);
        if (drop(connection, ++requests)) {
          closing = true;
          socket.destroy();
          return;
        }
        socket.write(
          `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${ANSWER.length}\r\n` +
            `Connection: Keep-Alive\r\n\r\n${ANSWER}`,
        );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    get connections() {
      return state.connections;
    },
    get closedByClient() {
      return state.closedByClient;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Runs `test` with a reader of a fakeServer(`drop`), then stops both. */
async function withReader(
  drop: (connection: number, request: number) => boolean,
  idleSocketMs: number | undefined,
  test: (r: ClickHouseReader, server: FakeServer) => Promise<void>,
): Promise<void> {
  const server = await fakeServer(drop);
  const r = new ClickHouseReader({ url: server.url, username: 'u', password: 'p', database: 'd', idleSocketMs });
  try {
    await test(r, server);
  } finally {
    await r.stop();
    await server.close();
  }
}

/** What `p` rejected with (undefined when it resolved). */
function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => undefined,
    (e: unknown) => e,
  );
}

async function until(what: string, ok: () => boolean, deadlineMs = 5000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('ClickHouseReader', () => {
  it('sends a query again on a new connection when the server closed the kept-alive one', async () => {
    // The second request on the first connection is dropped, as ClickHouse does at its keep-alive timeout.
    await withReader(
      (connection, request) => connection === 1 && request === 2,
      undefined,
      async (r, server) => {
        expect((await r.query<{ x: number }>('SELECT 1 AS x')).data).to.deep.equal([{ x: 1 }]);
        expect((await r.query<{ x: number }>('SELECT 1 AS x')).data).to.deep.equal([{ x: 1 }]);
        expect(server.connections).to.equal(2);
      },
    );
  });

  it('fails, without sending again, when a new connection is closed unanswered', async () => {
    await withReader(
      () => true,
      undefined,
      async (r, server) => {
        expect(await rejection(r.query('SELECT 1 AS x'))).to.be.instanceOf(Error);
        expect(server.connections).to.equal(1);
      },
    );
  });

  it('sends a query once more at most', async () => {
    // Every request but the first is dropped: the retry on a new connection is dropped too.
    await withReader(
      (connection, request) => connection > 1 || request > 1,
      undefined,
      async (r, server) => {
        await r.query('SELECT 1 AS x');
        expect(await rejection(r.query('SELECT 1 AS x'))).to.be.instanceOf(Error);
        expect(server.connections).to.equal(2);
      },
    );
  });

  it('closes an idle socket itself after idleSocketMs', async () => {
    await withReader(
      () => false,
      100,
      async (r, server) => {
        await r.query('SELECT 1 AS x');
        expect(server.closedByClient).to.equal(0);
        await until('the reader closes its idle socket', () => server.closedByClient === 1);
        await r.query('SELECT 1 AS x');
        expect(server.connections).to.equal(2);
      },
    );
  });
});
