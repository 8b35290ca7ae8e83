import { fmt, markdown, median, sectionHead, targetsPart } from '../../harness/report.js';
import type { ReportHead } from '../common/report.js';
import { DISTURBED_CPU } from '../../harness/sampler.js';
import type { AnchorFigures, AnchorSettings } from './anchor.js';

export type Target = 'gateway' | 'baseline';

/** What is measured of a load run. Latencies in ms; cpu is the server's, in % of one core. */
export interface Measured {
  rps: number;
  eps: number;
  p50: number;
  p90: number;
  p99: number;
  cpuPercent: number;
  kafkaCpuPercent: number;
  loadgenCpuPercent: number;
  /** CPU used by processes that are not part of the benchmark (noise). */
  otherCpuPercent: number;
  peakRssMB: number;
}

/** One load run against one server. */
export interface RunFigures extends Measured {
  target: Target;
  round: number;
  seconds: number;
  ok: number;
  /** The gateway's own V8 figures (its /metrics) right after the run, in MB. */
  heap?: { usedMB: number; totalMB: number; externalMB: number };
  failed: Failures;
  statusCodes: Record<string, number>;
}

export interface Failures {
  non2xx: number;
  errors: number;
  timeouts: number;
  /** 2xx answers whose body was not `{"success":true,"data":null}`. */
  badBodies: number;
}

/** Medians over rounds. */
export interface Figures extends Measured {
  /** Runs during which processes outside the benchmark used more than DISTURBED_CPU. */
  disturbedRuns: number;
  failed: Failures;
}

export interface ScenarioSummary {
  id: string;
  title: string;
  eventsPerRequest: number;
  connections: number;
  /** Offered load (overallRate), when the scenario is rate-limited. */
  rate?: number;
  gateway: Figures;
  baseline: Figures;
  /** Gateway / baseline throughput. */
  ratio: number;
  runs: RunFigures[];
}

export interface TargetCheck {
  name: string;
  goal: string;
  value: string;
  met: boolean;
  note?: string;
}

export interface Report extends ReportHead {
  config: {
    seconds: number;
    rounds: number;
    warmupSeconds: number;
    connections: number;
    pipelining: number;
    accessKeys: number;
  };
  scenarios: ScenarioSummary[];
  gatewayPeakRssMB: number;
  baselinePeakRssMB: number;
  kafka: { target: Target; topic: string; messages: number; ackedEvents: number; ok: boolean }[];
  /** Kafka's own producer in the same run (median over the rounds). */
  anchor: { settings: AnchorSettings; runs: AnchorFigures[]; recordsPerSec: number };
  /** The producer library both servers ran with (KAFKA_CLIENT). */
  kafkaClient: string;
  /** Event schemas: the gateway's CPU per single event without and with one (median over the rounds). */
  schema?: {
    withoutMicros: number;
    withMicros: number;
    /** withMicros / withoutMicros - 1 (single events) */
    cost: number;
    /** The same for 100-event batches. */
    batchWithoutMicros: number;
    batchWithMicros: number;
    batchCost: number;
    /** Events the gateway checked against the schema (ingest_schema_checks_total). */
    checked: number;
    runs: { round: number; schema: boolean; eventsPerRequest: number; figures: Figures & { ok: number } }[];
  };
  targets: TargetCheck[];
  clean: boolean;
  warmupFailures: Failures;
}

const PARTITIONS_TEXT = 'the same 6 partitions';

/** The server's CPU time per event answered, in µs. */
export function cpuMicros(f: Measured): number {
  return f.eps > 0 ? ((f.cpuPercent / 100) * 1e6) / f.eps : Number.NaN;
}

export function failureCount(f: Failures): number {
  return f.non2xx + f.errors + f.badBodies;
}

function failText(f: Failures): string {
  if (failureCount(f) === 0) return '0';
  const parts = [
    f.non2xx ? `${f.non2xx} non-2xx` : '',
    f.errors ? `${f.errors} errors (${f.timeouts} timeouts)` : '',
    f.badBodies ? `${f.badBodies} 2xx with a wrong body` : '',
  ];
  return `**${parts.filter(Boolean).join(', ')}**`;
}

