/**
 * `npm run bench:query`: throughput and latency of the query service (compiled, `tsc -b`,
 * under plain node) against real ClickHouse, compared with the same SQL sent straight to
 * ClickHouse's HTTP interface.
 *
 *   1. builds, starts the stack (ClickHouse and Kafka) and a fresh database;
 *   2. loads BENCH_CHECKS checks over BENCH_MONITORS monitors server-side
 *      (INSERT ... SELECT FROM numbers(); the materialized view fills checks_hourly);
 *   3. starts the query service in its own process with the read-only ClickHouse user and
 *      an API key (checks:read);
 *   4. closed loop, service and direct alternating each round: first page, a deep page
 *      (cursor), a filtered range (from/to + status=down), summaries (hour/24 h, day/30 d);
 *      then the same one request at a time;
 *   5. fixed rate: the first page at BENCH_RATE req/s, paced open loop and autocannon;
 *   6. writes the bench:query section of BENCHMARKS.md, prints the tables and every
 *      figure as one JSON object on the last line of stdout; stops everything.
 *
 * Environment: BENCH_CHECKS (10000000), BENCH_MONITORS (5000), BENCH_SECONDS (10) per
 * run, BENCH_ROUNDS (2), BENCH_CONNECTIONS (16) closed-loop concurrency, BENCH_RATE (500),
 * BENCH_RATE_CONNECTIONS (10, autocannon), BENCH_WARMUP_SECONDS (2), BENCH_FIXTURES (200
 * monitors with precomputed cursors, ranges and summaries), BENCH_DEEP_PAGE (10),
 * BENCH_RANGE_HOURS (4), BENCH_SERIAL_SECONDS (3), BENCH_PROFILE=1 (the service writes a
 * V8 CPU profile when it stops), BENCH_WRITE=0, --smoke. Before measuring, each monitor's first
 * page is asked once (the hot tail warm) and the heap it takes is reported. Only 127.0.0.1 is loaded.
 * Exit code 0 when every request was answered 200 with the expected rows, else 1.
 */
import { DEFAULT_TENANT } from '@telemetry/contract';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadQueryConfig } from '@telemetry/query-service';
import { createClickHouse, createLogger, createPostgres, type ClickHouseClient } from '@telemetry/platform';
import { checksSql, issueKey } from '@telemetry/store';
import { provision } from '../../tools/devstack/provision.js';
import { storeEnv } from '../../tools/devstack/users.js';
import {
  autocannon,
  closedLoop,
  HttpClient,
  latencyFigures,
  paced,
  Recorder,
  type LoadResult,
} from '../../harness/load.js';
import { Child, freePort, ROOT, serviceCommand, sleep } from '../../harness/processes.js';
import { ms } from '../../harness/report.js';
import { Benchmark, type Cleanups, envNumber, serviceEnv } from '../../harness/run.js';
import { cpuMeter } from '../../harness/sampler.js';
import {
  checksOps,
  DataSpec,
  directBody,
  directHeaders,
  directPath,
  directRowsProblem,
  firstPage,
  loadChecks,
  makeFixtures,
  scenarios as makeScenarios,
  serviceChecksProblem,
  serviceHeaders,
  verifyEquivalence,
  type DirectTarget,
  type ServiceTarget,
} from './data.js';
import {
  addFailures,
  failureCount,
  failuresOf,
  NO_FAILURES,
  rateTable,
  ratio,
  renderSection,
  runRecord,
  scenarioTable,
  serialTable,
  summarize,
  targetsTable,
  totalCpuPerRequest,
  type Failures,
  type Measured,
  type RateSummary,
  type ReportInput,
  type RunRecord,
  type ScenarioSummary,
  type Target,
} from './report.js';

