/**
 * The drain stage of `npm run bench:consume`: the whole backlog read into ClickHouse by our
 * consumer (a child process, one configuration at a time, its rows counted every 250 ms,
 * its RSS sampled, its metrics read at the end) and by the anchor, ClickHouse's own Kafka
 * table engine with materialized views into a copy of `events`, measured the same way.
 */
import { sqlIdentifier, type ClickHouseClient } from '@telemetry/platform';
import { metricSum, sleep } from '../../harness/processes.js';
import { fmt } from '../../harness/report.js';
import { cpuMeter, mb, type CpuWindow } from '../../harness/sampler.js';
import { groupState, mergesSettled, scalar, startConsumer, type Context, type Setup } from './context.js';
import { dropStatements, ENGINE_TABLE, queueTableStatement, seedGroup, viewsSetupStatements } from './engine.js';
import { ENGINE_CONSUMERS, ENGINE_MIN_SHARE, ENGINE_QUIET_MS, EVENTS, log, STALL_MS } from './options.js';
import type { DrainFigures, OursDrain } from './report.js';

/**
 * Counts `table` every 250 ms from `start` until it holds `total` rows (EVENTS unless given);
 * the figures of the drain. bench:scale's consumer part measures its drains with it too.
 * With `shortfall`, a count that has reached `minShare` of `total` and not grown for
 * `quietMs` ends the drain at the time its last row was seen, `missingRows` saying how many
 * never came; without it (our consumer) every row is required and a stall is an error.
 */
export async function drain(
  ch: ClickHouseClient,
  table: string,
  start: number,
  what: string,
  cpu: () => CpuWindow,
  alive: () => void,
  total = EVENTS,
  shortfall?: { quietMs: number; minShare: number },
) {
  let firstRowsSeconds = NaN;
  let firstRows = 0;
  let last = -1;
  let lastChange = performance.now();
  let lastChangeSeconds = NaN;
  let lastLog = lastChange;
  const timeline: number[] = [];
  for (;;) {
    const t = performance.now();
    alive();
    const rows = Number(await scalar(ch, `SELECT count() FROM ${table}`));
    const seconds = (performance.now() - start) / 1000;
    if (t - lastLog > 5000) [lastLog] = [t, log(`${what}: ${fmt(rows)} / ${fmt(total)} rows`)];
    while (timeline.length < Math.floor(seconds)) timeline.push(rows);
    if (rows > 0 && Number.isNaN(firstRowsSeconds)) [firstRowsSeconds, firstRows] = [seconds, rows];
    if (rows >= total) {
      timeline.push(rows); // the count at the end (after the whole seconds)
      const steady = seconds - firstRowsSeconds;
      return {
        rows,
        seconds,
        rowsPerSecond: rows / seconds,
        firstRowsSeconds,
        steadyRowsPerSecond: steady > 0 ? (rows - firstRows) / steady : NaN,
        cpu: cpu(),
        timeline,
        missingRows: 0,
      };
    }
    if (rows !== last) [last, lastChange, lastChangeSeconds] = [rows, performance.now(), seconds];
    else if (
      shortfall !== undefined &&
      rows >= shortfall.minShare * total &&
      performance.now() - lastChange > shortfall.quietMs
    ) {
      // Its end is its last row; the quiet wait is not part of the drain.
      const end = lastChangeSeconds;
      timeline.length = Math.min(timeline.length, Math.floor(end));
      timeline.push(rows);
      const steady = end - firstRowsSeconds;
      log(`${what}: stopped at ${fmt(rows)} of ${fmt(total)} rows (none for ${shortfall.quietMs / 1000} s)`);
      return {
        rows,
        seconds: end,
        rowsPerSecond: rows / end,
        firstRowsSeconds,
        steadyRowsPerSecond: steady > 0 ? (rows - firstRows) / steady : NaN,
        cpu: cpu(),
        timeline,
        missingRows: total - rows,
      };
    } else if (performance.now() - lastChange > STALL_MS)
      throw new Error(`${what}: no new rows for ${STALL_MS / 1000} s (${rows} of ${total})`);
    await sleep(Math.max(0, 250 - (performance.now() - t)));
  }
}

