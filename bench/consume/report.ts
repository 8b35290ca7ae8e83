/**
 * The `bench:consume` section of BENCHMARKS.md: figures, targets, what limits our
 * consumer, and what the Kafka engine path does differently. Only the text between the
 * markers is replaced.
 */
import { fmt, markdown, sectionHead, targetsPart } from '../../harness/report.js';
import type { Machine as BaseMachine } from '../../harness/run.js';
import type { ReportHead } from '../common/report.js';
import type { CpuWindow } from '../../harness/sampler.js';
import type { ClientFigures } from './clients.js';
import type { FreshnessResult } from './freshness.js';

export interface DrainFigures {
  path: 'ours' | 'engine';
  rows: number;
  /** From the start (consumer spawned / Kafka table created) until every row is visible. */
  seconds: number;
  rowsPerSecond: number;
  /** From the start until the first rows are visible. */
  firstRowsSeconds: number;
  /** From the first visible rows until all: the rate once running. */
  steadyRowsPerSecond: number;
  cpu: CpuWindow;
  /** Rows visible at each whole second from the start, then at the end. */
  timeline: number[];
  /**
   * Rows that never arrived: 0 for ours (which must deliver every row); the engine's drain
   * may end short of the total (no new row for ENGINE_QUIET_MS), at the time of its last row.
   */
  missingRows: number;
}

export interface OursDrain extends DrainFigures {
  label: string;
  /** Consumer settings that differ from the service's defaults. */
  env: Record<string, string>;
  readySeconds: number;
  peakRssMB: number;
  /** Peak RSS in each quarter of the drain (first rows to last). */
  rssQuartersMB: number[];
  afterDrainRssMB: number;
  rssBounded: boolean;
  inserts: number;
  meanInsertRows: number;
  meanInsertMs: number;
  /** Share of the drain during which an insert was running (inserts of a table are serialized). */
  insertBusyShare: number;
  eventLoopLagP99Ms: number;
  deadLettered: number;
}

export interface FreshnessRun extends FreshnessResult {
  label: string;
  env: Record<string, string>;
  consumerPeakRssMB: number;
  cpu: CpuWindow;
  /** Inserts into events by the consumer of this run (warm-up included), and their mean size. */
  inserts?: number;
  meanInsertRows?: number;
  /** The first attempt, when the gateway could not keep up with its rate (not a freshness figure). */
  overloadedAttempt?: FreshnessRun;
}

export interface Machine extends BaseMachine {
  librdkafka: string;
}

export interface TargetCheck {
  config: string;
  name: string;
  goal: string;
  value: string;
  /** Whether the goal is met (a floor-only drain rate, a figure not measured: false, with a note). */
  met: boolean;
  /** What more there is to say: by how much it is missed, a floor met, why it was not measured. */
  note?: string;
}

export interface ConsumeReport extends ReportHead<Machine> {
  /** Which consumer was measured: the commit (and whether its sources differed from it), its defaults. */
  consumer: { version: string; defaults: Record<string, string> };
  config: {
    events: number;
    partitions: number;
    consumerEnv: Record<string, string>;
    /** What the comparison run changed over consumerEnv. */
    compareEnv: Record<string, string>;
    engineConsumers: number;
    /** Turns of each Kafka client library in the client stage (BENCH_CLIENT_ROUNDS). */
    clientRounds: number;
    freshnessSeconds: number;
    freshnessPollMs: number;
    /** How the freshness rate was chosen. */
    freshnessRateFrom: string;
  };
  backlog: { messages: number; seconds: number; meanMessageBytes: number; payloadBytes: number };
  /** Each Kafka client library reading the backlog and doing nothing else (clients.ts). */
  clients: ClientFigures;
  /** The measured configuration (BENCH_CONSUMER_ENV). */
  ours: OursDrain;
  /** The comparison configuration (BENCH_COMPARE_ENV over BENCH_CONSUMER_ENV; default EVENT_DECODER=json: before the byte decoder). */
  oursCompare?: OursDrain;
  engine: DrainFigures;
  ratio: number;
  /** Ours measured / ours compared (rows/s), when the comparison ran. */
  compareRatio?: number;
  steadyRatio: number;
  check: {
    oursRows: number;
    engineRows: number;
    oursDistinct: number;
    engineDistinct: number;
    oursChecksum: string;
    engineChecksum: string;
    compareChecksum: string;
    oursRollup: number;
    engineRollup: number;
    oursInsertedAtZero: number;
    identical: boolean;
    /** Ours (and the comparison, when it ran) hold every row, their contents equal: true even when the engine fell short. */
    oursComplete: boolean;
  };
  freshness: FreshnessRun;
  freshnessCompare?: FreshnessRun;
  targets: TargetCheck[];
  noisy: boolean;
}

