/**
 * Figures of `npm run bench:registry` and its section of BENCHMARKS.md (between
 * `<!-- bench:registry -->` and `<!-- /bench:registry -->`; other sections are left alone).
 */
import { fmt, markdown, ms, ratio, sectionHead, table, type Quantiles } from '../../harness/report.js';
import { DISTURBED_CPU, type CpuWindow } from '../../harness/sampler.js';
import { readingAndCaveats, type ReportHead } from '../common/report.js';

export type Design = 'before' | 'after';

/** One replica of one design. */
export interface SideFigures {
  design: Design;
  /** What the replica holds once loaded. */
  keys: number;
  monitors: number;
  /** The replica's own clock: first registry query to complete copies, ms. */
  loadMs: number;
  /** Spawn to /readyz 200 (Node's start, connections, the load), ms. */
  readyMs: number;
  /** The idle window: nothing changes in the store. */
  idle: {
    seconds: number;
    cpuMsPerMinute: number;
    /** % of one core. */
    cpuPercent: number;
    queriesPerMinute: number;
    rowsPerMinute: number;
    cpu: CpuWindow;
  };
  /** VmRSS sampled every 100 ms: highest over the replica's life, and at the end of the idle window. */
  peakRssMB: number;
  idleRssMB: number;
  /** From a write's return to the replica seeing it, ms. */
  keyRevocationMs: Quantiles;
  monitorChangeMs: Quantiles;
  /** Changes written, and how many the replica saw. */
  changes: number;
  seenKeys: number;
  seenMonitors: number;
  /** Seconds over which the changes were written (evenly spaced). */
  changeSeconds: number;
}

export interface RegistryReport extends ReportHead {
  config: {
    keys: number;
    monitors: number;
    idleSeconds: number;
    settleSeconds: number;
    changes: number;
    changeSeconds: number;
    keyRefreshMs: number;
    registryRefreshMs: number;
    catchUpMs: number;
  };
  /** Writing the registry: into ClickHouse (before) and PostgreSQL (after), s. */
  setupSeconds: { clickhouse: number; postgres: number };
  database: string;
  before: SideFigures;
  after: SideFigures;
  clean: boolean;
}

/** A reload interval, and the services' default of before when it differs. */
const then = (x: number, was: number, service: string): string =>
  x === was ? `${fmt(x)}, the ${service}'s default then` : `${fmt(x)}; the ${service}'s default then was ${fmt(was)}`;
const q = (x: Quantiles): string => `${ms(x.p50)} / ${ms(x.p99)} / ${ms(x.max)}`;
const mb = (x: number): string => `${fmt(x)} MB`;

/** after / before, as a ratio (0.01x) or, when after is far smaller, "1/N". */
function versus(after: number, before: number): string {
  if (!Number.isFinite(after / before)) return '-';
  if (after === 0) return '0';
  const r = after / before;
  return r < 0.1 ? `1/${fmt(1 / r)}` : ratio(r);
}

function row(f: SideFigures): (string | number)[] {
  return [
    f.design === 'before' ? 'before (ClickHouse, full reloads)' : 'after (PostgreSQL, change feed)',
    `${fmt(f.loadMs / 1000, 2)} s`,
    `${fmt(f.readyMs / 1000, 2)} s`,
    fmt(f.idle.cpuMsPerMinute),
    `${fmt(f.idle.cpuPercent, 2)}%`,
    fmt(f.idle.queriesPerMinute, 1),
    fmt(f.idle.rowsPerMinute),
    mb(f.peakRssMB),
    mb(f.idleRssMB),
    q(f.keyRevocationMs),
    q(f.monitorChangeMs),
  ];
}

export function sideTable(r: RegistryReport): string {
  const [b, a] = [r.before, r.after];
  return table(
    [
      'replica',
      '>start-up load',
      '>spawn to ready',
      '>idle CPU ms per minute',
      '>idle CPU (one core = 100%)',
      '>queries per minute (idle)',
      '>rows read per minute (idle)',
      '>peak RSS',
      '>RSS after the idle minute',
      '>key revocation seen, ms p50 / p99 / max',
      '>monitor change seen, ms p50 / p99 / max',
    ],
    [
      row(b),
      row(a),
      [
        'after / before',
        versus(a.loadMs, b.loadMs),
        versus(a.readyMs, b.readyMs),
        versus(a.idle.cpuMsPerMinute, b.idle.cpuMsPerMinute),
        '',
        versus(a.idle.queriesPerMinute, b.idle.queriesPerMinute),
        versus(a.idle.rowsPerMinute, b.idle.rowsPerMinute),
        versus(a.peakRssMB, b.peakRssMB),
        versus(a.idleRssMB, b.idleRssMB),
        `${versus(a.keyRevocationMs.p50, b.keyRevocationMs.p50)} / ${versus(a.keyRevocationMs.p99, b.keyRevocationMs.p99)}`,
        `${versus(a.monitorChangeMs.p50, b.monitorChangeMs.p50)} / ${versus(a.monitorChangeMs.p99, b.monitorChangeMs.p99)}`,
      ],
    ],
  );
}

