/**
 * The targets of `npm run bench:query`, judged from its figures: the first page's p99 at
 * the fixed rate (paced, and autocannon's own), per scenario the service's throughput and
 * p99 against ClickHouse direct (the anchor), the hot tail's memory, and every answer 200
 * with the expected rows.
 */
import { ms } from '../../harness/report.js';
import type { DataSpec } from './data.js';
import { cfg, SUMMARY_DAY_GOAL, TARGET_P99_MS, TARGET_P99_RATIO, throughputGoal } from './options.js';
import { failureCount, type Failures, type RateSummary, type ScenarioSummary, type Target } from './report.js';
import type { TailFigures } from './tail.js';

export function judge(o: {
  spec: DataSpec;
  rate: RateSummary[];
  summaries: ScenarioSummary[];
  tail: TailFigures;
  tailMaxMonitors: number;
  failures: Failures;
}): Target[] {
  const { spec, rate, summaries, tail, failures } = o;
  const pacedService = rate.find((x) => x.method === 'paced' && x.side === 'service')!;
  const acService = rate.find((x) => x.method === 'autocannon' && x.side === 'service')!;
  return [
    {
      name: `first page p99 at ${cfg.rate} req/s, service (paced open loop)`,
      goal: `<= ${TARGET_P99_MS} ms`,
      measured: `${ms(pacedService.latency.p99)} ms (${Math.round(pacedService.achievedRps)} req/s answered${pacedService.failures.dropped ? `, ${pacedService.failures.dropped} not sent` : ''})`,
      met: pacedService.latency.p99 <= TARGET_P99_MS && pacedService.achievedRps >= cfg.rate * 0.98,
    },
    {
      name: `first page p99 at ${cfg.rate} req/s, service (autocannon overallRate, its own p99)`,
      goal: `<= ${TARGET_P99_MS} ms`,
      measured: `${acService.reported?.p99 ?? NaN} ms (raw response times: ${ms(acService.latency.p99)} ms; ${Math.round(acService.achievedRps)} req/s answered)`,
      met: (acService.reported?.p99 ?? Infinity) <= TARGET_P99_MS,
    },
    ...summaries.flatMap((s): Target[] => [
      {
        name: s.key === 'summary_day' ? SUMMARY_DAY_GOAL : `${s.key}: service / direct throughput`,
        goal: s.key === 'summary_day' ? `>= ${throughputGoal(s.key).toFixed(1)}x` : `>= ${throughputGoal(s.key)}x`,
        measured: `${s.throughputRatio.toFixed(2)}x (${Math.round(s.service.rps)} / ${Math.round(s.direct.rps)} req/s)`,
        met: s.throughputRatio >= throughputGoal(s.key),
      },
      {
        name: `${s.key}: service / direct p99`,
        goal: `<= ${TARGET_P99_RATIO}x`,
        measured: `${s.p99Ratio.toFixed(2)}x (${ms(s.service.latency.p99)} / ${ms(s.direct.latency.p99)} ms)`,
        met: s.p99Ratio <= TARGET_P99_RATIO,
      },
    ]),
    {
      name: `hot tail memory, ${spec.monitors.toLocaleString('en-US')} monitors warm`,
      goal: 'reported',
      measured: `${tail.heapAfterMiB - tail.heapBeforeMiB} MiB heap for ${tail.checks.toLocaleString('en-US')} checks of ${tail.monitors.toLocaleString('en-US')} monitors (${tail.mibPerThousandMonitors} MiB per 1,000 monitors)`,
      met: tail.monitors === Math.min(spec.monitors, o.tailMaxMonitors),
    },
    {
      name: 'every answer 200 with the expected rows',
      goal: '0 failed',
      measured: `${failureCount(failures)} failed (${failures.non2xx} non-2xx, ${failures.badBody} wrong rows, ${failures.errors} errors)`,
      met: failureCount(failures) === 0,
    },
  ];
}
