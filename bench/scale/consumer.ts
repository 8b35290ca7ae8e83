/**
 * The consumer part of `npm run bench:scale`: how the stream consumer's drain grows with
 * its processes, 1 and 2 in the same consumer group, over the same cold backlog.
 *
 * bench:consume's backlog (bench/consume/backlog.ts: event messages in the gateway's
 * format, produced straight into a 6-partition topic before any consumer runs), then per
 * point and round a fresh database (same migrations: the consumer's first-seen look-ups
 * must not find the previous drain's events) and a new consumer group; the point's
 * processes (`services/stream-consumer/dist/main.js`, service defaults) spawned together,
 * and bench:consume's drain measurement (bench/consume/drain.ts: `SELECT count()` every
 * 250 ms from the spawn until every row is visible). Afterwards every event id must be
 * there; copies (a partition handed over in the group's rebalance before its offsets were
 * committed) are counted. Rounds alternate the points' order.
 *
 * Settings: BENCH_SCALE_CONSUMER_PROCESSES (1,2), BENCH_SCALE_CONSUMER_EVENTS (500000),
 * BENCH_SCALE_CONSUMER_ROUNDS (2). Smoke: 2,000 events, 1 round.
 */
import { randomBytes } from 'node:crypto';
import { createKafka, createLogger, sqlIdentifier } from '@telemetry/platform';
import { migrate } from '@telemetry/store';
import { metricSum, until, type Child } from '../../harness/processes.js';
import { fmt, median } from '../../harness/report.js';
import { envNumber, pipelineTopics } from '../../harness/run.js';
import { cpuMeter, DISTURBED_CPU, mb } from '../../harness/sampler.js';
import { provision } from '../../tools/devstack/provision.js';
import { adminClickHouse, topicMessages } from '../common/stack.js';
import { produceBacklog } from '../consume/backlog.js';
import { mergesSettled, scalar, startConsumer, type Context } from '../consume/context.js';
import { drain } from '../consume/drain.js';
import type { Curve, CurvePart, CurvePoint, ScaleContext } from './curve.js';
import { countList, roundOrder } from './levels.js';

const PARTITIONS = 6;

interface Drain {
  processes: number;
  round: number;
  rows: number;
  distinct: number;
  seconds: number;
  rowsPerSecond: number;
  steadyRowsPerSecond: number;
  firstRowsSeconds: number;
  /** All the point's consumers together, % of one core. */
  cpuPercent: number;
  cpuMicrosPerRow: number;
  /** Per process. */
  peakRssMB: number[];
  deadLettered: number;
  otherCpuPercent: number;
}