const pct = (n: number | undefined): string => `${fmt(n ?? NaN)}%`;

export function envText(env: Record<string, string>): string {
  const pairs = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  return pairs.length === 0 ? 'service defaults' : pairs.join(', ');
}

/** Largest increase of the row count within one second of a timeline. */
export function maxStep(timeline: number[]): number {
  let step = timeline[0] ?? 0;
  for (let i = 1; i < timeline.length; i++) step = Math.max(step, timeline[i]! - timeline[i - 1]!);
  return step;
}

function drainRow(d: DrainFigures, label: string, rss: string): string {
  return (
    `| ${label} | ${fmt(d.rows)} | ${fmt(d.seconds, 1)} | ${fmt(d.rowsPerSecond)} | ${fmt(d.firstRowsSeconds, 1)} | ` +
    `${fmt(d.steadyRowsPerSecond)} | ${pct(d.cpu.processes.consumer)} / ${pct(d.cpu.processes.clickhouse)} / ` +
    `${pct(d.cpu.processes.kafka)} / ${pct(d.cpu.otherPercent)} | ${rss} |`
  );
}

function freshnessRow(f: FreshnessRun): string {
  const label = f.gatewayKeptUp
    ? `ours, ${envText(f.env)}`
    : `ours, ${envText(f.env)}: **not a figure**, the gateway did not keep up (${f.overload})`;
  return (
    `| ${label} | ${fmt(f.offeredEventsPerSecond)} | ${fmt(f.achievedEventsPerSecond)} | ` +
    `${fmt(f.ackedEvents)} | ${fmt(f.freshnessMs.p50)} | ${fmt(f.freshnessMs.p90)} | **${fmt(f.freshnessMs.p99)}** | ` +
    `${fmt(f.freshnessMs.max)} | ${fmt(f.missingEvents)} | ${fmt(f.pollGapMs.p50)} / ${fmt(f.pollGapMs.p99)} | ` +
    `${fmt(f.ackMs.p50)} / ${fmt(f.ackMs.p99)} | ${pct(f.cpu.processes.consumer)} | ${fmt(f.consumerPeakRssMB)} MB |`
  );
}

function freshnessRows(f: FreshnessRun): string[] {
  return f.overloadedAttempt ? [freshnessRow(f.overloadedAttempt), freshnessRow(f)] : [freshnessRow(f)];
}

export function figuresTable(r: ConsumeReport): string {
  const rows = [
    '| path | rows | seconds | rows/s | first rows after (s) | steady rows/s | CPU: consumer / ClickHouse / Kafka / other | peak consumer RSS |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    drainRow(r.ours, `ours, ${envText(r.ours.env)}`, `${fmt(r.ours.peakRssMB)} MB`),
  ];
  if (r.oursCompare) {
    rows.push(drainRow(r.oursCompare, `ours, ${envText(r.oursCompare.env)}`, `${fmt(r.oursCompare.peakRssMB)} MB`));
  }
  rows.push(
    drainRow(
      r.engine,
      r.engine.missingRows > 0
        ? `ClickHouse Kafka engine (stopped ${fmt(r.engine.missingRows)} rows short; ends at its last row)`
        : 'ClickHouse Kafka engine',
      '-',
    ),
  );
  rows.push(
    `| ours (${envText(r.ours.env)}) / engine | | | **${fmt(r.ratio, 2)}x** | | ${fmt(r.steadyRatio, 2)}x | | |`,
  );
  if (r.oursCompare) {
    const d = r.oursCompare;
    rows.push(
      `| ours (${envText(d.env)}) / engine | | | ${fmt(d.rowsPerSecond / r.engine.rowsPerSecond, 2)}x | | ` +
        `${fmt(d.steadyRowsPerSecond / r.engine.steadyRowsPerSecond, 2)}x | | |`,
      `| ours (${envText(r.ours.env)}) / ours (${envText(d.env)}) | | | **${fmt(r.ours.rowsPerSecond / d.rowsPerSecond, 2)}x** | | ` +
        `${fmt(r.ours.steadyRowsPerSecond / d.steadyRowsPerSecond, 2)}x | | |`,
    );
  }
  rows.push(
    '',
    '| freshness (gateway 200 -> visible) | offered events/s | acked events/s | events | p50 ms | p90 ms | p99 ms | max ms | never seen | poll gap p50 / p99 ms | gateway 200 p50 / p99 ms | consumer CPU | consumer peak RSS |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...freshnessRows(r.freshness),
  );
  if (r.freshnessCompare) rows.push(...freshnessRows(r.freshnessCompare));
  return rows.join('\n');
}

