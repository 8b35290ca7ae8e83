/**
 * `npm run bench:ingest`: throughput, latency and memory of the ingest gateway against
 * real Kafka and ClickHouse, compared with a bare node:http baseline doing the same work
 * per request (bench/ingest/baseline.ts). Both run compiled (`tsc -b`) under plain node.
 *
 *   1. builds, starts the stack, a fresh database, two 6-partition topics, the access keys;
 *   2. starts the gateway and the baseline, each in its own process (RSS measured alone);
 *   3. drives both, alternating gateway and baseline each round: a. single-event requests
 *      and b. 100-event batches with autocannon (closed loop, as fast as answers come);
 *      c. latency at half the single-event max rate of the gateway in an open loop
 *      (`paced` on RawHttpClient: requests evenly spaced, latency from each one's
 *      scheduled time, so a late answer also counts the delay it caused the next);
 *   4. event schemas (docs/event-schemas.md): the gateway's CPU per event (single events and
 *      100-event batches) with and
 *      without a schema for the bench's (source, category) that its events pass, in
 *      alternating rounds on the same gateway (the schema registered and removed between
 *      them, each change awaited on the gateway's registry feed);
 *   5. writes the bench:ingest section of BENCHMARKS.md, prints the tables and every
 *      figure as one JSON object on the last line of stdout; stops everything.
 *
 * Environment: BENCH_SECONDS (10) per run, BENCH_ROUNDS (2) per server and scenario,
 * BENCH_CONNECTIONS (100), BENCH_WARMUP_SECONDS (3), BENCH_KEYS (one access key per
 * connection: the gateway rate-limits each key), BENCH_PROFILE=1 (both servers write a V8
 * CPU profile into the log directory when they stop; such figures are not comparable),
 * BENCH_WRITE=0, --smoke (see harness/run.ts). Only 127.0.0.1 is loaded.
 * Exit code 0 when every request was answered 200, 1 when some failed or the run could not.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_TENANT, ok, type IngestRequest } from '@telemetry/contract';
import { loadGatewayConfig, toMessages } from '@telemetry/ingest-gateway';
import { createKafka, createLogger } from '@telemetry/platform';
import { EventSchemaStore, issueKey, newEventSchemaId } from '@telemetry/store';
import { provision } from '../../tools/devstack/provision.js';
import { autocannon, latencyFigures, paced, rawRequest, RawHttpClient } from '../../harness/load.js';
import { freePort, scriptCommand, serviceCommand, type Child } from '../../harness/processes.js';
import { fmt, median } from '../../harness/report.js';
import { Benchmark, type Cleanups, envNumber, serviceEnv } from '../../harness/run.js';
import { cpuMeter, DISTURBED_CPU, mb } from '../../harness/sampler.js';
import { addCounts, gauge } from '../common/report.js';
import { startChild, topicMessages } from '../common/stack.js';
import { producerPerformance, type AnchorFigures } from './anchor.js';
import { sampleEvent, sampleEventSchema } from './bodies.js';
import {
  cpuMicros,
  failureCount,
  figuresTable,
  renderSection,
  targetsTable,
  type Failures,
  type Figures,
  type Report,
  type RunFigures,
  type ScenarioSummary,
  type Target,
} from './report.js';
import { withRegistry } from '../../tools/devstack/postgres.js';

const ROUTE = '/api/telemetry/events';
const OK_BODY = JSON.stringify(ok(null));
const SECONDS = envNumber('BENCH_SECONDS', 10, 1, false, 1);
const ROUNDS = envNumber('BENCH_ROUNDS', 2, 1, true, 1);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 100, 1, true, 4);
const WARMUP_SECONDS = envNumber('BENCH_WARMUP_SECONDS', 3, 0, false, 0);
const KEYS = envNumber('BENCH_KEYS', CONNECTIONS, 1, true);
const PROFILE = process.env.BENCH_PROFILE === '1';
const ANCHOR_RECORDS = envNumber('BENCH_ANCHOR_RECORDS', 1_000_000, 1000, true, 50_000);
const PARTITIONS = 6;
/** Issue 48's targets (issue 16's, the batch one raised from 0.6x; BENCHMARKS.md). */
const TARGETS = { batchVsAnchor: 0.75, singleVsBaseline: 0.9, p99Ms: 10, rssMB: 200, schemaCost: 0.1 };