/** The service passes this to ClickHouse with every query; the direct requests send it too. */
const SERVICE_MAX_RESULT_ROWS = 100_000;
const cfg = {
  checks: envNumber('BENCH_CHECKS', 10_000_000, 1, true, 24_000),
  monitors: envNumber('BENCH_MONITORS', 5000, 1, true, 8),
  seconds: envNumber('BENCH_SECONDS', 10, 0.5, false, 1),
  rounds: envNumber('BENCH_ROUNDS', 2, 1, true, 1),
  connections: envNumber('BENCH_CONNECTIONS', 16, 1, true, 4),
  rate: envNumber('BENCH_RATE', 500, 1, true, 50),
  rateConnections: envNumber('BENCH_RATE_CONNECTIONS', 10, 1, true, 2),
  warmup: envNumber('BENCH_WARMUP_SECONDS', 2, 0, false, 0),
  fixtures: envNumber('BENCH_FIXTURES', 200, 1, true, 4),
  deepPage: envNumber('BENCH_DEEP_PAGE', 10, 1, true, 2),
  rangeHours: envNumber('BENCH_RANGE_HOURS', 4, 1, true),
  serialSeconds: envNumber('BENCH_SERIAL_SECONDS', 3, 0.5, false, 0.5),
  profile: process.env.BENCH_PROFILE === '1',
};
/** Paced runs: requests waiting at once before the schedule's next ones are dropped. */
const PACED_MAX_IN_FLIGHT = 256;
const TARGET_P99_MS = 10;
/** Issue 17: the first page beats ClickHouse (the hot tail); deep pages and summaries keep up with it. */
function throughputGoal(scenario: string): number {
  return scenario === 'first_page' ? 1.5 : scenario === 'deep_page' ? 0.9 : scenario.startsWith('summary') ? 1.0 : 0.8;
}
const TARGET_P99_RATIO = 2;
const bench = new Benchmark('bench:query');
const log = bench.log;
const f2 = (x: number | undefined): string => (x === undefined ? 'n/a' : x.toFixed(2));

/** Samples how many queries ClickHouse runs, every 100 ms, until the returned function is called. */
function sampleQueries(client: ClickHouseClient): () => Promise<{ mean: number; max: number }> {
  const values: number[] = [];
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const rs = await client
        .query({ query: 'SELECT count() AS n FROM system.processes', format: 'JSONEachRow' })
        .catch(() => undefined);
      const n = rs ? Number((await rs.json<{ n: string | number }>())[0]?.n ?? 1) : NaN;
      if (Number.isFinite(n)) values.push(n - 1); // not the sampling query itself
      await sleep(100);
    }
  })();
  return async () => {
    stopped = true;
    await done;
    const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
    return { mean: Math.round(mean * 10) / 10, max: Math.max(0, ...values) };
  };
}

/**
 * autocannon with `overallRate`: each connection may send rate/connections requests per
 * one-second window. `next()` gives each request (path, body, and how to judge the answer);
 * the result's latencies are the raw response times autocannon measured (no correction).
 */
async function autocannonRate(o: {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  next: () => { path: string; body?: string; expect: (body: string) => string | undefined };
}): Promise<{ result: LoadResult; reported: { p50: number; p99: number; rps: number } }> {
  const rec = new Recorder();
  const inst = autocannon({
    url: o.url,
    connections: cfg.rateConnections,
    duration: cfg.seconds,
    overallRate: cfg.rate,
    timeout: 30,
    headers: o.headers,
    requests: [
      {
        method: o.method,
        // One request in flight per connection: its context carries the request's expectation
        // from setupRequest to onResponse (autocannon renews the context before each request).
        setupRequest: (req, context) => {
          const n = o.next();
          context.expect = n.expect;
          return { ...req, method: o.method, path: n.path, ...(n.body === undefined ? {} : { body: n.body }) };
        },
        onResponse: (status, body, context) => {
          const problem = status === 200 ? context.expect?.(body) : `status ${status}`;
          rec.add({ status, ok: problem === undefined, ...(problem === undefined ? {} : { problem }) });
        },
      },
    ],
  });
  inst.on('response', (_client: unknown, _status: number, _bytes: number, latency: number) =>
    rec.r.latencies.push(latency),
  );
  const res = await inst;
  rec.r.seconds = res.duration;
  rec.r.errors += res.errors;
  return { result: rec.r, reported: { p50: res.latency.p50, p99: res.latency.p99, rps: res.requests.average } };
}

