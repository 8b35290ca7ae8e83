/**
 * The gateway part of `npm run bench:scale`: the ingest gateway's events/s, latency, CPU
 * per event and memory with 1, 100 and 10,000 access keys.
 *
 * One gateway process (`services/ingest-gateway/dist/main.js`) per point, all started
 * before the first run and kept running to the end, each with a registry of its own (a
 * PostgreSQL database holding exactly that many telemetry keys, which its key copy loads
 * at start) and a topic of its own (6 partitions). The same load for every point: the
 * bench:ingest load (autocannon, BENCH_SCALE_GATEWAY_CONNECTIONS connections, pipelining
 * 1, bench/ingest's sample events), each request's key drawn at random from the point's
 * keys (autocannon rebuilds each request), so that 10,000 keys are really used. The points
 * take turns: rounds alternate ascending and descending, after a warm-up of each.
 *
 * The per-key rate limit is raised to 1,000,000 requests/s with a burst of 10,000,000:
 * the limiter still runs (one bucket per key) but never refuses, so it is not what this
 * measures. MAX_INFLIGHT_PER_KEY (25,000 messages) stays above what the load keeps in
 * flight (connections x events per request).
 *
 * Settings: BENCH_SCALE_GATEWAY_KEYS (1,100,10000), BENCH_SCALE_GATEWAY_EVENTS (events per
 * request, 1), BENCH_SCALE_GATEWAY_CONNECTIONS (100), BENCH_SCALE_GATEWAY_SECONDS (8 per
 * run), BENCH_SCALE_GATEWAY_ROUNDS (2), BENCH_SCALE_GATEWAY_WARMUP_SECONDS (2).
 * Smoke: 1 and 10 keys, 4 connections, 1 s runs, 1 round, no warm-up.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { DEFAULT_TENANT, ok } from '@telemetry/contract';
import { createKafka, createLogger } from '@telemetry/platform';
import { insertKeyRecords, newKeyRecord } from '@telemetry/store';
import { provisionPostgres, withRegistry } from '../../tools/devstack/postgres.js';
import { provision } from '../../tools/devstack/provision.js';
import { autocannon } from '../../harness/load.js';
import { freePort, serviceCommand, type Child } from '../../harness/processes.js';
import { prng } from '../../harness/prng.js';
import { fmt, median } from '../../harness/report.js';
import { envNumber, serviceEnv } from '../../harness/run.js';
import { cpuMeter, DISTURBED_CPU, mb } from '../../harness/sampler.js';
import { gauge } from '../common/report.js';
import { startChild, topicMessages } from '../common/stack.js';
import { requestBody } from '../ingest/bodies.js';
import type { Curve, CurvePart, CurvePoint, ScaleContext } from './curve.js';
import { countList, roundOrder } from './levels.js';

const ROUTE = '/api/telemetry/events';
const OK_BODY = JSON.stringify(ok(null));
const PARTITIONS = 6;
/** High enough that no key is ever refused (the limiter runs, and never decides). */
const LIMITER_ENV = { RATE_LIMIT_PER_SECOND: '1000000', RATE_LIMIT_BURST: '10000000' };
const INSERT_CHUNK = 2000;

/** One point of the curve: its keys, its gateway and what it was sent. */
interface Point {
  keys: number;
  secrets: string[];
  gateway: Child;
  topic: string;
  startRssMB: number;
  acked: number;
  runs: Run[];
  warmupFailed: number;
}

interface Run {
  eps: number;
  p99: number;
  cpuPercent: number;
  cpuMicros: number;
  kafkaCpuPercent: number;
  loadgenCpuPercent: number;
  otherCpuPercent: number;
  peakRssMB: number;
  failed: number;
}