const bench = new Benchmark('bench:ingest');
const log = bench.log;
const noFailures = (): Failures => ({ non2xx: 0, errors: 0, timeouts: 0, badBodies: 0 });
const addFailures: (a: Failures, b: Failures) => Failures = addCounts;
const requestBody = (n: number): string =>
  JSON.stringify({ events: Array.from({ length: n }, (_, i) => sampleEvent(i)) } satisfies IngestRequest);

interface Ctx {
  servers: Record<Target, Child>;
  keys: string[];
  pids: { kafka?: number; clickhouse?: number };
  /** Events answered 200 per server, warm-ups included (checked against Kafka at the end). */
  acked: Record<Target, number>;
  warmupFailures: Failures;
}

/** One run against one server (autocannon, or the open loop at `rate`), with the CPU of every process meanwhile. */
async function load(ctx: Ctx, target: Target, body: string, eventsPerRequest: number, seconds: number, rate?: number) {
  const server = ctx.servers[target];
  const from = performance.now();
  const cpu = cpuMeter({
    server: server.pid,
    idle: ctx.servers[target === 'gateway' ? 'baseline' : 'gateway'].pid,
    ...ctx.pids,
  });
  const r = rate === undefined ? await closedLoad(server, body, seconds) : await openLoad(server, body, seconds, rate);
  const w = cpu();
  ctx.acked[target] += r.good * eventsPerRequest;
  return {
    seconds: r.seconds,
    ok: r.good,
    rps: r.good / r.seconds,
    eps: (r.good * eventsPerRequest) / r.seconds,
    p50: r.p50,
    p90: r.p90,
    p99: r.p99,
    cpuPercent: w.processes.server ?? NaN,
    kafkaCpuPercent: w.processes.kafka ?? NaN,
    loadgenCpuPercent: w.processes.bench ?? NaN,
    otherCpuPercent: w.otherPercent,
    peakRssMB: mb(server.rss.peak(from)),
    failed: r.failed,
    statusCodes: r.statusCodes,
  };

  /** `CONNECTIONS` connections, each with its own access key, as fast as answers come (autocannon). */
  async function closedLoad(server: Child, body: string, seconds: number) {
    let nextKey = 0;
    const r = await autocannon({
      url: `${server.url}${ROUTE}`,
      method: 'POST',
      setupClient: (client) => {
        const key = ctx.keys[nextKey++ % ctx.keys.length]!;
        client.setHeaders({ 'content-type': 'application/json', 'x-access-key': key });
      },
      body,
      connections: CONNECTIONS,
      pipelining: 1,
      duration: seconds,
      timeout: 10,
      expectBody: OK_BODY,
    });
    // autocannon checks the body of every answer: a non-2xx one never matches.
    const badBodies = Math.max(0, r.mismatches - r.non2xx);
    return {
      seconds: r.duration,
      good: r['2xx'] - badBodies,
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      failed: { non2xx: r.non2xx, errors: r.errors, timeouts: r.timeouts, badBodies },
      statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats).map(([code, s]) => [code, s.count])),
    };
  }

  /**
   * `rate` requests/s evenly spaced over `CONNECTIONS` connections (each with its own access
   * key), latency from each request's scheduled time. Not autocannon's rate mode: there each
   * connection sends back to back until its quota of the second is used, so half the max
   * rate is the max rate for half of each second (and autocannon 8 corrects for coordinated
   * omission with an expected interval of 1 ms, whatever the rate).
   */
  async function openLoad(server: Child, body: string, seconds: number, rate: number) {
    const client = await RawHttpClient.open(server.url, CONNECTIONS, (i) =>
      rawRequest(
        `${server.url}${ROUTE}`,
        'POST',
        { 'Content-Type': 'application/json', 'X-Access-Key': ctx.keys[i % ctx.keys.length]! },
        body,
      ),
    );
    const statusCodes: Record<string, number> = {};
    let badBodies = 0;
    try {
      const r = await paced(
        async () => {
          const reply = await client.send();
          statusCodes[reply.status] = (statusCodes[reply.status] ?? 0) + 1;
          const good = reply.status === 200 && reply.body === OK_BODY;
          if (reply.status === 200 && !good) badBodies++;
          return { status: reply.status, ok: good };
        },
        rate,
        seconds,
        // Beyond this many waiting, a request is not sent and counts as failed (a timeout).
        rate * 10,
      );
      const q = latencyFigures(r.latencies);
      return {
        seconds: r.seconds,
        good: r.ok,
        p50: Math.round(q.p50 * 10) / 10,
        p90: Math.round(q.p90 * 10) / 10,
        p99: Math.round(q.p99 * 10) / 10,
        failed: { non2xx: r.non2xx, errors: r.errors, timeouts: r.dropped, badBodies },
        statusCodes,
      };
    } finally {
      client.close();
    }
  }
}

