/**
 * Figures of `npm run bench:query`: aggregation over rounds, targets, and the section
 * between the bench:query markers of BENCHMARKS.md (other sections are left as they are).
 */
import { latencyFigures, type LoadResult } from '../../harness/load.js';
import { fmt, type Quantiles as LatencyFigures } from '../../harness/report.js';
import { addCounts, type ReportHead } from '../common/report.js';

export type Side = 'service' | 'direct';

export interface RunRecord {
  scenario: string;
  side: Side;
  round: number;
  rps: number;
  latency: LatencyFigures;
  requests: number;
  failures: Failures;
  seconds: number;
  /** % of one core during the run, per process, plus `machine` and `other`. */
  cpu: Record<string, number>;
  /** Queries ClickHouse was running (mean / max of samples every 100 ms). */
  queries: { mean: number; max: number };
  firstProblem?: string;
}

export interface Failures {
  non2xx: number;
  badBody: number;
  errors: number;
  dropped: number;
}

export function failuresOf(r: LoadResult): Failures {
  return { non2xx: r.non2xx, badBody: r.badBody, errors: r.errors, dropped: r.dropped };
}

/** Answers that were not 200 with the expected rows (requests a paced run did not send are not answers). */
export function failureCount(f: Failures): number {
  return f.non2xx + f.badBody + f.errors;
}

export const addFailures: (a: Failures, b: Failures) => Failures = addCounts;

export const NO_FAILURES: Failures = { non2xx: 0, badBody: 0, errors: 0, dropped: 0 };

export interface Measured {
  r: LoadResult;
  cpu: Record<string, number>;
  queries: { mean: number; max: number };
}

export function runRecord(scenario: string, side: Side, round: number, m: Measured): RunRecord {
  const { r, cpu, queries } = m;
  return {
    scenario,
    side,
    round,
    rps: Math.round((r.ok / r.seconds) * 10) / 10,
    latency: latencyFigures(r.latencies),
    requests: r.requests,
    failures: failuresOf(r),
    seconds: Math.round(r.seconds * 100) / 100,
    cpu,
    queries,
    ...(r.firstProblem === undefined ? {} : { firstProblem: r.firstProblem }),
  };
}

export interface SideSummary {
  /** Answers with the expected body per second, over all rounds. */
  rps: number;
  roundsRps: number[];
  /** Percentiles of every request of every round together. */
  latency: LatencyFigures;
  requests: number;
  failures: Failures;
  cpu: Record<string, number>;
  /** CPU ms per request (all processes' CPU over the run / requests answered), per process. */
  cpuMsPerRequest: Record<string, number>;
  queries: { mean: number; max: number };
}

/** Pools the rounds of one scenario and side: all requests over all seconds, all latencies. */
export function summarize(results: Measured[]): SideSummary {
  const ok = results.reduce((a, x) => a + x.r.ok, 0);
  const seconds = results.reduce((a, x) => a + x.r.seconds, 0);
  const requests = results.reduce((a, x) => a + x.r.requests, 0);
  const cpu: Record<string, number> = {};
  const cpuMsPerRequest: Record<string, number> = {};
  for (const name of new Set(results.flatMap((x) => Object.keys(x.cpu)))) {
    const weighted = results.reduce((a, x) => a + (x.cpu[name] ?? 0) * x.r.seconds, 0);
    cpu[name] = Math.round(weighted / seconds);
    if (name !== 'machine' && name !== 'other') {
      cpuMsPerRequest[name] = Math.round((weighted * 10 * 100) / Math.max(1, requests)) / 100;
    }
  }
  return {
    rps: Math.round((ok / seconds) * 10) / 10,
    roundsRps: results.map((x) => Math.round((x.r.ok / x.r.seconds) * 10) / 10),
    latency: latencyFigures(results.flatMap((x) => x.r.latencies)),
    requests,
    failures: results.reduce((a, x) => addFailures(a, failuresOf(x.r)), NO_FAILURES),
    cpu,
    cpuMsPerRequest,
    queries: {
      mean: Math.round((results.reduce((a, x) => a + x.queries.mean * x.r.seconds, 0) / seconds) * 10) / 10,
      max: Math.max(0, ...results.map((x) => x.queries.max)),
    },
  };
}

export interface ScenarioSummary {
  key: string;
  title: string;
  service: SideSummary;
  direct: SideSummary;
  /** service req/s / direct req/s. */
  throughputRatio: number;
  /** service p99 / direct p99. */
  p99Ratio: number;
  /** One request at a time. */
  serial: { service: SideSummary; direct: SideSummary };
  /** CPU ms per request of all measured processes (service, ClickHouse, load generator), per path. */
  cpuPerRequest: { service: number; direct: number };
  /** direct / service CPU per request: the throughput ratio to expect when the machine's CPU is the limit. */
  cpuBoundRatio: number;
}

