/**
 * The query part of `npm run bench:scale`: how the query service's first page and its hot
 * tail's memory grow with the monitors it serves (5,000 and 50,000).
 *
 * Per point: a fresh database with 200 checks per monitor (1M and 10M rows, loaded
 * server-side as bench:query loads them: bench/query/data.ts), the query service compiled
 * in its own process with its own empty check-results topic (its hot tail loads every
 * monitor from ClickHouse), then
 *   1. the tail warm of bench:query (bench/query/tail.ts): every monitor's first page
 *      once, 16 at a time; the heap used after it and the process's RSS;
 *   2. bench:query's first_page scenario: a closed loop of 16 connections, each asking a
 *      random monitor's first page (100 checks) and judging the answer; req/s, p99, the
 *      service's CPU per request, and where the pages were answered (the tail or ClickHouse,
 *      from query_check_tail_requests_total and query_check_tail_loads_total).
 * The hot tail holds at most TAIL_MAX_MONITORS monitors (default 10,000), the least
 * recently read dropped for a new one: past the cap, a random monitor's page is usually a
 * tail load from ClickHouse that evicts another. So each point with more monitors than
 * the default runs twice: with the default, and with TAIL_MAX_MONITORS raised to the
 * monitors (every monitor stays in memory). Below the cap the two are the same run.
 *
 * Environment: BENCH_SCALE_QUERY_MONITORS (5000,50000), BENCH_SCALE_QUERY_CHECKS_PER_MONITOR
 * (200), BENCH_SCALE_QUERY_SECONDS (10, the measured run), BENCH_SCALE_QUERY_WARMUP_SECONDS
 * (2). Smoke: 8 and 16 monitors, a cap of 10, 1 s runs.
 */
import { randomBytes } from 'node:crypto';
import { DEFAULT_TENANT } from '@telemetry/contract';
import { loadQueryConfig, querySpec } from '@telemetry/query-service';
import {
  createClickHouse,
  createKafka,
  createLogger,
  createPostgres,
  sqlIdentifier,
  type Logger,
} from '@telemetry/platform';
import { databasesOf, issueKey, PG_SERVICE_ROLE_NAMES, pgRoleName, quoteIdent } from '@telemetry/store';
import { withRegistry } from '../../tools/devstack/postgres.js';
import { provision } from '../../tools/devstack/provision.js';
import type { Stack } from '../../tools/devstack/stack.js';
import { storeEnv } from '../../tools/devstack/users.js';
import { closedLoop, HttpClient, type Op } from '../../harness/load.js';
import { freePort, metricSum, serviceCommand, until, type Child } from '../../harness/processes.js';
import { fmt, quantiles } from '../../harness/report.js';
import { envNumber, serviceEnv } from '../../harness/run.js';
import { cpuMeter, mb } from '../../harness/sampler.js';
import { gauge } from '../common/report.js';
import { adminClickHouse, startChild } from '../common/stack.js';
import { DataSpec, loadChecks } from '../query/data.js';
import { firstPage } from '../query/fixtures.js';
import { outcome, serviceChecksProblem, serviceHeaders, type ServiceTarget } from '../query/requests.js';
import { warmTail } from '../query/tail.js';
import type { Curve, CurvePart, CurvePoint, ScaleContext } from './curve.js';

const CONNECTIONS = 16;

function monitorLevels(smoke: boolean): number[] {
  const raw = process.env.BENCH_SCALE_QUERY_MONITORS;
  if (raw === undefined || raw.trim() === '') return smoke ? [8, 16] : [5000, 50_000];
  return raw.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < 1)
      throw new Error(`BENCH_SCALE_QUERY_MONITORS: monitor counts such as 5000,50000, not ${raw}`);
    return n;
  });
}

/**
 * Drops what a run provisioned on a stack someone else runs (external mode): the ClickHouse
 * databases of `database`, its topics, its PostgreSQL database and roles. Other modes
 * throw the stack away. Also used by runner.ts.
 */
export async function dropRunData(stack: Stack, database: string, topics: string[], logger: Logger): Promise<void> {
  if (stack.mode !== 'external') return;
  const ch = createClickHouse({ url: stack.clickhouseUrl, username: 'default', password: '', database: 'default' });
  try {
    const { data, registry, keys, audit } = databasesOf(database);
    for (const d of [data, registry, keys, audit]) {
      await ch.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(d)}` });
    }
  } finally {
    await ch.close();
  }
  const admin = createKafka({ brokers: stack.kafkaBrokers.split(','), clientId: 'bench-scale', logger }).admin();
  await admin.connect();
  await admin.deleteTopics({ topics }).finally(() => admin.disconnect());
  await withRegistry(stack.postgresAdminUrl, async (pg) => {
    await pg.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`);
    for (const s of PG_SERVICE_ROLE_NAMES) await pg.query(`DROP ROLE IF EXISTS ${quoteIdent(pgRoleName(database, s))}`);
  });
}