/** The markdown table of the figures (also printed by the command). */
export function figuresTable(r: Report): string {
  const rows = [
    '| scenario | server | req/s | events/s | p50 ms | p90 ms | p99 ms | server CPU | CPU per event | Kafka CPU | load gen CPU | other CPU | peak RSS | failed requests |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const s of r.scenarios) {
    const label = s.rate === undefined ? s.title : `${s.title} (${fmt(s.rate)} req/s offered)`;
    // autocannon gives whole ms; the open loop (at a rate) 0.1 ms.
    const lat = (x: number): string => fmt(x, s.rate === undefined ? 0 : 1);
    for (const t of ['gateway', 'baseline'] as const) {
      const f = s[t];
      rows.push(
        `| ${label} | ${t} | ${fmt(f.rps)} | ${fmt(f.eps)} | ${lat(f.p50)} | ${lat(f.p90)} | ${lat(f.p99)} | ` +
          `${fmt(f.cpuPercent)}% | ${fmt(cpuMicros(f))} µs | ${fmt(f.kafkaCpuPercent)}% | ${fmt(f.loadgenCpuPercent)}% | ` +
          `${fmt(f.otherCpuPercent)}%${f.disturbedRuns ? ` **(${f.disturbedRuns} of ${r.config.rounds} runs disturbed)**` : ''} | ` +
          `${fmt(f.peakRssMB)} MB | ${failText(f.failed)} |`,
      );
    }
    rows.push(`| ${label} | gateway / baseline | ${fmt(s.ratio, 2)}x | | | | | | | | | | | |`);
  }
  const a = r.anchor;
  rows.push(
    `| ${fmt(a.settings.records)} records of ${fmt(a.settings.recordBytes)} B | Kafka's ProducerPerformance | | ` +
      `${fmt(a.recordsPerSec)} records/s | ${fmt(median(a.runs.map((x) => x.p50Ms)))} | | ` +
      `${fmt(median(a.runs.map((x) => x.p99Ms)))} | | | | | | | |`,
  );
  return rows.join('\n');
}

export function targetsTable(r: Report): string {
  const rows = ['| target | goal | measured | met |', '| --- | --- | --- | --- |'];
  for (const t of r.targets) {
    rows.push(`| ${t.name} | ${t.goal} | ${t.value}${t.note ? ` (${t.note})` : ''} | ${t.met ? 'yes' : '**no**'} |`);
  }
  return rows.join('\n');
}

function heapText(r: Report): string {
  const heaps = r.scenarios.flatMap((s) => s.runs.flatMap((run) => (run.heap ? [run.heap] : [])));
  if (heaps.length === 0) return '';
  const max = (k: 'usedMB' | 'totalMB' | 'externalMB'): string => fmt(Math.max(...heaps.map((h) => h[k])));
  return (
    ` Right after its runs the gateway's V8 heap was at most ${max('totalMB')} MB (${max('usedMB')} MB used), ` +
    `external memory (Buffers) at most ${max('externalMB')} MB.`
  );
}

/** Highest "other CPU" of any measured run, in % of one core. */
export function maxOther(r: Report): number {
  return Math.max(...r.scenarios.flatMap((s) => s.runs.map((run) => run.otherCpuPercent)));
}

/** Whether processes outside the benchmark took a noticeable share of the machine. */
export function noisy(r: Report): boolean {
  return maxOther(r) > DISTURBED_CPU;
}

