/**
 * npm start: the whole stack on this machine.
 *
 * Starts (or uses, see stack.ts) Kafka and ClickHouse, applies migrations, creates the
 * topics, issues a development access key and API key, starts the three services as
 * child processes, publishes a few demo check results, and prints commands to paste.
 * Ctrl-C stops everything in order (services first, then the servers).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Partitioners } from 'kafkajs';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClickHouse, createKafka, createLogger, issueKey } from '@telemetry/runtime';
import { writeLocalEnv } from './local-env.js';
import { provision } from './provision.js';
import { serviceCommand, type ServiceName } from './service-command.js';
import { freePort, startStack } from './stack.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const say = (s: string): boolean => process.stdout.write(`${s}\n`);
const env = process.env;

const database = env.CLICKHOUSE_DATABASE ?? 'telemetry';
const topics = {
  events: env.EVENTS_TOPIC ?? 'telemetry.events',
  checks: env.CHECKS_TOPIC ?? 'monitor.check-results',
  deadLetter: env.DEAD_LETTER_TOPIC ?? 'telemetry.dead-letter',
};

async function portOr(preferred: string | undefined, fallback: number): Promise<number> {
  if (preferred) return Number(preferred);
  const { createServer } = await import('node:net');
  const free = await new Promise<boolean>((resolve) => {
    const s = createServer()
      .once('error', () => resolve(false))
      .listen(fallback, '127.0.0.1', () => s.close(() => resolve(true)));
  });
  return free ? fallback : freePort();
}

async function waitReady(name: string, url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode}; its log is above`);
    try {
      if ((await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) })).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${name} was not ready within 60 s`);
}

async function main(): Promise<void> {
  mkdirSync(join(root, '.stack'), { recursive: true });
  say('starting Kafka and ClickHouse...');
  const stack = await startStack({ dataDir: env.DEVSTACK_DATA_DIR ?? join(root, '.stack', 'data'), keepData: true });
  const children: ChildProcess[] = [];
  let stopping = false;
  const stopAll = async (code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    say('\nstopping services...');
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
          }),
      ),
    );
    say('stopping Kafka and ClickHouse...');
    await stack.stop();
    process.exit(code);
  };
  process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  try {
    const logger = createLogger({ service: 'devstack', level: 'warn' });
    await provision(stack, { database, topics: Object.values(topics), partitions: Number(env.TOPIC_PARTITIONS ?? 6) });
    const admin = createClickHouse({ url: stack.clickhouseUrl, username: 'default', password: '', database });
    const access = await issueKey(admin, database, { kind: 'telemetry', name: 'dev access key' });
    const api = await issueKey(admin, database, { kind: 'api', name: 'dev api key', scopes: ['checks:read'] });
    await admin.close();

    const ports = {
      gateway: await portOr(env.GATEWAY_PORT, 8080),
      consumer: await portOr(env.CONSUMER_PORT, 8081),
      query: await portOr(env.QUERY_PORT, 8082),
    };
    const shared = {
      KAFKA_BROKERS: stack.kafkaBrokers,
      CLICKHOUSE_URL: stack.clickhouseUrl,
      CLICKHOUSE_DATABASE: database,
      EVENTS_TOPIC: topics.events,
      CHECKS_TOPIC: topics.checks,
      DEAD_LETTER_TOPIC: topics.deadLetter,
      HOST: '127.0.0.1',
      MIGRATE_ON_START: 'false',
    };
    writeLocalEnv({
      ...shared,
      GATEWAY_URL: `http://127.0.0.1:${ports.gateway}`,
      QUERY_URL: `http://127.0.0.1:${ports.query}`,
    });
    const services: [string, number, Record<string, string>][] = [
      ['ingest-gateway', ports.gateway, {}],
      ['stream-consumer', ports.consumer, {}],
      [
        'query-service',
        ports.query,
        { CLICKHOUSE_USER: stack.clickhouseReader.user, CLICKHOUSE_PASSWORD: stack.clickhouseReader.password },
      ],
    ];
    for (const [name, port, extra] of services) {
      const [command, args] = serviceCommand(name as ServiceName);
      const child = spawn(command, args, {
        env: { ...env, ...shared, ...extra, PORT: String(port) },
        stdio: ['ignore', 'ignore', 'inherit'],
        // Own process group: a terminal's Ctrl-C reaches only us, and we stop the
        // services one signal each, in order (a second signal would mean "exit now").
        detached: true,
      });
      child.once('exit', (code) => {
        if (!stopping) {
          process.stderr.write(`${name} exited (${code}); stopping\n`);
          void stopAll(1);
        }
      });
      children.push(child);
    }
    await Promise.all(services.map(([name, port], i) => waitReady(name, `http://127.0.0.1:${port}`, children[i]!)));

    // A few demo checks so that the history call below shows something.
    const kafka = createKafka({ brokers: stack.kafkaBrokers.split(','), clientId: 'devstack', logger });
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    const now = Date.now();
    await producer.send({
      topic: topics.checks,
      acks: -1,
      messages: [0, 1, 2].map((i) => ({
        key: 'demo-monitor',
        value: JSON.stringify({
          id: `demo-${now}-${i}`,
          monitor_id: 'demo-monitor',
          status: 'up',
          response_time: 120 + i * 7,
          status_code: 200,
          created_at: new Date(now - (2 - i) * 60_000).toISOString(),
        }),
      })),
    });
    await producer.disconnect();
    // Wait until the demo checks are readable, so the printed command shows them.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await fetch(`http://127.0.0.1:${ports.query}/api/monitors/demo-monitor/checks`, {
        headers: { authorization: `Bearer ${api.key}` },
      }).catch(() => undefined);
      const body = r?.ok ? ((await r.json()) as { data: unknown[] }) : undefined;
      if ((body?.data.length ?? 0) >= 3 || Date.now() > deadline) break;
      await new Promise((res) => setTimeout(res, 200));
    }

    const g = `http://127.0.0.1:${ports.gateway}`;
    const q = `http://127.0.0.1:${ports.query}`;
    say(`
The stack is up (${stack.mode}: Kafka ${stack.kafkaBrokers}, ClickHouse ${stack.clickhouseUrl}).
  ingest gateway   ${g}
  stream consumer  http://127.0.0.1:${ports.consumer}/metrics
  query service    ${q}

Send an event (development access key, shown once):
curl -sS -X POST '${g}/api/telemetry/events' -H 'Content-Type: application/json' -H 'X-Access-Key: ${access.key}' -d '{"events":[{"source":"quickstart","category":"page_view","payload":{"path":"/"}}]}'

Read check history (development API key with checks:read):
curl -sS '${q}/api/monitors/demo-monitor/checks' -H 'Authorization: Bearer ${api.key}'

Query the events in ClickHouse:
curl -sS '${stack.clickhouseUrl}/' --data-binary "SELECT source, category, payload, received_at FROM ${database}.events FINAL ORDER BY received_at DESC LIMIT 5 FORMAT PrettyCompact"

More keys: npm run keys -- create --kind api --name me --scopes checks:read
Press Ctrl-C to stop.`);
  } catch (err) {
    process.stderr.write(`npm start failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await stopAll(1);
  }
}

void main();