/** One run of the service on a point's data: its tail warm, then the closed loop. */
interface Run {
  tailMaxMonitors: number;
  warmSeconds: number;
  tailMonitors: number;
  tailChecks: number;
  heapMiB: number;
  rssMiB: number;
  rps: number;
  p50: number;
  p99: number;
  failed: number;
  cpuMsPerRequest: number;
  /** % of first pages answered from memory, without a ClickHouse query. */
  memoryPercent: number;
  peakRssMiB: number;
  otherCpu: number;
}

export const queryCurve: CurvePart = async (ctx: ScaleContext): Promise<Curve> => {
  const { smoke, log } = ctx;
  const levels = monitorLevels(smoke);
  const perMonitor = envNumber('BENCH_SCALE_QUERY_CHECKS_PER_MONITOR', 200, 1, true, 200);
  const seconds = envNumber('BENCH_SCALE_QUERY_SECONDS', 10, 0.5, false, 1);
  const warmup = envNumber('BENCH_SCALE_QUERY_WARMUP_SECONDS', 2, 0, false, 0);
  // Smoke: a cap below the second level, so that both runs of a point go through their code.
  const defaultCap = smoke ? 10 : Number(querySpec.tailMaxMonitors.default);
  const { stack } = ctx.bench;
  const quiet = createLogger({ service: 'bench-scale', level: 'warn', stream: process.stderr });
  const started = performance.now();

  const points: CurvePoint[] = [];
  const runs: { monitors: number; rows: number; loadSeconds: number; runs: Run[] }[] = [];
  for (const monitors of levels) {
    const database = `bench_scale_q_${randomBytes(4).toString('hex')}`;
    const checksTopic = `bench.checks.${database}`;
    log(`query: ${fmt(monitors)} monitors x ${perMonitor} checks into ${database}`);
    const users = await provision(stack, { database, topics: [checksTopic], partitions: 1, logger: quiet });
    ctx.cleanups.push(() => dropRunData(stack, database, [checksTopic], quiet));
    const admin = adminClickHouse(ctx.cleanups, stack, database, 3_600_000);
    const registry = createPostgres(
      { databaseUrl: users.postgres!.owner, databasePoolMax: 2, databaseTimeoutMs: 60_000 },
      quiet,
      'bench-scale',
    );
    ctx.cleanups.push(() => registry.end());
    const spec = new DataSpec(monitors * perMonitor, monitors, Math.floor(Date.now() / 3_600_000) * 3600);
    const load = await loadChecks(admin, registry, database, spec, (l) => log(`query: ${l.trim()}`));
    log(`query: loaded ${fmt(load.rows)} rows in ${load.insertSeconds} s, OPTIMIZE ${load.optimizeSeconds} s`);
    const { key } = await issueKey(registry, {
      tenantId: DEFAULT_TENANT,
      kind: 'api',
      name: 'bench:scale',
      scopes: ['checks:read'],
    });

    const caps = monitors > defaultCap ? [defaultCap, monitors] : [defaultCap];
    const done: Run[] = [];
    for (const cap of caps) {
      const port = await freePort();
      const env = serviceEnv(stack, database, port, {
        ...storeEnv(users, 'query-service'),
        CHECKS_TOPIC: checksTopic,
        CONSUMER_GROUP_ID: `${database}-writer`,
        TAIL_MAX_MONITORS: String(cap),
      });
      const limit = loadQueryConfig(env).defaultLimit;
      const service = await startChild(
        ctx.cleanups,
        {
          name: 'query-service',
          command: serviceCommand('query-service', true),
          env,
          url: `http://127.0.0.1:${port}`,
          logFile: `${ctx.logDir}/query-${monitors}-${cap}.log`,
        },
        { readyMs: 60_000, closeMs: 15_000 },
      );
      const http = new HttpClient(service.url);
      try {
        done.push(await measureRun(ctx, service, { http, apiKey: key }, spec, limit, cap, seconds, warmup));
      } finally {
        http.close();
        await service.stop();
      }
      const r = done.at(-1)!;
      log(
        `query: ${fmt(monitors)} monitors, TAIL_MAX_MONITORS=${fmt(cap)}: warm ${r.warmSeconds} s, tail ${fmt(r.tailMonitors)} monitors / ${fmt(r.tailChecks)} checks, ` +
          `heap ${r.heapMiB} MiB, RSS ${r.rssMiB} MiB; ${fmt(r.rps)} req/s, p99 ${fmt(r.p99, 1)} ms, ${fmt(r.memoryPercent, 1)}% from memory, ` +
          `${fmt(r.cpuMsPerRequest, 2)} ms CPU/request, other CPU ${fmt(r.otherCpu)}%${r.failed ? `, ${r.failed} FAILED` : ''}`,
      );
    }
    await admin.close();
    runs.push({ monitors, rows: load.rows, loadSeconds: load.insertSeconds + load.optimizeSeconds, runs: done });
    const [d, all] = [done[0]!, done.at(-1)!];
    points.push({
      x: monitors,
      values: {
        rps: d.rps,
        rps_all: all.rps,
        heap: d.heapMiB,
        heap_all: all.heapMiB,
        rss: d.rssMiB,
        rss_all: all.rssMiB,
        rss_peak: d.peakRssMiB,
        rss_peak_all: all.peakRssMiB,
        memory: round(d.memoryPercent, 1),
        memory_all: round(all.memoryPercent, 1),
        p99: round(d.p99, 1),
        p99_all: round(all.p99, 1),
        cpu: round(d.cpuMsPerRequest, 3),
        cpu_all: round(all.cpuMsPerRequest, 3),
        warm: d.warmSeconds,
        warm_all: all.warmSeconds,
        failed: done.reduce((a, r) => a + r.failed, 0),
      },
      note:
        done.length === 1
          ? `TAIL_MAX_MONITORS=${fmt(defaultCap)} holds every monitor: one run for both`
          : `${fmt(load.rows)} rows; tail ${fmt(d.tailMonitors)} / ${fmt(all.tailMonitors)} monitors`,
    });
  }
  const minutes = (performance.now() - started) / 60_000;
  log(`query: done in ${minutes.toFixed(1)} min`);
  const big = runs.at(-1);
  return {
    id: 'query-monitors',
    title: 'Query service: first page and hot-tail memory by monitors',
    xLabel: 'monitors',
    series: [
      { key: 'rps', label: `first page, cap ${fmt(defaultCap)}${smoke ? '' : ' (default)'}`, unit: 'req/s' },
      { key: 'rps_all', label: 'first page, cap = monitors', unit: 'req/s' },
      { key: 'heap', label: 'heap after the warm, default cap', unit: 'MiB' },
      { key: 'heap_all', label: 'heap after the warm, cap = monitors', unit: 'MiB' },
      { key: 'rss', label: 'RSS after the warm, default cap', unit: 'MiB' },
      { key: 'rss_all', label: 'RSS after the warm, cap = monitors', unit: 'MiB' },
      { key: 'rss_peak', label: 'peak RSS under load, default cap', unit: 'MiB', chart: false },
      { key: 'rss_peak_all', label: 'peak RSS under load, cap = monitors', unit: 'MiB', chart: false },
      { key: 'memory', label: 'pages from memory, default cap', unit: '%', chart: false },
      { key: 'memory_all', label: 'pages from memory, cap = monitors', unit: '%', chart: false },
      { key: 'p99', label: 'p99, default cap', unit: 'ms', chart: false },
      { key: 'p99_all', label: 'p99, cap = monitors', unit: 'ms', chart: false },
      { key: 'cpu', label: 'service CPU per request, default cap', unit: 'ms', chart: false },
      { key: 'cpu_all', label: 'service CPU per request, cap = monitors', unit: 'ms', chart: false },
      { key: 'warm', label: 'tail warm, default cap', unit: 's', chart: false },
      { key: 'warm_all', label: 'tail warm, cap = monitors', unit: 's', chart: false },
      { key: 'failed', label: 'failed requests', unit: 'requests', chart: false },
    ],
    points,
    notes: [
      `Data: ${perMonitor} checks per monitor (one a minute, ~3% down, ~5% degraded), loaded server-side as bench:query loads them (INSERT ... SELECT FROM numbers(), OPTIMIZE ... FINAL), a fresh database per point: ${runs.map((r) => `${fmt(r.rows)} rows for ${fmt(r.monitors)} monitors`).join(', ')}. Rows are kept moderate (bench:query has 2,000 per monitor) so that 50,000 monitors load in seconds; a first page reads only the newest 100, so the depth hardly matters to it.`,
      `The query service (compiled, its own process, LOG_LEVEL=warn, TAIL_CHECKS_PER_MONITOR=128) reads its own empty check-results topic: every monitor's tail loads from ClickHouse on its first first page. Heap and RSS ("after the warm") are read after the tail warm of bench:query: every monitor's first page once, 16 at a time (with the default cap below the monitors, the first cap monitors only: the tail then holds as many as after all of them) (heap: nodejs_heap_size_used_bytes, garbage included; RSS: VmRSS of the process).`,
      `Throughput: bench:query's first_page scenario, a closed loop of ${CONNECTIONS} connections for ${seconds} s after a ${warmup} s warm-up, each request a random monitor's first page (100 checks) judged by its rows; "from memory" is the share answered by the tail without a ClickHouse query (query_check_tail_requests_total less query_check_tail_loads_total).`,
      `"Cap" is TAIL_MAX_MONITORS (default ${fmt(defaultCap)}): it bounds the tail, least recently read dropped first. With more monitors than that and every monitor read alike (uniformly random here), only cap / monitors of the pages find their monitor in memory; the rest load its 128 newest checks from ClickHouse and evict another, so throughput falls to ClickHouse's. Raising the cap to the monitors keeps every first page in memory, for the memory the "cap = monitors" series shows.${big && big.runs.length > 1 ? ` At ${fmt(big.monitors)} monitors: ${fmt(big.runs[0]!.memoryPercent, 1)}% from memory with the default cap, ${fmt(big.runs[1]!.memoryPercent, 1)}% with the cap raised.` : ''}`,
      `Real dashboards do not read monitors uniformly: a cap below the monitor count serves the ones read most from memory; the uniform draw is the worst case for the cap.`,
      `The part took ${minutes.toFixed(1)} min.`,
    ],
    otherCpuPercent: Math.max(0, ...runs.flatMap((r) => r.runs.map((x) => x.otherCpu))),
  };
};

