import { randomBytes } from 'node:crypto';
/**
 * npm start: the whole stack on this machine.
 *
 * Starts (or uses, see stack.ts) Kafka and ClickHouse, and Mailpit (mailpit.ts: all mail
 * the services send arrives there, unless SMTP_URL names a server), applies migrations, creates the
 * topics, issues a development access key and API key, makes a development owner
 * (owner@example.test, its password kept in .stack/dev-owner-password), starts the four services as
 * child processes, registers a demo monitor (the gateway's own health), waits for its
 * first check, and prints commands to paste.
 * Ctrl-C stops everything in order (services first, then the servers).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger, createPostgres, newSealingKeyText, type PgPool } from '@telemetry/platform';
import { createTenant, ensureOwner, issueKey, listTenants } from '@telemetry/store';
import { writeLocalEnv } from './local-env.js';
import { serviceCommand, type ServiceName } from './commands.js';
import { portOr } from './ports.js';
import { startMailpit, type Mailpit } from './mailpit.js';
import { ManagedProcess } from './process.js';
import { provision, topicEnv } from './provision.js';
import { sdkLines } from './sdk-lines.js';
import { storeEnv } from './users.js';
import { startStack } from './stack.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const say = (s: string): boolean => process.stdout.write(`${s}\n`);
const env = process.env;

const database = env.CLICKHOUSE_DATABASE ?? 'telemetry';
const topics = {
  events: env.EVENTS_TOPIC ?? 'telemetry.events',
  checks: env.CHECKS_TOPIC ?? 'monitor.check-results',
  deadLetter: env.DEAD_LETTER_TOPIC ?? 'telemetry.dead-letter',
  alerts: env.ALERTS_TOPIC ?? 'monitor.alerts',
  webhookDeliveries: env.WEBHOOK_DELIVERIES_TOPIC ?? 'monitor.webhook-deliveries',
  audit: env.AUDIT_TOPIC ?? 'telemetry.audit',
  monitorChanges: env.MONITOR_CHANGES_TOPIC ?? 'monitor.changes',
  screenshots: env.SCREENSHOTS_TOPIC ?? 'monitor.screenshots',
  runRequests: env.RUN_REQUESTS_TOPIC ?? 'monitor.run-requests',
  runReplies: env.RUN_REPLIES_TOPIC ?? 'monitor.run-replies',
};
const DEMO_MONITOR = 'demo: ingest gateway health';

async function main(): Promise<void> {
  mkdirSync(join(root, '.stack'), { recursive: true });
  say('starting Kafka, ClickHouse, PostgreSQL and Mailpit...');
  const [stack, mailpit] = await Promise.all([
    startStack({ dataDir: env.DEVSTACK_DATA_DIR ?? join(root, '.stack', 'data'), keepData: true }),
    devMailpit(),
  ]);
  // The services' mail: SMTP_URL when set, else Mailpit (read it in its web UI).
  const mail = { SMTP_URL: env.SMTP_URL || mailpit!.smtpUrl };
  const children: ManagedProcess[] = [];
  let stopping = false;
  const stopAll = async (code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    say('\nstopping services...');
    // One SIGTERM each, and the time each takes to shut down (a second would mean "exit now").
    await Promise.all(children.map((c) => c.stop('SIGTERM', null)));
    say('stopping Kafka, ClickHouse and PostgreSQL, and Mailpit...');
    await Promise.all([stack.stop(), mailpit?.stop()]);
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  try {
    const users = await provision(stack, {
      database,
      topics: Object.values(topics),
      partitions: Number(env.TOPIC_PARTITIONS ?? 6),
    });
    const admin = createPostgres(
      { databaseUrl: users.postgres!.owner, databasePoolMax: 2, databaseTimeoutMs: 10_000 },
      createLogger({ service: 'devstack', level: 'warn' }),
      'devstack',
    );
    const tenantId = await devTenant(admin);
    const access = await issueKey(admin, { tenantId, kind: 'telemetry', name: 'dev access key' });
    const api = await issueKey(admin, {
      tenantId,
      kind: 'api',
      name: 'dev api key',
      scopes: ['checks:read', 'monitors:read', 'monitors:write', 'events:read'],
    });
    const owner = await devOwner(admin, tenantId);
    await admin.end();
    // The console's bundles, which the query service serves (docs/console.md).
    await promisify(execFile)('npx', ['tsx', 'services/query-service/console/scripts/bundle.ts'], { timeout: 180_000 });
    // The browser SDK's bundles, which the gateway serves at /sdk/v1.js (docs/sdk.md).
    await promisify(execFile)('npx', ['tsx', 'sdk/browser/scripts/bundle.ts'], { timeout: 180_000 });

    const ports = {
      gateway: await portOr(env.GATEWAY_PORT, 8080),
      consumer: await portOr(env.CONSUMER_PORT, 8081),
      query: await portOr(env.QUERY_PORT, 8082),
      runner: await portOr(env.RUNNER_PORT, 8083),
    };
    const shared = {
      KAFKA_BROKERS: stack.kafkaBrokers,
      CLICKHOUSE_URL: stack.clickhouseUrl,
      CLICKHOUSE_DATABASE: database,
      ...topicEnv(topics),
      HOST: '127.0.0.1',
      MIGRATE_ON_START: 'false',
      // The console's address (its links; the only origin its writes may come from): the port it got.
      PUBLIC_URL: env.PUBLIC_URL ?? `http://127.0.0.1:${ports.query}`,
    };
    // The query service and the runner seal monitor secrets with this key ring.
    // The gateway and the query service share the key of heartbeat tokens.
    const secrets = { SECRETS_KEYS: devSecretsKeys(), HEARTBEAT_KEY: devHeartbeatKey() };
    writeLocalEnv({
      ...shared,
      // The registry's owner: what `npm run keys`, `tenants` and `migrate` connect as.
      DATABASE_URL: users.postgres!.owner,
      GATEWAY_URL: `http://127.0.0.1:${ports.gateway}`,
      QUERY_URL: `http://127.0.0.1:${ports.query}`,
    });
    // Each service runs as its own ClickHouse user, with only what it needs (users.ts).
    const services: [ServiceName, number][] = [
      ['ingest-gateway', ports.gateway],
      ['stream-consumer', ports.consumer],
      ['query-service', ports.query],
      ['check-runner', ports.runner],
    ];
    // The egress policy lets checks and webhooks reach the gateway's port (the demo
    // monitor) and nothing else on this machine: never ClickHouse or Kafka.
    const egress = { EGRESS_ALLOW: env.EGRESS_ALLOW ?? `127.0.0.1:${ports.gateway}` };
    for (const [name, port] of services) {
      const extra = { ...storeEnv(users, name), ...egress, ...mail };
      const child = new ManagedProcess({
        name,
        command: serviceCommand(name),
        env: { ...env, ...shared, ...secrets, ...extra, PORT: String(port) },
        output: 'stderr',
        logHint: 'its log above',
        // Own process group: a terminal's Ctrl-C reaches only us, and we stop the
        // services one signal each, in order (a second signal would mean "exit now").
        detached: true,
      }).start();
      void child.exited().then(({ code }) => {
        if (!stopping) {
          process.stderr.write(`${name} exited (${code}); stopping\n`);
          void stopAll(1);
        }
      });
      children.push(child);
    }
    await Promise.all(
      services.map(([, port], i) => children[i]!.waitForUrl(`http://127.0.0.1:${port}/readyz`, 60_000)),
    );

    const g = `http://127.0.0.1:${ports.gateway}`;
    const q = `http://127.0.0.1:${ports.query}`;
    // A demo monitor (the gateway's own health, every 10 s), so the history call below
    // shows real checks. Kept between runs: found by name and pointed at today's port.
    const demo = await demoMonitor(q, api.key, `${g}/healthz`);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const r = await fetch(`${q}/api/monitors/${demo}/checks`, {
        headers: { authorization: `Bearer ${api.key}` },
      }).catch(() => undefined);
      const body = r?.ok ? ((await r.json()) as { data: unknown[] }) : undefined;
      if ((body?.data.length ?? 0) >= 1 || Date.now() > deadline) break;
      await new Promise((res) => setTimeout(res, 500));
    }

    say(`
The stack is up (${stack.mode}: Kafka ${stack.kafkaBrokers}, ClickHouse ${stack.clickhouseUrl}, PostgreSQL ${new URL(stack.postgresAdminUrl).host}).
  tenant           ${tenantId} (development; the keys below belong to it)
  ingest gateway   ${g}
  stream consumer  http://127.0.0.1:${ports.consumer}/metrics
  query service    ${q}
  check runner     http://127.0.0.1:${ports.runner}/metrics
  mail             ${mailpit ? `${mailpit.httpUrl}/ (Mailpit: every email the services send, SMTP ${mailpit.smtpUrl})` : 'SMTP_URL (your server)'}

Send an event (development access key, shown once):
curl -sS -X POST '${g}/api/telemetry/events' -H 'Content-Type: application/json' -H 'X-Access-Key: ${access.key}' -d '{"events":[{"source":"quickstart","category":"page_view","payload":{"path":"/"}}]}'

Load the browser SDK on a page (docs/sdk.md; sdk/browser/snippet.html with endpoint ${g} and the access key above): ${g}/sdk/v1.js

Sign in to the console: ${q}/ as ${DEV_OWNER} (the development tenant's owner) with the password ${owner.password}
  (kept in .stack/dev-owner-password across restarts; if you changed it in the console, yours stands). More people: invite them from the console's members page, or npm run people -- create-owner --tenant ${tenantId} --email you@example.com
Scripts sign in with the development API key (checks:read, monitors:read, monitors:write, events:read; shown once): ${api.key}

Create a monitor with that key:
curl -sS -X POST '${q}/api/monitors' -H 'Authorization: Bearer ${api.key}' -H 'Content-Type: application/json' -d '{"name":"My gateway","url":"${g}/readyz","interval_seconds":10}'

Read a monitor's check history (this is the demo monitor; use your monitor's "id" a minute later):
curl -sS '${q}/api/monitors/${demo}/checks?limit=5' -H 'Authorization: Bearer ${api.key}'

Query the events in ClickHouse:
curl -sS '${stack.clickhouseUrl}/' --data-binary "SELECT protocol, source, category, payload, received_at FROM ${database}.events FINAL ORDER BY received_at DESC LIMIT 5 FORMAT PrettyCompact"

Or keep your Segment or PostHog SDK and point it at the stack, with the development access key as its write key or project token (docs/compat.md):
${sdkLines(g, access.key).join('\n')}

Its incidents: ${q}/api/monitors/${demo}/incidents (same key). More keys: npm run keys -- create --tenant ${tenantId} --kind api --name me --scopes checks:read
Press Ctrl-C to stop.`);
  } catch (err) {
    process.stderr.write(`npm start failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await stopAll(1);
  }
}

/**
 * Mailpit on its usual ports (SMTP 1025, web UI 8025) when they are free (MAILPIT_SMTP_PORT,
 * MAILPIT_UI_PORT override them); none when SMTP_URL names the server to use.
 */