/** CPU ms per request of the service, ClickHouse and the load generator together. */
export function totalCpuPerRequest(x: SideSummary): number {
  const c = x.cpuMsPerRequest;
  return Math.round(((c.service ?? 0) + (c.clickhouse ?? 0) + (c.bench ?? 0)) * 100) / 100;
}

export function ratio(a: number, b: number): number {
  return Math.round((a / b) * 100) / 100;
}

export interface RateSummary extends Pick<
  SideSummary,
  'latency' | 'requests' | 'failures' | 'cpu' | 'cpuMsPerRequest' | 'queries'
> {
  method: 'paced' | 'autocannon';
  side: Side;
  rate: number;
  connections: number;
  achievedRps: number;
  /** Paced: from each request's scheduled send time. autocannon: raw response times. */
  latency: LatencyFigures;
  /** Paced: from the actual send. */
  sendLatency?: LatencyFigures;
  /** autocannon: the p50/p99 autocannon itself reports (whole ms, its own correction). */
  reported?: { p50: number; p99: number; rps: number };
}

export interface Target {
  name: string;
  goal: string;
  measured: string;
  met: boolean;
}

export interface ReportInput extends ReportHead {
  data: Record<string, string | number>;
  method: string[];
  scenarios: ScenarioSummary[];
  rate: RateSummary[];
  targets: Target[];
  failures: Failures;
  warmupFailures: number;
  equivalencePairs: number;
  serviceWarnings: string[];
  maxOtherCpu: number;
  notes: string[];
}

const PACED_NOTE = 'too many requests were already waiting for answers';

const n0 = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a');
const ms = (x: number): string => (Number.isFinite(x) ? (x < 10 ? x.toFixed(1) : Math.round(x).toString()) : 'n/a');
const pct = (cpu: Record<string, number>, name: string): string => (name in cpu ? `${cpu[name]}%` : '');

function failText(f: Failures): string {
  const parts = [
    f.non2xx ? `${f.non2xx} non-2xx` : '',
    f.badBody ? `${f.badBody} wrong rows` : '',
    f.errors ? `${f.errors} errors` : '',
    f.dropped ? `${f.dropped} not sent` : '',
  ].filter(Boolean);
  return parts.length ? `**${parts.join(', ')}**` : '0';
}

const pathName = (side: Side): string => (side === 'service' ? 'service' : 'ClickHouse direct');
const perRequest = (x: { cpuMsPerRequest: Record<string, number> }): string =>
  `${'service' in x.cpuMsPerRequest && (x.cpuMsPerRequest.service ?? 0) >= 0.05 ? (x.cpuMsPerRequest.service ?? 0).toFixed(2) : '-'} / ${(x.cpuMsPerRequest.clickhouse ?? NaN).toFixed(2)}`;
const f2 = (x: number | undefined): string => (x === undefined ? 'n/a' : x.toFixed(2));
const queriesText = (q: { mean: number; max: number }): string => `${q.mean} / ${q.max}`;

/** A Markdown table from its header line, its alignment line and one line per row. */
const mdTable = (header: string, align: string, rows: readonly string[]): string => [header, align, ...rows].join('\n');

export function scenarioTable(s: ScenarioSummary[]): string {
  return mdTable(
    '| scenario | path | req/s | rounds (req/s) | p50 ms | p90 ms | p99 ms | ClickHouse queries running (mean / max) | service CPU | ClickHouse CPU | bench CPU | other CPU | CPU ms per request: service / ClickHouse | failed |',
    '| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    s.flatMap((sc) => [
      ...(['service', 'direct'] as const).map((side) => {
        const x = sc[side];
        return `| ${sc.title} | ${pathName(side)} | ${n0(x.rps)} | ${x.roundsRps.map(n0).join(', ')} | ${ms(x.latency.p50)} | ${ms(x.latency.p90)} | ${ms(x.latency.p99)} | ${queriesText(x.queries)} | ${pct(x.cpu, 'service')} | ${pct(x.cpu, 'clickhouse')} | ${pct(x.cpu, 'bench')} | ${pct(x.cpu, 'other')} | ${perRequest(x)} | ${failText(x.failures)} |`;
      }),
      `| ${sc.title} | **service / direct** | **${sc.throughputRatio.toFixed(2)}x** | | | | **${sc.p99Ratio.toFixed(2)}x** | | | | | | all processes: ${f2(sc.cpuPerRequest.service)} / ${f2(sc.cpuPerRequest.direct)} ms, so ${sc.cpuBoundRatio.toFixed(2)}x when CPU-bound | |`,
    ]),
  );
}

