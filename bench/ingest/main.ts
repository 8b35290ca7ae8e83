/**
 * `npm run bench:ingest`: throughput, latency and memory of the ingest gateway against
 * real Kafka and ClickHouse, compared with a bare node:http baseline doing the same work
 * per request (bench/baseline-server.ts).
 *
 *   1. starts the stack (tools/devstack), a fresh database, two 6-partition topics, a key;
 *   2. starts the gateway and the baseline, each in its own process (RSS measured alone);
 *   3. drives both with autocannon, alternating gateway and baseline each round:
 *      a. single-event requests, b. 100-event batches, c. latency at half the
 *      single-event max rate of the gateway;
 *   4. writes the section between the bench:ingest markers of BENCHMARKS.md, prints the
 *      table, and prints every figure as one JSON object on the last line of stdout;
 *   5. stops everything, also on error or Ctrl-C.
 *
 * Environment: BENCH_SECONDS (10) per run, BENCH_ROUNDS (2) per server and scenario,
 * BENCH_CONNECTIONS (100), BENCH_WARMUP_SECONDS (3), BENCH_KEYS (one access key per
 * connection: the gateway rate-limits each key), BENCH_PROFILE=1 (both servers write a V8
 * CPU profile into the log directory when they stop; profiling slows them down, so the
 * figures of such a run are not comparable). Only 127.0.0.1 is ever loaded.
 * Exit code 0 when every request was answered 200 (targets met or not), 1 when some
 * request failed or the benchmark could not run.
 */
import { execFileSync } from 'node:child_process';
import { SOURCE_NODE_ARGS } from '../tools/devstack/service-command.js';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { ok } from '@telemetry/contract';
import { createClickHouse, createKafka, createLogger } from '@telemetry/platform';
import { issueKey } from '@telemetry/store';
import { provision } from '../tools/devstack/provision.js';
import { freePort, KAFKA_VERSION, startStack, type Stack } from '../tools/devstack/stack.js';
import { requestBody } from './bodies.js';
import { envNumber } from './common.js';
import { ChildServer, childPid, cpuSeconds, machineBusySeconds } from './proc.js';
import {
  DISTURBED_CPU,
  failureCount,
  figuresTable,
  renderSection,
  targetsTable,
  writeSection,
  type Failures,
  type Figures,
  type Machine,
  type Report,
  type RunFigures,
  type ScenarioSummary,
  type Target,
  type TargetCheck,
} from './report.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ROUTE = '/api/telemetry/events';
const OK_BODY = JSON.stringify(ok(null));
const NODE_ARGS = SOURCE_NODE_ARGS;

const SECONDS = envNumber('BENCH_SECONDS', 10, 1);
const ROUNDS = Math.round(envNumber('BENCH_ROUNDS', 2, 1));
const CONNECTIONS = Math.round(envNumber('BENCH_CONNECTIONS', 100, 1));
const WARMUP_SECONDS = envNumber('BENCH_WARMUP_SECONDS', 3, 0);
const KEYS = Math.round(envNumber('BENCH_KEYS', CONNECTIONS, 1));
const PROFILE = process.env.BENCH_PROFILE === '1';
const PIPELINING = 1;

const TARGETS = { singleRps: 8000, batchEps: 150_000, ratio: 0.8, p99Ms: 25, rssMB: 200 };

const log = (line: string): void => {
  process.stderr.write(`[bench] ${line}\n`);
};
const mb = (kib: number): number => Math.round((kib / 1024) * 10) / 10;
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length === 0 ? Number.NaN : s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const noFailures = (): Failures => ({ non2xx: 0, errors: 0, timeouts: 0, badBodies: 0 });
const addFailures = (a: Failures, b: Failures): Failures => ({
  non2xx: a.non2xx + b.non2xx,
  errors: a.errors + b.errors,
  timeouts: a.timeouts + b.timeouts,
  badBodies: a.badBodies + b.badBodies,
});

// ------------------------------------------------------------------ clean-up

const servers: ChildServer[] = [];
const cleanups: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | undefined;
let current: autocannon.Instance | undefined;

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    current?.stop();
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        log(`clean-up step failed: ${String(err)}`);
      }
    }
  })();
  return cleaning;
}