async function devMailpit(): Promise<Mailpit | undefined> {
  if (env.SMTP_URL) return undefined;
  return startMailpit({
    logDir: join(root, '.stack'),
    smtpPort: await portOr(env.MAILPIT_SMTP_PORT, 1025),
    httpPort: await portOr(env.MAILPIT_UI_PORT, 8025),
  });
}

const DEV_TENANT = 'development';

/** The development tenant's id: created once, then found by name. */
async function devTenant(admin: PgPool): Promise<string> {
  const found = (await listTenants(admin)).find((t) => t.name === DEV_TENANT);
  return (found ?? (await createTenant(admin, DEV_TENANT))).tenant_id;
}

const DEV_OWNER = 'owner@example.test';

/**
 * The development tenant's owner, DEV_OWNER: its password made once and kept in
 * .stack/dev-owner-password (mode 600), so that it stays the same across restarts of the
 * same stack; set only when the person has no password (a password changed in the console stands).
 */
async function devOwner(admin: PgPool, tenantId: string): Promise<{ password: string }> {
  const file = join(root, '.stack', 'dev-owner-password');
  if (!existsSync(file)) writeFileSync(file, `${randomBytes(18).toString('base64url')}\n`, { mode: 0o600 });
  const password = readFileSync(file, 'utf8').trim();
  await ensureOwner(admin, { tenantId, email: DEV_OWNER, name: 'Development owner', password });
  return { password };
}

