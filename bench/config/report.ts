/**
 * The report of `npm run bench:config`: per step, the median (and p95 when there are
 * enough rounds) of its wall time, the query service's CPU and peak RSS; the ratios of the
 * bulk steps to the anchor (the same monitors one request each), per round and overall; the
 * anchor's per-request latencies; and its section of BENCHMARKS.md.
 */
import { fmt, markdown, median, ms, ratio, sectionHead, table } from '../../harness/report.js';
import type { Machine } from '../../harness/run.js';
import { DISTURBED_CPU } from '../../harness/sampler.js';
import { readingAndCaveats, type ReportHead } from '../common/report.js';

export const PHASES = [
  'dry run',
  'create',
  'unchanged',
  'one edit',
  'export',
  'prune',
  'create one by one',
  'delete one by one',
] as const;
export type Phase = (typeof PHASES)[number];

/** One step of one round. */
export interface Sample {
  phase: Phase;
  round: number;
  ms: number;
  /** CPU the query service used over the step (user + system, from /proc). */
  queryCpuSeconds: number;
  queryCpuPercent: number;
  /** Its highest VmRSS sampled (every 100 ms) during the step. */
  peakRssMB: number;
  /** What processes outside the benchmark used meanwhile (PostgreSQL among them: it is not ours to sample). */
  otherCpuPercent: number;
}

export interface PhaseFigures {
  phase: Phase;
  samples: number;
  medianMs: number;
  /** Nearest-rank p95; NaN with fewer than 5 samples (it would be the max). */
  p95Ms: number;
  minMs: number;
  maxMs: number;
  medianMsPerMonitor: number;
  medianQueryCpuSeconds: number;
  medianQueryCpuPercent: number;
  peakRssMB: number;
  maxOtherCpuPercent: number;
}

export interface RatioFigures {
  name: string;
  bulk: Phase;
  anchor: Phase;
  /** Median bulk / median anchor. */
  ofMedians: number;
  /** Bulk / anchor within each round (side by side), and their median. */
  perRound: number[];
  medianPerRound: number;
}

