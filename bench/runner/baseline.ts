/**
 * The baseline of `npm run bench:runner`: the check runner's essential work per check with
 * none of its scheduling, ownership, registry, state machine, metrics or HTTP framework.
 * For every monitor, every `interval_seconds`: one GET on a fresh connection (node:http,
 * `agent: false`, `Connection: close`, aborted after `timeout_ms`, body read), then one
 * kafkajs `send` with `acks: -1` of the JSON check message (one send per check, no
 * batching; the runner batches), keyed by monitor id, murmur2 partitioner.
 *
 * The first check of a monitor is at the same phase of the interval as the runner's
 * (so both put the same bursts on the target); after that a plain setInterval.
 *
 * Environment: MONITORS_FILE (JSON: [{id, url, interval_seconds, timeout_ms}]),
 * KAFKA_BROKERS, CHECKS_TOPIC, PORT and HOST for `GET /readyz` and `GET /stats`
 * ({"checks","down","produced","failed","httpErrors"}). Started (compiled) by bench/runner/sides.ts; SIGTERM stops it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { Kafka, logLevel, Partitioners } from 'kafkajs';

interface BaselineMonitor {
  id: string;
  url: string;
  interval_seconds: number;
  timeout_ms: number;
}

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

const monitors = JSON.parse(readFileSync(need('MONITORS_FILE'), 'utf8')) as BaselineMonitor[];
const topic = need('CHECKS_TOPIC');
const kafka = new Kafka({
  clientId: 'bench-runner-baseline',
  brokers: need('KAFKA_BROKERS').split(','),
  connectionTimeout: 3000,
  requestTimeout: 10_000,
  logLevel: logLevel.WARN,
});
const producer = kafka.producer({
  allowAutoTopicCreation: false,
  createPartitioner: Partitioners.DefaultPartitioner,
  retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 },
});
const stats = { checks: 0, down: 0, produced: 0, failed: 0, httpErrors: 0 };
const timers: NodeJS.Timeout[] = [];

interface Answer {
  statusCode: number;
  ms: number;
  failed: boolean;
}

function get(url: string, timeoutMs: number): Promise<Answer> {
  const started = performance.now();
  const elapsed = (): number => Math.round((performance.now() - started) * 100) / 100;
  return new Promise((resolve) => {
    const req = request(
      url,
      { agent: false, signal: AbortSignal.timeout(timeoutMs), headers: { Connection: 'close' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, ms: elapsed(), failed: false }));
        res.on('error', () => resolve({ statusCode: 0, ms: elapsed(), failed: true }));
      },
    );
    req.on('error', () => resolve({ statusCode: 0, ms: elapsed(), failed: true }));
    req.end();
  });
}

async function check(m: BaselineMonitor): Promise<void> {
  const createdAt = new Date().toISOString();
  const a = await get(m.url, m.timeout_ms);
  stats.checks++;
  if (a.failed) stats.httpErrors++;
  const up = a.statusCode >= 200 && a.statusCode < 300;
  if (!up) stats.down++;
  const message = {
    id: `chk_${randomBytes(12).toString('hex')}`,
    monitor_id: m.id,
    status: up ? 'up' : 'down',
    response_time: a.ms,
    status_code: a.statusCode,
    ...(up ? {} : { error: a.failed ? 'network' : 'unexpected_status' }),
    created_at: createdAt,
  };
  try {
    await producer.send({
      topic,
      acks: -1,
      timeout: 10_000,
      messages: [{ key: m.id, value: JSON.stringify(message) }],
    });
    stats.produced++;
  } catch {
    stats.failed++;
  }
}

function schedule(m: BaselineMonitor): void {
  const interval = m.interval_seconds * 1000;
  // The runner's phase (slots.ts phaseOf): the same spread over the interval.
  const phase = createHash('sha1').update(m.id).digest().readUInt32BE(4) % interval;
  const now = Date.now();
  const first = (Math.floor((now - phase) / interval) + 1) * interval + phase - now;
  timers.push(
    setTimeout(() => {
      void check(m);
      timers.push(setInterval(() => void check(m), interval));
    }, first),
  );
}

await producer.connect();
for (const m of monitors) schedule(m);

const server = createServer((req, res) => {
  const body = req.url === '/stats' ? JSON.stringify(stats) : req.url === '/readyz' ? '{"ready":true}' : undefined;
  if (body === undefined) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(Number(need('PORT')), process.env.HOST ?? '127.0.0.1');

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    for (const t of timers) clearTimeout(t);
    server.close();
    producer.disconnect().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
