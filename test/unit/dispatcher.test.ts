import { expect } from 'chai';
import {
  createValidators,
  type AlertMessage,
  type AnyChannelTarget,
  type WebhookDeliveryMessage,
  type WebhookChannelConfig,
} from '@telemetry/contract';
import type {
  Answer,
  Channel,
  ChannelContext,
  ChannelRegistry,
  Notification,
  RenderContext,
} from '@telemetry/alerting';
import { CHANNELS } from '@telemetry/alerting';
import { buildDispatcher } from './support/alerting.js';
import { fakeBatch, fakeGroupConsumers, noMail, sampleAlert, settle, until } from './support/fakes.js';

const alert: AlertMessage = { ...sampleAlert, id: 'alr_1' };

/** One send as the fake channel saw it. */
interface Sent {
  rendered: string;
  url: string;
  ctx: ChannelContext;
}

/**
 * A channel of our own interface that sends nothing: it answers what the test scripted
 * per URL (200 once the script is used up), and holds a URL's sends while it is gated.
 */
class FakeChannel implements Channel<WebhookChannelConfig, string> {
  readonly type = 'webhook' as const;
  readonly groups = false;
  readonly paging = false;
  readonly sent: Sent[] = [];
  readonly scripts = new Map<string, Answer[]>();
  readonly gates = new Map<string, Promise<void>>();

  validate(): [] {
    return [];
  }
  endpoint(c: WebhookChannelConfig): string {
    return new URL(c.url).host;
  }
  shown(c: WebhookChannelConfig): string {
    return `shown:${new URL(c.url).host}`;
  }
  render(n: Notification, c: WebhookChannelConfig, ctx: RenderContext): string {
    return `${n.items[0]!.alert.id}#${n.attempt}@${ctx.now} for ${c.url}`;
  }
  async send(rendered: string, c: WebhookChannelConfig, ctx: ChannelContext): Promise<Answer> {
    this.sent.push({ rendered, url: c.url, ctx });
    await this.gates.get(c.url);
    return this.scripts.get(c.url)?.shift() ?? { statusCode: 200 };
  }
  classify(a: Answer): 'delivered' | 'retry' | 'give_up' {
    if (a.statusCode === 200) return 'delivered';
    return a.statusCode === 503 || a.error !== undefined ? 'retry' : 'give_up';
  }
}

const target = (url: string): AnyChannelTarget => ({ type: 'webhook', config: { url, secret: 'whsec_fake_secret' } });