export interface LatencyFigures {
  samples: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export interface ConfigReport extends ReportHead<Machine> {
  config: { monitors: number; rounds: number; documentKiB: number };
  database: string;
  tenant: string;
  peakRssMB: number;
  phases: PhaseFigures[];
  ratios: RatioFigures[];
  createEachMs: LatencyFigures;
  deleteEachMs: LatencyFigures;
  samples: Sample[];
  clean: boolean;
}

/** Nearest-rank percentile of the finite values; NaN when there are none. */
export function percentile(values: readonly number[], q: number): number {
  const a = values.filter((x) => Number.isFinite(x)).sort((x, y) => x - y);
  return a.length ? a[Math.min(a.length - 1, Math.max(0, Math.ceil(q * a.length) - 1))]! : NaN;
}

function latency(values: readonly number[]): LatencyFigures {
  return {
    samples: values.length,
    p50: percentile(values, 0.5),
    p95: percentile(values, 0.95),
    p99: percentile(values, 0.99),
    max: percentile(values, 1),
  };
}

/** Enough samples for a p95 that is not simply the max. */
const MIN_P95_SAMPLES = 5;

export function summarize(
  samples: readonly Sample[],
  createEachMs: readonly number[],
  deleteEachMs: readonly number[],
): Pick<ConfigReport, 'phases' | 'ratios' | 'createEachMs' | 'deleteEachMs'> {
  const monitors = createEachMs.length / Math.max(1, new Set(samples.map((s) => s.round)).size);
  const of = (p: Phase) => samples.filter((s) => s.phase === p);
  const phases = PHASES.map((phase): PhaseFigures => {
    const s = of(phase);
    const times = s.map((x) => x.ms);
    return {
      phase,
      samples: s.length,
      medianMs: median(times),
      p95Ms: s.length >= MIN_P95_SAMPLES ? percentile(times, 0.95) : NaN,
      minMs: percentile(times, 0),
      maxMs: percentile(times, 1),
      medianMsPerMonitor: median(times) / monitors,
      medianQueryCpuSeconds: median(s.map((x) => x.queryCpuSeconds)),
      medianQueryCpuPercent: median(s.map((x) => x.queryCpuPercent)),
      peakRssMB: Math.max(0, ...s.map((x) => x.peakRssMB)),
      maxOtherCpuPercent: Math.max(0, ...s.map((x) => x.otherCpuPercent)),
    };
  });
  const byPhase = new Map(phases.map((p) => [p.phase, p]));
  const pair = (name: string, bulk: Phase, anchor: Phase): RatioFigures => {
    const perRound = of(bulk).map((b) => b.ms / (of(anchor).find((a) => a.round === b.round)?.ms ?? NaN));
    return {
      name,
      bulk,
      anchor,
      ofMedians: byPhase.get(bulk)!.medianMs / byPhase.get(anchor)!.medianMs,
      perRound,
      medianPerRound: median(perRound),
    };
  };
  return {
    phases,
    ratios: [
      pair('create: one document / one request each', 'create', 'create one by one'),
      pair('dry run / create one by one', 'dry run', 'create one by one'),
      pair('apply unchanged / create one by one', 'unchanged', 'create one by one'),
      pair('prune all / delete one by one', 'prune', 'delete one by one'),
    ],
    createEachMs: latency(createEachMs),
    deleteEachMs: latency(deleteEachMs),
  };
}

const STEP_TEXT: Record<Phase, string> = {
  'dry run': 'POST /api/config?dry_run=true (plans N creates, writes and rolls back)',
  create: 'POST /api/config (creates N)',
  unchanged: 'POST /api/config again (N unchanged)',
  'one edit': 'POST /api/config with one interval changed',
  export: 'GET /api/config (N monitors, secrets pinned)',
  prune: 'POST /api/config?prune=true, `monitors: []` (deletes N)',
  'create one by one': 'anchor: N × POST /api/monitors',
  'delete one by one': 'anchor: N × DELETE /api/monitors/:id',
};

export function phaseTable(r: ConfigReport): string {
  return table(
    [
      'step',
      '>median',
      '>p95',
      '>min – max',
      '>per monitor',
      '>query CPU',
      '>query CPU %',
      '>query peak RSS',
      '>other CPU (max)',
    ],
    r.phases.map((p) => [
      STEP_TEXT[p.phase],
      `${fmt(p.medianMs / 1000, 2)} s`,
      Number.isFinite(p.p95Ms) ? `${fmt(p.p95Ms / 1000, 2)} s` : '-',
      `${fmt(p.minMs / 1000, 2)} – ${fmt(p.maxMs / 1000, 2)} s`,
      `${ms(p.medianMsPerMonitor)} ms`,
      `${fmt(p.medianQueryCpuSeconds, 2)} s`,
      `${fmt(p.medianQueryCpuPercent)}%`,
      `${fmt(p.peakRssMB)} MB`,
      `${fmt(p.maxOtherCpuPercent)}%`,
    ]),
  );
}

export function ratioTable(r: ConfigReport): string {
  return table(
    ['ratio', '>of medians', '>per round (side by side)', '>median per round'],
    r.ratios.map((x) => [
      x.name,
      ratio(x.ofMedians),
      x.perRound.map((v) => ratio(v)).join(', '),
      ratio(x.medianPerRound),
    ]),
  );
}

export function latencyTable(r: ConfigReport): string {
  const row = (name: string, l: LatencyFigures) => [name, fmt(l.samples), ms(l.p50), ms(l.p95), ms(l.p99), ms(l.max)];
  return table(
    ['anchor request', '>requests', '>p50 ms', '>p95 ms', '>p99 ms', '>max ms'],
    [row('POST /api/monitors', r.createEachMs), row('DELETE /api/monitors/:id', r.deleteEachMs)],
  );
}

export function notes(r: ConfigReport): string[] {
  const create = r.phases.find((p) => p.phase === 'create')!;
  const busy = r.phases.filter((p) => p.maxOtherCpuPercent > DISTURBED_CPU).map((p) => p.phase);
  return [
    `Query service peak RSS over the whole run: ${fmt(r.peakRssMB)} MB. Every step answered 200 with the expected plan ` +
      `summary; the export held the ${fmt(r.config.monitors)} monitors with their headers as SecretPins; the tenant ended empty: ${r.clean}.`,
    `Creating the whole document took ${fmt(create.medianMs / 1000, 2)} s (median), its writes in one transaction under ` +
      'the registry write lock: other registry writes, of every tenant, wait for it meanwhile.',
    ...(busy.length
      ? [
          `**Processes outside the benchmark (PostgreSQL among them) used more than ${DISTURBED_CPU}% CPU during: ${busy.join(', ')}.**`,
        ]
      : []),
  ];
}

export function renderSection(r: ConfigReport): string {
  return markdown([
    ...sectionHead('Configuration apply: a document of monitors against one request each', r),
    `- Load: ${fmt(r.config.monitors)} HTTP monitors (each with a secret \`Authorization\` header, URL on 127.0.0.1 that nothing checks: no check runner runs), ` +
      `a ${fmt(r.config.documentKiB)} KiB document; ${r.config.rounds} rounds, each the bulk steps then the anchor, one request at a time; a fresh tenant and API key`,
    '',
    'The **bulk** side is `POST /api/config` and `GET /api/config` (docs/as-code.md) of the query service compiled ' +
      '(`services/query-service/dist/main.js`, its own process, LOG_LEVEL=warn) against PostgreSQL. The **anchor** is the ' +
      'same monitors (same bodies, keys included) created one by one with `POST /api/monitors` and deleted one by one with ' +
      '`DELETE /api/monitors/:id`, in the same round. Times are what the client saw; "query CPU" is the service process ' +
      '(user + system, /proc) over the step; "other CPU" is the rest of the machine meanwhile (PostgreSQL, not sampled ' +
      'apart, is in it).',
    '',
    phaseTable(r),
    '',
    ratioTable(r),
    '',
    latencyTable(r),
    '',
    ...notes(r),
    '',
    ...readingAndCaveats(
      [
        'An apply runs in one registry transaction under the registry write lock: its time is how long other registry writes wait.',
        'A ratio below 1x means the document is faster than the same work one request at a time.',
      ],
      ['One tenant, one query service, sequential requests; PostgreSQL is shared with other work on this machine.'],
    ),
  ]);
}