/** A gauge's value from a Prometheus text page (the first sample of `name`). */
function metricValue(text: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

/**
 * Asks the first page of every monitor once (16 at a time) and reads the service's heap
 * and tail gauges before and after: the memory the tail holds for these monitors.
 */
async function warmTail(service: ServiceTarget, spec: DataSpec, limit: number) {
  const metrics = async () => (await service.http.request('GET', '/metrics', {})).body;
  const before = await metrics();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < spec.monitors) {
        const m = next++;
        const r = await service.http.request(
          'GET',
          `/api/monitors/${spec.monitorId(m)}/checks?limit=${limit}`,
          serviceHeaders(service),
        );
        if (r.status !== 200) throw new Error(`warming the tail: ${spec.monitorId(m)} answered ${r.status}`);
      }
    }),
  );
  const warmSeconds = Math.round((performance.now() - started) / 100) / 10;
  const after = await metrics();
  const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
  const monitors = metricValue(after, 'query_check_tail_monitors');
  const heapBeforeMiB = mib(metricValue(before, 'nodejs_heap_size_used_bytes'));
  const heapAfterMiB = mib(metricValue(after, 'nodejs_heap_size_used_bytes'));
  return {
    monitors,
    checks: metricValue(after, 'query_check_tail_checks'),
    warmSeconds,
    heapBeforeMiB,
    heapAfterMiB,
    mibPerThousandMonitors: Math.round(((heapAfterMiB - heapBeforeMiB) / Math.max(1, monitors)) * 1000 * 10) / 10,
  };
}

