import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMailpit, type Mailpit } from '../tools/devstack/mailpit.js';
import { provision } from '../tools/devstack/provision.js';
import { startStack, type Stack } from '../tools/devstack/stack.js';

let stack: Stack | undefined;
let mailpit: Mailpit | undefined;
let mailpitDir: string | undefined;

/** The stack this run started (fault tests use its controls when it has them). */
export function runStack(): Stack {
  if (!stack) throw new Error('the stack is not started: run the tests with npm test');
  return stack;
}

/**
 * Starts the real Kafka and ClickHouse once for the whole run (see tools/devstack) and
 * gives this run its own database and topics, so runs against shared servers
 * (KAFKA_BROKERS / CLICKHOUSE_URL) do not see each other's data.
 */
export async function mochaGlobalSetup(): Promise<void> {
  const started = Date.now();
  [stack] = await Promise.all([startStack(), startRunMailpit()]);
  const run = randomBytes(4).toString('hex');
  const names = {
    TEST_DATABASE: `test_${run}`,
    TEST_EVENTS_TOPIC: `test.${run}.events`,
    TEST_CHECKS_TOPIC: `test.${run}.checks`,
    TEST_DEAD_LETTER_TOPIC: `test.${run}.dead-letter`,
    TEST_ALERTS_TOPIC: `test.${run}.alerts`,
    TEST_WEBHOOK_DELIVERIES_TOPIC: `test.${run}.webhook-deliveries`,
    TEST_AUDIT_TOPIC: `test.${run}.audit`,
    TEST_MONITOR_CHANGES_TOPIC: `test.${run}.monitor-changes`,
    TEST_SCREENSHOTS_TOPIC: `test.${run}.screenshots`,
    TEST_RUN_REQUESTS_TOPIC: `test.${run}.run-requests`,
    TEST_RUN_REPLIES_TOPIC: `test.${run}.run-replies`,
  };
  const users = await provision(stack, {
    database: names.TEST_DATABASE,
    topics: [
      names.TEST_EVENTS_TOPIC,
      names.TEST_CHECKS_TOPIC,
      names.TEST_DEAD_LETTER_TOPIC,
      names.TEST_ALERTS_TOPIC,
      names.TEST_WEBHOOK_DELIVERIES_TOPIC,
      names.TEST_AUDIT_TOPIC,
      names.TEST_MONITOR_CHANGES_TOPIC,
      names.TEST_SCREENSHOTS_TOPIC,
      names.TEST_RUN_REQUESTS_TOPIC,
      names.TEST_RUN_REPLIES_TOPIC,
    ],
    partitions: 4,
  });
  Object.assign(process.env, names, {
    TEST_KAFKA_BROKERS: stack.kafkaBrokers,
    TEST_CLICKHOUSE_URL: stack.clickhouseUrl,
    // Each service's own ClickHouse user (tools/devstack/users.ts), as JSON.
    TEST_CLICKHOUSE_USERS: JSON.stringify(users),
    TEST_CLICKHOUSE_USERS_DIR: stack.clickhouseUsersDir ?? '',
  });
  process.stderr.write(
    `[stack] ${stack.mode}: kafka ${stack.kafkaBrokers}, clickhouse ${stack.clickhouseUrl}, mailpit ${process.env.MAILPIT_API_URL} (${Date.now() - started} ms)\n`,
  );
}

/**
 * One Mailpit for the run (tools/devstack/mailpit.ts), unless MAILPIT_SMTP_URL and
 * MAILPIT_API_URL name one: tests send through MAILPIT_SMTP_URL (serviceEnv's SMTP_URL) and
 * read what arrived at MAILPIT_API_URL (test/support/mailpit.ts).
 */
async function startRunMailpit(): Promise<void> {
  if (process.env.MAILPIT_SMTP_URL && process.env.MAILPIT_API_URL) return;
  mailpitDir = mkdtempSync(join(tmpdir(), 'telemetry-mailpit-'));
  mailpit = await startMailpit({ logDir: mailpitDir });
  Object.assign(process.env, { MAILPIT_SMTP_URL: mailpit.smtpUrl, MAILPIT_API_URL: mailpit.httpUrl });
}

export async function mochaGlobalTeardown(): Promise<void> {
  await Promise.all([stack?.stop(), mailpit?.stop()]);
  if (mailpitDir) rmSync(mailpitDir, { recursive: true, force: true });
}
