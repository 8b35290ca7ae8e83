/**
 * `npm run bench:query`: throughput and latency of the query service against real
 * ClickHouse, compared with the same SQL sent straight to ClickHouse's HTTP interface.
 *
 *   1. starts the stack (tools/devstack: ClickHouse and Kafka) and a fresh database;
 *   2. loads BENCH_CHECKS checks over BENCH_MONITORS monitors server-side
 *      (INSERT ... SELECT FROM numbers(); the materialized view fills checks_hourly);
 *   3. starts the query service (services/query-service/src/main.ts) in its own process
 *      with the read-only ClickHouse user and an API key (checks:read);
 *   4. closed loop, service and direct alternating each round: first page, a deep page
 *      (cursor), a filtered range (from/to + status=down), summaries (hour/24 h, day/30 d);
 *   5. fixed rate: the first page at BENCH_RATE req/s, paced open loop and autocannon;
 *   6. writes the bench:query section of BENCHMARKS.md, prints the tables and every
 *      figure as one JSON object on the last line of stdout;
 *   7. stops everything, also on error or Ctrl-C.
 *
 * Environment: BENCH_CHECKS (10000000), BENCH_MONITORS (5000), BENCH_SECONDS (10) per
 * run, BENCH_ROUNDS (2), BENCH_CONNECTIONS (16) closed-loop concurrency, BENCH_RATE (500),
 * BENCH_RATE_CONNECTIONS (10, autocannon), BENCH_WARMUP_SECONDS (2), BENCH_FIXTURES (200
 * monitors with precomputed cursors, ranges and summaries), BENCH_DEEP_PAGE (10),
 * BENCH_RANGE_HOURS (4), BENCH_PROFILE=1 (the service writes a V8 CPU profile when it
 * stops; profiled figures are not comparable). Only 127.0.0.1 is loaded.
 * Exit code 0 when every request was answered 200 with the expected rows (targets met or
 * not), 1 when some request failed or the benchmark could not run.
 */
import { randomBytes } from 'node:crypto';
import { SOURCE_NODE_ARGS } from '../tools/devstack/service-command.js';
import { mkdtempSync, readFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checksSql, loadQueryConfig } from '@telemetry/query-service';
import { createClickHouse, createLogger, sqlIdentifier, type ClickHouseClient } from '@telemetry/platform';
import { issueKey } from '@telemetry/store';
import { provision } from '../tools/devstack/provision.js';
import { benchCommand, envNumber } from './common.js';
import { freePort, KAFKA_VERSION, startStack, type Stack } from '../tools/devstack/stack.js';
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
  type Fixtures,
  type LoadFigures,
  type ServiceTarget,
} from './query-data.js';
import { autocannonRate, closedLoop, HttpClient, latencyFigures, paced, type LoadResult } from './query-load.js';
import { childPids, CpuMeter, ServiceProcess } from './query-proc.js';
import {
  addFailures,
  failureCount,
  failuresOf,
  NO_FAILURES,
  ratio,
  rateTable,
  renderSection,
  runRecord,
  scenarioTable,
  serialTable,
  summarize,
  targetsTable,
  totalCpuPerRequest,
  writeSection,
  type Failures,
  type Measured,
  type RateSummary,
  type RunRecord,
  type ScenarioSummary,
  type Side,
  type Target,
} from './query-report.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const NODE_ARGS = SOURCE_NODE_ARGS;
/** service.ts passes this to ClickHouse with every query; the direct requests send it too. */
const SERVICE_MAX_RESULT_ROWS = 100_000;

const cfg = {
  checks: envNumber('BENCH_CHECKS', 10_000_000, 1, true),
  monitors: envNumber('BENCH_MONITORS', 5000, 1, true),
  seconds: envNumber('BENCH_SECONDS', 10, 0.5, false),
  rounds: envNumber('BENCH_ROUNDS', 2, 1, true),
  connections: envNumber('BENCH_CONNECTIONS', 16, 1, true),
  rate: envNumber('BENCH_RATE', 500, 1, true),
  rateConnections: envNumber('BENCH_RATE_CONNECTIONS', 10, 1, true),
  warmup: envNumber('BENCH_WARMUP_SECONDS', 2, 0, false),
  fixtures: envNumber('BENCH_FIXTURES', 200, 1, true),
  deepPage: envNumber('BENCH_DEEP_PAGE', 10, 1, true),
  rangeHours: envNumber('BENCH_RANGE_HOURS', 4, 1, true),
  serialSeconds: envNumber('BENCH_SERIAL_SECONDS', 3, 0.5, false),
  profile: process.env.BENCH_PROFILE === '1',
};
/** Paced runs: requests waiting at once before the schedule's next ones are dropped. */
const PACED_MAX_IN_FLIGHT = 256;
const TARGET_P99_MS = 20;
const TARGET_THROUGHPUT_RATIO = 0.8;
const TARGET_P99_RATIO = 2;