process.once('exit', () => {
  for (const s of servers) s.kill();
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}

// ------------------------------------------------------------------ load

const accessKeys: string[] = [];
/** The Kafka JVM and ClickHouse, when the stack runs them as our children (local mode). */
let kafkaPid: number | undefined;
let clickhousePid: number | undefined;

/** CPU seconds used so far by every process of the benchmark. */
function ourCpuSeconds(): number {
  const self = process.cpuUsage();
  let sum = (self.user + self.system) / 1e6;
  for (const s of servers) sum += s.cpuSeconds() || 0;
  for (const pid of [kafkaPid, clickhousePid]) if (pid !== undefined) sum += cpuSeconds(pid) ?? 0;
  return sum;
}

/** Events answered 200 per server, warm-ups included (checked against Kafka at the end). */
const acked: Record<Target, number> = { gateway: 0, baseline: 0 };
let warmupFailures = noFailures();

interface LoadOptions {
  body: string;
  eventsPerRequest: number;
  seconds: number;
  rate?: number;
}

interface LoadResult {
  figures: Omit<RunFigures, 'target' | 'round' | 'peakRssMB'>;
  ackedEvents: number;
}

async function load(server: ChildServer, o: LoadOptions): Promise<LoadResult> {
  server.resetWindow();
  const cpuBefore = server.cpuSeconds();
  const kafkaBefore = kafkaPid === undefined ? Number.NaN : (cpuSeconds(kafkaPid) ?? Number.NaN);
  const selfBefore = process.cpuUsage();
  const machineBefore = machineBusySeconds();
  const oursBefore = ourCpuSeconds();
  let nextKey = 0;
  const instance = autocannon({
    url: `${server.url}${ROUTE}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    setupClient: (client) => {
      const key = accessKeys[nextKey++ % accessKeys.length]!;
      client.setHeaders({ 'content-type': 'application/json', 'x-access-key': key });
    },
    body: o.body,
    connections: CONNECTIONS,
    pipelining: PIPELINING,
    duration: o.seconds,
    timeout: 10,
    expectBody: OK_BODY,
    ...(o.rate === undefined ? {} : { overallRate: o.rate }),
  });
  current = instance;
  const r = await instance;
  current = undefined;
  const cpu = server.cpuSeconds() - cpuBefore;
  const kafkaCpu = kafkaPid === undefined ? Number.NaN : (cpuSeconds(kafkaPid) ?? Number.NaN) - kafkaBefore;
  const self = process.cpuUsage(selfBefore);
  const other = machineBusySeconds() - machineBefore - (ourCpuSeconds() - oursBefore);
  const seconds = r.duration;
  // autocannon checks the body of every answer: a non-2xx one never matches.
  const badBodies = Math.max(0, r.mismatches - r.non2xx);
  const good = r['2xx'] - badBodies;
  const statusCodes: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(r.statusCodeStats)) statusCodes[code] = count;
  return {
    ackedEvents: good * o.eventsPerRequest,
    figures: {
      seconds,
      ok: good,
      rps: good / seconds,
      eps: (good * o.eventsPerRequest) / seconds,
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      cpuPercent: (cpu / seconds) * 100,
      kafkaCpuPercent: (kafkaCpu / seconds) * 100,
      loadgenCpuPercent: ((self.user + self.system) / 1e6 / seconds) * 100,
      otherCpuPercent: Math.max(0, (other / seconds) * 100),
      failed: { non2xx: r.non2xx, errors: r.errors, timeouts: r.timeouts, badBodies },
      statusCodes,
    },
  };
}

/** V8 heap figures from the gateway's /metrics (prom-client default metrics), in MB. */
async function gatewayHeap(url: string): Promise<RunFigures['heap']> {
  try {
    const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(2000) })).text();
    const metric = (name: string): number => {
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
      return m ? mb(Number(m[1]) / 1024) : Number.NaN;
    };
    return {
      usedMB: metric('nodejs_heap_size_used_bytes'),
      totalMB: metric('nodejs_heap_size_total_bytes'),
      externalMB: metric('nodejs_external_memory_bytes'),
    };
  } catch {
    return undefined;
  }
}

// ------------------------------------------------------------------ main

async function warmUp(target: Target, server: ChildServer, body: string, eventsPerRequest: number): Promise<void> {
  if (WARMUP_SECONDS <= 0) return;
  const { figures, ackedEvents } = await load(server, { body, eventsPerRequest, seconds: WARMUP_SECONDS });
  acked[target] += ackedEvents;
  warmupFailures = addFailures(warmupFailures, figures.failed);
  log(`  warm-up ${target}: ${Math.round(figures.rps)} req/s, ${failureCount(figures.failed)} failed`);
  await sleep(500);
}

async function scenario(
  s: Pick<ScenarioSummary, 'id' | 'title' | 'eventsPerRequest'> & { rate?: number; warmUp: boolean },
  targets: Record<Target, ChildServer>,
): Promise<ScenarioSummary> {
  const body = requestBody(s.eventsPerRequest);
  log(
    `${s.title}: body ${body.length} bytes${s.rate === undefined ? '' : `, ${s.rate} req/s offered`}, ` +
      `${ROUNDS} rounds of ${SECONDS} s per server`,
  );
  if (s.warmUp) {
    for (const t of ['gateway', 'baseline'] as const) await warmUp(t, targets[t], body, s.eventsPerRequest);
  }
  const runs: RunFigures[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of ['gateway', 'baseline'] as const) {
      const server = targets[target];
      const { figures, ackedEvents } = await load(server, {
        body,
        eventsPerRequest: s.eventsPerRequest,
        seconds: SECONDS,
        ...(s.rate === undefined ? {} : { rate: s.rate }),
      });
      acked[target] += ackedEvents;
      const heap = target === 'gateway' ? await gatewayHeap(server.url) : undefined;
      const run: RunFigures = {
        target,
        round,
        peakRssMB: mb(server.windowPeakKiB),
        ...(heap ? { heap } : {}),
        ...figures,
      };
      runs.push(run);
      log(
        `  round ${round} ${target.padEnd(8)} ${Math.round(run.rps)} req/s, ${Math.round(run.eps)} events/s, ` +
          `p50/p90/p99 ${run.p50}/${run.p90}/${run.p99} ms, cpu ${Math.round(run.cpuPercent)}% ` +
          `(kafka ${Math.round(run.kafkaCpuPercent)}%, load gen ${Math.round(run.loadgenCpuPercent)}%, ` +
          `other ${Math.round(run.otherCpuPercent)}%), ` +
          `rss ${run.peakRssMB} MB${heap ? ` (heap ${heap.usedMB}/${heap.totalMB} MB, external ${heap.externalMB} MB)` : ''}, ` +
          `failed ${failureCount(run.failed)} ${JSON.stringify(run.statusCodes)}`,
      );
      if (!server.running) throw new Error(`${target} exited during the load; see ${server.spec.logFile}`);
      await sleep(1000);
    }
  }
  const figures = (target: Target): Figures => {
    const rs = runs.filter((r) => r.target === target);
    const med = (
      k:
        | 'rps'
        | 'eps'
        | 'p50'
        | 'p90'
        | 'p99'
        | 'cpuPercent'
        | 'kafkaCpuPercent'
        | 'loadgenCpuPercent'
        | 'otherCpuPercent',
    ): number => median(rs.map((r) => r[k]));
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
  const gateway = figures('gateway');
  const baseline = figures('baseline');
  return {
    id: s.id,
    title: s.title,
    eventsPerRequest: s.eventsPerRequest,
    connections: CONNECTIONS,
    ...(s.rate === undefined ? {} : { rate: s.rate }),
    gateway,
    baseline,
    ratio: gateway.rps / baseline.rps,
    runs,
  };
}

function machine(stack: Stack, clickhouseVersion: string): Machine {
  let nproc = cpus().length;
  try {
    nproc = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {
    // keep os.cpus()
  }
  return {
    nproc,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: totalmem() / 2 ** 30,
    node: process.version,
    kafka: stack.mode === 'external' ? `(external ${stack.kafkaBrokers})` : KAFKA_VERSION,
    clickhouse: clickhouseVersion,
  };
}

function checkTargets(scenarios: ScenarioSummary[], gatewayPeakRssMB: number): TargetCheck[] {
  const [single, batch, half] = scenarios as [ScenarioSummary, ScenarioSummary, ScenarioSummary];
  // A run with failed requests meets no target; a disturbed one is only flagged.
  const check = (name: string, goal: string, value: string, pass: boolean, ...figs: Figures[]): TargetCheck => {
    const failed = figs.map((f) => failureCount(f.failed)).reduce((a, b) => a + b, 0);
    const disturbed = figs.map((f) => f.disturbedRuns).reduce((a, b) => a + b, 0);
    const notes = [
      failed > 0 ? `${failed} requests failed in these runs` : '',
      disturbed > 0 ? `${disturbed} of these runs disturbed by other processes` : '',
    ].filter(Boolean);
    return { name, goal, value, met: pass && failed === 0, ...(notes.length ? { note: notes.join('; ') } : {}) };
  };
  const r = (n: number): string => Math.round(n).toLocaleString('en-US');
  return [
    check(
      'single-event throughput (gateway)',
      `>= ${r(TARGETS.singleRps)} req/s`,
      `${r(single.gateway.rps)} req/s`,
      single.gateway.rps >= TARGETS.singleRps,
      single.gateway,
    ),
    check(
      '100-event batch throughput (gateway)',
      `>= ${r(TARGETS.batchEps)} events/s`,
      `${r(batch.gateway.eps)} events/s`,
      batch.gateway.eps >= TARGETS.batchEps,
      batch.gateway,
    ),
    check(
      'gateway / baseline, single events',
      `>= ${TARGETS.ratio}x`,
      `${single.ratio.toFixed(2)}x`,
      single.ratio >= TARGETS.ratio,
      single.gateway,
      single.baseline,
    ),
    check(
      'gateway / baseline, 100-event batches',
      `>= ${TARGETS.ratio}x`,
      `${batch.ratio.toFixed(2)}x`,
      batch.ratio >= TARGETS.ratio,
      batch.gateway,
      batch.baseline,
    ),
    check(
      `p99 at half the max rate (${r(half.rate ?? 0)} req/s)`,
      `<= ${TARGETS.p99Ms} ms`,
      `${half.gateway.p99} ms`,
      half.gateway.p99 <= TARGETS.p99Ms,
      half.gateway,
    ),
    check(
      'gateway peak RSS under load',
      `<= ${TARGETS.rssMB} MB`,
      `${gatewayPeakRssMB} MB`,
      gatewayPeakRssMB <= TARGETS.rssMB,
    ),
  ];
}

async function main(): Promise<number> {
  const started = Date.now();
  const logDir = mkdtempSync(join(tmpdir(), 'bench-ingest-'));
  log(`child logs in ${logDir}`);
  // Runs last (clean-ups run in reverse): the logs stay when something failed or profiles were asked for.
  let keepLogs = true;
  cleanups.push(() => {
    if (keepLogs) log(`child logs kept in ${logDir}`);
    else rmSync(logDir, { recursive: true, force: true });
    return Promise.resolve();
  });

  const stack = await startStack({ log });
  cleanups.push(() => stack.stop());
  kafkaPid = stack.mode === 'local' ? childPid(process.pid, 'java') : undefined;
  // /proc truncates command names to 15 characters.
  clickhousePid = stack.mode === 'local' ? childPid(process.pid, 'clickhouse-serv') : undefined;
  log(`stack ${stack.mode}: kafka ${stack.kafkaBrokers} (pid ${kafkaPid}), clickhouse ${stack.clickhouseUrl}`);

  const run = randomBytes(4).toString('hex');
  const database = `bench_${run}`;
  const topics: Record<Target, string> = { gateway: `bench_${run}_gateway`, baseline: `bench_${run}_baseline` };
  const logger = createLogger({ service: 'bench', level: 'warn' });
  await provision(stack, { database, topics: [topics.gateway, topics.baseline], partitions: 6, logger });

  const ch = createClickHouse({ url: stack.clickhouseUrl, username: 'default', password: '', database });
  let clickhouseVersion = 'unknown';
  try {
    for (let i = 0; i < KEYS; i++) {
      accessKeys.push((await issueKey(ch, database, { kind: 'telemetry', name: `bench ${i}` })).key);
    }
    const rs = await ch.query({ query: 'SELECT version() AS v', format: 'JSONEachRow' });
    clickhouseVersion = (await rs.json<{ v: string }>())[0]?.v ?? clickhouseVersion;
  } finally {
    await ch.close();
  }

  const start = async (target: Target, script: string): Promise<ChildServer> => {
    const port = await freePort();
    const server = new ChildServer({
      name: target,
      args: [
        ...NODE_ARGS,
        ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${logDir}`, `--cpu-prof-name=${target}.cpuprofile`] : []),
        script,
      ],
      cwd: ROOT,
      port,
      logFile: join(logDir, `${target}.log`),
      env: {
        ...process.env,
        KAFKA_BROKERS: stack.kafkaBrokers,
        CLICKHOUSE_URL: stack.clickhouseUrl,
        CLICKHOUSE_DATABASE: database,
        EVENTS_TOPIC: topics[target],
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        MIGRATE_ON_START: 'false',
      },
    });
    servers.push(server);
    cleanups.push(() => server.stop());
    await server.ready();
    log(`${target} ready on ${server.url} (pid ${server.pid}, rss ${mb(server.peakKiB)} MB)`);
    return server;
  };
  const targets: Record<Target, ChildServer> = {
    gateway: await start('gateway', 'services/ingest-gateway/src/main.ts'),
    baseline: await start('baseline', 'bench/baseline-server.ts'),
  };

  const single = await scenario({ id: 'single', title: 'single event', eventsPerRequest: 1, warmUp: true }, targets);
  const batch = await scenario(
    { id: 'batch100', title: '100-event batch', eventsPerRequest: 100, warmUp: true },
    targets,
  );
  const rate = Math.max(1, Math.floor(single.gateway.rps / 2));
  const half = await scenario(
    { id: 'half_rate', title: 'single event, half max rate', eventsPerRequest: 1, rate, warmUp: false },
    targets,
  );
  const scenarios = [single, batch, half];

  // Every 200 must stand for messages in Kafka (in-flight requests cut off at the end of a
  // run may add more messages than answers, never fewer).
  const kafka = createKafka({ brokers: stack.kafkaBrokers.split(','), clientId: 'bench', logger });
  const admin = kafka.admin();
  await admin.connect();
  const kafkaCheck: Report['kafka'] = [];
  try {
    for (const target of ['gateway', 'baseline'] as const) {
      const offsets = await admin.fetchTopicOffsets(topics[target]);
      const messages = offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
      kafkaCheck.push({
        target,
        topic: topics[target],
        messages,
        ackedEvents: acked[target],
        ok: messages >= acked[target],
      });
    }
  } finally {
    await admin.disconnect();
  }

  const gatewayPeakRssMB = mb(targets.gateway.peakKiB);
  const baselinePeakRssMB = mb(targets.baseline.peakKiB);
  const clean =
    scenarios.every((s) => s.runs.every((r) => failureCount(r.failed) === 0)) &&
    failureCount(warmupFailures) === 0 &&
    kafkaCheck.every((k) => k.ok);

  const report: Report = {
    command:
      `BENCH_SECONDS=${SECONDS} BENCH_ROUNDS=${ROUNDS} BENCH_CONNECTIONS=${CONNECTIONS} ` +
      `BENCH_WARMUP_SECONDS=${WARMUP_SECONDS} BENCH_KEYS=${KEYS}${PROFILE ? ' BENCH_PROFILE=1' : ''} npm run bench:ingest`,
    date: new Date().toISOString(),
    machine: machine(stack, clickhouseVersion),
    config: {
      seconds: SECONDS,
      rounds: ROUNDS,
      warmupSeconds: WARMUP_SECONDS,
      connections: CONNECTIONS,
      pipelining: PIPELINING,
      accessKeys: KEYS,
    },
    scenarios,
    gatewayPeakRssMB,
    baselinePeakRssMB,
    kafka: kafkaCheck,
    targets: checkTargets(scenarios, gatewayPeakRssMB),
    clean,
    warmupFailures,
  };

  const file = join(ROOT, 'BENCHMARKS.md');
  writeSection(file, renderSection(report));
  log(`wrote ${file} (${Math.round((Date.now() - started) / 1000)} s in all)`);

  process.stdout.write(`${figuresTable(report)}\n\n${targetsTable(report)}\n\n`);
  if (!clean) process.stdout.write('SOME REQUESTS FAILED: see "failed requests" above.\n\n');
  process.stdout.write(`${JSON.stringify(report)}\n`);
  keepLogs = !clean || PROFILE;
  return clean ? 0 : 1;
}

let code = 1;
try {
  code = await main();
} catch (err) {
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
} finally {
  await cleanup();
}
process.exit(code);