export function clientsTable(r: ConsumeReport): string {
  const c = r.clients;
  const row = (name: string, f: ClientFigures['kafkajs']): string =>
    `| ${name} | ${fmt(f.steadyMessagesPerSecond)} | ${fmt(f.cpuMicrosPerMessage, 2)} |`;
  return [
    '| Kafka client, reading only (median of the rounds) | messages/s once reading | CPU µs per message |',
    '| --- | ---: | ---: |',
    row(`kafkajs${c.consumerLibrary === 'kafkajs' ? ' (the consumer reads with it)' : ''}`, c.kafkajs),
    row(
      `@platformatic/kafka${c.consumerLibrary === 'platformatic' ? ' (the consumer reads with it)' : ''}`,
      c.platformatic,
    ),
    `| kafkajs / @platformatic/kafka | ${fmt(c.kafkajs.steadyMessagesPerSecond / c.platformatic.steadyMessagesPerSecond, 2)}x | ${fmt(c.cpuRatio, 2)}x |`,
  ].join('\n');
}

export function targetsTable(r: ConsumeReport): string {
  const rows = ['| configuration | target | goal | measured | met |', '| --- | --- | --- | --- | --- |'];
  for (const t of r.targets) {
    rows.push(
      `| ${t.config} | ${t.name} | ${t.goal} | ${t.value} | ${t.met ? 'yes' : `**no${t.note ? `: ${t.note}` : ''}**`} |`,
    );
  }
  return rows.join('\n');
}

/** Where our consumer spends a drain, per configuration: the evidence for what limits it. */
function limitsText(r: ConsumeReport): string[] {
  const lines = [
    '### Where our consumer spends its time',
    '',
    "Per drain: the consumer process's CPU (in % of one core: it runs on one thread), the share of the",
    "drain during which inserts were in flight (a table's inserts overlap up to INSERT_CONCURRENCY, so this share",
    "can pass 100%), the inserts' mean",
    'size (a buffer is inserted at BATCH_MAX_ROWS rows or BATCH_MAX_AGE_MS after its first row) and the',
    "event loop's lag. A consumer well under one core with inserts in flight well under 100% of the time is",
    'waiting (for its batch timer, a fetch, a commit) rather than working; near one core it is bound by its',
    'JavaScript (kafkajs decoding, JSON.parse, building the rows, encoding the insert); inserts in flight all',
    "the time with a consumer well under one core mean ClickHouse's insert rate is the limit.",
    '',
  ];
  for (const o of [r.ours, r.oursCompare]) {
    if (!o) continue;
    lines.push(
      `- ${envText(o.env)}: ${fmt(o.rowsPerSecond)} rows/s (steady ${fmt(o.steadyRowsPerSecond)}); consumer ` +
        `${pct(o.cpu.processes.consumer)} of a core, ClickHouse ${pct(o.cpu.processes.clickhouse)}; an insert in flight ` +
        `${fmt(o.insertBusyShare * 100)}% of the drain; ${fmt(o.inserts)} inserts of ${fmt(o.meanInsertRows)} rows, ` +
        `${fmt(o.meanInsertMs)} ms each; event-loop lag p99 ${fmt(o.eventLoopLagP99Ms)} ms.`,
    );
  }
  for (const f of [r.freshness, r.freshnessCompare]) {
    if (!f) continue;
    lines.push(
      `- Freshness, ${envText(f.env)}: p50 ${fmt(f.freshnessMs.p50)} ms, p99 ${fmt(f.freshnessMs.p99)} ms at ` +
        `${fmt(f.offeredEventsPerSecond)} events/s${f.gatewayKeptUp ? '' : ' (gateway overloaded: not a figure)'}` +
        (f.inserts !== undefined ? `; ${fmt(f.inserts)} inserts of ${fmt(f.meanInsertRows ?? NaN)} rows` : '') +
        '.',
    );
  }
  lines.push('');
  return lines;
}

