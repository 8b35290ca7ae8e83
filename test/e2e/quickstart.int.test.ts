import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runInNewContext } from 'node:vm';
import { gunzipSync } from 'node:zlib';
import { Analytics } from '@segment/analytics-node';
import { PostHog } from 'posthog-node';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { createLogger, createPostgres } from '@telemetry/platform';
import { personByEmail, tenantsOf, verifyPassword } from '@telemetry/store';
import { freePort } from '../../tools/devstack/ports.js';
import { eventually, testStack } from '../support/fixtures.js';

const sh = promisify(execFile);

/**
 * The README's first command, as a new user runs it: `npm start` brings the services up
 * and prints commands; those commands, pasted into a shell, must work.
 */
/**
 * Runs the printed analytics-node and posthog-node lines with `gateway` replaced by a
 * loopback recorder's URL, and shows each SDK then sends its batch there with the key.
 */
async function nodeSdkLinesWork(lines: string[], key: string, gateway: string): Promise<void> {
  const seen: { url: string; auth: string; body: string }[] = [];
  const recorder = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const raw = Buffer.concat(parts);
      const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
      seen.push({ url: req.url ?? '', auth: req.headers.authorization ?? '', body: body.toString() });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    });
  });
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
  try {
    const code = (sdk: string): string => {
      const line = lines.find((l) => l.trimStart().startsWith(`${sdk} `));
      expect(line, `the ${sdk} line`).to.be.a('string');
      return line!.trim().slice(sdk.length).trim().replace(gateway, url);
    };
    const segment = runInNewContext(code('@segment/analytics-node'), { Analytics }) as Analytics;
    segment.track({ anonymousId: 'quickstart', event: 'Quick Start' });
    await segment.closeAndFlush();
    const posthog = runInNewContext(code('posthog-node'), { PostHog }) as PostHog;
    posthog.capture({ distinctId: 'quickstart', event: 'quick start' });
    await posthog.shutdown();
    const basic = `Basic ${Buffer.from(`${key}:`).toString('base64')}`;
    expect(
      seen.filter((r) => r.url === '/v1/batch' && r.auth === basic),
      'analytics-node',
    ).to.have.length(1);
    expect(
      seen.filter((r) => r.url.startsWith('/batch') && (JSON.parse(r.body) as { api_key?: string }).api_key === key),
      'posthog-node',
    ).to.have.length(1);
  } finally {
    await new Promise((resolve) => recorder.close(resolve));
  }
}