/** Tail counters from /metrics: requests by where they were answered, and loads done. */
function tailCounts(metrics: string): { requests: number; clickhouse: number } {
  const requests = metricSum(metrics, 'query_check_tail_requests_total');
  const hits = metricSum(metrics, 'query_check_tail_requests_total', 'result="hit"');
  const loads = metricSum(metrics, 'query_check_tail_loads_total');
  return { requests, clickhouse: requests - hits + loads };
}

async function measureRun(
  ctx: ScaleContext,
  service: Child,
  target: ServiceTarget,
  spec: DataSpec,
  limit: number,
  cap: number,
  seconds: number,
  warmup: number,
): Promise<Run> {
  // The tail answers once its reader caught up with the (empty) topic: until then pages go
  // to ClickHouse without loading the monitor. Ask monitor 0 until it is held.
  const path = `/api/monitors/${spec.monitorId(0)}/checks?limit=${limit}`;
  await until(
    () => `the hot tail of ${service.url} to hold a monitor`,
    async () => {
      await target.http.request('GET', path, serviceHeaders(target));
      return gauge(await service.metrics(), 'query_check_tail_monitors') >= 1 ? true : undefined;
    },
    60_000,
    200,
  );
  // The warm asks the first `cap` monitors at most: past the cap every further load only
  // evicts another (the tail holds `cap` monitors either way), and at 50,000 monitors the
  // 40,000 extra loads took 3 minutes on a busy machine. monitorId(m) does not depend on the count.
  const warmed = spec.monitors > cap ? new DataSpec(cap, cap, spec.end) : spec;
  const tail = await warmTail(target, warmed, limit);
  const rssMiB = Math.round(mb(service.rss.sample() ?? NaN));
  // bench:query's first_page operation on the service's side (scenarios.ts, checksOps).
  const op: Op = async () => {
    const f = firstPage(spec, limit);
    const r = await target.http.request('GET', f.servicePath, serviceHeaders(target));
    return outcome(r, (b) => serviceChecksProblem(b, f.serviceRows));
  };
  if (warmup > 0) await closedLoop(op, CONNECTIONS, warmup);
  const before = tailCounts(await service.metrics());
  const from = performance.now();
  const cpu = cpuMeter({ service: service.pid, ...ctx.bench.pids });
  const r = await closedLoop(op, CONNECTIONS, seconds);
  const w = cpu();
  const after = tailCounts(await service.metrics());
  const requests = after.requests - before.requests;
  const lat = quantiles(r.latencies);
  const failed = r.requests - r.ok;
  if (failed > 0) ctx.log(`query: ${failed} of ${r.requests} failed: ${r.firstProblem}`);
  return {
    tailMaxMonitors: cap,
    warmSeconds: tail.warmSeconds,
    tailMonitors: tail.monitors,
    tailChecks: tail.checks,
    heapMiB: tail.heapAfterMiB,
    rssMiB,
    rps: Math.round(r.ok / r.seconds),
    p50: lat.p50,
    p99: lat.p99,
    failed,
    cpuMsPerRequest: (((w.processes.service ?? NaN) / 100) * w.seconds * 1000) / Math.max(1, r.ok),
    memoryPercent: requests > 0 ? (100 * (requests - (after.clickhouse - before.clickhouse))) / requests : NaN,
    peakRssMiB: Math.round(mb(service.rss.peak(from))),
    otherCpu: w.otherPercent,
  };
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
