import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createValidators, type AlertMessage } from '@telemetry/contract';
import { EgressPolicy } from '@telemetry/platform';
import { DEFAULT_MONITOR, type StoredMonitor } from '@telemetry/store';
import { WebhookDispatcher } from '../../services/check-runner/src/webhooks.js';
import { fakeGroupConsumers, silentLogger, until, type FakeGroupConsumer } from './support/fakes.js';

const alert: AlertMessage = {
  id: 'alr_000000000000000000000001',
  type: 'monitor.down',
  monitor_id: 'mon_a',
  incident_id: 'chk_1',
  created_at: '2026-11-22T10:00:00.000Z',
  check: {
    id: 'chk_1',
    status: 'down',
    response_time: 3,
    status_code: 0,
    error: 'connection_refused',
    created_at: '2026-11-22T10:00:00Z',
  },
  monitor: { name: 'a', url: 'http://a.test/' },
};

describe('webhook dispatcher (unit, a local receiver)', () => {
  let server: Server;
  let url: string;
  let answers: number[];
  const received: IncomingHttpHeaders[] = [];

  before(async () => {
    server = createServer((req, res) => {
      received.push(req.headers);
      req.resume();
      res.statusCode = answers.shift() ?? 200;
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    received.length = 0;
    answers = [];
  });

  function dispatcher(retryBaseMs: number): { d: WebhookDispatcher; group: FakeGroupConsumer } {
    const { factory, built } = fakeGroupConsumers();
    const m: StoredMonitor = {
      ...DEFAULT_MONITOR,
      tenant_id: 'ten_a',
      id: 'mon_a',
      name: 'a',
      url: 'http://a.test/',
      webhooks: [url],
      webhook_secret: 'whsec',
      created_at: '2026-11-22T00:00:00Z',
      updated_at: '2026-11-22T00:00:00Z',
      version: 1,
    };
    const d = new WebhookDispatcher({
      consumers: factory,
      logger: silentLogger,
      registry: new Registry(),
      validators: createValidators(),
      topic: 'alerts',
      groupId: 'webhooks',
      monitors: { get: (id) => (id === 'mon_a' ? m : undefined), reload: () => Promise.resolve() },
      userAgent: 'test',
      timeoutMs: 2000,
      maxAttempts: 3,
      retryBaseMs,
      // The receiver listens on loopback: allowed here.
      policy: new EgressPolicy({ allow: ['127.0.0.1/32'] }),
    });
    return { d, group: built[0]! };
  }

  it('reads the alerts topic as its own group, kafkajs committing each alert after its handler', () => {
    const { group } = dispatcher(1);
    expect(group.spec).to.include({ groupId: 'webhooks', fromBeginning: false });
    expect(group.spec.topics).to.deep.equal(['alerts']);
    expect('eachMessage' in group.spec).to.equal(true);
    expect('manualCommit' in group.spec).to.equal(false);
  });

  it('finishes an alert’s handler only after its webhook was delivered (retried on 5xx)', async () => {
    const { group } = dispatcher(1);
    answers = [503, 200];
    await group.message('alerts', 0, JSON.stringify(alert));
    expect(received).to.have.length(2);
    expect(received.map((h) => h['x-telemetry-attempt'])).to.deep.equal(['1', '2']);
    expect(received[1]!['x-telemetry-delivery']).to.equal(alert.id);
  });

  it('fails the handler when stopped during a retry, so the alert is not committed', async () => {
    const { d, group } = dispatcher(60_000);
    answers = [503];
    let outcome: unknown = 'pending';
    const handling = group.message('alerts', 0, JSON.stringify(alert)).then(
      () => (outcome = 'resolved'),
      (err: unknown) => (outcome = err),
    );
    await until(() => received.length === 1, 'the first attempt');
    await d.stop();
    await handling;
    expect(String(outcome)).to.contain('stopping during a webhook delivery');
    expect(group.calls).to.include('stop');
  });

  it('skips (and so commits) a message that is not an alert', async () => {
    const { group } = dispatcher(1);
    await group.message('alerts', 0, '{"not":"an alert"}');
    expect(received).to.deep.equal([]);
  });
});
