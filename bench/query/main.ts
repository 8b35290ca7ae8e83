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
 * The stages live in their own files: options.ts (the settings below), setup.ts, data.ts,
 * requests.ts, fixtures.ts, scenarios.ts, equivalence.ts, tail.ts, measure.ts (closed
 * loops), fixed-rate.ts, targets.ts, method.ts and report.ts; this file composes them.
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
import type { Cleanups } from '../../harness/run.js';
import { verifyEquivalence } from './equivalence.js';
import { makeFixtures } from './fixtures.js';
import { fixedRate } from './fixed-rate.js';
import { closedLoops, Measurements } from './measure.js';
import { describe } from './method.js';
import { bench, cfg, log } from './options.js';
import {
  addFailures,
  failureCount,
  NO_FAILURES,
  rateTable,
  renderSection,
  scenarioTable,
  serialTable,
  targetsTable,
  type Failures,
  type ReportInput,
} from './report.js';
import { scenarios as makeScenarios } from './scenarios.js';
import { setUp } from './setup.js';
import { warmTail } from './tail.js';
import { judge } from './targets.js';

async function main(cleanups: Cleanups) {
  const date = new Date().toISOString();
  log(
    `${cfg.checks.toLocaleString('en-US')} checks over ${cfg.monitors.toLocaleString('en-US')} monitors; ${cfg.rounds} rounds of ${cfg.seconds} s`,
  );
  const run = await setUp(cleanups);
  const { spec, queryConfig, service, serviceTarget, directTarget } = run;

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
  const scenarios = makeScenarios(spec, fx, serviceTarget, directTarget).filter(
    (sc) => cfg.scenarios.length === 0 || cfg.scenarios.includes(sc.key),
  );
  if (scenarios.length === 0) throw new Error(`BENCH_SCENARIOS=${cfg.scenarios.join(',')} matches no scenario`);

  // The tail warm: the first page of every monitor once (as dashboards would), and what that costs in memory.
  const tail = await warmTail(serviceTarget, spec, queryConfig.defaultLimit);
  log(
    `hot tail: ${tail.monitors} monitors, ${tail.checks.toLocaleString('en-US')} checks after ${tail.warmSeconds} s; heap ${tail.heapBeforeMiB} -> ${tail.heapAfterMiB} MiB (${tail.mibPerThousandMonitors} MiB per 1,000 monitors)`,
  );

  const m = new Measurements(run.admin, service, run.pids);
  const { warmupFailures, summaries } = await closedLoops(m, scenarios);
  const rate = await fixedRate(m, spec, fx, serviceTarget, directTarget, {
    service: service.url,
    direct: run.stack.clickhouseUrl,
  });
  const records = m.records;
  const failures: Failures = records.reduce((a, r) => addFailures(a, r.failures), NO_FAILURES);
  const targets = judge({ spec, rate, summaries, tail, tailMaxMonitors: queryConfig.tailMaxMonitors, failures });

  // LOG_LEVEL=warn: every line the service wrote is a warning or an error.
  const serviceWarnings = service
    .output()
    .split('\n')
    // BENCH_TRACE_GC=1: --trace-gc lines ("[pid:0x...] 1234 ms: Scavenge ...") are not warnings.
    .filter((l) => l.trim() !== '' && !/^\[\d+:0x[0-9a-f]+\]/.test(l));
  await service.stop();
  const { data, method, notes } = describe({ ...run, fx, summaries });
  const report: ReportInput = {
    ...bench.head(run.machine, date),
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
    database: run.database,
    fixtures: {
      monitors: fx.deep.length,
      deepPage: fx.deepPage,
      filteredHours: fx.filteredHours,
      filteredRows: fx.filteredRows,
    },
    load: run.load,
    targetsMet: targets.filter((t) => t.met).length,
    tail,
    runs: records,
    ...(run.profileDir ? { profileDir: run.profileDir } : {}),
  };
}

await bench.run(main, {
  render: renderSection,
  tables: (r) =>
    [scenarioTable(r.scenarios), serialTable(r.scenarios), rateTable(r.rate), targetsTable(r.targets)].join('\n\n'),
  ok: (r) => failureCount(r.failures) === 0 && r.warmupFailures === 0,
});