export function renderSection(r: Report): string {
  const m = r.machine;
  const c = r.config;
  const met = r.targets.filter((t) => t.met).length;
  const kafka = r.kafka
    .map(
      (k) => `${k.target}: ${fmt(k.messages)} messages in \`${k.topic}\` for ${fmt(k.ackedEvents)} events answered 200`,
    )
    .join('; ');
  return markdown([
    ...sectionHead('Ingest gateway: throughput, latency, memory', r),
    `- Load: ${c.connections} connections, ${c.rounds} rounds of ${c.seconds} s per server and scenario, gateway and ` +
      `baseline alternating, after a ${c.warmupSeconds} s warm-up of each (none at half rate); ` +
      `${c.accessKeys} access keys, one per connection. Single events and batches: autocannon, pipelining ` +
      `${c.pipelining}, each connection sending as soon as its answer came. Half rate: an open loop (requests evenly ` +
      'spaced over the connections whatever the answers do; `paced` on `RawHttpClient`, harness/load.ts)',
    '',
    'The **gateway** is `services/ingest-gateway/dist/main.js` in its own process (LOG_LEVEL=warn). The **baseline**',
    '(`bench/ingest/baseline.ts`, another process) does the same work per request on bare `node:http`: key check',
    '(KeyStore), body read, `parseBody`, ajv validation, one Kafka message per event, and the same batched produce',
    "(the gateway's BatchingPublisher and AckedProducer with the gateway's settings), awaited before answering 200.",
    `Both send with **${r.kafkaClient}** (\`KAFKA_CLIENT\`). The **anchor** is Kafka's own Java producer,`,
    `\`org.apache.kafka.tools.ProducerPerformance\`, run ${r.anchor.runs.length} times in the same command at full speed:`,
    `${fmt(r.anchor.settings.records)} records of ${fmt(r.anchor.settings.recordBytes)} B (an event's message value plus its`,
    `36-byte key), acks=all, idempotent, ${PARTITIONS_TEXT}, linger.ms=${r.anchor.settings.lingerMs} and`,
    `batch.size=${fmt(r.anchor.settings.batchBytes)} (the gateway's linger and its bytes per request over the partitions).`,
    'Figures are medians over the rounds; requests/s counts 200 answers',
    '(every one checked to be `{"success":true,"data":null}`); latency is what the load generator saw (whole ms from',
    "autocannon; at half rate in 0.1 ms from each request's scheduled send time);",
    'CPU is per process (server, Kafka JVM, load generator) in % of one core; "other CPU" is what the rest of the',
    "machine used meanwhile (processes outside the benchmark: noise); peak RSS is the server's VmRSS sampled",
    'every 100 ms.',
    '',
    figuresTable(r),
    '',
    `Gateway peak RSS over the whole run: **${fmt(r.gatewayPeakRssMB)} MB** (baseline ${fmt(r.baselinePeakRssMB)} MB).` +
      heapText(r),
    `Kafka check: ${kafka}.`,
    r.clean
      ? 'Every request of every measured run was answered 200 with the expected body.'
      : '**Some requests failed (see the table): figures of those runs count only the 200 answers.**',
    failureCount(r.warmupFailures) > 0 ? `**Warm-up runs had failures too: ${failText(r.warmupFailures)}.**` : '',
    noisy(r)
      ? `**Processes outside the benchmark used up to ${fmt(maxOther(r))}% CPU during some runs (more than ` +
        `${DISTURBED_CPU}% counts as disturbed, see "other CPU"): those figures are low; run again on a quiet machine.**`
      : '',
    '',
    ...targetsPart(r.targets, met, targetsTable(r)),
    '### Caveats',
    '',
    `- The machine has ${m.nproc} cores, shared by the load generator (one Node process), the server under test,`,
    '  the idle other server, Kafka (JVM) and ClickHouse: the figures are lower bounds for a server with cores of',
    '  its own, and the gateway/baseline ratio is the figure that carries over best.',
    '- Both servers run compiled (`npm run build` = `tsc -b`, which the command runs first) under plain node, as',
    '  production does: the gateway from `services/ingest-gateway/dist/`, the baseline from `.tsout/bench/ingest/`.',
    '- Kafka is one local broker, replication factor 1, so `acks=all` waits for one replica only.',
    "- Each connection sends with its own access key: the gateway limits each key's request rate",
    '  (`RATE_LIMIT_PER_SECOND`), so a single key would measure the limiter, not the capacity.',
    '- Half-rate latency: an open loop at half the single-event max measured above. Each request is due at its',
    '  place in an even schedule and its latency counts from then, so a late answer also counts the delay it caused',
    '  the ones after it (coordinated omission). Not autocannon `overallRate`: there each connection sends back to',
    '  back until its quota of the second is used and then waits, so "half the max rate" is the max rate for half of',
    '  each second, and autocannon 8 corrects with an expected interval of 1 ms whatever the rate.',
  ]);
}