const fmt = (x: number): string => (x < 10 ? x.toFixed(1) : String(Math.round(x)));
const f2 = (x: number | undefined): string => (x === undefined ? 'n/a' : x.toFixed(2));

function clientVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'node_modules/@clickhouse/client/package.json'), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? '';
  } catch {
    return '';
  }
}

const log = (line: string): void => {
  process.stderr.write(`[bench:query] ${line}\n`);
};

function commandLine(): string {
  return benchCommand('bench:query');
}

// ---------------------------------------------------------------- lifecycle

let stack: Stack | undefined;
let admin: ClickHouseClient | undefined;
let database: string | undefined;
let service: ServiceProcess | undefined;
const clients: HttpClient[] = [];
let cleaning: Promise<void> | undefined;

/** Stops whatever was started, in reverse; safe to call twice (Ctrl-C during the finally). */
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const c of clients) c.close();
    await service?.stop().catch((err: unknown) => log(`stopping the service: ${String(err)}`));
    if (admin && database && stack?.mode === 'external') {
      await admin
        .command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(database)}` })
        .catch((err: unknown) => log(`dropping ${database}: ${String(err)}`));
    }
    await admin?.close().catch(() => undefined);
    await stack?.stop().catch((err: unknown) => log(`stopping the stack: ${String(err)}`));
  })();
  return cleaning;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------- measuring

/** Samples how many queries ClickHouse runs, every 100 ms, until the returned function is called. */
function sampleQueries(client: ClickHouseClient): () => Promise<{ mean: number; max: number }> {
  const values: number[] = [];
  let stopped = false;
  const loop = async (): Promise<void> => {
    while (!stopped) {
      try {
        const rs = await client.query({ query: 'SELECT count() AS n FROM system.processes', format: 'JSONEachRow' });
        const n = Number((await rs.json<{ n: string | number }>())[0]?.n ?? 1);
        values.push(n - 1); // not the sampling query itself
      } catch {
        // a missed sample
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const done = loop();
  return async () => {
    stopped = true;
    await done;
    const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
    return { mean: Math.round(mean * 10) / 10, max: Math.max(0, ...values) };
  };
}

async function measure(meter: CpuMeter, run: () => Promise<LoadResult>): Promise<Measured> {
  const stopQueries = sampleQueries(admin!);
  const stop = meter.start();
  const r = await run();
  const cpu = stop();
  return { r, cpu, queries: await stopQueries() };
}

async function main(): Promise<number> {
  const date = new Date().toISOString();
  log(
    `${cfg.checks.toLocaleString('en-US')} checks over ${cfg.monitors.toLocaleString('en-US')} monitors; ${cfg.rounds} rounds of ${cfg.seconds} s`,
  );
  log('starting ClickHouse and Kafka (tools/devstack)...');
  stack = await startStack({ log });
  database = `bench_${randomBytes(4).toString('hex')}`;
  await provision(stack, {
    database,
    topics: [],
    partitions: 1,
    logger: createLogger({ service: 'bench', level: 'warn' }),
  });
  admin = createClickHouse({
    url: stack.clickhouseUrl,
    username: 'default',
    password: '',
    database,
    requestTimeoutMs: 3_600_000,
  });
  const rsVersion = await admin.query({ query: 'SELECT version() AS v', format: 'JSONEachRow' });
  const clickhouseVersion = (await rsVersion.json<{ v: string }>())[0]?.v ?? 'unknown';

  // ---- 2. data
  const spec = new DataSpec(cfg.checks, cfg.monitors, Math.floor(Date.now() / 3_600_000) * 3600);
  log(`loading ${cfg.checks.toLocaleString('en-US')} checks into ${database}.checks (server-side)...`);
  const load: LoadFigures = await loadChecks(admin, database, spec, log);
  log(
    `loaded in ${load.insertSeconds} s (${load.rowsPerSecond.toLocaleString('en-US')} rows/s); OPTIMIZE FINAL ${load.optimizeSeconds} s`,
  );

  // ---- 3. the service
  const { key } = await issueKey(admin, database, { kind: 'api', name: 'bench:query', scopes: ['checks:read'] });
  const port = await freePort();
  const serviceEnv: NodeJS.ProcessEnv = {
    ...process.env,
    KAFKA_BROKERS: stack.kafkaBrokers,
    CLICKHOUSE_URL: stack.clickhouseUrl,
    CLICKHOUSE_DATABASE: database,
    CLICKHOUSE_USER: stack.clickhouseReader.user,
    CLICKHOUSE_PASSWORD: stack.clickhouseReader.password,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
  };
  const queryConfig = loadQueryConfig(serviceEnv);
  const profileDir = cfg.profile ? mkdtempSync(join(tmpdir(), 'bench-query-profile-')) : undefined;
  const serviceUrl = `http://127.0.0.1:${port}`;
  service = new ServiceProcess({
    cwd: ROOT,
    nodeArgs: [...NODE_ARGS, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])],
    script: 'services/query-service/src/main.ts',
    env: serviceEnv,
    url: serviceUrl,
  });
  await service.ready();
  log(`query service ready at ${serviceUrl} (pid ${service.pid})`);

  const meter = new CpuMeter({
    service: service.pid,
    clickhouse: childPids(process.pid, 'clickhouse')[0],
    kafka: childPids(process.pid, 'kafka.Kafka')[0],
  });
  const serviceHttp = new HttpClient(serviceUrl);
  const directHttp = new HttpClient(stack.clickhouseUrl);
  clients.push(serviceHttp, directHttp);
  const serviceTarget: ServiceTarget = { http: serviceHttp, apiKey: key };
  const directTarget: DirectTarget = {
    http: directHttp,
    user: stack.clickhouseReader.user,
    password: stack.clickhouseReader.password,
    database,
    settings: {
      max_execution_time: Math.ceil(queryConfig.queryTimeoutMs / 1000),
      max_result_rows: SERVICE_MAX_RESULT_ROWS,
    },
  };

  // ---- 4. fixtures, equivalence, warm-up
  log('drawing fixtures (following next_cursor through the service for the deep pages)...');
  const fx: Fixtures = await makeFixtures({
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

  let warmupFailures = 0;
  if (cfg.warmup > 0) {
    log(`warm-up: ${cfg.warmup} s per scenario and path`);
    for (const sc of scenarios) {
      for (const side of ['service', 'direct'] as const) {
        const r = await closedLoop(sc[side], cfg.connections, cfg.warmup);
        warmupFailures += failureCount(failuresOf(r));
      }
    }
  }

  const records: RunRecord[] = [];
  const runs = new Map<string, Measured[]>();
  const keep = (k: string, m: Measured): void => {
    runs.set(k, [...(runs.get(k) ?? []), m]);
  };
  const logRun = (what: string, rec: RunRecord): void => {
    log(
      `${what}: ${rec.rps} req/s, p50 ${rec.latency.p50} ms, p99 ${rec.latency.p99} ms, ClickHouse queries ${rec.queries.mean}/${rec.queries.max}, cpu ${JSON.stringify(rec.cpu)}${failureCount(rec.failures) ? `, FAILED ${JSON.stringify(rec.failures)}: ${rec.firstProblem}` : ''}`,
    );
  };
  for (let round = 1; round <= cfg.rounds; round++) {
    for (const sc of scenarios) {
      for (const side of ['service', 'direct'] as const) {
        const m = await measure(meter, () => closedLoop(sc[side], cfg.connections, cfg.seconds));
        keep(`${sc.key}/${side}`, m);
        const rec = runRecord(sc.key, side, round, m);
        records.push(rec);
        logRun(`round ${round} ${sc.key} ${side}`, rec);
      }
    }
  }
  // One request at a time: what each path costs per request, without queueing.
  for (let round = 1; round <= cfg.rounds; round++) {
    for (const sc of scenarios) {
      for (const side of ['service', 'direct'] as const) {
        const m = await measure(meter, () => closedLoop(sc[side], 1, cfg.serialSeconds));
        keep(`serial/${sc.key}/${side}`, m);
        const rec = runRecord(`${sc.key}_serial`, side, round, m);
        records.push(rec);
        logRun(`round ${round} ${sc.key} ${side}, 1 connection`, rec);
      }
    }
  }
  const summaries: ScenarioSummary[] = scenarios.map((sc) => {
    const s = summarize(runs.get(`${sc.key}/service`) ?? []);
    const d = summarize(runs.get(`${sc.key}/direct`) ?? []);
    const s1 = summarize(runs.get(`serial/${sc.key}/service`) ?? []);
    const d1 = summarize(runs.get(`serial/${sc.key}/direct`) ?? []);
    return {
      key: sc.key,
      title: sc.title,
      service: s,
      direct: d,
      throughputRatio: ratio(s.rps, d.rps),
      p99Ratio: ratio(s.latency.p99, d.latency.p99),
      serial: { service: s1, direct: d1 },
      cpuPerRequest: { service: totalCpuPerRequest(s), direct: totalCpuPerRequest(d) },
      cpuBoundRatio: ratio(totalCpuPerRequest(d), totalCpuPerRequest(s)),
    };
  });

  // ---- 5. fixed rate, first page
  const first = checksOps(serviceTarget, directTarget, () => firstPage(spec, fx.limit));
  const reported = new Map<string, { p50: number; p99: number; rps: number }[]>();
  for (let round = 1; round <= cfg.rounds; round++) {
    for (const side of ['service', 'direct'] as const) {
      const m = await measure(meter, () => paced(first[side], cfg.rate, cfg.seconds, PACED_MAX_IN_FLIGHT));
      keep(`paced/${side}`, m);
      const rec = runRecord('first_page_paced', side, round, m);
      records.push(rec);
      logRun(`round ${round} paced ${cfg.rate}/s ${side}`, rec);
    }
    for (const side of ['service', 'direct'] as const) {
      const m = await measure(meter, async () => {
        const ac = await autocannonRate({
          url: side === 'service' ? serviceUrl : stack!.clickhouseUrl,
          method: side === 'service' ? 'GET' : 'POST',
          headers: side === 'service' ? serviceHeaders(serviceTarget) : directHeaders(directTarget),
          rate: cfg.rate,
          connections: cfg.rateConnections,
          seconds: cfg.seconds,
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
      keep(`autocannon/${side}`, m);
      const rec = runRecord('first_page_autocannon', side, round, m);
      records.push(rec);
      const rep = reported.get(`autocannon/${side}`)?.at(-1);
      logRun(`round ${round} autocannon overallRate ${cfg.rate} ${side} (autocannon's p99 ${rep?.p99} ms)`, rec);
    }
  }
  const rate: RateSummary[] = [];
  for (const method of ['paced', 'autocannon'] as const) {
    for (const side of ['service', 'direct'] as Side[]) {
      const ms = runs.get(`${method}/${side}`) ?? [];
      const s = summarize(ms);
      const rep = reported.get(`${method}/${side}`);
      rate.push({
        method,
        side,
        rate: cfg.rate,
        connections: method === 'paced' ? PACED_MAX_IN_FLIGHT : cfg.rateConnections,
        achievedRps: s.rps,
        latency: s.latency,
        ...(method === 'paced' ? { sendLatency: latencyFigures(ms.flatMap((x) => x.r.sendLatencies ?? [])) } : {}),
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
      });
    }
  }

  // ---- targets
  const pacedService = rate.find((x) => x.method === 'paced' && x.side === 'service')!;
  const acService = rate.find((x) => x.method === 'autocannon' && x.side === 'service')!;
  const failures: Failures = records.reduce((a, r) => addFailures(a, r.failures), NO_FAILURES);
  const targets: Target[] = [
    {
      name: `first page p99 at ${cfg.rate} req/s, service (paced open loop)`,
      goal: `<= ${TARGET_P99_MS} ms`,
      measured: `${fmt(pacedService.latency.p99)} ms (${Math.round(pacedService.achievedRps)} req/s answered${pacedService.failures.dropped ? `, ${pacedService.failures.dropped} not sent` : ''})`,
      met: pacedService.latency.p99 <= TARGET_P99_MS && pacedService.achievedRps >= cfg.rate * 0.98,
    },
    {
      name: `first page p99 at ${cfg.rate} req/s, service (autocannon overallRate, its own p99)`,
      goal: `<= ${TARGET_P99_MS} ms`,
      measured: `${acService.reported?.p99 ?? NaN} ms (raw response times: ${fmt(acService.latency.p99)} ms; ${Math.round(acService.achievedRps)} req/s answered)`,
      met: (acService.reported?.p99 ?? Infinity) <= TARGET_P99_MS,
    },
    ...summaries.flatMap((s): Target[] => [
      {
        name: `${s.key}: service / direct throughput`,
        goal: `>= ${TARGET_THROUGHPUT_RATIO}x`,
        measured: `${s.throughputRatio.toFixed(2)}x (${Math.round(s.service.rps)} / ${Math.round(s.direct.rps)} req/s)`,
        met: s.throughputRatio >= TARGET_THROUGHPUT_RATIO,
      },
      {
        name: `${s.key}: service / direct p99`,
        goal: `<= ${TARGET_P99_RATIO}x`,
        measured: `${s.p99Ratio.toFixed(2)}x (${fmt(s.service.latency.p99)} / ${fmt(s.direct.latency.p99)} ms)`,
        met: s.p99Ratio <= TARGET_P99_RATIO,
      },
    ]),
    {
      name: 'every answer 200 with the expected rows',
      goal: '0 failed',
      measured: `${failureCount(failures)} failed (${failures.non2xx} non-2xx, ${failures.badBody} wrong rows, ${failures.errors} errors)`,
      met: failureCount(failures) === 0,
    },
  ];

  // ---- 6. report
  const serviceWarnings = service.warningLines();
  await service.stop();
  const maxOtherCpu = Math.max(0, ...records.map((r) => r.cpu.other ?? 0));
  const machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    clickhouse: clickhouseVersion,
    kafka: KAFKA_VERSION,
  };
  const data = {
    'Rows loaded': `${load.rows.toLocaleString('en-US')} checks in \`${database}.checks\`: ${spec.monitors.toLocaleString('en-US')} monitors x ${spec.minutes.toLocaleString('en-US')} checks (one a minute, ${(spec.minutes / 60).toFixed(1)} h), ~3% down, ~5% degraded`,
    Load: `INSERT ... SELECT FROM numbers() in chunks of 1M rows: ${load.insertSeconds} s (${load.rowsPerSecond.toLocaleString('en-US')} rows/s, materialized view included: ${load.rollupRows.toLocaleString('en-US')} rows in checks_hourly); then OPTIMIZE ... FINAL of both tables: ${load.optimizeSeconds} s (${load.checksParts} part(s), ${(load.diskBytes / 2 ** 20).toFixed(0)} MiB on disk)`,
  };
  const method = [
    `The **service** is \`services/query-service/src/main.ts\` in its own process (through tsx, LOG_LEVEL=warn), reading with the read-only ClickHouse user \`${stack.clickhouseReader.user}\` and an API key (checks:read). **ClickHouse direct** is the same SQL (\`checksSql\`, \`summarySql\` of the service's modules) POSTed by the benchmark to ClickHouse's HTTP interface the way the service's client sends it: same user, database, settings (max_execution_time=${directTarget.settings.max_execution_time}, max_result_rows=${SERVICE_MAX_RESULT_ROWS}), FORMAT JSONEachRow (JSON for the summary's quantiles, as the service), keep-alive; a summary sends its two queries in parallel, as the service does.`,
    '',
    `Closed loop: ${cfg.connections} concurrent requests (one keep-alive connection each), ${cfg.rounds} rounds of ${cfg.seconds} s per scenario and path, service and direct alternating (service, direct, service, direct), after a ${cfg.warmup} s warm-up of each. Each request draws a random monitor (first page) or a random fixture of ${fx.deep.length} monitors (others). req/s counts answers with status 200 and the expected number of rows; percentiles pool every request of all rounds; CPU is % of one core (bench = the load generator); "ClickHouse queries running" samples \`system.processes\` every 100 ms. Then the same with one request at a time (${cfg.serialSeconds} s per scenario, path and round): the cost of each path per request without queueing.`,
  ];
  const notes: string[] = [
    `Fixed rate: "paced" sends ${cfg.rate} req/s evenly spaced whatever the answers do and measures from each request's scheduled send time, so a stall also counts against the requests queued behind it; the target is judged on it. autocannon's \`overallRate\` lets each of its ${cfg.rateConnections} connections send ${Math.round(cfg.rate / cfg.rateConnections)} requests back to back at the start of every second (lib/httpClient.js, \`reqsMadeThisSecond\`), so it offers bursts; its reported percentiles (whole ms) add synthetic samples with an expected interval of \`Math.ceil(1 / rate)\` = 1 ms (lib/run.js), which inflates them. Both are shown.`,
    'The machine has 2 cores shared by the load generator, the service, ClickHouse and the idle Kafka: the service competes with ClickHouse for CPU, which direct queries do not; the ratios are the figures that carry over best.',
    'The service runs TypeScript through the tsx loader, as `npm start` does; production runs the compiled `dist/` with plain node.',
    "CPU ms per request divide each process's CPU over a run by the requests answered: background work (the 100 ms sampling of `system.processes`, key reloads, pings) is included, which weighs more at low request rates.",
  ];
  const fp = summaries.find((x) => x.key === 'first_page');
  if (fp) {
    const c = fp.service.cpuMsPerRequest;
    notes.push(
      `What the service costs (first page): one request at a time it adds ${fmt(fp.serial.service.latency.p50 - fp.serial.direct.latency.p50)} ms to ClickHouse's p50 of ${fmt(fp.serial.direct.latency.p50)} ms; under load its process uses ${f2(c.service)} ms CPU per request (${f2(c.service_sys)} ms of it in the kernel) next to ClickHouse's ${f2(fp.direct.cpuMsPerRequest.clickhouse)} ms per query, so on 2 shared cores the service path can reach about ${fp.cpuBoundRatio.toFixed(2)}x the direct throughput. Per query, @clickhouse/client ${clientVersion()} first awaits \`sleep(0)\` (a timer of at least 1 ms, dist/connection/socket_pool.js), then sends the SQL through a stream pipeline with its own AbortController (a DOMException per query); it opens at most 10 sockets (\`max_open_connections\`, not set in services/query-service/src/service.ts), so a replica never has more than 10 queries (5 summaries) in flight.`,
    );
  }
  const section = renderSection({
    command: commandLine(),
    date,
    machine,
    data,
    method,
    scenarios: summaries,
    rate,
    targets,
    failures,
    warmupFailures,
    equivalencePairs,
    serviceWarnings,
    maxOtherCpu,
    notes,
  });
  writeSection(join(ROOT, 'BENCHMARKS.md'), section);
  log('wrote the bench:query section of BENCHMARKS.md');
  if (profileDir) log(`service CPU profile in ${profileDir}`);

  process.stdout.write(
    `${scenarioTable(summaries)}\n\n${serialTable(summaries)}\n\n${rateTable(rate)}\n\n${targetsTable(targets)}\n`,
  );
  const figures = {
    benchmark: 'bench:query',
    command: commandLine(),
    date,
    machine,
    config: cfg,
    database,
    data: {
      checks: load.rows,
      monitors: spec.monitors,
      checksPerMonitor: spec.minutes,
      insertSeconds: load.insertSeconds,
      rowsPerSecond: load.rowsPerSecond,
      optimizeSeconds: load.optimizeSeconds,
      rollupRows: load.rollupRows,
      diskBytes: load.diskBytes,
    },
    fixtures: {
      monitors: fx.deep.length,
      deepPage: fx.deepPage,
      filteredHours: fx.filteredHours,
      filteredRows: fx.filteredRows,
    },
    equivalencePairs,
    scenarios: summaries,
    rate,
    targets,
    targetsMet: targets.filter((t) => t.met).length,
    targetsTotal: targets.length,
    failures,
    warmupFailures,
    serviceWarnings: serviceWarnings.length,
    maxOtherCpu,
    runs: records,
    ...(profileDir ? { profileDir } : {}),
  };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
  return failureCount(failures) === 0 && warmupFailures === 0 ? 0 : 1;
}

let code = 1;
try {
  code = await main();
} catch (err) {
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  if (service) log(`service output:\n${service.output().slice(-4000)}`);
  process.stdout.write(`${JSON.stringify({ benchmark: 'bench:query', error: String(err) })}\n`);
} finally {
  await cleanup();
}
process.exit(code);