/** V8 heap figures from the gateway's /metrics (prom-client default metrics), in MB. */
async function gatewayHeap(server: Child): Promise<RunFigures['heap']> {
  const text = await server.metrics();
  const metric = (name: string): number => mb(gauge(text, name) / 1024);
  return text === ''
    ? undefined
    : {
        usedMB: metric('nodejs_heap_size_used_bytes'),
        totalMB: metric('nodejs_heap_size_total_bytes'),
        externalMB: metric('nodejs_external_memory_bytes'),
      };
}

async function scenario(
  ctx: Ctx,
  s: Pick<ScenarioSummary, 'id' | 'title' | 'eventsPerRequest'> & { rate?: number; warmUp: boolean },
): Promise<ScenarioSummary> {
  const body = requestBody(s.eventsPerRequest);
  log(`${s.title}: body ${body.length} bytes${s.rate === undefined ? '' : `, ${s.rate} req/s offered`}`);
  for (const t of ['gateway', 'baseline'] as const) {
    if (!s.warmUp || WARMUP_SECONDS <= 0) break;
    const w = await load(ctx, t, body, s.eventsPerRequest, WARMUP_SECONDS);
    ctx.warmupFailures = addFailures(ctx.warmupFailures, w.failed);
    log(`  warm-up ${t}: ${Math.round(w.rps)} req/s, ${failureCount(w.failed)} failed`);
  }
  const runs: RunFigures[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of ['gateway', 'baseline'] as const) {
      const figures = await load(ctx, target, body, s.eventsPerRequest, SECONDS, s.rate);
      const heap = target === 'gateway' ? await gatewayHeap(ctx.servers.gateway) : undefined;
      const run: RunFigures = { target, round, ...(heap ? { heap } : {}), ...figures };
      runs.push(run);
      log(
        `  round ${round} ${target.padEnd(8)} ${Math.round(run.rps)} req/s, p50/p90/p99 ${run.p50}/${run.p90}/${run.p99} ms, ` +
          `cpu ${Math.round(run.cpuPercent)}% (kafka ${Math.round(run.kafkaCpuPercent)}%, load gen ` +
          `${Math.round(run.loadgenCpuPercent)}%, other ${Math.round(run.otherCpuPercent)}%), rss ${run.peakRssMB} MB, ` +
          `failed ${failureCount(run.failed)} ${JSON.stringify(run.statusCodes)}`,
      );
      if (!ctx.servers[target].running)
        throw new Error(`${target} exited during the load; see ${ctx.servers[target].logFile}`);
    }
  }
  const figures = (target: Target): Figures => {
    const rs = runs.filter((r) => r.target === target);
    const med = (k: keyof Figures & keyof RunFigures): number => median(rs.map((r) => r[k] as number));
    return {
      rps: med('rps'),
      eps: med('eps'),
      p50: med('p50'),
      p90: med('p90'),
      p99: med('p99'),
      cpuPercent: med('cpuPercent'),
      kafkaCpuPercent: med('kafkaCpuPercent'),
      loadgenCpuPercent: med('loadgenCpuPercent'),
      otherCpuPercent: med('otherCpuPercent'),
      disturbedRuns: rs.filter((r) => r.otherCpuPercent > DISTURBED_CPU).length,
      peakRssMB: Math.max(...rs.map((r) => r.peakRssMB)),
      failed: rs.map((r) => r.failed).reduce(addFailures, noFailures()),
    };
  };
  const [gateway, baseline] = [figures('gateway'), figures('baseline')];
  return { ...s, connections: CONNECTIONS, gateway, baseline, ratio: gateway.rps / baseline.rps, runs };
}

