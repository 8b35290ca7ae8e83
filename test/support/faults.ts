import { randomBytes } from 'node:crypto';
import { runStack } from '../global-setup.js';
import { pipelineTopics } from '../../harness/run.js';
import { provision } from '../../tools/devstack/provision.js';
import { startStack, type Stack } from '../../tools/devstack/stack.js';

export interface ControllableStack {
  stack: Stack;
  control: NonNullable<Stack['control']>;
  /** Env overrides that point a service at this stack. */
  env: Record<string, string>;
  /** Stops the stack if this helper started it. */
  release(): Promise<void>;
}

/**
 * Servers a test may stop and start. The run's own stack when the harness started
 * local processes; otherwise (external servers, containers) a dedicated local stack,
 * so fault tests never touch servers they do not own.
 */
export async function controllableStack(): Promise<ControllableStack> {
  const shared = runStack();
  const own = shared.control ? undefined : await startStack({ forceLocal: true });
  const stack = own ?? shared;
  const env: Record<string, string> = { KAFKA_BROKERS: stack.kafkaBrokers, CLICKHOUSE_URL: stack.clickhouseUrl };
  if (own) {
    const run = randomBytes(3).toString('hex');
    // Every topic a service subscribes to (the consumer exits on an unknown one).
    const topics = pipelineTopics(`faults.${run}`);
    Object.assign(env, { CLICKHOUSE_DATABASE: `faults_${run}`, ...topics.env });
    await provision(own, { database: env.CLICKHOUSE_DATABASE!, topics: topics.list, partitions: 4 });
  }
  return { stack, control: stack.control!, env, release: async () => own?.stop() };
}