describe('alert dispatcher with a fake channel (unit)', () => {
  let channel: FakeChannel;
  let records: WebhookDeliveryMessage[];

  beforeEach(() => {
    channel = new FakeChannel();
    records = [];
  });

  function dispatcher(
    targets: Record<string, AnyChannelTarget[]>,
    opts: { maxAttempts?: number; retryBaseMs?: number } = {},
  ) {
    const { factory, built } = fakeGroupConsumers();
    // The fake stands in for the webhook; every other channel is the real one (never used here).
    const channels: ChannelRegistry = { ...CHANNELS, webhook: channel };
    const http = (): never => {
      throw new Error('the fake channel sends nothing');
    };
    const d = buildDispatcher({
      consumers: factory,
      topic: 'alerts',
      groupId: 'g',
      targets: (a) => Promise.resolve(targets[a.monitor_id] ?? []),
      channels,
      http,
      mail: noMail,
      userAgent: 'ua/test',
      timeoutMs: 1234,
      maxAttempts: opts.maxAttempts ?? 3,
      retryBaseMs: opts.retryBaseMs ?? 1,
      maxPending: 100,
      now: () => 1_700_000_000_000,
      record: (r) => {
        records.push(r);
        return Promise.resolve();
      },
    });
    return { d, group: built[0]!, http };
  }

  const brief = (r: WebhookDeliveryMessage): string => `${r.url} ${r.attempt}:${r.status}:${r.status_code}`;

  it('retries what the channel calls retriable, records each attempt with the channel, then commits', async () => {
    const { group, http } = dispatcher({ mon_a: [target('https://a.example.test/x')] });
    channel.scripts.set('https://a.example.test/x', [{ statusCode: 503 }, { statusCode: 0, error: 'timeout' }]);
    await group.batch(fakeBatch('alerts', 0, 5, [JSON.stringify(alert)]));
    await until(() => group.commits.length === 1, 'the commit');
    expect(group.commits[0]).to.deep.equal([{ topic: 'alerts', partition: 0, offset: '6' }]);
    expect(channel.sent.map((s) => s.rendered)).to.deep.equal([
      'alr_1#1@1700000000000 for https://a.example.test/x',
      'alr_1#2@1700000000000 for https://a.example.test/x',
      'alr_1#3@1700000000000 for https://a.example.test/x',
    ]);
    expect(records.map(brief)).to.deep.equal([
      'shown:a.example.test 1:retrying:503',
      'shown:a.example.test 2:retrying:0',
      'shown:a.example.test 3:delivered:200',
    ]);
    const v = createValidators();
    for (const r of records) {
      expect(v.webhookDeliveryMessage(r), JSON.stringify(v.webhookDeliveryMessage.errors)).to.equal(true);
      // A webhook's record reads as webhook without `channel` (an older consumer takes it).
      expect(r).to.include({ alert_id: 'alr_1', attempted_at: '2023-11-14T22:13:20.000Z' });
      expect(r).to.not.have.property('channel');
    }
    expect(records[1]!.error).to.equal('timeout');
    // What send is handed: the runner's client, user agent and timeout, a signal, the clock.
    const ctx = channel.sent[0]!.ctx;
    expect(ctx).to.include({ http, userAgent: 'ua/test', timeoutMs: 1234 });
    expect([ctx.signal.aborted, ctx.now()]).to.deep.equal([false, 1_700_000_000_000]);
  });

  it('gives up at once on give_up, and after the last attempt on retry', async () => {
    const { group } = dispatcher({
      mon_a: [target('https://a.example.test/refuses'), target('https://b.example.test/down')],
    });
    channel.scripts.set('https://a.example.test/refuses', [{ statusCode: 404 }]);
    channel.scripts.set('https://b.example.test/down', [{ statusCode: 503 }, { statusCode: 503 }, { statusCode: 503 }]);
    await group.batch(fakeBatch('alerts', 0, 0, [JSON.stringify(alert)]));
    await until(() => group.commits.length === 1, 'the commit');
    expect(records.map(brief).sort()).to.deep.equal([
      'shown:a.example.test 1:failed:404',
      'shown:b.example.test 1:retrying:503',
      'shown:b.example.test 2:retrying:503',
      'shown:b.example.test 3:failed:503',
    ]);
  });

  it('waits longer before each retry (doubling from retryBaseMs)', async () => {
    const { group } = dispatcher({ mon_a: [target('https://a.example.test/x')] }, { retryBaseMs: 40 });
    channel.scripts.set('https://a.example.test/x', [{ statusCode: 503 }, { statusCode: 503 }]);
    const at: number[] = [];
    const send = channel.send.bind(channel);
    channel.send = (r, c, ctx) => {
      at.push(performance.now());
      return send(r, c, ctx);
    };
    await group.batch(fakeBatch('alerts', 0, 0, [JSON.stringify(alert)]));
    await until(() => group.commits.length === 1, 'the commit');
    expect(at).to.have.length(3);
    // Timers never fire early (1 ms of rounding allowed).
    expect(at[1]! - at[0]!).to.be.at.least(39);
    expect(at[2]! - at[1]!).to.be.at.least(79);
  });

  it('queues per endpoint: a hanging endpoint holds its own deliveries only, and the commit', async () => {
    const { d, group } = dispatcher({
      mon_a: [target('https://slow.example.test/1')],
      mon_b: [target('https://slow.example.test/2'), target('https://fast.example.test/')],
    });
    let release = (): void => undefined;
    channel.gates.set('https://slow.example.test/1', new Promise<void>((r) => (release = r)));
    const b = { ...alert, id: 'alr_2', monitor_id: 'mon_b' };
    await group.batch(fakeBatch('alerts', 0, 0, [JSON.stringify(alert), JSON.stringify(b)]));
    await until(() => channel.sent.some((s) => s.url === 'https://fast.example.test/'), 'the other endpoint');
    await settle();
    // Same endpoint (slow.example.test): the second alert waits for the first.
    expect(channel.sent.map((s) => s.url)).to.deep.equal(['https://slow.example.test/1', 'https://fast.example.test/']);
    expect(group.commits).to.deep.equal([]);
    release();
    await until(() => group.commits.some((c) => c[0]!.offset === '2'), 'the commit past both');
    expect(channel.sent.map((s) => s.url)).to.include('https://slow.example.test/2');
    await d.stop();
  });

  it('sends nothing for an alert without targets, or one held by a maintenance window, and commits it', async () => {
    const { group } = dispatcher({ mon_a: [target('https://a.example.test/x')] });
    const held = { ...alert, maintenance: true };
    const orphan = { ...alert, id: 'alr_3', monitor_id: 'mon_gone' };
    await group.batch(fakeBatch('alerts', 0, 0, [JSON.stringify(held), JSON.stringify(orphan)]));
    await until(() => group.commits.some((c) => c[0]!.offset === '2'), 'the commit');
    expect([channel.sent, records]).to.deep.equal([[], []]);
  });

  it('leaves an alert uncommitted when a stop cuts its retry wait short, and aborts the channel’s signal', async () => {
    const { d, group } = dispatcher({ mon_a: [target('https://a.example.test/x')] }, { retryBaseMs: 60_000 });
    channel.scripts.set('https://a.example.test/x', [{ statusCode: 503 }]);
    await group.batch(fakeBatch('alerts', 0, 0, [JSON.stringify(alert)]));
    await until(() => records.length === 1, 'the first attempt');
    await d.stop();
    await settle();
    expect(group.commits).to.deep.equal([]);
    expect(channel.sent[0]!.ctx.signal.aborted).to.equal(true);
  });
});