/**
 * The gateway's CPU per event without and with an event schema for its events (which
 * they pass: the cost of validating, not of routing), alternating within each round.
 */
async function schemaSection(ctx: Ctx, ownerUrl: string): Promise<NonNullable<Report['schema']>> {
  log('event schema: single events and 100-event batches without and with a schema for them');
  const bodies = { 1: requestBody(1), 100: requestBody(100) } as const;
  const body = bodies[1];
  const gw = ctx.servers.gateway;
  /** Waits until the gateway applied every registry change made so far. */
  const synced = async (db: Parameters<Parameters<typeof withRegistry>[1]>[0]): Promise<void> => {
    const { rows } = await db.query<{ seq: string | null }>('SELECT max(seq) AS seq FROM registry_changes');
    const want = Number(rows[0]?.seq ?? 0);
    for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
      if (gauge(await gw.metrics(), 'registry_feed_sequence') >= want) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the gateway did not apply the schema change within 30 s');
  };
  const runs: { round: number; schema: boolean; eventsPerRequest: number; figures: Figures & { ok: number } }[] = [];
  await withRegistry(ownerUrl, async (db) => {
    const store = new EventSchemaStore(db);
    let id: string | undefined;
    for (let round = 1; round <= ROUNDS; round++) {
      for (const on of [false, true]) {
        if (on && id === undefined) {
          id = newEventSchemaId();
          const [sample] = (JSON.parse(body) as IngestRequest).events;
          await store.create({
            id,
            tenant_id: DEFAULT_TENANT,
            source: sample!.source,
            category: sample!.category,
            action: 'route',
            schema: sampleEventSchema,
            created_by: 'bench',
          });
        } else if (!on && id !== undefined) {
          await store.remove(DEFAULT_TENANT, id);
          id = undefined;
        }
        await synced(db);
        // A few requests first: the first event of a schema version compiles its validator.
        for (let i = 0; i < 10; i++) {
          const r = await fetch(`${gw.url}${ROUTE}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-access-key': ctx.keys[0]! },
            body,
          });
          await r.arrayBuffer();
        }
        for (const n of [1, 100] as const) {
          const f = await load(ctx, 'gateway', bodies[n], n, SECONDS);
          const figures = { ...f, disturbedRuns: f.otherCpuPercent > DISTURBED_CPU ? 1 : 0 };
          runs.push({ round, schema: on, eventsPerRequest: n, figures });
          log(
            `  round ${round} ${on ? 'with   ' : 'without'} schema, ${String(n).padStart(3)} event(s)/request: ${Math.round(f.eps)} events/s, cpu ${Math.round(f.cpuPercent)}%, ${Math.round(cpuMicros(f))} µs/event, failed ${failureCount(f.failed)}`,
          );
        }
      }
    }
    if (id !== undefined) await store.remove(DEFAULT_TENANT, id);
  });
  const micros = (on: boolean, n: number): number =>
    median(runs.filter((x) => x.schema === on && x.eventsPerRequest === n).map((x) => cpuMicros(x.figures)));
  const checked = gauge(await gw.metrics(), 'ingest_schema_checks_total');
  const [withoutMicros, withMicros] = [micros(false, 1), micros(true, 1)];
  const [batchWithoutMicros, batchWithMicros] = [micros(false, 100), micros(true, 100)];
  return {
    withoutMicros,
    withMicros,
    cost: withMicros / withoutMicros - 1,
    batchWithoutMicros,
    batchWithMicros,
    batchCost: batchWithMicros / batchWithoutMicros - 1,
    checked,
    runs,
  };
}

async function main(cleanups: Cleanups): Promise<Report> {
  const logDir = mkdtempSync(join(tmpdir(), 'bench-ingest-'));
  log(`child logs in ${logDir}`);
  const { stack, pids, machine } = await bench.stack(cleanups);
  const run = randomBytes(4).toString('hex');
  const database = `bench_${run}`;
  const topics: Record<Target, string> = { gateway: `bench_${run}_gateway`, baseline: `bench_${run}_baseline` };
  const anchorTopic = `bench_${run}_anchor`;
  const quiet = createLogger({ service: 'bench', level: 'warn' });
  const provisioned = await provision(stack, {
    database,
    topics: [...Object.values(topics), anchorTopic],
    partitions: PARTITIONS,
    logger: quiet,
  });
  // Both servers read the keys as the gateway's own role.
  const registryUrl = provisioned.postgres!.ingest;
  const keys: string[] = [];
  await withRegistry(provisioned.postgres!.owner, async (db) => {
    for (let i = 0; i < KEYS; i++)
      keys.push((await issueKey(db, { tenantId: DEFAULT_TENANT, kind: 'telemetry', name: `bench ${i}` })).key);
  });

  const start = async (target: Target): Promise<Child> => {
    const port = await freePort();
    const server = await startChild(
      cleanups,
      {
        name: target,
        command:
          target === 'gateway'
            ? serviceCommand('ingest-gateway', true)
            : scriptCommand('bench/ingest/baseline.ts', true),
        nodeArgs: PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${logDir}`, `--cpu-prof-name=${target}.cpuprofile`] : [],
        url: `http://127.0.0.1:${port}`,
        logFile: join(logDir, `${target}.log`),
        env: serviceEnv(stack, database, port, { EVENTS_TOPIC: topics[target], DATABASE_URL: registryUrl }),
      },
      { readyMs: 60_000, closeMs: 15_000 },
    );
    log(`${target} ready on ${server.url} (pid ${server.pid})`);
    return server;
  };
  const servers = { gateway: await start('gateway'), baseline: await start('baseline') };
  // The settings both servers run with (the gateway's config, from the same environment).
  const gatewayConfig = loadGatewayConfig(
    serviceEnv(stack, database, 1, { EVENTS_TOPIC: topics.gateway, DATABASE_URL: registryUrl }),
  );
  const ctx: Ctx = { servers, keys, pids, acked: { gateway: 0, baseline: 0 }, warmupFailures: noFailures() };

  const single = await scenario(ctx, { id: 'single', title: 'single event', eventsPerRequest: 1, warmUp: true });
  const batch = await scenario(ctx, { id: 'batch100', title: '100-event batch', eventsPerRequest: 100, warmUp: true });
  const rate = Math.max(1, Math.floor(single.gateway.rps / 2));
  const half = await scenario(ctx, {
    id: 'half_rate',
    title: 'single event, half max rate',
    eventsPerRequest: 1,
    rate,
    warmUp: false,
  });
  const scenarios = [single, batch, half];
  const schema = await schemaSection(ctx, provisioned.postgres!.owner);

  // The anchor: Kafka's own Java producer, same record size (an event's message value plus
  // its 36-byte key), acks=all, the same partitions and the gateway's linger and batch bytes.
  const [sample] = toMessages(
    JSON.parse(requestBody(1)) as IngestRequest,
    { keyId: 'k', tenantId: DEFAULT_TENANT },
    new Date().toISOString(),
    1e9,
  );
  const settings = {
    brokers: stack.kafkaBrokers,
    topic: anchorTopic,
    records: ANCHOR_RECORDS,
    recordBytes: Buffer.byteLength(String(sample!.value)) + 36,
    lingerMs: gatewayConfig.produceLingerMs,
    batchBytes: Math.floor(gatewayConfig.produceMaxBatchBytes / PARTITIONS),
  };
  const anchorRuns: AnchorFigures[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const a = await producerPerformance(settings);
    anchorRuns.push(a);
    log(
      `  round ${round} ProducerPerformance ${Math.round(a.recordsPerSec)} records/s of ${settings.recordBytes} B, p50/p99 ${a.p50Ms}/${a.p99Ms} ms`,
    );
  }
  const anchorRate = median(anchorRuns.map((a) => a.recordsPerSec));
  const batchVsAnchor = batch.gateway.eps / anchorRate;

  // Every 200 must stand for messages in Kafka (requests cut off at the end of a run may
  // add more messages than answers, never fewer).
  const client = createKafka({ brokers: stack.kafkaBrokers.split(','), clientId: 'bench', logger: quiet });
  const kafka: Report['kafka'] = [];
  for (const target of ['gateway', 'baseline'] as const) {
    const messages = await topicMessages(client, topics[target]);
    kafka.push({
      target,
      topic: topics[target],
      messages,
      ackedEvents: ctx.acked[target],
      ok: messages >= ctx.acked[target],
    });
  }

  const gatewayPeakRssMB = mb(servers.gateway.rss.peak());
  const clean =
    scenarios.every((s) => s.runs.every((r) => failureCount(r.failed) === 0)) &&
    failureCount(ctx.warmupFailures) === 0 &&
    kafka.every((k) => k.ok);
  const check = (name: string, goal: string, value: string, pass: boolean, ...figs: Figures[]) => {
    // A run with failed requests meets no target; a disturbed one is only flagged.
    const failed = figs.reduce((a, f) => a + failureCount(f.failed), 0);
    const disturbed = figs.reduce((a, f) => a + f.disturbedRuns, 0);
    const notes = [
      failed > 0 ? `${failed} requests failed in these runs` : '',
      disturbed > 0 ? `${disturbed} of these runs disturbed by other processes` : '',
    ].filter(Boolean);
    return { name, goal, value, met: pass && failed === 0, ...(notes.length ? { note: notes.join('; ') } : {}) };
  };
  const r = (n: number): string => Math.round(n).toLocaleString('en-US');
  return {
    ...bench.head(machine),
    config: {
      seconds: SECONDS,
      rounds: ROUNDS,
      warmupSeconds: WARMUP_SECONDS,
      connections: CONNECTIONS,
      pipelining: 1,
      accessKeys: KEYS,
    },
    scenarios,
    gatewayPeakRssMB,
    baselinePeakRssMB: mb(servers.baseline.rss.peak()),
    kafka,
    anchor: { settings, runs: anchorRuns, recordsPerSec: anchorRate },
    kafkaClient: gatewayConfig.kafkaClient,
    schema,
    targets: [
      check(
        'event schema: extra gateway CPU per single event',
        `< ${TARGETS.schemaCost * 100} %`,
        `${(schema.cost * 100).toFixed(1)} % (${r(schema.withoutMicros)} µs without, ${r(schema.withMicros)} µs with; ${schema.checked} events checked)`,
        schema.cost < TARGETS.schemaCost && schema.checked > 0,
        ...schema.runs.filter((x) => x.eventsPerRequest === 1).map((x) => x.figures),
      ),
      check(
        'event schema: extra gateway CPU per event in 100-event batches',
        `< ${TARGETS.schemaCost * 100} %`,
        `${(schema.batchCost * 100).toFixed(1)} % (${r(schema.batchWithoutMicros)} µs without, ${r(schema.batchWithMicros)} µs with)`,
        schema.batchCost < TARGETS.schemaCost && schema.checked > 0,
        ...schema.runs.filter((x) => x.eventsPerRequest === 100).map((x) => x.figures),
      ),
      check(
        "gateway, 100-event batches / Kafka's ProducerPerformance",
        `>= ${TARGETS.batchVsAnchor}x`,
        `${batchVsAnchor.toFixed(2)}x (${r(batch.gateway.eps)} events/s vs ${r(anchorRate)} records/s)`,
        batchVsAnchor >= TARGETS.batchVsAnchor,
        batch.gateway,
      ),
      check(
        'gateway / bare node:http baseline, single events',
        `>= ${TARGETS.singleVsBaseline}x`,
        `${single.ratio.toFixed(2)}x (CPU per event: gateway ${r(cpuMicros(single.gateway))} µs, baseline ${r(cpuMicros(single.baseline))} µs)`,
        single.ratio >= TARGETS.singleVsBaseline,
        single.gateway,
        single.baseline,
      ),
      check(
        'gateway p99 at half the max rate',
        `<= ${TARGETS.p99Ms} ms`,
        `${fmt(half.gateway.p99, 1)} ms (${r(rate)} req/s offered)`,
        half.gateway.p99 <= TARGETS.p99Ms,
        half.gateway,
      ),
      check(
        'gateway peak RSS under load',
        `<= ${TARGETS.rssMB} MB`,
        `${gatewayPeakRssMB} MB`,
        gatewayPeakRssMB <= TARGETS.rssMB,
      ),
    ],
    clean,
    warmupFailures: ctx.warmupFailures,
  };
}

await bench.run(main, {
  render: renderSection,
  tables: (report) =>
    `${figuresTable(report)}\n\n${targetsTable(report)}${report.clean ? '' : '\n\nSOME REQUESTS FAILED: see "failed requests" above.'}`,
  ok: (report) => report.clean,
});