function rateText(r: ConsumeReport, f: FreshnessRun): string {
  const o = f.overloadedAttempt;
  return o
    ? `${fmt(f.offeredEventsPerSecond)} events/s (first at ${fmt(o.offeredEventsPerSecond)}, ${r.config.freshnessRateFrom}, ` +
        `which the gateway could not answer on this machine: ${o.overload}; then lower, at 80% of what it ` +
        'acknowledged, until it kept up)'
    : `${fmt(f.offeredEventsPerSecond)} events/s (${r.config.freshnessRateFrom})`;
}

export function renderSection(r: ConsumeReport): string {
  const m = r.machine;
  const o = r.ours;
  const f = r.freshness;
  const met = r.targets.filter((t) => t.met).length;
  return markdown([
    ...sectionHead('Stream consumer: drain rate, memory, freshness', r, ` (librdkafka ${r.machine.librdkafka})`),
    `- Backlog: ${fmt(r.backlog.messages)} event messages in one topic of ${r.config.partitions} partitions, ` +
      `produced with kafkajs (acks -1) in ${fmt(r.backlog.seconds, 1)} s in the gateway's format (\`toMessages\`), ` +
      `key = event_id; ${fmt(r.backlog.meanMessageBytes)} bytes per message on average, payload object ` +
      `${fmt(r.backlog.payloadBytes)} bytes; every event has a client id, a timestamp and sent_at`,
    `- Ours: \`services/stream-consumer/dist/main.js\` (compiled, plain node) in its own process, a new consumer group and a ` +
      `database of its own (same migrations) per configuration, LOG_LEVEL=warn, MIGRATE_ON_START=false; measured ` +
      `with **${envText(o.env)}**${r.oursCompare ? ` and with ${envText(r.oursCompare.env)} for comparison` : ''}; ` +
      `consumer at ${r.consumer.version}; its defaults: ${envText(r.consumer.defaults)}`,
    `- Engine: an \`ENGINE = Kafka\` table (kafka_num_consumers = ${r.config.engineConsumers}) and materialized ` +
      'views into `events_kafka_engine` and `events_per_minute_kafka_engine`, copies of `events` and its rollup ' +
      'made from the same migration statements; same topic, same messages, same broker, after ours',
    '',
    'Rows are counted with `SELECT count()` every 250 ms; seconds run from the start (consumer process spawned, ' +
      'Kafka table created) until every row is visible, so they include start-up (ours: ' +
      `${fmt(o.readySeconds, 1)} s until /readyz; the engine: joining the ` +
      'group). "steady" runs from the first visible rows to the last. CPU is per process in % of one core; ' +
      '"other" is what processes outside the benchmark used meanwhile.',
    '',
    figuresTable(r),
    '',
    `Kafka clients: before the drains, each library reads the whole backlog ${fmt(r.config.clientRounds)} times, ` +
      'taking turns, in a new group each time, with the fetch settings of the stream consumer, touching every ' +
      "value and doing nothing else (in the benchmark's own process; CPU is that process's, from creating the " +
      'consumer to the last message):',
    '',
    clientsTable(r),
    '',
    `Content check: ours ${fmt(r.check.oursRows)} rows (${fmt(r.check.oursDistinct)} distinct event ids), engine ` +
      `${fmt(r.check.engineRows)} rows (${fmt(r.check.engineDistinct)} distinct); a checksum over every column but ` +
      `inserted_at is ${r.check.identical ? '**equal**' : '**different**'} (${r.check.oursChecksum} / ` +
      `${r.check.engineChecksum}${r.oursCompare ? ` / ${envText(r.oursCompare.env)} ${r.check.compareChecksum}` : ''}); ` +
      `the rollups count ${fmt(r.check.oursRollup)} / ${fmt(r.check.engineRollup)} events.`,
    '',
    `Consumer memory (${envText(o.env)}): peak VmRSS ${fmt(o.peakRssMB)} MB during the drain, per quarter of the ` +
      `drain ${o.rssQuartersMB.map((q) => fmt(q)).join(' / ')} MB, ${fmt(o.afterDrainRssMB)} MB once drained, ` +
      `${fmt(f.consumerPeakRssMB)} MB under the freshness load: ${o.rssBounded ? 'bounded' : '**still growing**'}` +
      (r.oursCompare
        ? ` (${envText(r.oursCompare.env)}: peak ${fmt(r.oursCompare.peakRssMB)} MB, per quarter ` +
          `${r.oursCompare.rssQuartersMB.map((q) => fmt(q)).join(' / ')} MB)`
        : '') +
      `. ${fmt(o.deadLettered)} messages dead-lettered.`,
    '',
    `Freshness: events sent through the gateway (\`services/ingest-gateway/dist/main.js\`, its own process) at ` +
      `${rateText(r, f)} for ${fmt(r.config.freshnessSeconds)} s ` +
      `in ${f.eventsPerRequest}-event requests, open loop, after a warm-up, with the consumer running (its group ` +
      'at the end of the topic: no backlog); one client id per event under a source of its own. freshness = first ' +
      "poll that returned the event - the moment its request's 200 arrived. ClickHouse was polled every " +
      `${fmt(f.pollIntervalMs)} ms (query p50 ${fmt(f.pollQueryMs.p50)} ms): the rows a poll returns were visible ` +
      'when it was sent and not when the previous one was, so the figures overstate freshness by at most one poll ' +
      `gap (p50 / p99 in the table). Failed requests: ${fmt(f.failedRequests)}, skipped: ${fmt(f.skippedRequests)}; ` +
      `found only by the final full read: ${fmt(f.lateFound)}. CPU meanwhile: gateway ${pct(f.cpu.processes.gateway)}, ` +
      `ClickHouse ${pct(f.cpu.processes.clickhouse)}, Kafka ${pct(f.cpu.processes.kafka)}, this command ` +
      `${pct(f.cpu.processes.bench)}, other ${pct(f.cpu.otherPercent)}.`,
    r.noisy
      ? '\n**Processes outside the benchmark used a noticeable share of the CPU during some phases (column ' +
        '"other"): those figures are disturbed; run again on a quiet machine.**'
      : '',
    '',
    ...targetsPart(r.targets, met, targetsTable(r)),
    ...limitsText(r),
    '### What the Kafka engine path does differently',
    '',
    'ClickHouse 18.16 cannot read our messages as they are into `events`, so the engine path is the closest',
    'equivalent it can run, and it is **not** a drop-in replacement:',
    '',
    '- **Format.** JSONEachRow is out: the engine skips unknown fields, but 18.16 parses only a quoted string',
    '  into a `String` column, so a `payload String` column fails on the nested object (checked: "Cannot parse',
    '  JSON string: expected opening quote"), and leaving it out loses the payload; `date_time_input_format`',
    '  (for the ISO-8601 times) is read from the server profile, not from the Kafka table. The',
    "  Kafka table reads each message as one TSV line (`raw String`, `kafka_row_delimiter = '\\n'`) and the view",
    '  extracts the fields with `visitParamExtractString`/`visitParamExtractRaw` (payload kept as its JSON text)',
    '  and `parseDateTimeBestEffort` (ISO-8601 with milliseconds, truncated to seconds as ours does).',
    '- **Escapes are lost.** TSV unescapes `\\"`, `\\\\`, `\\n`, `\\t`, `\\uXXXX` before the view sees the text:',
    '  a payload or name holding a quote, backslash, control character or `\\u` escape is stored corrupted',
    '  (a JSON text that no longer parses). The benchmark payloads hold none, which the checksum shows;',
    '  real payloads (page titles, search terms) often do. Ours stores `JSON.stringify(payload)` exactly.',
    '- **No validation, no dead letters, and a bad message loses its neighbours.** Ours checks every message',
    '  against the JSON Schema, the size limit and the DateTime range, and sends what fails to the dead-letter',
    '  topic. On 18.16 a message the view cannot convert (not JSON, a bad UUID, an unreadable date) fails the',
    '  whole block it was read in (up to 65,536 messages): nothing of it is inserted, and the next block that',
    '  succeeds commits offsets past it, so the good messages read with it are **lost** (checked: 3 good',
    '  messages and 1 bad one gone, the 2 sent after them stored, the group committed past all 6). 18.16 has',
    '  no `kafka_skip_broken_messages`. A message that converts but is wrong (a missing field) is stored as',
    '  empty strings.',
    '- **visitParam is a text search**, not a JSON parser: it takes the first `"field":` in the message, so a',
    '  payload key that shadows a top-level field written after `payload` (`client_event_id`, `received_at`,',
    '  `client_ts`, `sent_at`) would be read instead of it. `toMessages` writes those after `payload`.',
    '- **Offsets.** librdkafka starts a new group at the end of the topic and 18.16 has no setting to change',
    "  it: the benchmark commits the first offsets for the engine's group before creating its table. Ours",
    '  reads a new group from the beginning.',
    '- **Rollup.** On 18.16 a view on `events_kafka_engine` never sees the rows the Kafka view inserts there',
    '  (checked: it stays empty), so the engine path feeds its copy of `events_per_minute` with a second view',
    '  on the Kafka table itself (the same grouping), which parses the fields a second time. Both views are',
    '  attached before the Kafka table exists (created on a Null table of its name, then swapped), so neither',
    '  misses the first block.',
    '- **inserted_at.** The view sets `now()`. Ours sends the time of decoding with every row (18.16 does not',
    "  apply a column's DEFAULT to a field missing from JSONEachRow): ",
    `  ${fmt(r.check.oursInsertedAtZero)} of our ${fmt(r.check.oursRows)} rows have inserted_at = 1970-01-01 here.`,
    '- **Delivery and visibility.** Both commit after the insert (at least once, apart from the loss above).',
    '  The engine inserts what one read cycle got (until a poll finds nothing for 500 ms, or',
    '  `stream_flush_interval_ms`, 7.5 s) in big blocks: its rows appeared in steps of up to',
    `  ${fmt(maxStep(r.engine.timeline))} rows within one second here (ours: ${fmt(maxStep(r.ours.timeline))}).`,
    "  Ours inserts a table's buffer at BATCH_MAX_ROWS rows or BATCH_MAX_AGE_MS after its first row.",
    '- **Operations.** The engine runs inside ClickHouse: no metrics of its own, no separate scaling or',
    '  deployment, and a poison message costs its whole block (above); ours has /metrics, health checks,',
    '  retention and its own process.',
    '',
    '### Caveats',
    '',
    `- One ${m.nproc}-core machine runs Kafka, ClickHouse, the consumer (or the engine inside ClickHouse), the`,
    '  gateway and this command: absolute rates are lower bounds; the ratio is the figure that carries over.',
    '- One run of each configuration, in this order: ours compared, ours measured, the engine;',
    '  ClickHouse merges settle before each. Run the command again to see the spread.',
    `- ClickHouse ${m.clickhouse} is Debian's package; it links the system librdkafka (${m.librdkafka}), which`,
    `  negotiates protocol versions Kafka ${m.kafka} still supports, so both paths read from the same broker.`,
    '  Production runs current ClickHouse, whose Kafka engine has more settings (JSONAsString, batch sizes).',
    '- The consumer and the gateway run compiled (`npm run build` = `tsc -b`, which the command runs first)',
    '  under plain node, as production does.',
  ]);
}
