/**
 * What the stages of `npm run bench:consume` share: the run's context (its stack, ClickHouse
 * and Kafka clients, topics), a configuration of our consumer and its process, and the
 * waits between stages (ClickHouse merges settled, the consumer group joined or empty).
 */
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import type { ClickHouseClient } from '@telemetry/platform';
import { Child, freePort, serviceCommand, until } from '../../harness/processes.js';
import { pipelineTopics, serviceEnv } from '../../harness/run.js';
import type { BenchContext } from '../common/stack.js';
import { log, PROFILE } from './options.js';

/** One configuration of our consumer: its own database (same migrations) and consumer group. */
export interface Setup {
  label: string;
  database: string;
  group: string;
  env: Record<string, string>;
}

export interface Context extends BenchContext {
  ch: ClickHouseClient;
  kafka: Kafka;
  topics: ReturnType<typeof pipelineTopics>;
}

export async function scalar(ch: ClickHouseClient, query: string): Promise<string> {
  return (await (await ch.query({ query, format: 'TabSeparated' })).text()).trim();
}

/** Waits until ClickHouse runs no merge (so one run does not pay for the previous one's parts). */
export async function mergesSettled(ch: ClickHouseClient): Promise<void> {
  await until(
    'ClickHouse merges to settle',
    async () => (Number(await scalar(ch, 'SELECT count() FROM system.merges')) === 0 ? true : undefined),
    120_000,
    500,
  ).catch(() => log('merges still running after 120 s; going on'));
}

/** Waits until the consumer group is in `state` (with members, for Stable). */
export async function groupState(kafka: Kafka, group: string, state: 'Stable' | 'Empty'): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await until(
      `consumer group ${group} ${state}`,
      async () => {
        const g = (await admin.describeGroups([group])).groups[0];
        return g?.state === state && (state === 'Empty' || g.members.length > 0) ? true : undefined;
      },
      60_000,
      200,
    );
  } finally {
    await admin.disconnect();
  }
}

/** Spawns our consumer (compiled) with setup `s`; `phase` names its log (and a profiled drain). */
export async function startConsumer(ctx: Context, s: Setup, phase: string): Promise<Child> {
  const port = await freePort();
  const c = new Child({
    name: `stream-consumer (${s.label})`,
    command: serviceCommand('stream-consumer', true),
    nodeArgs: PROFILE && phase === 'drain' ? ['--cpu-prof', `--cpu-prof-dir=${ctx.logDir}`] : [],
    env: serviceEnv(ctx.stack, s.database, port, { ...ctx.topics.env, CONSUMER_GROUP_ID: s.group, ...s.env }),
    url: `http://127.0.0.1:${port}`,
    logFile: join(ctx.logDir, `consumer-${s.label}-${phase}.log`),
  });
  ctx.cleanups.push(() => c.close());
  return c.start();
}
