/**
 * The measured runs of `npm run bench:query`: each one a load (closed loop, paced or
 * autocannon) with the CPU of every process and the queries ClickHouse runs sampled
 * meanwhile, kept per scenario and side; and the closed-loop stage, every scenario on both
 * paths (service, direct alternating) under concurrency and then one request at a time,
 * pooled into one summary per scenario.
 */
import type { ClickHouseClient } from '@telemetry/platform';
import { closedLoop, type LoadResult } from '../../harness/load.js';
import { sleep, type Child } from '../../harness/processes.js';
import { cpuMeter } from '../../harness/sampler.js';
import { cfg, log } from './options.js';
import {
  failureCount,
  failuresOf,
  ratio,
  runRecord,
  summarize,
  totalCpuPerRequest,
  type Measured,
  type RunRecord,
  type ScenarioSummary,
  type Side,
} from './report.js';
import type { Scenario } from './scenarios.js';

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

/** Every measured run so far, by key (`<scenario>/<side>`, `serial/…`, `paced/…`, `autocannon/…`). */
export class Measurements {
  readonly records: RunRecord[] = [];
  private readonly runs = new Map<string, Measured[]>();

  constructor(
    private readonly admin: ClickHouseClient,
    private readonly service: Child,
    private readonly pids: { kafka?: number; clickhouse?: number },
  ) {}

  of(key: string): Measured[] {
    return this.runs.get(key) ?? [];
  }

  /** One measured run: the load, the CPU of every process and ClickHouse's running queries meanwhile. */
  async measure(key: string, scenario: string, side: Side, round: number, load: () => Promise<LoadResult>) {
    const queries = sampleQueries(this.admin);
    const cpu = cpuMeter({ service: this.service.pid, ...this.pids });
    const startedAt = Date.now();
    const r = await load();
    const w = cpu();
    const flat: Record<string, number> = { machine: w.machinePercent, other: w.otherPercent };
    for (const [name, p] of Object.entries(w.processes)) [flat[name], flat[`${name}_sys`]] = [p, w.kernel[name] ?? 0];
    const m: Measured = { r, cpu: flat, queries: await queries() };
    this.runs.set(key, [...this.of(key), m]);
    const rec = runRecord(scenario, side, round, m);
    this.records.push(rec);
    log(
      `round ${round} ${key} (${new Date(startedAt).toISOString()}, ${((Date.now() - startedAt) / 1000).toFixed(1)} s): ${rec.rps} req/s, p50 ${rec.latency.p50} ms, p99 ${rec.latency.p99} ms, ClickHouse queries ` +
        `${rec.queries.mean}/${rec.queries.max}${failureCount(rec.failures) ? `, FAILED ${JSON.stringify(rec.failures)}: ${rec.firstProblem}` : ''}`,
    );
  }
}

/**
 * The closed-loop stage: a warm-up of every scenario on both paths, then the rounds under
 * BENCH_CONNECTIONS and one request at a time; returns the warm-up's failures and a summary
 * per scenario.
 */
export async function closedLoops(
  m: Measurements,
  scenarios: Scenario[],
): Promise<{ warmupFailures: number; summaries: ScenarioSummary[] }> {
  let warmupFailures = 0;
  for (const sc of cfg.warmup > 0 ? scenarios : []) {
    for (const side of ['service', 'direct'] as const) {
      warmupFailures += failureCount(failuresOf(await closedLoop(sc[side], cfg.connections, cfg.warmup)));
    }
  }
  for (const [prefix, connections, seconds] of [
    ['', cfg.connections, cfg.seconds],
    ['serial/', 1, cfg.serialSeconds],
  ] as const) {
    for (let round = 1; round <= cfg.rounds; round++) {
      for (const sc of scenarios) {
        for (const side of ['service', 'direct'] as const) {
          const name = prefix ? `${sc.key}_serial` : sc.key;
          await m.measure(`${prefix}${sc.key}/${side}`, name, side, round, () =>
            closedLoop(sc[side], connections, seconds),
          );
        }
      }
    }
  }
  const summaries = scenarios.map((sc): ScenarioSummary => {
    const [s, d] = [summarize(m.of(`${sc.key}/service`)), summarize(m.of(`${sc.key}/direct`))];
    return {
      key: sc.key,
      title: sc.title,
      service: s,
      direct: d,
      throughputRatio: ratio(s.rps, d.rps),
      p99Ratio: ratio(s.latency.p99, d.latency.p99),
      serial: {
        service: summarize(m.of(`serial/${sc.key}/service`)),
        direct: summarize(m.of(`serial/${sc.key}/direct`)),
      },
      cpuPerRequest: { service: totalCpuPerRequest(s), direct: totalCpuPerRequest(d) },
      cpuBoundRatio: ratio(totalCpuPerRequest(d), totalCpuPerRequest(s)),
    };
  });
  return { warmupFailures, summaries };
}