/** Drains the whole backlog with our consumer, from a new group, into `s.database`.events. */
export async function drainOurs(ctx: Context, s: Setup): Promise<OursDrain> {
  await mergesSettled(ctx.ch);
  log(`drain: our stream consumer, ${s.label}...`);
  const consumer = await startConsumer(ctx, s, 'drain');
  const start = consumer.spawnedAt;
  const cpu = cpuMeter({ consumer: consumer.pid, ...ctx.pids });
  let readySeconds = NaN;
  void consumer.ready().then(
    () => (readySeconds = (performance.now() - start) / 1000),
    () => undefined,
  );
  const d = await drain(ctx.ch, `${sqlIdentifier(s.database)}.events`, start, s.label, cpu, () => {
    if (!consumer.running) throw new Error(`the consumer exited; see ${consumer.logFile}`);
  });
  const end = performance.now();
  const metrics = await consumer.metrics();
  await sleep(1000); // RSS once drained: a second of idling
  const afterKiB = consumer.rss.sample() ?? NaN;
  await consumer.stop();
  await groupState(ctx.kafka, s.group, 'Empty');
  // Peak RSS per quarter of the drain (first rows to last): a consumer whose memory
  // follows the backlog keeps growing; a bounded one levels off.
  const from = start + d.firstRowsSeconds * 1000;
  const quarter = (end - from) / 4;
  const quarters = [0, 1, 2, 3].map((i) => consumer.rss.peak(from + i * quarter, from + (i + 1) * quarter));
  const events = (name: string): number => metricSum(metrics, name, 'events');
  const inserts = events('consumer_insert_duration_seconds_count');
  const insertSeconds = events('consumer_insert_duration_seconds_sum');
  const o: OursDrain = {
    path: 'ours',
    ...d,
    label: s.label,
    env: s.env,
    readySeconds,
    peakRssMB: mb(consumer.rss.peak(0, end)),
    rssQuartersMB: quarters.map(mb),
    afterDrainRssMB: mb(afterKiB),
    rssBounded: Math.max(quarters[2]!, quarters[3]!) <= 1.2 * Math.max(quarters[0]!, quarters[1]!),
    inserts,
    meanInsertRows: events('consumer_insert_batch_rows_sum') / inserts,
    meanInsertMs: (insertSeconds / inserts) * 1000,
    insertBusyShare: insertSeconds / (d.seconds - d.firstRowsSeconds + insertSeconds / inserts),
    eventLoopLagP99Ms: metricSum(metrics, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    deadLettered: metricSum(metrics, 'consumer_dead_lettered_total'),
  };
  log(
    `${s.label}: ${fmt(o.rows)} rows in ${fmt(o.seconds, 1)} s = ${fmt(o.rowsPerSecond)} rows/s; peak RSS ${o.peakRssMB} MB`,
  );
  return o;
}

/** Drains the same backlog with a Kafka engine table and views into the copy of `events`. */
export async function drainEngine(ctx: Context, database: string, run: string): Promise<DrainFigures> {
  await mergesSettled(ctx.ch);
  log('drain: the ClickHouse Kafka engine...');
  const group = `bench-consume-engine-${run}`;
  await seedGroup(ctx.kafka, group, ctx.topics.topics.events, 'start');
  const drop = async (): Promise<void> => {
    for (const q of dropStatements(database)) await ctx.ch.command({ query: q }).catch(() => undefined);
  };
  ctx.cleanups.push(drop);
  for (const q of viewsSetupStatements(database)) await ctx.ch.command({ query: q });
  const cpu = cpuMeter(ctx.pids);
  const start = performance.now();
  const { kafkaBrokers: brokers } = ctx.stack;
  const topic = ctx.topics.topics.events;
  await ctx.ch.command({
    query: queueTableStatement({ database, brokers, topic, group, consumers: ENGINE_CONSUMERS }),
  });
  const d = await drain(
    ctx.ch,
    `${sqlIdentifier(database)}.${ENGINE_TABLE}`,
    start,
    'engine',
    cpu,
    () => undefined,
    EVENTS,
    { quietMs: ENGINE_QUIET_MS, minShare: ENGINE_MIN_SHARE },
  );
  await drop();
  log(
    `engine: ${fmt(d.rows)} rows in ${fmt(d.seconds, 1)} s = ${fmt(d.rowsPerSecond)} rows/s` +
      (d.missingRows > 0 ? `; ${fmt(d.missingRows)} rows never arrived` : ''),
  );
  return { path: 'engine', ...d };
}