/** `n` telemetry keys of the default tenant in the registry at `ownerUrl`; their plaintexts. */
async function issueKeys(ownerUrl: string, n: number): Promise<string[]> {
  const issued = Array.from({ length: n }, (_, i) =>
    newKeyRecord({ tenantId: DEFAULT_TENANT, kind: 'telemetry', name: `scale ${i}` }),
  );
  await withRegistry(ownerUrl, async (db) => {
    for (let i = 0; i < issued.length; i += INSERT_CHUNK)
      await insertKeyRecords(
        db,
        issued.slice(i, i + INSERT_CHUNK).map((k) => k.record),
      );
  });
  return issued.map((k) => k.key);
}

export const gatewayCurve: CurvePart = async (ctx: ScaleContext): Promise<Curve> => {
  const levels = countList('BENCH_SCALE_GATEWAY_KEYS', [1, 100, 10_000], [1, 10]);
  const eventsPerRequest = envNumber('BENCH_SCALE_GATEWAY_EVENTS', 1, 1, true);
  const connections = envNumber('BENCH_SCALE_GATEWAY_CONNECTIONS', 100, 1, true, 4);
  const seconds = envNumber('BENCH_SCALE_GATEWAY_SECONDS', 8, 1, false, 1);
  const rounds = envNumber('BENCH_SCALE_GATEWAY_ROUNDS', 2, 1, true, 1);
  const warmupSeconds = envNumber('BENCH_SCALE_GATEWAY_WARMUP_SECONDS', 2, 0, false, 0);
  const { stack, pids } = ctx.bench;
  const log = (line: string): void => ctx.log(`gateway: ${line}`);
  const started = performance.now();

  const run = randomBytes(4).toString('hex');
  const database = `scale_${run}`;
  const topicOf = (keys: number): string => `scale_${run}_gateway_k${keys}`;
  const quiet = createLogger({ service: 'bench-scale', level: 'warn' });
  const provisioned = await provision(stack, {
    database,
    topics: levels.map(topicOf),
    partitions: PARTITIONS,
    logger: quiet,
  });
  const body = requestBody(eventsPerRequest);

  // A registry per point, holding exactly its keys, then its gateway.
  const points: Point[] = [];
  for (const [i, keys] of levels.entries()) {
    const registry =
      i === 0 ? provisioned.postgres! : await provisionPostgres(stack.postgresAdminUrl, `${database}_k${keys}`, quiet);
    const t = performance.now();
    const secrets = await issueKeys(registry.owner, keys);
    log(`${fmt(keys)} keys issued in ${fmt((performance.now() - t) / 1000, 1)} s`);
    const port = await freePort();
    const gateway = await startChild(
      ctx.cleanups,
      {
        name: `gateway (${keys} keys)`,
        command: serviceCommand('ingest-gateway', true),
        url: `http://127.0.0.1:${port}`,
        logFile: join(ctx.logDir, `gateway-k${keys}.log`),
        env: serviceEnv(stack, database, port, {
          EVENTS_TOPIC: topicOf(keys),
          DATABASE_URL: registry.ingest,
          ...LIMITER_ENV,
        }),
      },
      { readyMs: 60_000, closeMs: 15_000 },
    );
    points.push({
      keys,
      secrets,
      gateway,
      topic: topicOf(keys),
      startRssMB: NaN,
      acked: 0,
      runs: [],
      warmupFailed: 0,
    });
  }
  // Every gateway ready (its keys loaded), none loaded yet.
  for (const p of points) p.startRssMB = mb(p.gateway.rss.sample() ?? NaN);
  log(`gateways ready; RSS at start ${points.map((p) => `${p.keys} keys ${p.startRssMB} MB`).join(', ')}`);

  /** One autocannon run against the point's gateway, each request with a key drawn at random. */
  const load = async (p: Point, secs: number, seed: number): Promise<Run> => {
    const from = performance.now();
    const idle = Object.fromEntries(points.filter((o) => o !== p).map((o) => [`idle-${o.keys}`, o.gateway.pid]));
    const cpu = cpuMeter({ server: p.gateway.pid, ...idle, ...pids });
    const draw = prng(seed);
    const r = await autocannon({
      url: `${p.gateway.url}${ROUTE}`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      connections,
      pipelining: 1,
      duration: secs,
      timeout: 10,
      // expectBody is refused with `requests`; the same check as a function.
      verifyBody: (b) => b === OK_BODY,
      requests: [
        {
          setupRequest: (req) => {
            req.headers = { ...req.headers, 'x-access-key': p.secrets[Math.floor(draw() * p.secrets.length)]! };
            return req;
          },
        },
      ],
    });
    const w = cpu();
    // A non-2xx answer never matches the expected body either.
    const badBodies = Math.max(0, r.mismatches - r.non2xx);
    const good = r['2xx'] - badBodies;
    p.acked += good * eventsPerRequest;
    const eps = (good * eventsPerRequest) / r.duration;
    const cpuPercent = w.processes.server ?? NaN;
    if (!p.gateway.running) throw new Error(`the gateway with ${p.keys} keys exited; see ${p.gateway.logFile}`);
    return {
      eps,
      p99: r.latency.p99,
      cpuPercent,
      cpuMicros: eps > 0 ? ((cpuPercent / 100) * 1e6) / eps : NaN,
      kafkaCpuPercent: w.processes.kafka ?? NaN,
      loadgenCpuPercent: w.processes.bench ?? NaN,
      otherCpuPercent: w.otherPercent,
      peakRssMB: mb(p.gateway.rss.peak(from)),
      failed: r.non2xx + r.errors + badBodies,
    };
  };

  let seed = 1;
  if (warmupSeconds > 0)
    for (const p of points) {
      const w = await load(p, warmupSeconds, seed++);
      p.warmupFailed += w.failed;
      log(`warm-up ${fmt(p.keys)} keys: ${fmt(w.eps)} events/s, ${w.failed} failed`);
    }
  for (let round = 1; round <= rounds; round++) {
    for (const p of roundOrder(points, round)) {
      const r = await load(p, seconds, seed++);
      p.runs.push(r);
      log(
        `round ${round} ${fmt(p.keys).padStart(6)} keys: ${fmt(r.eps)} events/s, p99 ${r.p99} ms, ` +
          `cpu ${fmt(r.cpuPercent)}% (${fmt(r.cpuMicros, 1)} µs/event; kafka ${fmt(r.kafkaCpuPercent)}%, ` +
          `load gen ${fmt(r.loadgenCpuPercent)}%, other ${fmt(r.otherCpuPercent)}%), peak RSS ${r.peakRssMB} MB, ` +
          `${r.failed} failed`,
      );
    }
  }

  // Every event answered 200 is in Kafka (a run cut off at its end may leave more messages than answers, never fewer).
  const heapUsedMB = new Map<number, number>();
  const kafka = createKafka({ brokers: stack.kafkaBrokers.split(','), clientId: 'bench-scale', logger: quiet });
  const lost: string[] = [];
  for (const p of points) {
    heapUsedMB.set(p.keys, mb(gauge(await p.gateway.metrics(), 'nodejs_heap_size_used_bytes') / 1024));
    const messages = await topicMessages(kafka, p.topic);
    if (messages < p.acked) lost.push(`${p.keys} keys: ${messages} messages for ${p.acked} events answered 200`);
    await p.gateway.stop();
  }
  if (lost.length > 0) throw new Error(`Kafka holds fewer events than were acknowledged: ${lost.join('; ')}`);

  const curvePoints: CurvePoint[] = points.map((p) => {
    const med = (k: keyof Run): number => median(p.runs.map((r) => r[k]));
    const disturbed = p.runs.filter((r) => r.otherCpuPercent > DISTURBED_CPU).length;
    return {
      x: p.keys,
      values: {
        eps: med('eps'),
        cpuMicros: med('cpuMicros'),
        peakRssMB: Math.max(...p.runs.map((r) => r.peakRssMB)),
        startRssMB: p.startRssMB,
        p99: med('p99'),
        heapUsedMB: heapUsedMB.get(p.keys) ?? NaN,
        cpuPercent: med('cpuPercent'),
        otherCpuPercent: Math.max(...p.runs.map((r) => r.otherCpuPercent)),
        failed: p.runs.reduce((a, r) => a + r.failed, p.warmupFailed),
      },
      ...(disturbed > 0
        ? { note: `${disturbed} of ${p.runs.length} runs disturbed (other CPU > ${DISTURBED_CPU}%)` }
        : {}),
    };
  });
  const all = points.flatMap((p) => p.runs);
  // Kafka's CPU is sampled only when the stack runs it as a child (local mode).
  const pct = (x: number): string => (Number.isFinite(x) ? `${fmt(x)}%` : 'not sampled (external stack: in "other")');
  log(`done in ${fmt((performance.now() - started) / 1000)} s`);
  return {
    id: 'gateway-keys',
    title: 'Ingest gateway by access keys',
    xLabel: 'access keys in the registry (each request drawn from them)',
    series: [
      { key: 'eps', label: 'events/s', unit: 'events/s' },
      { key: 'cpuMicros', label: 'gateway CPU per event', unit: 'µs per event' },
      { key: 'peakRssMB', label: 'peak under load', unit: 'MB RSS' },
      { key: 'startRssMB', label: 'at start (keys loaded)', unit: 'MB RSS' },
      { key: 'p99', label: 'p99 latency', unit: 'ms', chart: false },
      { key: 'heapUsedMB', label: 'V8 heap used after the runs', unit: 'MB', chart: false },
      { key: 'cpuPercent', label: 'gateway CPU', unit: '% of a core', chart: false },
      { key: 'otherCpuPercent', label: 'other CPU (max)', unit: '% of a core', chart: false },
      { key: 'failed', label: 'failed requests', unit: 'requests', chart: false },
    ],
    points: curvePoints,
    notes: [
      `Load: autocannon from this command's process, ${connections} connections, pipelining 1, ` +
        `${eventsPerRequest === 1 ? 'single-event requests' : `${eventsPerRequest}-event requests`} ` +
        `(bench:ingest's page-view events, ${fmt(Buffer.byteLength(body))} B per request), each request's ` +
        `\`x-access-key\` drawn at random (uniform) from the point's keys, so that every key is used.`,
      `One gateway per point (\`services/ingest-gateway/dist/main.js\`, LOG_LEVEL=warn), all ${points.length} ` +
        `running throughout, each with a PostgreSQL registry of its own holding exactly that many keys (loaded ` +
        `into its key copy at start) and a ${PARTITIONS}-partition topic of its own. ${rounds} round(s) of ` +
        `${seconds} s per point, the points taking turns (ascending, then descending)` +
        `${warmupSeconds > 0 ? `, after a ${warmupSeconds} s warm-up of each` : ''}; figures are medians of the ` +
        `rounds, peak RSS the highest VmRSS sampled every 100 ms during the point's runs, "at start" the VmRSS ` +
        `once ready, before any load.`,
      `The per-key rate limit is raised (RATE_LIMIT_PER_SECOND=1000000, RATE_LIMIT_BURST=10000000): the ` +
        `limiter runs, one bucket per key, but never refuses, so it is not what is measured. ` +
        `MAX_INFLIGHT_PER_KEY (25,000 messages) is above the ${fmt(connections * eventsPerRequest)} the load ` +
        `keeps in flight.`,
      `CPU per event = the gateway's CPU (user + system, /proc) over the run / events answered 200. ` +
        `The load generator used ${fmt(median(all.map((r) => r.loadgenCpuPercent)))}% of a core and Kafka ` +
        `${pct(median(all.map((r) => r.kafkaCpuPercent)))} (medians): on 2 cores the gateway shares the ` +
        `machine with both.`,
      `Kafka check: every topic holds at least the events answered 200 ` +
        `(${points.map((p) => `${fmt(p.keys)} keys: ${fmt(p.acked)}`).join(', ')}).`,
    ],
    otherCpuPercent: Math.max(...all.map((r) => r.otherCpuPercent)),
  };
};
