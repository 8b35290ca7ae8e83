/**
 * What the benchmarks repeat around the stack (tools/devstack via harness/run.ts): the
 * context their measurements share (the stack, the processes the CPU meter samples, where
 * child logs go, the clean-ups), an administrative ClickHouse client closed with the run,
 * a service or helper process started with the run and closed with it, and how many
 * messages a topic holds.
 */
import type { Kafka } from 'kafkajs';
import { createClickHouse, type ClickHouseClient } from '@telemetry/platform';
import type { Stack } from '../../tools/devstack/stack.js';
import { Child, type ChildOptions } from '../../harness/processes.js';
import type { Cleanups } from '../../harness/run.js';

/** What a benchmark's measurements need from its run. */
export interface BenchContext {
  stack: Stack;
  /** The Kafka JVM and ClickHouse when they are our children (local mode), for the CPU meter. */
  pids: { kafka?: number; clickhouse?: number };
  /** Where the child processes' logs go. */
  logDir: string;
  cleanups: Cleanups;
}

/** A ClickHouse client as the server's default user on `database`, closed by the run's clean-ups. */
export function adminClickHouse(
  cleanups: Cleanups,
  stack: Pick<Stack, 'clickhouseUrl'>,
  database = 'default',
  requestTimeoutMs?: number,
): ClickHouseClient {
  const ch = createClickHouse({
    url: stack.clickhouseUrl,
    username: 'default',
    password: '',
    database,
    ...(requestTimeoutMs === undefined ? {} : { requestTimeoutMs }),
  });
  cleanups.push(() => ch.close());
  return ch;
}

/** Starts a process, closed (`closeMs` to stop) by the run's clean-ups; resolves once it is ready. */
export async function startChild(
  cleanups: Cleanups,
  o: ChildOptions,
  t: { readyMs?: number; closeMs?: number } = {},
): Promise<Child> {
  const child = new Child(o);
  cleanups.push(() => child.close(t.closeMs));
  await child.start().ready(t.readyMs);
  return child;
}

/** Messages a topic holds: the sum over its partitions of high - low watermark. */
export async function topicMessages(kafka: Kafka, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
  } finally {
    await admin.disconnect();
  }
}