/** One request at a time: the cost of each path per request, without queueing. */
export function serialTable(s: ScenarioSummary[]): string {
  return mdTable(
    '| scenario | service p50 ms | direct p50 ms | service - direct p50 ms | service p99 ms | direct p99 ms | service req/s | direct req/s | CPU ms per request, service path: service (kernel) / ClickHouse | CPU ms per request, direct path: ClickHouse | failed |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    s.map((sc) => {
      const a = sc.serial.service;
      const b = sc.serial.direct;
      return `| ${sc.title} | ${ms(a.latency.p50)} | ${ms(b.latency.p50)} | ${ms(a.latency.p50 - b.latency.p50)} | ${ms(a.latency.p99)} | ${ms(b.latency.p99)} | ${n0(a.rps)} | ${n0(b.rps)} | ${f2(a.cpuMsPerRequest.service)} (${f2(a.cpuMsPerRequest.service_sys)}) / ${f2(a.cpuMsPerRequest.clickhouse)} | ${f2(b.cpuMsPerRequest.clickhouse)} | ${failText(addFailures(a.failures, b.failures))} |`;
    }),
  );
}

export function rateTable(r: RateSummary[]): string {
  return mdTable(
    "| load | path | offered req/s | answered req/s | p50 ms | p90 ms | p99 ms | max ms | autocannon's own p50 / p99 | ClickHouse queries running (mean / max) | service CPU | ClickHouse CPU | other CPU | CPU ms per request: service / ClickHouse | failed |",
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |',
    r.map((x) => {
      const load =
        x.method === 'paced'
          ? 'paced open loop (latency from scheduled send)'
          : `autocannon overallRate, ${x.connections} connections (raw latency)`;
      return `| ${load} | ${pathName(x.side)} | ${n0(x.rate)} | ${n0(x.achievedRps)} | ${ms(x.latency.p50)} | ${ms(x.latency.p90)} | ${ms(x.latency.p99)} | ${ms(x.latency.max)} | ${x.reported ? `${x.reported.p50} / ${x.reported.p99}` : ''} | ${queriesText(x.queries)} | ${pct(x.cpu, 'service')} | ${pct(x.cpu, 'clickhouse')} | ${pct(x.cpu, 'other')} | ${perRequest(x)} | ${failText(x.failures)} |`;
    }),
  );
}

export function targetsTable(t: Target[]): string {
  return mdTable(
    '| target | goal | measured | met |',
    '| --- | --- | --- | --- |',
    t.map((x) => `| ${x.name} | ${x.goal} | ${x.measured} | ${x.met ? 'yes' : '**no**'} |`),
  );
}

export function renderSection(r: ReportInput): string {
  const met = r.targets.filter((t) => t.met).length;
  const m = r.machine;
  const lines = [
    '## Query service: check history and summaries against ClickHouse',
    '',
    `Command: \`${r.command}\``,
    '',
    `- Date: ${r.date}`,
    `- Machine: ${m.nproc} CPUs (${m.cpuModel}), ${fmt(m.memoryGiB, 1)} GiB memory, Node ${m.node}, ClickHouse ${m.clickhouse}, Kafka ${m.kafka} (started by the harness, idle here)`,
    ...Object.entries(r.data).map(([k, v]) => `- ${k}: ${typeof v === 'number' ? n0(v) : v}`),
    '',
    ...r.method,
    '',
    '### Closed loop: throughput and latency',
    '',
    scenarioTable(r.scenarios),
    '',
    '### One request at a time',
    '',
    serialTable(r.scenarios),
    '',
    `### Fixed rate: first page of ${r.scenarios[0]?.title.match(/\d+/)?.[0] ?? '100'} checks`,
    '',
    rateTable(r.rate),
    '',
    `### Targets: ${met} of ${r.targets.length} met`,
    '',
    targetsTable(r.targets),
    '',
    `Checks of the answers: ${failureCount(r.failures) === 0 ? 'every request sent in the measured runs was answered 200 with the expected number of rows' : `${failText({ ...r.failures, dropped: 0 })} in the measured runs`}${r.failures.dropped ? ` (${r.failures.dropped} requests of the paced runs were not sent: ${PACED_NOTE})` : ''}${r.warmupFailures ? `; **${r.warmupFailures} failed during warm-up**` : ''}. Before measuring, ${r.equivalencePairs} service answers were compared with the rows the same SQL returns from ClickHouse: identical.`,
    r.serviceWarnings.length > 0
      ? `The service logged ${r.serviceWarnings.length} warning lines, e.g. \`${r.serviceWarnings[0]!.slice(0, 300)}\`.`
      : 'The service logged no warnings.',
    r.maxOtherCpu > 25
      ? `\n**Processes outside the benchmark used up to ${Math.round(r.maxOtherCpu)}% CPU during some runs: those figures are disturbed; run again on a quiet machine.**`
      : '',
    '',
    '### Notes',
    '',
    ...r.notes.map((n) => `- ${n}`),
  ];
  return lines.join('\n');
}