/**
 * The development key ring: made once and kept in .stack/secrets-keys (mode 600) with
 * the data, since the monitors sealed with it outlive a restart. SECRETS_KEYS wins.
 */
function devSecretsKeys(): string {
  if (env.SECRETS_KEYS) return env.SECRETS_KEYS;
  const file = join(root, '.stack', 'secrets-keys');
  if (!existsSync(file)) writeFileSync(file, `${newSealingKeyText('dev1')}\n`, { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

/** The development heartbeat key: made once and kept in .stack/heartbeat-key (mode 600). HEARTBEAT_KEY wins. */
function devHeartbeatKey(): string {
  if (env.HEARTBEAT_KEY) return env.HEARTBEAT_KEY;
  const file = join(root, '.stack', 'heartbeat-key');
  if (!existsSync(file)) writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

/** The demo monitor's id: created once, then found by name and kept pointing at `url`. */
async function demoMonitor(q: string, key: string, url: string): Promise<string> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const list = (await (await fetch(`${q}/api/monitors?limit=1000`, { headers })).json()) as {
    data: { id: string; name: string; url: string }[];
  };
  const found = list.data.find((m) => m.name === DEMO_MONITOR);
  if (found) {
    if (found.url !== url) {
      await fetch(`${q}/api/monitors/${found.id}`, { method: 'PATCH', headers, body: JSON.stringify({ url }) });
    }
    return found.id;
  }
  const r = await fetch(`${q}/api/monitors`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: DEMO_MONITOR, url, interval_seconds: 10 }),
  });
  const created = (await r.json()) as { success: boolean; data: { id: string }; error?: string };
  if (!created.success) throw new Error(`could not create the demo monitor: ${created.error}`);
  return created.data.id;
}

void main();