function serverCpu(f: SideFigures): string {
  const p = f.idle.cpu.processes;
  const parts = [
    p.clickhouse !== undefined ? `ClickHouse ${fmt(p.clickhouse, 1)}%` : undefined,
    p.postgres !== undefined ? `PostgreSQL ${fmt(p.postgres, 1)}%` : undefined,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'not sampled (servers not started by this command)';
}

/** What the figures say (generated from them, so it stays true when they change). */
export function reading(r: RegistryReport): string[] {
  const [b, a] = [r.before, r.after];
  const c = r.config;
  const out = [
    `**Idle cost per replica**: before, ${fmt(b.idle.queriesPerMinute, 1)} queries a minute returning ` +
      `${fmt(b.idle.rowsPerMinute)} rows and ${fmt(b.idle.cpuMsPerMinute)} ms of CPU a minute ` +
      `(${fmt(b.idle.cpuPercent, 1)}% of a core, for the replica alone, before the server's share); after, ` +
      `${fmt(a.idle.queriesPerMinute, 1)} queries a minute returning ${fmt(a.idle.rowsPerMinute)} rows and ` +
      `${fmt(a.idle.cpuMsPerMinute)} ms of CPU a minute (${fmt(a.idle.cpuPercent, 2)}%). The previous design's cost ` +
      `grows with keys × replicas (each replica reads the whole key table every ${fmt(c.keyRefreshMs)} ms after the ` +
      `previous read ended, ${fmt(60_000 / c.keyRefreshMs)} a minute at most, and every monitor every ` +
      `${fmt(c.registryRefreshMs)} ms, ${fmt(60_000 / c.registryRefreshMs)} a minute, each returning the whole table: ` +
      `${fmt(c.keys)} and ${fmt(c.monitors)} rows); the change feed's is two indexed queries per catch-up ` +
      `(${fmt(c.catchUpMs)} ms: the log's head, then what follows the replica's sequence), ` +
      `${fmt((2 * 60_000) / c.catchUpMs)} a minute returning one row (the head) while nothing changes, whatever the size ` +
      'of the registry.',
    `**Change propagation**: a revoked key was seen after p50 ${ms(b.keyRevocationMs.p50)} / p99 ` +
      `${ms(b.keyRevocationMs.p99)} ms before and p50 ${ms(a.keyRevocationMs.p50)} / p99 ${ms(a.keyRevocationMs.p99)} ms ` +
      `after (max ${ms(a.keyRevocationMs.max)} ms: ${a.keyRevocationMs.max < 1000 ? 'within' : '**not** within'} the ` +
      `issue's 1 s); a changed monitor after p50 ${ms(b.monitorChangeMs.p50)} / p99 ${ms(b.monitorChangeMs.p99)} ms ` +
      `before (the ${fmt(c.registryRefreshMs / 1000)} s reload; the runner of then also took a notice from Kafka for its own changes, not measured ` +
      `here) and p50 ${ms(a.monitorChangeMs.p50)} / p99 ${ms(a.monitorChangeMs.p99)} ms after (NOTIFY, then the ` +
      'changed rows only). ' +
      'Before, a change waits for the next reload to start and then for that reload to end, so its latency is the ' +
      'interval plus the time a full reload takes, and that time grows with the registry and with the load on the ' +
      `machine: in the idle minute the replica completed ${fmt(b.idle.queriesPerMinute, 1)} reloads where its ` +
      `intervals alone allow ${fmt(60_000 / c.keyRefreshMs + 60_000 / c.registryRefreshMs)}. Its one process holds ` +
      'both copies (the gateway of then held the keys alone), so opening every monitor also held up key reloads: the ' +
      'key figures before are pessimistic for a gateway of then, whose revocations took the key interval plus one key reload.',
    `**Start-up**: loading ${fmt(c.keys)} keys and ${fmt(c.monitors)} monitors (every secret opened) took ` +
      `${fmt(b.loadMs / 1000, 2)} s from ClickHouse and ${fmt(a.loadMs / 1000, 2)} s from PostgreSQL; a full load is ` +
      'what the previous design repeated on every refresh, and what the change feed does once (and again only when ' +
      "the change log was pruned past a replica's sequence). Peak RSS: " +
      `${mb(b.peakRssMB)} before, ${mb(a.peakRssMB)} after.`,
  ];
  const other = Math.max(b.idle.cpu.otherPercent, a.idle.cpu.otherPercent);
  if (other > DISTURBED_CPU) {
    out.push(
      `**Processes outside the benchmark used up to ${fmt(other)}% CPU during the idle windows** (more than ` +
        `${DISTURBED_CPU}% counts as disturbed): the machine was shared while this ran; per-process CPU is the ` +
        "replica's own, but its timers and reloads ran slower on a busy machine. Run again on a quiet one.",
    );
  }
  return out;
}

export function notes(r: RegistryReport): string {
  const [b, a] = [r.before, r.after];
  return [
    `Changes: ${fmt(r.config.changes)} key revocations and ${fmt(r.config.changes)} monitor renames per design, ` +
      `evenly spaced over ${fmt(r.config.changeSeconds)} s; seen before ${fmt(b.seenKeys)} + ${fmt(b.seenMonitors)}, ` +
      `after ${fmt(a.seenKeys)} + ${fmt(a.seenMonitors)}.`,
    `Server CPU during the idle windows (% of one core): before ${serverCpu(b)}; after ${serverCpu(a)}. ` +
      `Other CPU (processes outside the benchmark): before ${fmt(b.idle.cpu.otherPercent)}%, after ` +
      `${fmt(a.idle.cpu.otherPercent)}%; the machine ${fmt(b.idle.cpu.machinePercent)}% and ` +
      `${fmt(a.idle.cpu.machinePercent)}% busy of ${fmt(r.machine.nproc * 100)}%.`,
    `Writing the registry: ${fmt(r.setupSeconds.clickhouse, 1)} s into ClickHouse, ${fmt(r.setupSeconds.postgres, 1)} s ` +
      `into PostgreSQL (database \`${r.database}\`).`,
  ].join('\n');
}

export function renderSection(r: RegistryReport): string {
  const c = r.config;
  return markdown([
    ...sectionHead('Registry: the cost of an idle replica, before and after the change feed', r),
    `- Registry: ${fmt(c.keys)} access keys and ${fmt(c.monitors)} HTTP monitors (webhook secret and URL sealed), the same ` +
      'in both stores',
    `- Per design, one replica: start-up, ${fmt(c.settleSeconds)} s to settle, an idle window of ${fmt(c.idleSeconds)} s ` +
      `(nothing written), then ${fmt(c.changes)} key revocations and ${fmt(c.changes)} monitor renames evenly spaced over ` +
      `${fmt(c.changeSeconds)} s; before first, then after, one after the other`,
    '',
    '**Before** is the previous design (`bench/registry/replica-before.ts`): the whole key table read from ClickHouse',
    `(\`ClickHouseKeySource.loadAll\`, \`FINAL\`) and indexed every KEY_REFRESH_MS (${then(c.keyRefreshMs, 2000, 'gateway')}),`,
    'and every monitor read and opened (`LegacyMonitorStore.list`) every REGISTRY_REFRESH_MS',
    `(${then(c.registryRefreshMs, 30_000, 'runner')}), each a \`Snapshot\` as the services had them; the data`,
    'written as it was (keys inserted in bulk with `newKeyRecord` records, `LegacyMonitorStore.saveMany`; a revocation',
    'is a newer row with `revoked = 1`, a change `LegacyMonitorStore.save`). **After** is the new design',
    "(`bench/registry/replica-after.ts`): the gateway's `KeyStore` and the runner's `Mirror` of the monitors on one",
    `\`registryFeed\` (LISTEN/NOTIFY, a catch-up every REGISTRY_CATCH_UP_MS = ${fmt(c.catchUpMs)}), composed as`,
    '`services/ingest-gateway/src/gateway.ts` and `services/check-runner/src/registry.ts` do; the data in PostgreSQL',
    '(`insertKeyRecords` in batches of 5,000, `MonitorStore.saveMany`), changed with `revokeKey` and `MonitorStore.update`.',
    "Both replicas run compiled (`tsc -b`, `.tsout/bench/registry/`) under plain node with the services' production",
    'environment (MALLOC_ARENA_MAX=2, 16 MB semi-spaces).',
    '',
    "Start-up load is the replica's own clock from its first registry query to complete copies; CPU is the replica's",
    "process (user + system, its own `process.cpuUsage()`, finer than /proc's 10 ms ticks) over the idle window;",
    'queries and rows are counted by the replica on its client (every `loadAll`/`list` before; every query of the',
    "`pg` pool after, the feed's LISTEN connection apart);",
    'propagation is from the return of the write (in this command) to the replica seeing the change in its copy',
    "(it stamps the time; both clocks are the machine's). A NOTIFY may reach the replica before the writer has",
    'its COMMIT acknowledged: a minimum slightly below 0 is that, not an error.',
    '',
    sideTable(r),
    '',
    notes(r),
    '',
    ...readingAndCaveats(reading(r), [
      `- One ${r.machine.nproc}-core machine runs the replica, the servers and this command; the servers' side of a`,
      `  full reload (ClickHouse reading and sending ${fmt(c.keys)} rows every ${fmt(c.keyRefreshMs / 1000)} s per replica) is not in`,
      "  the replica's CPU.",
      '- One replica per design: the previous design multiplies its idle cost by the number of gateways, query',
      "  services and runners; the change feed's stays two small queries per replica per catch-up.",
      '- One window per design: run the command again to see the spread.',
    ]),
  ]);
}
