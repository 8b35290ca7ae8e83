/**
 * The two sides of `npm run bench:runner` at one level: our check runner (compiled, one
 * process, ready once it owns every partition of the monitor-changes topic) and the
 * baseline (baseline.ts), each spawned, measured, stopped, and checked against what Kafka
 * holds.
 */
import { join } from 'node:path';
import {
  Child,
  fetchJson,
  freePort,
  metricSum,
  scriptCommand,
  serviceCommand,
  until,
} from '../../harness/processes.js';
import { pipelineTopics, serviceEnv } from '../../harness/run.js';
import { topicMessages } from '../common/stack.js';
import { measure, type Context, type Subject } from './measure.js';
import { PARTITIONS } from './options.js';
import type { KafkaCheck, SideFigures } from './report.js';

export interface LevelSetup {
  database: string;
  group: string;
  topics: ReturnType<typeof pipelineTopics>;
  baselineChecks: string;
  monitorsFile: string;
  /** The runner's ClickHouse variables (its own user, tools/devstack/users.ts). */
  storeEnv: Record<string, string>;
}

/** Spawns one side, measures it, stops it, and checks that Kafka holds what it counted as acknowledged. */
export async function runSide(
  ctx: Context,
  monitors: number,
  spawn: (port: number) => Subject,
): Promise<[SideFigures, KafkaCheck]> {
  const s = spawn(await freePort());
  ctx.cleanups.push(() => s.proc.close());
  try {
    await s.proc.start().ready(60_000);
    await s.ready();
    const figures = await measure(ctx, s, monitors, s.proc.spawnedAt);
    const { acked } = await s.counters();
    await s.proc.stop();
    const messages = await topicMessages(ctx.kafka, s.topic);
    return [figures, { side: s.side, topic: s.topic, messages, acked, ok: messages >= acked }];
  } finally {
    await s.proc.stop();
  }
}

export function spawnRunner(ctx: Context, l: LevelSetup, monitors: number, port: number): Subject {
  const runner = new Child({
    name: 'check-runner',
    command: serviceCommand('check-runner', true),
    env: serviceEnv(ctx.stack, l.database, port, {
      ...l.topics.env,
      ...l.storeEnv,
      // The benchmark's target listens on loopback.
      EGRESS_ALLOW: '127.0.0.1/32',
      RUNNER_GROUP_ID: l.group,
      WEBHOOK_GROUP_ID: `${l.group}-webhooks`,
      RUNNER_ID: `bench-${monitors}`,
    }),
    url: `http://127.0.0.1:${port}`,
    logFile: join(ctx.logDir, `runner-${monitors}.log`),
  });
  const checks = `topic="${l.topics.topics.checks}"`;
  return {
    side: 'runner',
    proc: runner,
    topic: l.topics.topics.checks,
    ready: async () => {
      let owned = 0;
      await until(
        () => `the runner to own all ${PARTITIONS} partitions (${owned}); see ${runner.logFile}`,
        async () =>
          (owned = metricSum(await runner.metrics(), 'runner_owned_partitions')) === PARTITIONS ? true : undefined,
        60_000,
        200,
      );
    },
    counters: async () => {
      const m = await runner.metrics();
      const published = metricSum(m, 'runner_checks_total');
      return {
        published,
        notUp: published - metricSum(m, 'runner_checks_total', 'status="up"'),
        kafkaFailed: metricSum(m, 'kafka_produced_messages_total', [checks, 'result="failed"']),
        acked: metricSum(m, 'kafka_produced_messages_total', [checks, 'result="acked"']),
        metrics: m,
      };
    },
  };
}

/** GET /stats of bench/runner/baseline.ts. */
interface BaselineStats {
  checks: number;
  down: number;
  produced: number;
  failed: number;
  httpErrors: number;
}

export function spawnBaseline(ctx: Context, l: LevelSetup, monitors: number, port: number): Subject {
  const baseline = new Child({
    name: 'baseline',
    command: scriptCommand('bench/runner/baseline.ts', true),
    url: `http://127.0.0.1:${port}`,
    logFile: join(ctx.logDir, `baseline-${monitors}.log`),
    env: serviceEnv(ctx.stack, l.database, port, { CHECKS_TOPIC: l.baselineChecks, MONITORS_FILE: l.monitorsFile }),
  });
  return {
    side: 'baseline',
    proc: baseline,
    topic: l.baselineChecks,
    ready: () => Promise.resolve(),
    counters: async () => {
      const s = await fetchJson<BaselineStats>(`${baseline.url}/stats`, 'GET', 5000);
      return { published: s.produced, notUp: s.down, kafkaFailed: s.failed, acked: s.produced };
    },
  };
}