describe('quick start (npm start, real Kafka and ClickHouse)', () => {
  let child: ChildProcess | undefined;
  let output = '';

  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      process.kill(-child.pid!, 'SIGINT');
      await exited;
    }
  });

  it('starts the four services and prints commands that send an event, create a monitor and read its checks', async function () {
    this.timeout(240_000);
    const s = testStack();
    const [gw, co, qu, ru] = [await freePort(), await freePort(), await freePort(), await freePort()];
    child = spawn('npm', ['start'], {
      env: {
        ...process.env,
        KAFKA_BROKERS: s.kafkaBrokers,
        CLICKHOUSE_URL: s.clickhouseUrl,
        CLICKHOUSE_USERS_DIR: s.usersDir,
        CLICKHOUSE_DATABASE: `${s.database}_quickstart`,
        EVENTS_TOPIC: `${s.eventsTopic}.quickstart`,
        CHECKS_TOPIC: `${s.checksTopic}.quickstart`,
        DEAD_LETTER_TOPIC: `${s.deadLetterTopic}.quickstart`,
        ALERTS_TOPIC: `${s.alertsTopic}.quickstart`,
        WEBHOOK_DELIVERIES_TOPIC: `${s.webhookDeliveriesTopic}.quickstart`,
        MONITOR_CHANGES_TOPIC: `${s.monitorChangesTopic}.quickstart`,
        SCREENSHOTS_TOPIC: `${s.screenshotsTopic}.quickstart`,
        RUN_REQUESTS_TOPIC: `${s.runRequestsTopic}.quickstart`,
        RUN_REPLIES_TOPIC: `${s.runRepliesTopic}.quickstart`,
        TOPIC_PARTITIONS: '2',
        GATEWAY_PORT: String(gw),
        CONSUMER_PORT: String(co),
        QUERY_PORT: String(qu),
        RUNNER_PORT: String(ru),
        // Not the developer's .stack/env: this stack goes away with the test run.
        DEVSTACK_ENV_FILE: join(tmpdir(), `quickstart-${process.pid}.env`),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, like a terminal's foreground job
    });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await eventually(
      () => `npm start to print its commands; its output:\n${output.slice(-3000)}`,
      () => Promise.resolve(output.includes('Press Ctrl-C') ? true : undefined),
      90_000,
    );
    const commands = output.split('\n').filter((l) => l.startsWith('curl '));
    expect(commands, output).to.have.length(4);

    // One line per tracker SDK, with the development key and this gateway (docs/compat.md).
    const key = /X-Access-Key: (tk_[^']+)'/.exec(commands[0]!)![1]!;
    const g = `http://127.0.0.1:${gw}`;
    const lines = output.split('\n');
    for (const code of [
      `AnalyticsBrowser.load({ writeKey: '${key}', cdnURL: '${g}' })`,
      `new Analytics({ writeKey: '${key}', host: '${g}' })`,
      `from segment.analytics import Client; Client(write_key='${key}', host='${g}')`,
      `posthog.init('${key}', { api_host: '${g}' })`,
      `new PostHog('${key}', { host: '${g}' })`,
      `from posthog import Posthog; Posthog('${key}', host='${g}')`,
    ]) {
      expect(
        lines.filter((l) => l.endsWith(` ${code}`)),
        `one line printing ${code}`,
      ).to.have.length(1);
    }
    // The Node lines, run as printed (the gateway's address swapped for a recorder's), make the
    // real SDKs send to that address with the key: the option names are the SDKs' own.
    await nodeSdkLinesWork(lines, key, g);

    const send = JSON.parse((await sh('sh', ['-c', commands[0]!])).stdout) as unknown;
    expect(send).to.deep.equal({ success: true, data: null });

    // The demo monitor's history already has a real check of the gateway.
    type History = { success: boolean; data: { monitor_id: string; status: string; status_code: number }[] };
    const history = JSON.parse((await sh('sh', ['-c', commands[2]!])).stdout) as History;
    expect(history.success).to.equal(true);
    expect(history.data.length).to.be.at.least(1);
    expect(history.data.every((c) => c.status === 'up' && c.status_code === 200)).to.equal(true);

    // A monitor of one's own: created by the printed command, checked within its interval.
    const created = JSON.parse((await sh('sh', ['-c', commands[1]!])).stdout) as {
      success: boolean;
      data: { id: string; interval_seconds: number };
    };
    expect(created.success).to.equal(true);
    const demoId = history.data[0]!.monitor_id;
    const mine = await eventually(
      'checks of the new monitor',
      async () => {
        const h = JSON.parse((await sh('sh', ['-c', commands[2]!.replace(demoId, created.data.id)])).stdout) as History;
        return h.data.length >= 1 ? h : undefined;
      },
      30_000,
    );
    expect(mine.data[0]).to.include({ monitor_id: created.data.id, status: 'up', status_code: 200 });

    await eventually('the quick-start event in ClickHouse', async () => {
      const { stdout } = await sh('sh', ['-c', commands[3]!]);
      return stdout.includes('quickstart') ? true : undefined;
    });

    // The development owner: the printed password is theirs, and they own the development tenant.
    const signIn = /^Sign in to the console: (\S+) as (\S+) .* with the password (\S+)$/m.exec(output);
    expect(signIn, output).to.not.equal(null);
    expect(signIn![1]).to.equal(`http://127.0.0.1:${qu}/`);
    const envFile = readFileSync(join(tmpdir(), `quickstart-${process.pid}.env`), 'utf8');
    const db = createPostgres(
      { databaseUrl: /^DATABASE_URL=(.*)$/m.exec(envFile)![1]!, databasePoolMax: 1, databaseTimeoutMs: 10_000 },
      createLogger({ service: 'test', level: 'warn' }),
      'quickstart-test',
    );
    try {
      const owner = (await personByEmail(db, signIn![2]!))!;
      expect(await verifyPassword(owner.password_hash, signIn![3]!)).to.equal(true);
      expect((await tenantsOf(db, owner.id)).map((t) => [t.name, t.role])).to.deep.include(['development', 'owner']);
    } finally {
      await db.end();
    }

    // Ctrl-C, as a terminal sends it: SIGINT to the whole foreground process group.
    const exited = new Promise((r) => child!.once('exit', r));
    process.kill(-child.pid!, 'SIGINT');
    await exited;
    await eventually(
      'the services to stop in order',
      () => Promise.resolve(output.includes('stopping Kafka, ClickHouse and PostgreSQL') ? true : undefined),
      30_000,
    );
    expect(output).not.to.match(/exited \(\d+\); stopping/);
  });
});
