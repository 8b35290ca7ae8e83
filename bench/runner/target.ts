/**
 * The HTTP target of `npm run bench:runner`, in its own process (its CPU is measured apart,
 * and it does not share an event loop with the benchmark). Every `GET /m/<monitor id>`
 * is answered 200 `ok` at once and recorded: when it arrived (performance.now(), ms,
 * relative to the last reset) and which monitor it was for.
 *
 *   GET  /readyz  200
 *   POST /reset   forgets everything recorded and starts a new window now
 *   GET  /stats   {"requests","monitors","seconds"}: since the last reset
 *   GET  /window  the same, plus requests per whole second and each monitor's arrivals
 *
 * Configured with PORT and HOST (127.0.0.1). Started (compiled) by bench/runner/main.ts; SIGTERM stops it.
 */
import { createServer, type ServerResponse } from 'node:http';

const PREFIX = '/m/';

let start = performance.now();
let requests = 0;
let perSecond: number[] = [];
let arrivals = new Map<string, number[]>();

function reset(): void {
  start = performance.now();
  requests = 0;
  perSecond = [];
  arrivals = new Map();
}

function json(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function stats(): { requests: number; monitors: number; seconds: number } {
  return { requests, monitors: arrivals.size, seconds: (performance.now() - start) / 1000 };
}

const server = createServer((req, res) => {
  const url = req.url ?? '/';
  if (url.startsWith(PREFIX)) {
    const t = performance.now() - start;
    const id = url.slice(PREFIX.length);
    requests++;
    const second = Math.floor(t / 1000);
    perSecond[second] = (perSecond[second] ?? 0) + 1;
    const seen = arrivals.get(id);
    if (seen) seen.push(t);
    else arrivals.set(id, [t]);
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
  } else if (url === '/readyz') {
    json(res, { ready: true });
  } else if (url === '/reset' && req.method === 'POST') {
    reset();
    json(res, stats());
  } else if (url === '/stats') {
    json(res, stats());
  } else if (url === '/window') {
    const round = (x: number): number => Math.round(x * 100) / 100;
    json(res, {
      ...stats(),
      perSecond: Array.from(perSecond, (n) => n ?? 0),
      arrivals: Object.fromEntries([...arrivals].map(([id, ts]) => [id, ts.map(round)])),
    });
  } else {
    res.writeHead(404).end();
  }
});
// Checks come in on fresh connections, many at once when phases bunch up.
server.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1', backlog: 4096 });

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
