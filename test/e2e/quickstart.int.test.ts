import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { freePort } from '../../tools/devstack/ports.js';
import { eventually, testStack } from '../support/fixtures.js';

const sh = promisify(execFile);

/**
 * The README's first command, as a new user runs it: `npm start` brings the services up
 * and prints commands; those commands, pasted into a shell, must work.
 */
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
