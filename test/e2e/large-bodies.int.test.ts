import { execFile } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { eventually, newKey, runGateway, runQuery, type Running } from '../support/fixtures.js';

const run = promisify(execFile);

/**
 * Posts a 12 MB body the way Python's clients do: the whole body is written before a byte
 * of the answer is read (urllib, and requests when it is installed; urllib is the standard
 * library, so it always runs). Prints {client: {status, body} | {error}} as JSON.
 */
const PYTHON = String.raw`
import json, sys, urllib.request, urllib.error
url, headers = sys.argv[1], json.loads(sys.argv[2])
body = b'x' * (12 * 1024 * 1024)
out = {}
req = urllib.request.Request(url, data=body, method='POST', headers=headers)
try:
    with urllib.request.urlopen(req, timeout=30) as r:
        out['urllib'] = {'status': r.status, 'body': r.read().decode()}
except urllib.error.HTTPError as e:
    out['urllib'] = {'status': e.code, 'body': e.read().decode()}
except Exception as e:
    out['urllib'] = {'error': repr(e)}
try:
    import requests
except ImportError:
    requests = None
if requests is not None:
    try:
        r = requests.post(url, data=body, headers=headers, timeout=30)
        out['requests'] = {'status': r.status_code, 'body': r.text}
    except Exception as e:
        out['requests'] = {'error': repr(e)}
print(json.dumps(out))
`;

type Outcome = { status: number; body: string } | { error: string };

async function python(url: string, headers: Record<string, string>): Promise<Record<string, Outcome>> {
  const { stdout } = await run('python3', ['-c', PYTHON, url, JSON.stringify(headers)], { timeout: 60_000 });
  return JSON.parse(stdout) as Record<string, Outcome>;
}

function expect413(outcomes: Record<string, Outcome>): void {
  expect(Object.keys(outcomes)).to.include('urllib');
  for (const [client, o] of Object.entries(outcomes)) {
    expect(o, `${client}: ${JSON.stringify(o)}`).to.have.property('status', 413);
    const body = JSON.parse((o as { body: string }).body) as { success: boolean; code: string };
    expect(body, client).to.deep.include({ success: false, code: 'PAYLOAD_TOO_LARGE' });
  }
}

/**
 * A raw connection to `base` that, like Python's clients, keeps writing after the server's
 * FIN (allowHalfOpen): what it has read so far, and whether the server cut it (a reset).
 */
function rawClient(base: string): { socket: Socket; read: () => string; closed: () => boolean } {
  const url = new URL(base);
  const socket = connect({ port: Number(url.port), host: url.hostname, allowHalfOpen: true });
  let text = '';
  let closed = false;
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  socket.on('error', () => undefined);
  socket.on('close', () => (closed = true));
  return { socket, read: () => text, closed: () => closed };
}

/** Over-limit bodies answered to clients that send everything before they read (the lingering close). */
describe('large bodies (real Kafka and ClickHouse)', function () {
  this.timeout(120_000);
  let gateway: Running;
  let query: Running;

  before(async () => {
    [gateway, query] = await Promise.all([runGateway({ RATE_LIMIT_PER_SECOND: '0' }), runQuery()]);
  });

  after(async () => {
    await Promise.all([gateway?.stop(), query?.stop()]);
  });

  it('answers a 12 MB body from Python with the 413 and our envelope at the gateway', async () => {
    const key = await newKey({ kind: 'telemetry', name: 'large bodies' });
    const url = `${gateway.url}/api/telemetry/events`;
    const headers = { 'content-type': 'application/json', 'x-access-key': key };
    await eventually('key loaded', async () => {
      const r = await fetch(url, { method: 'POST', headers, body: '{"events":[]}' });
      return r.status !== 401 ? true : undefined;
    });
    expect413(await python(url, headers));
  });

  it('answers a 12 MB body from Python with the 413 and our envelope at the query service', async () => {
    const key = await newKey({ kind: 'api', name: 'large bodies', scopes: ['monitors:read', 'monitors:write'] });
    const url = `${query.url}/api/monitors`;
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    await eventually('key loaded', async () => {
      const r = await fetch(url, { headers });
      return r.status === 200 ? true : undefined;
    });
    expect413(await python(url, headers));
  });

  it('cuts a rest over DISCARD_BODY_MAX_BYTES or slower than DISCARD_BODY_TIMEOUT_MS, after the 413', async () => {
    const bounded = await runGateway({
      RATE_LIMIT_PER_SECOND: '0',
      DISCARD_BODY_MAX_BYTES: String(4 * 1024 * 1024),
      DISCARD_BODY_TIMEOUT_MS: '500',
    });
    try {
      const key = await newKey({ kind: 'telemetry', name: 'bounded discard' });
      const head = (framing: string): string =>
        `POST /api/telemetry/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Access-Key: ${key}\r\n${framing}\r\n\r\n`;
      await eventually('key loaded', async () => {
        const r = await fetch(`${bounded.url}/api/telemetry/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-access-key': key },
          body: '{"events":[]}',
        });
        return r.status !== 401 ? true : undefined;
      });

      // Chunked, without end: the 413 comes after 1 MiB, the cut after 4 MiB more.
      const endless = rawClient(bounded.url);
      endless.socket.write(head('Transfer-Encoding: chunked'));
      const chunk = Buffer.concat([Buffer.from('10000\r\n'), Buffer.alloc(0x10000, 0x78), Buffer.from('\r\n')]);
      let sent = 0;
      while (!endless.closed() && sent < 64 * 1024 * 1024) {
        sent += chunk.length;
        if (!endless.socket.write(chunk)) {
          await new Promise((resolve) => {
            endless.socket.once('drain', resolve);
            endless.socket.once('close', resolve);
          });
        }
      }
      await eventually('the chunked body cut', () => (endless.closed() ? true : undefined));
      expect(endless.read()).to.match(/^HTTP\/1\.1 413 /);
      expect(endless.read()).to.contain('"code":"PAYLOAD_TOO_LARGE"');
      expect(sent, 'bytes sent before the cut').to.be.below(32 * 1024 * 1024);

      // 2 MiB declared, 1.5 MiB sent, then a byte now and then: the 413 at once, the cut
      // after 500 ms (a byte written after it is answered with a reset).
      const stalled = rawClient(bounded.url);
      stalled.socket.write(head(`Content-Length: ${2 * 1024 * 1024}`));
      stalled.socket.write(Buffer.alloc(1.5 * 1024 * 1024, 0x78));
      await eventually('the 413', () => (/^HTTP\/1\.1 413 /.test(stalled.read()) ? true : undefined));
      const answered = Date.now();
      await eventually(
        'the stalled body cut',
        () => {
          if (!stalled.closed()) stalled.socket.write('x');
          return stalled.closed() ? true : undefined;
        },
        5000,
      );
      expect(Date.now() - answered, 'ms from the 413 to the cut').to.be.within(400, 3000);
    } finally {
      await bounded.stop();
    }
  });
});