export const consumerCurve: CurvePart = async (ctx: ScaleContext): Promise<Curve> => {
  const levels = countList('BENCH_SCALE_CONSUMER_PROCESSES', [1, 2]);
  const events = envNumber('BENCH_SCALE_CONSUMER_EVENTS', 500_000, 1000, true, 2000);
  const rounds = envNumber('BENCH_SCALE_CONSUMER_ROUNDS', 2, 1, true, 1);
  const { stack, pids } = ctx.bench;
  const log = (line: string): void => ctx.log(`consumer: ${line}`);
  const started = performance.now();

  const run = randomBytes(4).toString('hex');
  const base = `scale_${run}_c`;
  const quiet = createLogger({ service: 'bench-scale', level: 'warn', stream: process.stderr });
  // Every topic the consumer subscribes to must exist, or it exits at start.
  const topics = pipelineTopics(base);
  await provision(stack, { database: base, topics: topics.list, partitions: PARTITIONS, logger: quiet });
  const ch = adminClickHouse(ctx.cleanups, stack, base, 300_000);
  const kafka = createKafka({ brokers: stack.kafkaBrokers.split(','), clientId: 'bench-scale', logger: quiet });
  const cctx: Context = { stack, ch, kafka, topics, logDir: ctx.logDir, pids, cleanups: ctx.cleanups };

  log(`producing a backlog of ${fmt(events)} event messages...`);
  const backlog = await produceBacklog(kafka, topics.topics.events, randomBytes(8).toString('hex'), events, {
    batchSize: 6000,
    parallel: 4,
    log,
  });
  const inTopic = await topicMessages(kafka, topics.topics.events);
  if (inTopic !== events) throw new Error(`the topic holds ${inTopic} messages, not ${events}`);
  log(`backlog produced in ${fmt(backlog.seconds, 1)} s, ${fmt(backlog.bytes / events)} B per message`);

  const measure = async (processes: number, round: number): Promise<Drain> => {
    const label = `${processes}p-r${round}`;
    const database = `${base}_${label.replace('-', '_')}`;
    const t0 = performance.now();
    await migrate(ch, database, quiet);
    await mergesSettled(ch);
    const setupSeconds = (performance.now() - t0) / 1000;
    const setup = { label, database, group: `scale-${run}-${label}`, env: {} };
    const consumers: Child[] = [];
    for (let i = 0; i < processes; i++) consumers.push(await startConsumer(cctx, setup, `p${i}`));
    const start = Math.min(...consumers.map((c) => c.spawnedAt));
    const cpu = cpuMeter({ ...Object.fromEntries(consumers.map((c, i) => [`consumer${i}`, c.pid])), ...pids });
    const table = `${sqlIdentifier(database)}.events`;
    const d = await drain(
      ch,
      table,
      start,
      `${processes} consumer(s), round ${round}`,
      cpu,
      () => {
        for (const c of consumers) if (!c.running) throw new Error(`a consumer exited; see ${c.logFile}`);
      },
      events,
    );
    const end = performance.now();
    // Copies count towards count(): the drain ends when every event id is there (later, when copies made up the count).
    const distinctNow = async (): Promise<number> =>
      Number(await scalar(ch, `SELECT uniqExact(event_id) FROM ${table}`));
    let distinct = await distinctNow();
    let seconds = d.seconds;
    if (distinct < events) {
      await until(
        `every event id of the backlog in ${database}.events`,
        async () => ((distinct = await distinctNow()) >= events ? true : undefined),
        120_000,
        250,
      );
      seconds = (performance.now() - start) / 1000;
    }
    const deadLettered = (await Promise.all(consumers.map((c) => c.metrics()))).reduce(
      (a, text) => a + metricSum(text, 'consumer_dead_lettered_total'),
      0,
    );
    const rows = Number(await scalar(ch, `SELECT count() FROM ${table}`));
    // NOTE: no wait for the group to empty: each drain has a group of its own, and with two
    // members one may linger until its session times out (30 s) after a clean stop.
    await Promise.all(consumers.map((c) => c.stop()));
    log(`${label}: database ready in ${fmt(setupSeconds, 1)} s`);
    const cpuPercent = consumers.reduce((a, _c, i) => a + (d.cpu.processes[`consumer${i}`] ?? 0), 0);
    const x: Drain = {
      processes,
      round,
      rows,
      distinct,
      seconds,
      rowsPerSecond: events / seconds,
      steadyRowsPerSecond: d.steadyRowsPerSecond,
      firstRowsSeconds: d.firstRowsSeconds,
      cpuPercent,
      cpuMicrosPerRow: ((cpuPercent / 100) * d.cpu.seconds * 1e6) / events,
      peakRssMB: consumers.map((c) => mb(c.rss.peak(0, end))),
      deadLettered,
      otherCpuPercent: d.cpu.otherPercent,
    };
    log(
      `${processes} process(es), round ${round}: ${fmt(events)} events in ${fmt(seconds, 1)} s = ` +
        `${fmt(x.rowsPerSecond)} rows/s (steady ${fmt(x.steadyRowsPerSecond)}), consumers ${fmt(cpuPercent)}% ` +
        `(${fmt(x.cpuMicrosPerRow, 1)} µs/row), other ${fmt(x.otherCpuPercent)}%, peak RSS ` +
        `${x.peakRssMB.join(' / ')} MB, ${fmt(rows - events)} copies, ${deadLettered} dead-lettered`,
    );
    return x;
  };

  const drains: Drain[] = [];
  for (let round = 1; round <= rounds; round++)
    for (const n of roundOrder(levels, round)) drains.push(await measure(n, round));

  const points: CurvePoint[] = levels.map((n) => {
    const ds = drains.filter((d) => d.processes === n);
    const med = (f: (d: Drain) => number): number => median(ds.map(f));
    const disturbed = ds.filter((d) => d.otherCpuPercent > DISTURBED_CPU).length;
    return {
      x: n,
      values: {
        rowsPerSecond: med((d) => d.rowsPerSecond),
        steadyRowsPerSecond: med((d) => d.steadyRowsPerSecond),
        cpuMicrosPerRow: med((d) => d.cpuMicrosPerRow),
        peakRssMB: Math.max(...ds.flatMap((d) => d.peakRssMB)),
        totalPeakRssMB: Math.max(...ds.map((d) => d.peakRssMB.reduce((a, b) => a + b, 0))),
        cpuPercent: med((d) => d.cpuPercent),
        firstRowsSeconds: med((d) => d.firstRowsSeconds),
        copies: Math.max(...ds.map((d) => d.rows - events)),
        deadLettered: Math.max(...ds.map((d) => d.deadLettered)),
        otherCpuPercent: Math.max(...ds.map((d) => d.otherCpuPercent)),
      },
      ...(disturbed > 0
        ? { note: `${disturbed} of ${ds.length} drains disturbed (other CPU > ${DISTURBED_CPU}%)` }
        : {}),
    };
  });
  log(`done in ${fmt((performance.now() - started) / 1000)} s`);
  const rss = (n: number): string =>
    drains
      .filter((d) => d.processes === n)
      .map((d) => d.peakRssMB.join(' + '))
      .join(', ');
  return {
    id: 'consumer-processes',
    title: 'Stream consumer drain by processes in one group',
    xLabel: 'consumer processes in one group',
    series: [
      { key: 'rowsPerSecond', label: 'rows/s, spawn to last row', unit: 'rows/s' },
      { key: 'steadyRowsPerSecond', label: 'steady rows/s', unit: 'rows/s' },
      { key: 'cpuMicrosPerRow', label: 'consumers CPU per row', unit: 'µs per row' },
      { key: 'peakRssMB', label: 'peak per process', unit: 'MB RSS' },
      { key: 'totalPeakRssMB', label: 'all processes', unit: 'MB RSS' },
      { key: 'cpuPercent', label: 'consumers CPU', unit: '% of a core', chart: false },
      { key: 'firstRowsSeconds', label: 'first rows after', unit: 's', chart: false },
      { key: 'copies', label: 'rows stored twice (max)', unit: 'rows', chart: false },
      { key: 'deadLettered', label: 'dead-lettered', unit: 'messages', chart: false },
      { key: 'otherCpuPercent', label: 'other CPU (max)', unit: '% of a core', chart: false },
    ],
    points,
    notes: [
      `Backlog: ${fmt(events)} event messages (bench:consume's, in the gateway's format, ` +
        `${fmt(backlog.bytes / events)} B each on average) in one ${PARTITIONS}-partition topic, produced before ` +
        `any consumer ran; every drain reads all of it from the start, in a new consumer group, into a fresh ` +
        `database of its own.`,
      `Consumers: \`services/stream-consumer/dist/main.js\`, service defaults, LOG_LEVEL=warn, spawned together ` +
        `(the second joins the group and takes half the partitions in a rebalance). rows/s = backlog / seconds ` +
        `from the spawn until every row is visible (\`SELECT count()\` every 250 ms, bench:consume's drain), so ` +
        `start-up and the rebalance are in it; "steady" runs from the first visible rows.`,
      `CPU per row = the consumers' CPU together (user + system, /proc, start-up included) / rows; peak RSS is ` +
        `VmRSS sampled every 100 ms per process (per drain: ${levels.map((n) => `${n}: ${rss(n)} MB`).join('; ')}).`,
      `${rounds} round(s), the points taking turns (ascending, then descending); figures are medians of the ` +
        `rounds, RSS and copies the highest. Every drain stored every event id; "rows stored twice" counts ` +
        `copies (a partition handed over before its offsets were committed).`,
      `ClickHouse and Kafka run on the same 2 cores: 2 processes add a core of consumer work at most, and take ` +
        `it from ClickHouse's inserts and Kafka's fetches.`,
    ],
    otherCpuPercent: Math.max(...drains.map((d) => d.otherCpuPercent)),
  };
};
