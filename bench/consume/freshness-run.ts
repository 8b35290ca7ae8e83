/**
 * The freshness stage of `npm run bench:consume`: events sent through the real gateway at
 * a steady rate with our consumer running and no backlog, each timed from the gateway's 200
 * to its first sight in ClickHouse (freshness.ts); when the gateway cannot keep up with the
 * rate, again at a rate it showed it can answer.
 */
import { metricSum, type Child } from '../../harness/processes.js';
import { fmt } from '../../harness/report.js';
import { cpuMeter, mb } from '../../harness/sampler.js';
import { groupState, mergesSettled, startConsumer, type Context, type Setup } from './context.js';
import { seedGroup } from './engine.js';
import { measureFreshness } from './freshness.js';
import { FRESH_BATCH, FRESH_POLL_MS, FRESH_SECONDS, FRESH_WARMUP_SECONDS, log } from './options.js';
import type { FreshnessRun } from './report.js';

/** Events through the gateway at `rate` with our consumer (setup `s`) running, no backlog. */
async function freshnessAttempt(
  ctx: Context,
  s: Setup,
  gateway: Child,
  accessKey: string,
  rate: number,
  tag: string,
): Promise<FreshnessRun> {
  await mergesSettled(ctx.ch);
  // Messages produced since this group last ran (other runs' load) are not its backlog.
  await seedGroup(ctx.kafka, s.group, ctx.topics.topics.events, 'end');
  const perRequest = Math.max(FRESH_BATCH, Math.ceil(rate / 500)); // at most ~500 requests/s
  log(`freshness (${s.label}): ${fmt(rate)} events/s, ${perRequest} per request, ${FRESH_SECONDS} s...`);
  const consumer = await startConsumer(ctx, s, `freshness-${tag}`);
  await consumer.ready();
  await groupState(ctx.kafka, s.group, 'Stable');
  const opts = {
    gatewayUrl: gateway.url,
    accessKey,
    ch: ctx.ch,
    database: s.database,
    ratePerSecond: rate,
    eventsPerRequest: perRequest,
    pollMs: FRESH_POLL_MS,
    maxInFlight: 1024,
    settleMs: 30_000,
  };
  // Warm-up (JIT, connections, the consumer's first fetches), not measured.
  await measureFreshness({ ...opts, source: `warmup-${s.label}-${tag}`, idPrefix: 'w', seconds: FRESH_WARMUP_SECONDS });
  const cpu = cpuMeter({ consumer: consumer.pid, gateway: gateway.pid, ...ctx.pids });
  const from = performance.now();
  const result = await measureFreshness({
    ...opts,
    source: `fresh-${s.label}-${tag}`,
    idPrefix: 'f',
    seconds: FRESH_SECONDS,
  });
  const window = cpu();
  const metrics = await consumer.metrics();
  await consumer.stop();
  await groupState(ctx.kafka, s.group, 'Empty');
  // Over the consumer's life here: warm-up and measured load.
  const inserts = metricSum(metrics, 'consumer_insert_duration_seconds_count', 'events');
  log(
    `freshness (${s.label}): p50 ${fmt(result.freshnessMs.p50)} ms, p99 ${fmt(result.freshnessMs.p99)} ms over ` +
      `${fmt(result.seenEvents)} events${result.gatewayKeptUp ? '' : `; the gateway did not keep up: ${result.overload}`}`,
  );
  return {
    ...result,
    label: s.label,
    env: s.env,
    consumerPeakRssMB: mb(consumer.rss.peak(from)),
    cpu: window,
    inserts,
    meanInsertRows: metricSum(metrics, 'consumer_insert_batch_rows_sum', 'events') / inserts,
  };
}

/**
 * A freshness run at `rate`; while the gateway cannot keep up with the rate on this
 * machine (then the 200s say little about when Kafka took the events), again at a rate it
 * showed it can answer: 80% of what it acknowledged, at most half the rate before; three
 * attempts at most. The last attempt is the figure, the first one is kept for the report.
 */
export async function freshnessRun(
  ctx: Context,
  s: Setup,
  gateway: Child,
  key: string,
  rate: number,
  run: string,
): Promise<FreshnessRun> {
  let attempt = await freshnessAttempt(ctx, s, gateway, key, rate, `${run}-1`);
  const first = attempt;
  for (let n = 2; n <= 3 && !attempt.gatewayKeptUp; n++) {
    const lower = Math.max(
      500,
      Math.round(Math.min(attempt.offeredEventsPerSecond / 2, 0.8 * attempt.achievedEventsPerSecond)),
    );
    log(
      `freshness (${s.label}): the gateway did not keep up at ${fmt(attempt.offeredEventsPerSecond)} events/s; again at ${fmt(lower)}`,
    );
    attempt = await freshnessAttempt(ctx, s, gateway, key, lower, `${run}-${n}`);
  }
  return attempt === first ? first : { ...attempt, overloadedAttempt: first };
}
