import { expect } from 'chai';
import { createSocket } from 'node:dgram';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { createLogger, EgressPolicy } from '@telemetry/platform';
import { DEFAULT_MONITOR, type StoredMonitor } from '@telemetry/store';
import { BrowserPool } from '../../services/check-runner/src/browser-pool.js';
import {
  BROWSER_HARD_DEADLINE_GRACE_MS,
  BROWSER_MAX_CONCURRENT_FETCHES,
  browserProbeWith,
  type BrowserProbeResult,
} from '../../services/check-runner/src/probes/browser.js';
import { CHROMIUM } from '../support/browser.js';

/**
 * Browser checks against a real Chromium through the runner's own BrowserPool (one
 * browser, one check at a time), on a loopback site.
 */
describe('browser probe with Chromium (unit, loopback site)', function () {
  this.timeout(60_000);
  let pool: BrowserPool;
  let server: Server;
  let base: string;
  let handle: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('<h1>hi</h1>');
  const ctx = {
    userAgent: 'u',
    checkId: 'c',
    monitorId: 'm',
    maxBodyBytes: 1024,
    policy: new EgressPolicy({ allow: ['127.0.0.1/32'] }),
  };
  const monitor = (over: Partial<StoredMonitor>): StoredMonitor =>
    ({ ...DEFAULT_MONITOR, id: 'm', tenant_id: 't', type: 'browser', url: base, ...over }) as StoredMonitor;
  const run = async (m: StoredMonitor, c: object = {}): Promise<BrowserProbeResult> =>
    (await browserProbeWith(pool)(m, { ...ctx, ...c })) as BrowserProbeResult;

  before(async () => {
    server = createServer((req, res) => handle(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const logger = createLogger({ service: 'test', level: 'silent' });
    pool = new BrowserPool({ executablePath: CHROMIUM, concurrency: 1, logger, registry: new Registry() });
    await pool.start();
  });
  after(async () => {
    await pool.stop();
    await new Promise((r) => server.close(r));
  });

  it('never shows the credentials or query values of a URL in a detail', async () => {
    // A closed loopback port: Playwright's error names the URL (`net::ERR_… at <url>`).
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const refused = await run(
      monitor({ url: `http://alice:s3cr3t@127.0.0.1:${port}/x?token=t0k3n`, timeout_ms: 5000 }),
    );
    expect(refused).to.include({ status: 'down', error: 'connection_refused' });
    expect(refused.detail).to.match(/^open http:\/\/127\.0\.0\.1:\d+\/x\?token=\*\*\*\*: /);
    expect(refused.detail).not.to.match(/s3cr3t|t0k3n|alice/);

    handle = (_req, res) => res.writeHead(503).end('down');
    const status = await run(monitor({ url: `${base}/?key=k3y`, timeout_ms: 5000 }));
    expect(status).to.include({ error: 'unexpected_status' });
    expect(status.detail).to.equal(`open ${base}/?key=****: answered HTTP 503`);

    handle = (_req, res) => res.end('<h1>hi</h1>');
    const url = await run(
      monitor({
        url: `${base}/?key=k3y`,
        timeout_ms: 5000,
        browser_steps: [{ action: 'assert_url', url: '/elsewhere', timeout_ms: 300 }],
      }),
    );
    expect(url).to.include({ error: 'assertion_failed' });
    expect(url.detail).to.equal(
      `step 1 assert_url "/elsewhere": the URL ${base}/?key=**** does not contain "/elsewhere"`,
    );
  });

  it('lets no WebRTC datagram out (STUN to a loopback UDP port sees nothing)', async () => {
    // Loopback only: a UDP socket that counts what a page's ICE gathering sends it.
    const udp = createSocket('udp4');
    let datagrams = 0;
    udp.on('message', () => datagrams++);
    await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
    const port = udp.address().port;
    try {
      handle = (_req, res) =>
        res.setHeader('content-type', 'text/html').end(`<p id="s">gathering</p><script>
          const pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:127.0.0.1:${port}' }] });
          pc.createDataChannel('x');
          pc.onicegatheringstatechange = () => {
            if (pc.iceGatheringState === 'complete') document.getElementById('s').textContent = 'gathered';
          };
          pc.createOffer().then((o) => pc.setLocalDescription(o));
        </script>`);
      const r = await run(
        monitor({ timeout_ms: 15_000, browser_steps: [{ action: 'wait_for', text: 'gathered', timeout_ms: 12_000 }] }),
      );
      expect(datagrams).to.equal(0);
      // ICE gathering ended (with no candidate): the page had its chance to send.
      expect(r.detail).to.equal(undefined);
      expect(r.status).to.equal('up');
    } finally {
      udp.close();
    }
  });

  it('sends a binary request body byte for byte', async () => {
    let received: Buffer | undefined;
    handle = (req, res) => {
      if (req.method !== 'POST') {
        res.setHeader('content-type', 'text/html').end(`<p id="s">posting</p><script>
          const bytes = new Uint8Array(256).map((_, i) => i);
          fetch('/upload', { method: 'POST', body: bytes, headers: { 'content-type': 'application/octet-stream' } })
            .then((r) => r.text()).then((t) => { document.getElementById('s').textContent = 'answer ' + t; });
        </script>`);
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received = Buffer.concat(chunks);
        res.end(String(received.length));
      });
    };
    const r = await run(monitor({ timeout_ms: 8000, browser_steps: [{ action: 'assert_text', text: 'answer ' }] }));
    expect(r.status).to.equal('up');
    expect(received).to.deep.equal(Buffer.from(Array.from({ length: 256 }, (_, i) => i)));
  });

  // The loop starts before the page has loaded: no check can finish before it (a quiet machine
  // had opened the page and read its timings within a later start).
  const hangingPage = `<p>hi</p><script>for (;;) {}</script>`;
  const timed = async (m: StoredMonitor, c: object = {}): Promise<{ r: BrowserProbeResult; ms: number }> => {
    const start = Date.now();
    const r = await run(m, c);
    return { r, ms: Date.now() - start };
  };

  it('ends a check whose page never yields at timeout_ms, and frees its browser', async () => {
    handle = (req, res) =>
      res.setHeader('content-type', 'text/html').end(req.url === '/ok' ? '<p>fine</p>' : hangingPage);
    for (const browser_steps of [[], [{ action: 'press', value: 'Enter' }]] as StoredMonitor['browser_steps'][]) {
      const { r, ms } = await timed(monitor({ timeout_ms: 2000, browser_steps }));
      expect(r).to.include({ status: 'down', error: 'timeout' });
      expect(ms).to.be.below(2000 + BROWSER_HARD_DEADLINE_GRACE_MS);
      expect(pool.load()).to.deep.equal({ running: 0, queued: 0 });
    }
    // The only slot is free again: the next check runs.
    const next = await run(monitor({ url: `${base}/ok`, timeout_ms: 5000 }));
    expect(next).to.include({ status: 'up' });
  });

  it('counts the wait for a browser in timeout_ms, and leaves the screenshot only what is left', async () => {
    handle = (_req, res) => res.setHeader('content-type', 'text/html').end('<p>fine</p>');
    const never = [{ action: 'wait_for', selector: '#never', timeout_ms: 10_000 }] as StoredMonitor['browser_steps'];
    // The first holds the only slot for 1.5 s; the second waits for it, then has what is left of its 3 s.
    const first = timed(monitor({ timeout_ms: 1500, browser_steps: never }));
    const second = timed(monitor({ timeout_ms: 3000, browser_steps: never }));
    const [a, b] = await Promise.all([first, second]);
    expect(a.r).to.include({ error: 'timeout' });
    expect(b.r).to.include({ error: 'timeout' });
    expect(b.ms).to.be.below(3000 + 300);
  });

  it('stops a check at once when the runner stops (ctx.signal)', async () => {
    handle = (_req, res) => res.setHeader('content-type', 'text/html').end('<p>fine</p>');
    const stop = new AbortController();
    const never = [{ action: 'wait_for', selector: '#never', timeout_ms: 15_000 }] as StoredMonitor['browser_steps'];
    const check = timed(monitor({ timeout_ms: 20_000, browser_steps: never }), { signal: stop.signal });
    const until = Date.now() + 5000;
    while (pool.load().running === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    const { r, ms } = await check;
    expect(r).to.include({ status: 'down', error: 'timeout', detail: 'the runner is stopping' });
    expect(ms).to.be.below(5000 + 2000);
    expect(pool.load()).to.deep.equal({ running: 0, queued: 0 });
  });

  it('fetches a few requests of a page at once, and aborts those past the byte budget of the check', async () => {
    const big = Buffer.alloc(5 * 1024 * 1024, 'x');
    let open = 0;
    let most = 0;
    handle = (req, res) => {
      if (!req.url?.startsWith('/big')) {
        res.setHeader('content-type', 'text/html').end(`<p id="s">fetching</p><script>
          Promise.allSettled(Array.from({ length: 12 }, (_, i) => fetch('/big?' + i).then((r) => r.arrayBuffer())))
            .then((all) => { document.getElementById('s').textContent = 'settled ' + all.filter((a) => a.status === 'fulfilled').length; });
        </script>`);
        return;
      }
      most = Math.max(most, ++open);
      setTimeout(() => {
        open--;
        res.end(big);
      }, 100);
    };
    const r = await run(monitor({ timeout_ms: 15_000, browser_steps: [{ action: 'assert_text', text: 'settled' }] }));
    expect(most).to.be.at.most(BROWSER_MAX_CONCURRENT_FETCHES);
    // 6 of 5 MiB fit in 32 MiB; the 7th is cut by the budget and the others are not fetched.
    expect(r).to.include({
      status: 'down',
      error: 'network',
      detail: "6 request(s) aborted: the page's responses passed the check's 32 MiB budget",
    });
  });
});