async function main(cleanups: Cleanups) {
  const date = new Date().toISOString();
  log(
    `${cfg.checks.toLocaleString('en-US')} checks over ${cfg.monitors.toLocaleString('en-US')} monitors; ${cfg.rounds} rounds of ${cfg.seconds} s`,
  );
  const { stack, pids, machine } = await bench.stack(cleanups);
  const database = `bench_${randomBytes(4).toString('hex')}`;
  // The hot tail's own topic and consumer group: empty, so the tail starts at offset 0
  // and its monitors load from ClickHouse (where this benchmark puts every check).
  const checksTopic = `bench.checks.${database}`;
  const users = await provision(stack, {
    database,
    topics: [checksTopic],
    partitions: 1,
    logger: createLogger({ service: 'bench', level: 'warn' }),
  });
  const admin = createClickHouse({
    url: stack.clickhouseUrl,
    username: 'default',
    password: '',
    database,
    requestTimeoutMs: 3_600_000,
  });
  const registry = createPostgres(
    { databaseUrl: users.postgres!.owner, databasePoolMax: 2, databaseTimeoutMs: 60_000 },
    createLogger({ service: 'bench', level: 'warn' }),
    'bench',
  );
  cleanups.push(async () => {
    if (stack.mode === 'external') await admin.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    await admin.close();
    await registry.end();
  });

  const spec = new DataSpec(cfg.checks, cfg.monitors, Math.floor(Date.now() / 3_600_000) * 3600);
  log(`loading ${cfg.checks.toLocaleString('en-US')} checks into ${database}.checks (server-side)...`);
  const load = await loadChecks(admin, registry, database, spec, log);
  log(
    `loaded in ${load.insertSeconds} s (${load.rowsPerSecond.toLocaleString('en-US')} rows/s); OPTIMIZE FINAL ${load.optimizeSeconds} s`,
  );

  const { key } = await issueKey(registry, {
    tenantId: DEFAULT_TENANT,
    kind: 'api',
    name: 'bench:query',
    scopes: ['checks:read'],
  });
  const port = await freePort();
  const env = serviceEnv(stack, database, port, {
    ...storeEnv(users, 'query-service'),
    CHECKS_TOPIC: checksTopic,
    CONSUMER_GROUP_ID: `${database}-writer`,
  });
  const queryConfig = loadQueryConfig(env);
  const profileDir = cfg.profile ? mkdtempSync(join(tmpdir(), 'bench-query-profile-')) : undefined;
  const service = new Child({
    name: 'query-service',
    command: serviceCommand('query-service', true),
    nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    env,
    url: `http://127.0.0.1:${port}`,
  });
  cleanups.push(() => service.close(15_000));
  await service.start().ready(60_000);
  log(`query service ready at ${service.url} (pid ${service.pid})`);

  const serviceHttp = new HttpClient(service.url);
  const directHttp = new HttpClient(stack.clickhouseUrl);
  cleanups.push(() => Promise.resolve([serviceHttp, directHttp].forEach((c) => c.close())));
  const serviceTarget: ServiceTarget = { http: serviceHttp, apiKey: key };
  const directTarget: DirectTarget = {
    http: directHttp,
    user: users.query.user,
    password: users.query.password,
    database,
    settings: {
      max_execution_time: Math.ceil(queryConfig.queryTimeoutMs / 1000),
      max_result_rows: SERVICE_MAX_RESULT_ROWS,
    },
  };

  log('drawing fixtures (following next_cursor through the service for the deep pages)...');
  const fx = await makeFixtures({
    spec,
    service: serviceTarget,
    direct: directTarget,
    count: cfg.fixtures,
    limit: queryConfig.defaultLimit,
    deepPage: cfg.deepPage,
    filteredHours: cfg.rangeHours,
    seed: 20_261_122,
  });
  const equivalencePairs = await verifyEquivalence(spec, fx, serviceTarget, directTarget);
  log(`service and ClickHouse agree on ${equivalencePairs} compared answers`);
  const scenarios = makeScenarios(spec, fx, serviceTarget, directTarget);

  // The tail warm: the first page of every monitor once (as dashboards would), and what that costs in memory.
  const tail = await warmTail(serviceTarget, spec, queryConfig.defaultLimit);
  log(
    `hot tail: ${tail.monitors} monitors, ${tail.checks.toLocaleString('en-US')} checks after ${tail.warmSeconds} s; heap ${tail.heapBeforeMiB} -> ${tail.heapAfterMiB} MiB (${tail.mibPerThousandMonitors} MiB per 1,000 monitors)`,
  );

  let warmupFailures = 0;
  for (const sc of cfg.warmup > 0 ? scenarios : []) {
    for (const side of ['service', 'direct'] as const) {
      warmupFailures += failureCount(failuresOf(await closedLoop(sc[side], cfg.connections, cfg.warmup)));
    }
  }

  const records: RunRecord[] = [];
  const runs = new Map<string, Measured[]>();
  const reported = new Map<string, { p50: number; p99: number; rps: number }[]>();
  /** One measured run: the load, the CPU of every process and ClickHouse's running queries meanwhile. */
  const measure = async (
    key: string,
    scenario: string,
    side: 'service' | 'direct',
    round: number,
    load: () => Promise<LoadResult>,
  ) => {
    const queries = sampleQueries(admin);
    const cpu = cpuMeter({ service: service.pid, ...pids });
    const r = await load();
    const w = cpu();
    const flat: Record<string, number> = { machine: w.machinePercent, other: w.otherPercent };
    for (const [name, p] of Object.entries(w.processes)) [flat[name], flat[`${name}_sys`]] = [p, w.kernel[name] ?? 0];
    const m: Measured = { r, cpu: flat, queries: await queries() };
    runs.set(key, [...(runs.get(key) ?? []), m]);
    const rec = runRecord(scenario, side, round, m);
    records.push(rec);
    log(
      `round ${round} ${key}: ${rec.rps} req/s, p50 ${rec.latency.p50} ms, p99 ${rec.latency.p99} ms, ClickHouse queries ` +
        `${rec.queries.mean}/${rec.queries.max}${failureCount(rec.failures) ? `, FAILED ${JSON.stringify(rec.failures)}: ${rec.firstProblem}` : ''}`,
    );
  };
  for (const [prefix, connections, seconds] of [
    ['', cfg.connections, cfg.seconds],
    ['serial/', 1, cfg.serialSeconds],
  ] as const) {
    for (let round = 1; round <= cfg.rounds; round++) {
      for (const sc of scenarios) {
        for (const side of ['service', 'direct'] as const) {
          const name = prefix ? `${sc.key}_serial` : sc.key;
          await measure(`${prefix}${sc.key}/${side}`, name, side, round, () =>
            closedLoop(sc[side], connections, seconds),
          );
        }
      }
    }
  }
  const summaries: ScenarioSummary[] = scenarios.map((sc) => {
    const [s, d] = [summarize(runs.get(`${sc.key}/service`) ?? []), summarize(runs.get(`${sc.key}/direct`) ?? [])];
    return {
      key: sc.key,
      title: sc.title,
      service: s,
      direct: d,
      throughputRatio: ratio(s.rps, d.rps),
      p99Ratio: ratio(s.latency.p99, d.latency.p99),
      serial: {
        service: summarize(runs.get(`serial/${sc.key}/service`) ?? []),
        direct: summarize(runs.get(`serial/${sc.key}/direct`) ?? []),
      },
      cpuPerRequest: { service: totalCpuPerRequest(s), direct: totalCpuPerRequest(d) },
      cpuBoundRatio: ratio(totalCpuPerRequest(d), totalCpuPerRequest(s)),
    };
  });

  // Fixed rate, first page: paced open loop and autocannon's overallRate.
  const first = checksOps(serviceTarget, directTarget, () => firstPage(spec, fx.limit));
  for (let round = 1; round <= cfg.rounds; round++) {
    for (const side of ['service', 'direct'] as const) {
      await measure(`paced/${side}`, 'first_page_paced', side, round, () =>
        paced(first[side], cfg.rate, cfg.seconds, PACED_MAX_IN_FLIGHT),
      );
    }
    for (const side of ['service', 'direct'] as const) {
      await measure(`autocannon/${side}`, 'first_page_autocannon', side, round, async () => {
        const ac = await autocannonRate({
          url: side === 'service' ? service.url : stack.clickhouseUrl,
          method: side === 'service' ? 'GET' : 'POST',
          headers: side === 'service' ? serviceHeaders(serviceTarget) : directHeaders(directTarget),
          next: () => {
            const f = firstPage(spec, fx.limit);
            return side === 'service'
              ? { path: f.servicePath, expect: (b) => serviceChecksProblem(b, f.serviceRows) }
              : {
                  path: directPath(directTarget),
                  body: directBody(checksSql(directTarget.database, f.query), 'JSONEachRow'),
                  expect: (b) => directRowsProblem(b, f.directRows),
                };
          },
        });
        reported.set(`autocannon/${side}`, [...(reported.get(`autocannon/${side}`) ?? []), ac.reported]);
        return ac.result;
      });
    }
  }
  const rate: RateSummary[] = (['paced', 'autocannon'] as const).flatMap((method) =>
    (['service', 'direct'] as const).map((side): RateSummary => {
      const s = summarize(runs.get(`${method}/${side}`) ?? []);
      const rep = reported.get(`${method}/${side}`);
      return {
        method,
        side,
        rate: cfg.rate,
        connections: method === 'paced' ? PACED_MAX_IN_FLIGHT : cfg.rateConnections,
        achievedRps: s.rps,
        latency: s.latency,
        ...(method === 'paced'
          ? { sendLatency: latencyFigures((runs.get(`paced/${side}`) ?? []).flatMap((x) => x.r.sendLatencies ?? [])) }
          : {}),
        ...(rep
          ? {
              reported: {
                p50: Math.max(...rep.map((x) => x.p50)),
                p99: Math.max(...rep.map((x) => x.p99)),
                rps: Math.round(rep.reduce((a, x) => a + x.rps, 0) / rep.length),
              },
            }
          : {}),
        requests: s.requests,
        failures: s.failures,
        cpu: s.cpu,
        cpuMsPerRequest: s.cpuMsPerRequest,
        queries: s.queries,
      };
    }),
  );

  const pacedService = rate.find((x) => x.method === 'paced' && x.side === 'service')!;
  const acService = rate.find((x) => x.method === 'autocannon' && x.side === 'service')!;
  const failures: Failures = records.reduce((a, r) => addFailures(a, r.failures), NO_FAILURES);
  const targets: Target[] = [
    {
      name: `first page p99 at ${cfg.rate} req/s, service (paced open loop)`,
      goal: `<= ${TARGET_P99_MS} ms`,
      measured: `${ms(pacedService.latency.p99)} ms (${Math.round(pacedService.achievedRps)} req/s answered${pacedService.failures.dropped ? `, ${pacedService.failures.dropped} not sent` : ''})`,
      met: pacedService.latency.p99 <= TARGET_P99_MS && pacedService.achievedRps >= cfg.rate * 0.98,
    },
    {
      name: `first page p99 at ${cfg.rate} req/s, service (autocannon overallRate, its own p99)`,
      goal: `<= ${TARGET_P99_MS} ms`,
      measured: `${acService.reported?.p99 ?? NaN} ms (raw response times: ${ms(acService.latency.p99)} ms; ${Math.round(acService.achievedRps)} req/s answered)`,
      met: (acService.reported?.p99 ?? Infinity) <= TARGET_P99_MS,
    },
    ...summaries.flatMap((s): Target[] => [
      {
        name: `${s.key}: service / direct throughput`,
        goal: `>= ${throughputGoal(s.key)}x`,
        measured: `${s.throughputRatio.toFixed(2)}x (${Math.round(s.service.rps)} / ${Math.round(s.direct.rps)} req/s)`,
        met: s.throughputRatio >= throughputGoal(s.key),
      },
      {
        name: `${s.key}: service / direct p99`,
        goal: `<= ${TARGET_P99_RATIO}x`,
        measured: `${s.p99Ratio.toFixed(2)}x (${ms(s.service.latency.p99)} / ${ms(s.direct.latency.p99)} ms)`,
        met: s.p99Ratio <= TARGET_P99_RATIO,
      },
    ]),
    {
      name: `hot tail memory, ${spec.monitors.toLocaleString('en-US')} monitors warm`,
      goal: 'reported',
      measured: `${tail.heapAfterMiB - tail.heapBeforeMiB} MiB heap for ${tail.checks.toLocaleString('en-US')} checks of ${tail.monitors.toLocaleString('en-US')} monitors (${tail.mibPerThousandMonitors} MiB per 1,000 monitors)`,
      met: tail.monitors === Math.min(spec.monitors, queryConfig.tailMaxMonitors),
    },
    {
      name: 'every answer 200 with the expected rows',
      goal: '0 failed',
      measured: `${failureCount(failures)} failed (${failures.non2xx} non-2xx, ${failures.badBody} wrong rows, ${failures.errors} errors)`,
      met: failureCount(failures) === 0,
    },
  ];

  // LOG_LEVEL=warn: every line the service wrote is a warning or an error.
  const serviceWarnings = service
    .output()
    .split('\n')
    .filter((l) => l.trim() !== '');
  await service.stop();
  let clientVersion = '';
  try {
    clientVersion = (
      JSON.parse(readFileSync(join(ROOT, 'node_modules/@clickhouse/client/package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
  } catch {
    // unknown
  }
  const data = {
    'Rows loaded': `${load.rows.toLocaleString('en-US')} checks in \`${database}.checks\`: ${spec.monitors.toLocaleString('en-US')} monitors x ${spec.minutes.toLocaleString('en-US')} checks (one a minute, ${(spec.minutes / 60).toFixed(1)} h), ~3% down, ~5% degraded`,
    Load: `INSERT ... SELECT FROM numbers() in chunks of 1M rows: ${load.insertSeconds} s (${load.rowsPerSecond.toLocaleString('en-US')} rows/s, materialized view included: ${load.rollupRows.toLocaleString('en-US')} rows in checks_hourly); then OPTIMIZE ... FINAL of both tables: ${load.optimizeSeconds} s (${load.checksParts} part(s), ${(load.diskBytes / 2 ** 20).toFixed(0)} MiB on disk)`,
  };
  const method = [
    `The **service** is \`services/query-service/dist/main.js\` (compiled, plain node) in its own process (LOG_LEVEL=warn), reading with its read-only ClickHouse user (\`<database>_query\`, tools/devstack/users.ts) and an API key (checks:read). **ClickHouse direct** is the same SQL (\`checksSql\`, \`summarySql\`, \`incidentSpansSql\` of @telemetry/store) POSTed by the benchmark to ClickHouse's HTTP interface the way the service's client sends it: same user, database, settings (max_execution_time=${directTarget.settings.max_execution_time}, max_result_rows=${SERVICE_MAX_RESULT_ROWS}), FORMAT JSONEachRow (JSON for the summary's quantiles, as the service), keep-alive; a summary sends its three queries (counts, quantiles, the incidents behind its SLA figures) in parallel, as the service does.`,
    '',
    `Closed loop: ${cfg.connections} concurrent requests (one keep-alive connection each), ${cfg.rounds} rounds of ${cfg.seconds} s per scenario and path, service and direct alternating (service, direct, service, direct), after a ${cfg.warmup} s warm-up of each. Each request draws a random monitor (first page) or a random fixture of ${fx.deep.length} monitors (others). req/s counts answers with status 200 and the expected number of rows; percentiles pool every request of all rounds; CPU is % of one core (bench = the load generator); "ClickHouse queries running" samples \`system.processes\` every 100 ms. Then the same with one request at a time (${cfg.serialSeconds} s per scenario, path and round): the cost of each path per request without queueing.`,
  ];
  const notes = [
    `Fixed rate: "paced" sends ${cfg.rate} req/s evenly spaced whatever the answers do and measures from each request's scheduled send time, so a stall also counts against the requests queued behind it; the target is judged on it. autocannon's \`overallRate\` lets each of its ${cfg.rateConnections} connections send ${Math.round(cfg.rate / cfg.rateConnections)} requests back to back at the start of every second (lib/httpClient.js, \`reqsMadeThisSecond\`), so it offers bursts; its reported percentiles (whole ms) add synthetic samples with an expected interval of \`Math.ceil(1 / rate)\` = 1 ms (lib/run.js), which inflates them. Both are shown.`,
    `The service runs with its hot tail (TAIL_CHECKS_PER_MONITOR=${queryConfig.tailChecksPerMonitor}, TAIL_MAX_MONITORS=${queryConfig.tailMaxMonitors}) reading its own empty check-results topic: every monitor's tail loads from ClickHouse on its first first-page request. Before the measured runs the benchmark asks each monitor's first page once (16 at a time), as dashboards would, and reports the heap the tail then holds (nodejs_heap_size_used_bytes before and after, garbage included). Deep pages, the filtered range and summaries still go to ClickHouse; the direct side is ClickHouse as before.`,
    'The machine has 2 cores shared by the load generator, the service, ClickHouse and the idle Kafka: the service competes with ClickHouse for CPU, which direct queries do not; the ratios are the figures that carry over best.',
    'The service runs compiled (`npm run build` = `tsc -b`, which the command runs first) under plain node, as production does.',
    "CPU ms per request divide each process's CPU over a run by the requests answered: background work (the 100 ms sampling of `system.processes`, key reloads, pings) is included, which weighs more at low request rates.",
  ];
  const fp = summaries.find((x) => x.key === 'first_page');
  if (fp) {
    const c = fp.service.cpuMsPerRequest;
    notes.push(
      `What the service costs (first page): one request at a time it adds ${ms(fp.serial.service.latency.p50 - fp.serial.direct.latency.p50)} ms to ClickHouse's p50 of ${ms(fp.serial.direct.latency.p50)} ms; under load its process uses ${f2(c.service)} ms CPU per request (${f2(c.service_sys)} ms of it in the kernel) next to ClickHouse's ${f2(fp.direct.cpuMsPerRequest.clickhouse)} ms per query, so on 2 shared cores the service path can reach about ${fp.cpuBoundRatio.toFixed(2)}x the direct throughput. Per query, @clickhouse/client ${clientVersion} first awaits \`sleep(0)\` (a timer of at least 1 ms, dist/connection/socket_pool.js), then sends the SQL through a stream pipeline with its own AbortController (a DOMException per query); it opens at most 10 sockets (\`max_open_connections\`, not set in services/query-service/src/service.ts), so a replica never has more than 10 queries (5 summaries) in flight.`,
    );
  }
  const report: ReportInput = {
    ...bench.head(machine, date),
    data,
    method,
    scenarios: summaries,
    rate,
    targets,
    failures,
    warmupFailures,
    equivalencePairs,
    serviceWarnings,
    maxOtherCpu: Math.max(0, ...records.map((r) => r.cpu.other ?? 0)),
    notes,
  };
  return {
    ...report,
    config: cfg,
    database,
    fixtures: {
      monitors: fx.deep.length,
      deepPage: fx.deepPage,
      filteredHours: fx.filteredHours,
      filteredRows: fx.filteredRows,
    },
    load,
    targetsMet: targets.filter((t) => t.met).length,
    tail,
    runs: records,
    ...(profileDir ? { profileDir } : {}),
  };
}

await bench.run(main, {
  render: renderSection,
  tables: (r) =>
    [scenarioTable(r.scenarios), serialTable(r.scenarios), rateTable(r.rate), targetsTable(r.targets)].join('\n\n'),
  ok: (r) => failureCount(r.failures) === 0 && r.warmupFailures === 0,
});
