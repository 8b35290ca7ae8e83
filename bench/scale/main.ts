/**
 * `npm run bench:scale`: how cost grows (issue 48). Each part measures one curve, a few
 * points along one axis, on the services compiled (`tsc -b`) under plain node:
 *
 *   gateway   the ingest gateway's events/s, p99, CPU per event and RSS with 1, 100 and
 *             10,000 access keys (gateway.ts);
 *   consumer  the stream consumer's drain of one cold backlog with 1 and 2 processes in
 *             one consumer group: rows/s, CPU per row, peak RSS per process (consumer.ts);
 *   query     the query service's first-page throughput and hot-tail memory with 5,000 and
 *             50,000 monitors (query.ts);
 *   runner    the check runner's CPU per check at 100, 1,000 and 10,000 monitors (runner.ts).
 *
 *   1. builds, starts the stack once (or uses KAFKA_BROKERS / CLICKHOUSE_URL /
 *      DATABASE_ADMIN_URL); each part provisions its own databases and topics;
 *   2. runs the parts one after the other, in the order above; a part that fails is
 *      reported (an unmet target) and the next one runs;
 *   3. writes the bench:scale section of BENCHMARKS.md (per curve: a table, its chart,
 *      how it was measured) and each curve's chart as docs/bench/<curve id>.svg (svg.ts;
 *      neither in smoke mode nor with BENCH_WRITE=0), prints the tables and every curve as
 *      one JSON object on the last line of stdout (`curves`, `targets`); stops everything.
 *
 * Environment: BENCH_SCALE_PARTS (which parts, comma-separated: gateway,consumer,query,runner,
 * the default), BENCH_WRITE (0: leave BENCHMARKS.md and docs/bench alone), --smoke
 * (harness/run.ts: seconds per part, tiny counts). Each part's own settings, documented in
 * its file:
 *   gateway:  BENCH_SCALE_GATEWAY_KEYS (1,100,10000), BENCH_SCALE_GATEWAY_EVENTS (events per
 *             request, 1), BENCH_SCALE_GATEWAY_CONNECTIONS (100), BENCH_SCALE_GATEWAY_SECONDS
 *             (8 per run), BENCH_SCALE_GATEWAY_ROUNDS (2), BENCH_SCALE_GATEWAY_WARMUP_SECONDS (2);
 *   consumer: BENCH_SCALE_CONSUMER_PROCESSES (1,2), BENCH_SCALE_CONSUMER_EVENTS (500000),
 *             BENCH_SCALE_CONSUMER_ROUNDS (2);
 *   query:    BENCH_SCALE_QUERY_* (query.ts);
 *   runner:   BENCH_SCALE_RUNNER_* (runner.ts).
 * Only 127.0.0.1 is used. Exit code 0 when every part measured its curve with its checks
 * passed (every request answered, every event stored), 1 otherwise.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { ROOT } from '../../harness/processes.js';
import { Benchmark, type Cleanups, SMOKE } from '../../harness/run.js';
import { consumerCurve } from './consumer.js';
import type { Curve, CurvePart, ScaleContext } from './curve.js';
import { gatewayCurve } from './gateway.js';
import { queryCurve } from './query.js';
import { judge, renderSection, tables, type ScaleReport } from './report.js';
import { runnerCurve } from './runner.js';
import { writeCurveSvgs } from './svg.js';

/** The parts, in the order they run. */
const PARTS: readonly (readonly [string, CurvePart])[] = [
  ['gateway', gatewayCurve],
  ['consumer', consumerCurve],
  ['query', queryCurve],
  ['runner', runnerCurve],
];
/** Where the charts go (BENCHMARKS.md links them). */
const CHARTS_DIR = join(ROOT, 'docs', 'bench');

const bench = new Benchmark('bench:scale');
const log = bench.log;

/** BENCH_SCALE_PARTS: the parts to run, in their fixed order; every part when unset. */
function selectedParts(raw = process.env.BENCH_SCALE_PARTS): string[] {
  const names = PARTS.map(([name]) => name);
  if (raw === undefined || raw.trim() === '') return names;
  const wanted = raw.split(',').map((s) => s.trim());
  const unknown = wanted.filter((w) => !names.includes(w));
  if (unknown.length > 0 || wanted.length === 0)
    throw new Error(`BENCH_SCALE_PARTS: some of ${names.join(',')}, not ${raw}`);
  return names.filter((n) => wanted.includes(n));
}

async function main(cleanups: Cleanups): Promise<ScaleReport> {
  const parts = selectedParts();
  const logDir = mkdtempSync(join(tmpdir(), 'bench-scale-'));
  log(`parts ${parts.join(', ')}; child logs in ${logDir}`);
  const stack = await bench.stack(cleanups);
  const ctx: ScaleContext = { bench: stack, machine: stack.machine, cleanups, log, smoke: SMOKE, logDir };
  const curves: Curve[] = [];
  const failures: ScaleReport['failures'] = [];
  const partSeconds: Record<string, number> = {};
  for (const [name, part] of PARTS) {
    if (!parts.includes(name)) continue;
    const t = performance.now();
    log(`part ${name}...`);
    try {
      const curve = await part(ctx);
      curves.push(curve);
      // Each curve as soon as it is measured, so that a later failure loses nothing.
      log(`curve ${curve.id}: ${JSON.stringify(curve)}`);
    } catch (err) {
      failures.push({ part: name, error: err instanceof Error ? err.message : String(err) });
      log(`part ${name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    }
    partSeconds[name] = Math.round((performance.now() - t) / 100) / 10;
    log(`part ${name} took ${partSeconds[name]} s`);
  }
  const charts =
    !SMOKE && process.env.BENCH_WRITE !== '0' ? writeCurveSvgs(curves, CHARTS_DIR).map((f) => relative(ROOT, f)) : [];
  if (charts.length) log(`wrote ${charts.join(', ')}`);
  return {
    ...bench.head(stack.machine),
    parts,
    partSeconds,
    curves,
    failures,
    charts,
    targets: judge(parts, curves, failures, partSeconds),
  };
}

await bench.run(main, {
  render: renderSection,
  tables,
  ok: (r) => r.targets.every((t) => t.met),
});
