import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createValidators, type WebhookDeliveryMessage } from '@telemetry/contract';
import { EgressPolicy } from '@telemetry/platform';
import { DEFAULT_MONITOR, type StoredMonitor } from '@telemetry/store';
import { CHANNELS } from '@telemetry/alerting';
import { monitorTargets } from '../../services/check-runner/src/targets.js';
import type { AlertDispatcher } from '../../services/check-runner/src/dispatcher.js';
import { buildDispatcher } from './support/alerting.js';
import { httpCall } from '@telemetry/platform';
import {
  fakeBatch,
  fakeGroupConsumers,
  noMail,
  sampleAlert,
  settle,
  until,
  type FakeGroupConsumer,
} from './support/fakes.js';

const alert = sampleAlert;

describe('alert dispatcher with the webhook channel (unit, a local receiver)', () => {
  let server: Server;
  let url: string;
  let hangingUrl: string;
  let answers: number[];
  const received: IncomingHttpHeaders[] = [];
  /** Records of delivery attempts, as published. */
  const records: WebhookDeliveryMessage[] = [];
  /** What publishing a record waits for (resolved at once unless a test holds it). */
  let recorded: Promise<void> = Promise.resolve();

  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      // /hang never answers: a dead endpoint (another origin, by its host name below).
      if (req.url === '/hang') return;
      received.push(req.headers);
      res.statusCode = answers.shift() ?? 200;
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    url = `http://127.0.0.1:${port}/hook`;
    // `localhost` resolves to loopback too, but is another origin: another queue.
    hangingUrl = `http://localhost:${port}/hang`;
  });
  after(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  beforeEach(() => {
    received.length = 0;
    records.length = 0;
    recorded = Promise.resolve();
    answers = [];
  });

  function monitor(id: string, webhooks: string[]): StoredMonitor {
    return {
      ...DEFAULT_MONITOR,
      tenant_id: 'ten_a',
      key: null,
      id,
      name: id,
      url: 'http://a.test/',
      webhooks,
      webhook_secret: 'whsec',
      created_at: '2026-11-22T00:00:00Z',
      updated_at: '2026-11-22T00:00:00Z',
      version: 1,
    };
  }

  function dispatcher(
    retryBaseMs: number,
    monitors: StoredMonitor[] = [monitor('mon_a', [url])],
  ): { d: AlertDispatcher; group: FakeGroupConsumer } {
    const { factory, built } = fakeGroupConsumers();
    const byId = new Map(monitors.map((m) => [m.id, m]));
    // The receiver listens on loopback: allowed here.
    const policy = new EgressPolicy({ allow: ['127.0.0.1/32', '::1/128'] });
    const d = buildDispatcher({
      consumers: factory,
      topic: 'alerts',
      groupId: 'webhooks',
      targets: monitorTargets({ get: (id) => byId.get(id), reload: () => Promise.resolve() }),
      channels: CHANNELS,
      http: (call) => httpCall({ ...call, policy }),
      mail: noMail,
      userAgent: 'test',
      timeoutMs: 2000,
      maxAttempts: 3,
      retryBaseMs,
      maxPending: 100,
      record: (r) => {
        records.push(r);
        return recorded;
      },
    });
    return { d, group: built[0]! };
  }

  const commits = (g: FakeGroupConsumer): string[] => g.commits.map((c) => c[0]!.offset);

  it('reads the alerts topic as its own group, committing offsets itself', () => {
    const { group } = dispatcher(1);
    expect(group.spec).to.include({ groupId: 'webhooks', fromBeginning: false });
    expect(group.spec.topics).to.deep.equal(['alerts']);
    expect('eachBatch' in group.spec && group.spec.manualCommit).to.equal(true);
  });

  it('commits an alert only after its webhook was delivered (retried on 5xx)', async () => {
    const { group } = dispatcher(1);
    answers = [503, 200];
    const b = fakeBatch('alerts', 0, 7, [JSON.stringify(alert)]);
    await group.batch(b);
    expect(b.resolved).to.deep.equal(['7']);
    await until(() => group.commits.length === 1, 'the commit');
    expect(received.map((h) => h['x-telemetry-attempt'])).to.deep.equal(['1', '2']);
    expect(received[1]!['x-telemetry-delivery']).to.equal(alert.id);
    expect(commits(group)).to.deep.equal(['8']);
  });

  it('records every attempt: status, attempt, response code, duration, error, the URL as scheme and host only', async () => {
    const v = createValidators();
    const { group } = dispatcher(1, [monitor('mon_a', [`${url}?token=s3cret`, 'http://127.0.0.2:9/denied'])]);
    answers = [503, 200];
    await group.batch(fakeBatch('alerts', 0, 7, [JSON.stringify({ ...alert, tenant_id: 'ten_a' })]));
    await until(() => group.commits.length === 1, 'the commit');
    for (const r of records)
      expect(v.webhookDeliveryMessage(r), JSON.stringify(v.webhookDeliveryMessage.errors)).to.equal(true);
    const byUrl = (u: string): WebhookDeliveryMessage[] => records.filter((r) => r.url === u);
    const hook = byUrl(new URL(url).origin).map(({ attempt, status, status_code, error }) => ({
      attempt,
      status,
      status_code,
      error,
    }));
    expect(hook).to.deep.equal([
      { attempt: 1, status: 'retrying', status_code: 503, error: undefined },
      { attempt: 2, status: 'delivered', status_code: 200, error: undefined },
    ]);
    // 127.0.0.2 is loopback, outside this policy's allow list: refused before connecting, not retried.
    const denied = byUrl('http://127.0.0.2:9').map(({ attempt, status, status_code, error }) => ({
      attempt,
      status,
      status_code,
      error,
    }));
    expect(denied).to.deep.equal([{ attempt: 1, status: 'failed', status_code: 0, error: 'target_not_allowed' }]);
    expect(
      records.every((r) => r.alert_id === alert.id && r.tenant_id === 'ten_a' && r.monitor_id === 'mon_a'),
    ).to.equal(true);
    expect(records.every((r) => r.duration_ms >= 0 && Date.parse(r.attempted_at) > 0)).to.equal(true);
    // A webhook's record leaves `channel` out (it reads as webhook), so an older consumer takes it.
    expect(records.map((r) => r.channel)).to.deep.equal(records.map(() => undefined));
    expect(new Set(records.map((r) => r.id)).size).to.equal(records.length);
    expect(JSON.stringify(records)).not.to.include('s3cret');
    expect(JSON.stringify(records), 'no path: Slack and Discord keep their secret there').not.to.match(/hook|denied/);
  });

  it('marks the last allowed attempt failed', async () => {
    const { group } = dispatcher(1);
    answers = [500, 502, 503];
    await group.batch(fakeBatch('alerts', 0, 0, [JSON.stringify(alert)]));
    await until(() => group.commits.length === 1, 'the commit');
    expect(records.map((r) => `${r.attempt}:${r.status}:${r.status_code}`)).to.deep.equal([
      '1:retrying:500',
      '2:retrying:502',
      '3:failed:503',
    ]);
  });

  it('commits an alert only once the records of its attempts are in Kafka', async () => {
    const { group } = dispatcher(1);
    let release = (): void => undefined;
    recorded = new Promise<void>((r) => (release = r));
    await group.batch(fakeBatch('alerts', 0, 4, [JSON.stringify(alert)]));
    await until(() => records.length === 1, 'the record');
    await settle();
    expect(group.commits).to.deep.equal([]);
    release();
    await until(() => group.commits.length === 1, 'the commit');
    expect(commits(group)).to.deep.equal(['5']);
  });

  it('does not commit an alert whose delivery was cut short by a stop', async () => {
    const { d, group } = dispatcher(60_000);
    answers = [503];
    await group.batch(fakeBatch('alerts', 0, 0, [JSON.stringify(alert)]));
    await until(() => received.length === 1, 'the first attempt');
    await d.stop();
    await settle();
    expect(group.commits).to.deep.equal([]);
    expect(group.calls).to.include('stop');
  });

  it('skips (and so commits) a message that is not an alert', async () => {
    const { group } = dispatcher(1);
    await group.batch(fakeBatch('alerts', 0, 3, ['{"not":"an alert"}']));
    await until(() => group.commits.length === 1, 'the commit');
    expect(received).to.deep.equal([]);
    expect(commits(group)).to.deep.equal(['4']);
  });

  it('delivers to a live endpoint while a dead one hangs, and commits only past both', async () => {
    const { d, group } = dispatcher(1, [monitor('mon_dead', [hangingUrl]), monitor('mon_a', [url])]);
    const dead = { ...alert, id: 'alr_dead', monitor_id: 'mon_dead' };
    const started = Date.now();
    await group.batch(fakeBatch('alerts', 0, 0, [JSON.stringify(dead), JSON.stringify(alert)]));
    await until(() => received.length === 1, 'the live delivery');
    expect(Date.now() - started).to.be.below(1000);
    expect(received[0]!['x-telemetry-delivery']).to.equal(alert.id);
    // Offset 0 (the dead endpoint's) is unfinished: nothing past it is committed.
    await settle();
    expect(group.commits.every((c) => c[0]!.offset === '0')).to.equal(true);
    await d.stop();
  });
});
