/**
 * The targets of `npm run bench:consume`, judged from its figures: per configuration of
 * our consumer, the drain rate against the anchor (ClickHouse's Kafka engine), freshness,
 * memory bounded and under its cap; then the cheaper Kafka client, and the same rows on
 * both paths.
 */
import { fmt } from '../../harness/report.js';
import { ENGINE_QUIET_MS, EVENTS, MAX_RSS_MB } from './options.js';
import {
  envText,
  type ConsumeReport,
  type DrainFigures,
  type FreshnessRun,
  type OursDrain,
  type TargetCheck,
} from './report.js';

/** The figures the targets are judged on. */
export interface Judged {
  ours: OursDrain;
  oursCompare: OursDrain | undefined;
  engine: DrainFigures;
  freshness: FreshnessRun;
  freshnessCompare: FreshnessRun | undefined;
  clients: ConsumeReport['clients'];
  check: ConsumeReport['check'];
}

export function judge({
  ours,
  oursCompare,
  engine,
  freshness,
  freshnessCompare,
  clients,
  check,
}: Judged): TargetCheck[] {
  const targets: TargetCheck[] = [];
  for (const [o, f] of [
    [ours, freshness],
    [oursCompare, freshnessCompare],
  ] as const) {
    if (!o || !f) continue;
    const r = o.rowsPerSecond / engine.rowsPerSecond;
    const config = envText(o.env);
    targets.push(
      {
        config,
        name: 'drain rate, ours / Kafka engine',
        goal: '>= 1.0x, never below 0.7x',
        value: `${fmt(r, 2)}x (${fmt(o.rowsPerSecond)} vs ${fmt(engine.rowsPerSecond)} rows/s)`,
        met: r >= 1,
        ...(r < 1 && r >= 0.7 ? { note: 'floor only (>= 0.7x)' } : {}),
      },
      {
        config,
        name: 'freshness p99, gateway 200 -> visible',
        goal: '<= 1,000 ms',
        value: `${fmt(f.freshnessMs.p99)} ms (p50 ${fmt(f.freshnessMs.p50)} ms) at ${fmt(f.offeredEventsPerSecond)} events/s`,
        met: f.gatewayKeptUp && f.freshnessMs.p99 <= 1000 && f.missingEvents === 0,
        ...(!f.gatewayKeptUp ? { note: `not measured: the gateway did not keep up (${f.overload})` } : {}),
      },
      {
        config,
        name: 'consumer memory bounded',
        goal: 'RSS levels off (2nd half of the drain <= 1.2x the 1st)',
        value: `peak ${fmt(o.peakRssMB)} MB; per quarter ${o.rssQuartersMB.map((q) => fmt(q)).join(' / ')} MB`,
        met: o.rssBounded,
      },
      {
        config,
        name: `consumer memory draining ${fmt(EVENTS)} messages`,
        goal: `peak RSS <= ${MAX_RSS_MB} MB`,
        value: `${fmt(o.peakRssMB)} MB`,
        met: o.peakRssMB <= MAX_RSS_MB,
        ...(o.peakRssMB > MAX_RSS_MB ? { note: `${fmt(o.peakRssMB - MAX_RSS_MB)} MB over` } : {}),
      },
    );
  }
  const cheaper = clients.cpuRatio <= 1 ? 'kafkajs' : 'platformatic';
  targets.push({
    config: 'Kafka clients, reading only',
    name: 'the consumer reads with the cheaper client',
    goal: 'the library with less CPU per message read',
    value:
      `kafkajs ${fmt(clients.kafkajs.cpuMicrosPerMessage, 2)} µs, @platformatic/kafka ` +
      `${fmt(clients.platformatic.cpuMicrosPerMessage, 2)} µs per message (${fmt(clients.cpuRatio, 2)}x)`,
    met: cheaper === clients.consumerLibrary,
    ...(cheaper !== clients.consumerLibrary ? { note: `${cheaper} reads for less` } : {}),
  });
  targets.push({
    config: 'both paths',
    name: 'same rows',
    goal: `${fmt(EVENTS)} rows each, identical content`,
    value: `${fmt(check.oursRows)} / ${fmt(check.engineRows)} rows, checksums ${check.identical ? 'equal' : 'differ'}`,
    met: check.identical,
    ...(engine.missingRows > 0
      ? {
          note:
            `the Kafka engine stopped ${fmt(engine.missingRows)} rows short (no new row for ${ENGINE_QUIET_MS / 1000} s); ` +
            `ours ${check.oursComplete ? 'holds every row' : '**is incomplete too**'}`,
        }
      : {}),
  });
  return targets;
}
