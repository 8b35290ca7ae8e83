import { expect } from 'chai';
import { Registry } from 'prom-client';
import {
  createValidators,
  type AlertMessage,
  type AnyChannelTarget,
  type ChannelType,
  type StateAlert,
  type WebhookDeliveryMessage,
} from '@telemetry/contract';
import { CHANNELS, type Answer, type Channel, type ChannelRegistry, type Notification } from '@telemetry/alerting';
import { EscalationClock } from '../../services/check-runner/src/escalation-clock.js';
import { buildAlerting, FakeAlertingData } from './support/alerting.js';
import { fakeGroupConsumers, sampleAlert, settle, silentLogger, until } from './support/fakes.js';

/** One send as a fake channel saw it. */
interface Sent {
  type: ChannelType;
  url: string;
  n: Notification;
  at: number;
}

/**
 * A channel of our own interface that sends nothing: it records each notification, answers
 * what the test scripted per URL (200 once used up) and holds a URL's sends while gated.
 */
function fakeChannel(type: ChannelType, sent: Sent[], opts: { groups: boolean; paging: boolean }, script: Script) {
  const ch: Channel<{ url: string }, Notification> = {
    type,
    ...opts,
    validate: () => [],
    endpoint: (c) => new URL(c.url).host,
    shown: (c) => new URL(c.url).host,
    render: (n) => n,
    async send(n, c) {
      sent.push({ type, url: c.url, n, at: performance.now() });
      await script.gates.get(c.url);
      return script.answers.get(c.url)?.shift() ?? { statusCode: 200 };
    },
    classify: (a: Answer) => (a.statusCode === 200 ? 'delivered' : a.statusCode === 400 ? 'give_up' : 'retry'),
  };
  return ch as unknown as Channel<never>;
}

interface Script {
  answers: Map<string, Answer[]>;
  gates: Map<string, Promise<void>>;
}

const T0 = Date.parse(sampleAlert.created_at);
const down: StateAlert = { ...sampleAlert, tenant_id: 'ten_a', incident_id: 'inc_1', id: 'alr_down' };
const up: StateAlert = { ...down, id: 'alr_up', type: 'monitor.up' };
const target = (type: ChannelType, url: string): AnyChannelTarget => ({ type, config: { url } }) as AnyChannelTarget;

describe('channel notifications: steps, escalation, reminders, acknowledgement, silence, grouping (unit)', () => {
  let sent: Sent[];
  let script: Script;
  let data: FakeAlertingData;
  let now: number;
  let records: WebhookDeliveryMessage[];

  beforeEach(() => {
    sent = [];
    records = [];
    script = { answers: new Map(), gates: new Map() };
    data = new FakeAlertingData();
    now = T0;
    data.monitors.set('mon_a', {
      id: 'mon_a',
      tenant_id: 'ten_a',
      channels: [],
      escalation_policy: null,
      silenced_until: null,
    });
  });

  function setup(o: { groupWaitMs?: number; threshold?: number; retryBaseMs?: number; maxAttempts?: number } = {}) {
    const channels: ChannelRegistry = {
      ...CHANNELS,
      slack: fakeChannel('slack', sent, { groups: true, paging: false }, script),
      email: fakeChannel('email', sent, { groups: true, paging: false }, script),
      pagerduty: fakeChannel('pagerduty', sent, { groups: false, paging: true }, script),
      webhook: fakeChannel('webhook', sent, { groups: false, paging: false }, script),
    };
    const registry = new Registry();
    const { factory } = fakeGroupConsumers();
    const { dispatcher, alerting } = buildAlerting({
      consumers: factory,
      topic: 'alerts',
      groupId: 'g',
      maxPending: 1000,
      targets: (a) =>
        Promise.resolve(a.monitor_id === 'mon_a' ? [target('webhook', 'https://own.example.test/hook')] : []),
      data,
      registry,
      channels,
      http: () => Promise.reject(new Error('fakes send nothing')),
      mail: { send: () => Promise.reject(new Error('fakes send nothing')) },
      userAgent: 'ua',
      timeoutMs: 1000,
      maxAttempts: o.maxAttempts ?? 3,
      retryBaseMs: o.retryBaseMs ?? 1,
      groupWaitMs: o.groupWaitMs ?? 1,
      groupThreshold: o.threshold ?? 3,
      minDelaySeconds: 1,
      now: () => now,
      record: (r) => {
        records.push(r);
        return Promise.resolve();
      },
    });
    const clock = new EscalationClock({
      data,
      notifier: alerting.notifier,
      logger: silentLogger,
      registry,
      owner: 'runner-1',
      tickMs: 1000,
      leaseMs: 60_000,
      minDelaySeconds: 1,
      silenced: alerting.silenced,
      stopDeliveries: () => alerting.delivery.stop(),
      now: () => now,
    });
    return { dispatcher, clock, registry };
  }

  const brief = (s: Sent): string =>
    `${s.type} ${new URL(s.url).host} ${s.n.kind}${s.n.items[0]!.step ? ` step ${s.n.items[0]!.step}` : ''}${
      s.n.items[0]!.reminder ? ` #${s.n.items[0]!.reminder}` : ''
    }`;
  const channelsOnly = (): string[] => sent.filter((s) => !s.url.includes('own.')).map(brief);

  function policy(): void {
    data.channel('chn_slack000000000000000', target('slack', 'https://slack.example.test/1'));
    data.channel('chn_pd000000000000000000', target('pagerduty', 'https://pd.example.test/1'));
    data.channel('chn_mail0000000000000000', target('email', 'https://mail.example.test/1'), { send_resolved: false });
    data.policies.set('esc_1', [
      { channels: ['chn_slack000000000000000'], escalate_after_seconds: 60 },
      { channels: ['chn_mail0000000000000000'] },
    ]);
    data.monitors.set('mon_a', {
      ...data.monitors.get('mon_a')!,
      channels: ['chn_pd000000000000000000'],
      escalation_policy: 'esc_1',
    });
  }

  it('notifies the first step (policy and the monitor’s own channels), escalates after the delay, once', async () => {
    policy();
    const { dispatcher, clock } = setup();
    await dispatcher.dispatch(down);
    expect(channelsOnly().sort()).to.deep.equal(['pagerduty pd.example.test down', 'slack slack.example.test down']);
    // The monitor's own webhook still gets the alert.
    expect(sent.filter((s) => s.url.includes('own.')).map(brief)).to.deep.equal(['webhook own.example.test down']);
    const row = data.incidents.rows.get('inc_1')!;
    expect([row.step, row.next_due_at]).to.deep.equal([0, T0 + 60_000]);
    // Each open incident's message carries an acknowledge link naming its recipient, and the console link.
    const item = sent.find((s) => s.type === 'slack')!.n.items[0]!;
    expect(item.ackLink!('slack:ops')).to.match(/^https:\/\/console\.example\.test\/ack\/[\w-]+\.[\w-]+$/);
    expect(item.monitorLink).to.equal('https://console.example.test/#/monitors/mon_a');
    sent.length = 0;
    now = T0 + 59_000;
    await clock.sweep();
    expect(sent).to.deep.equal([]);
    now = T0 + 60_000;
    await clock.sweep();
    expect(channelsOnly()).to.deep.equal(['email mail.example.test escalation step 2']);
    expect(data.incidents.rows.get('inc_1')).to.include({ step: 1, step_at: T0 + 60_000, next_due_at: null });
    now = T0 + 600_000;
    await clock.sweep();
    expect(channelsOnly()).to.have.length(1);
  });

  it('decides a down and its up read together in order: the incident ends resolved, nothing more is due', async () => {
    policy();
    const { dispatcher } = setup();
    // Both in flight at once, as one batch hands them over.
    await Promise.all([dispatcher.dispatch(down), dispatcher.dispatch(up)]);
    const row = data.incidents.rows.get('inc_1')!;
    expect(row.resolved_at).to.not.equal(null);
    expect(row.next_due_at).to.equal(null);
    expect(
      channelsOnly()
        .filter((s) => s.endsWith(' up'))
        .sort(),
    ).to.deep.equal(['pagerduty pd.example.test up', 'slack slack.example.test up']);
  });

  it('gives each notification a stable id: a redelivered down before anything happened sends the same ids again', async () => {
    policy();
    const { dispatcher } = setup();
    await dispatcher.dispatch(down);
    const first = sent.map((s) => s.n.id).sort();
    sent.length = 0;
    await dispatcher.dispatch(down);
    expect(sent.map((s) => s.n.id).sort()).to.deep.equal(first);
    expect(first.every((id) => /^ntf_[0-9a-f]{32}$/.test(id) || id === 'alr_down')).to.equal(true);
  });

  it('records every attempt with the channel, its id and the kind (an acknowledgement under its own alert)', async () => {
    policy();
    script.answers.set('https://pd.example.test/1', [{ statusCode: 503 }]);
    const { dispatcher } = setup();
    await dispatcher.dispatch(down);
    data.incidents.acknowledge('inc_1', 'key:k1', T0 + 1000);
    await dispatcher.dispatch({
      ...down,
      id: 'alr_ack',
      type: 'incident.acknowledged',
      actor: 'key:k1',
      check: undefined,
    });
    const v = createValidators();
    for (const r of records) expect(v.webhookDeliveryMessage(r), JSON.stringify(r)).to.equal(true);
    const brief = (r: WebhookDeliveryMessage): string =>
      `${r.channel ?? '-'} ${r.channel_id ?? '-'} ${r.kind ?? '-'} ${r.alert_id} ${r.attempt}:${r.status}`;
    expect(records.map(brief).sort()).to.deep.equal([
      '- - - alr_down 1:delivered',
      'pagerduty chn_pd000000000000000000 acknowledged alr_ack 1:delivered',
      'pagerduty chn_pd000000000000000000 down alr_down 1:retrying',
      'pagerduty chn_pd000000000000000000 down alr_down 2:delivered',
      'slack chn_slack000000000000000 down alr_down 1:delivered',
    ]);
  });

  it('reminds each channel every remind_every_seconds, at most remind_max times', async () => {
    data.channel('chn_slack000000000000000', target('slack', 'https://slack.example.test/1'), {
      remind_every_seconds: 10,
      remind_max: 2,
    });
    data.monitors.set('mon_a', { ...data.monitors.get('mon_a')!, channels: ['chn_slack000000000000000'] });
    const { dispatcher, clock } = setup();
    await dispatcher.dispatch(down);
    for (const t of [5, 10, 15, 20, 30, 40, 100]) {
      now = T0 + t * 1000;
      await clock.sweep();
    }
    expect(channelsOnly()).to.deep.equal([
      'slack slack.example.test down',
      'slack slack.example.test reminder #1',
      'slack slack.example.test reminder #2',
    ]);
    expect(data.incidents.rows.get('inc_1')!.next_due_at).to.equal(null);
  });

  it('works due rows independently: one waiting on a provider that never answers holds no other', async () => {
    data.channel('chn_pd000000000000000000', target('pagerduty', 'https://pd.example.test/1'), {
      remind_every_seconds: 10,
    });
    data.channel('chn_slack000000000000000', target('slack', 'https://slack.example.test/1'), {
      remind_every_seconds: 10,
    });
    data.monitors.get('mon_a')!.channels = ['chn_pd000000000000000000'];
    data.monitors.set('mon_b', { ...data.monitors.get('mon_a')!, id: 'mon_b', channels: ['chn_slack000000000000000'] });
    const { dispatcher, clock } = setup();
    await dispatcher.dispatch(down);
    await dispatcher.dispatch({ ...down, id: 'alr_b', monitor_id: 'mon_b', incident_id: 'inc_2' });
    let release = (): void => undefined;
    script.gates.set('https://pd.example.test/1', new Promise<void>((r) => (release = r)));
    now = T0 + 10_000;
    await clock.start();
    try {
      await until(
        () => data.incidents.rows.get('inc_2')!.reminders['chn_slack000000000000000']?.sent === 1,
        'the other row',
      );
      expect(channelsOnly()).to.include('pagerduty pd.example.test reminder #1');
      expect(data.incidents.rows.get('inc_1')!.reminders).to.deep.equal({});
      release();
      await until(
        () => data.incidents.rows.get('inc_1')!.reminders['chn_pd000000000000000000']?.sent === 1,
        'the held row',
      );
    } finally {
      release();
      await clock.stop();
    }
  });

  it('stops reminders and escalation once acknowledged, and passes the acknowledgement to paging channels only', async () => {
    policy();
    data.channelsById.get('chn_slack000000000000000')!.remind_every_seconds = 10;
    const { dispatcher, clock } = setup();
    await dispatcher.dispatch(down);
    sent.length = 0;
    data.incidents.acknowledge('inc_1', 'email:ops@example.test', T0 + 5000);
    const ack: AlertMessage = {
      ...down,
      id: 'alr_ack',
      type: 'incident.acknowledged',
      actor: 'email:ops@example.test',
      check: undefined,
    };
    await dispatcher.dispatch(ack);
    expect(channelsOnly()).to.deep.equal(['pagerduty pd.example.test acknowledged']);
    expect(sent[0]!.n.items[0]!.acknowledged_by).to.equal('email:ops@example.test');
    sent.length = 0;
    for (const t of [10, 20, 60, 120]) {
      now = T0 + t * 1000;
      await clock.sweep();
    }
    expect(sent).to.deep.equal([]);
  });

  it('sends up to the channels notified so far that want it, and always to paging channels', async () => {
    policy();
    data.channel('chn_late0000000000000000', target('slack', 'https://late.example.test/1'));
    data.policies.get('esc_1')!.push({ channels: ['chn_late0000000000000000'] });
    data.policies.get('esc_1')![1]!.escalate_after_seconds = 60;
    data.channelsById.get('chn_pd000000000000000000')!.send_resolved = false;
    const { dispatcher, clock } = setup();
    await dispatcher.dispatch(down);
    now = T0 + 60_000;
    await clock.sweep();
    sent.length = 0;
    await dispatcher.dispatch(up);
    // slack: send_resolved; pagerduty: paging (its send_resolved is false); email: does not want it;
    // late: step 3 was never notified.
    expect(channelsOnly().sort()).to.deep.equal(['pagerduty pd.example.test up', 'slack slack.example.test up']);
    expect(data.incidents.rows.get('inc_1')!.resolved_at).to.equal(T0 + 60_000);
  });

  it('notifies no chat or mail channel of a silenced monitor (its own webhooks go on; paging services still resolve), and counts it', async () => {
    policy();
    data.monitors.get('mon_a')!.silenced_until = new Date(T0 + 3_600_000).toISOString();
    const { dispatcher, clock, registry } = setup();
    await dispatcher.dispatch(down);
    expect(sent.map(brief)).to.deep.equal(['webhook own.example.test down']);
    now = T0 + 120_000;
    await clock.sweep();
    await dispatcher.dispatch(up);
    // A paging service is told of the resolve whatever the silence (an incident it opened
    // before the silence must not stay open there; a resolve of one it never had is a no-op).
    expect(channelsOnly()).to.deep.equal(['pagerduty pd.example.test up']);
    const metric = await registry.getSingleMetric('runner_notifications_silenced_total')!.get();
    expect(metric.values.reduce((n, v) => n + v.value, 0)).to.equal(3);
  });

  for (const [count, messages] of [
    [20, 1],
    [2, 2],
  ] as const) {
    it(`groups ${count} notifications to one channel into ${messages} message(s) (threshold 3)`, async () => {
      data.channel('chn_slack000000000000000', target('slack', 'https://slack.example.test/1'));
      const alerts = Array.from({ length: count }, (_, i) => {
        const id = `mon_${i}`;
        data.monitors.set(id, {
          id,
          tenant_id: 'ten_a',
          channels: ['chn_slack000000000000000'],
          escalation_policy: null,
          silenced_until: null,
        });
        return { ...down, id: `alr_${i}`, monitor_id: id, incident_id: `inc_${i}` };
      });
      const { dispatcher } = setup({ groupWaitMs: 50 });
      await Promise.all(alerts.map((a) => dispatcher.dispatch(a)));
      expect(sent).to.have.length(messages);
      expect(sent.flatMap((s) => s.n.items.map((i) => i.alert.monitor_id)).sort()).to.deep.equal(
        alerts.map((a) => a.monitor_id).sort(),
      );
    });
  }

  it('waits for a 429’s Retry-After when it is longer than its own backoff, and sends once after', async () => {
    data.channel('chn_pd000000000000000000', target('pagerduty', 'https://pd.example.test/1'));
    data.monitors.get('mon_a')!.channels = ['chn_pd000000000000000000'];
    script.answers.set('https://pd.example.test/1', [{ statusCode: 429, retryAfterMs: 200 }]);
    const { dispatcher } = setup({ retryBaseMs: 1 });
    await dispatcher.dispatch(down);
    const pd = sent.filter((s) => s.type === 'pagerduty');
    expect(pd).to.have.length(2);
    expect(pd[1]!.at - pd[0]!.at).to.be.at.least(199);
  });

  it('gives up a bad request at once', async () => {
    data.channel('chn_pd000000000000000000', target('pagerduty', 'https://pd.example.test/1'));
    data.monitors.get('mon_a')!.channels = ['chn_pd000000000000000000'];
    script.answers.set('https://pd.example.test/1', [{ statusCode: 400, response: '{"message":"bad"}' }]);
    const { dispatcher } = setup();
    await dispatcher.dispatch(down);
    expect(channelsOnly()).to.deep.equal(['pagerduty pd.example.test down']);
  });

  it('a provider that never answers does not delay another channel', async () => {
    data.channel('chn_pd000000000000000000', target('pagerduty', 'https://pd.example.test/1'));
    data.channel('chn_slack000000000000000', target('slack', 'https://slack.example.test/1'));
    data.monitors.get('mon_a')!.channels = ['chn_pd000000000000000000', 'chn_slack000000000000000'];
    let release = (): void => undefined;
    script.gates.set('https://pd.example.test/1', new Promise<void>((r) => (release = r)));
    const { dispatcher } = setup();
    const done = dispatcher.dispatch(down);
    await until(() => sent.some((s) => s.type === 'slack'), 'the other channel');
    let finished = false;
    void done.then(() => (finished = true));
    await settle();
    // The alert is not finished (not committable) while one of its sends hangs.
    expect(finished).to.equal(false);
    release();
    await done;
  });

  it('tells a step notified while the incident was acknowledged: its paging service gets the acknowledgement too', async () => {
    data.channel('chn_slack000000000000000', target('slack', 'https://slack.example.test/1'));
    data.channel('chn_pd000000000000000000', target('pagerduty', 'https://pd.example.test/1'));
    data.policies.set('esc_1', [
      { channels: ['chn_slack000000000000000'], escalate_after_seconds: 60 },
      { channels: ['chn_pd000000000000000000'] },
    ]);
    data.monitors.set('mon_a', { ...data.monitors.get('mon_a')!, escalation_policy: 'esc_1' });
    const { dispatcher, clock } = setup();
    await dispatcher.dispatch(down);
    let release = (): void => undefined;
    script.gates.set('https://pd.example.test/1', new Promise<void>((r) => (release = r)));
    now = T0 + 60_000;
    const sweep = clock.sweep();
    await until(() => sent.some((s) => s.type === 'pagerduty'), 'the escalation to PagerDuty');
    // Acknowledged while PagerDuty's trigger is in flight: the dispatcher's pass reached step 1 only.
    data.incidents.acknowledge('inc_1', 'key:k1', now);
    script.gates.delete('https://pd.example.test/1');
    release();
    await sweep;
    expect(sent.filter((s) => s.type === 'pagerduty').map(brief)).to.deep.equal([
      'pagerduty pd.example.test escalation step 2',
      'pagerduty pd.example.test acknowledged',
    ]);
  });

  it('sends nothing for a row acknowledged between its claim and its sends', async () => {
    policy();
    const { dispatcher, clock } = setup();
    await dispatcher.dispatch(down);
    sent.length = 0;
    now = T0 + 60_000;
    // Acknowledged just after the clock claimed the row (while it reads the monitor).
    const read = data.monitor.bind(data);
    data.monitor = (id) => {
      data.incidents.acknowledge('inc_1', 'key:k1', now);
      return read(id);
    };
    await clock.sweep();
    expect(data.incidents.rows.get('inc_1')!.acknowledged_by).to.equal('key:k1');
    expect(channelsOnly()).to.deep.equal([]);
  });

  it('keeps a row in work its own: its lease is renewed each tick and it is never claimed twice', async () => {
    policy();
    data.channelsById.get('chn_slack000000000000000')!.remind_every_seconds = 10;
    const { dispatcher, clock } = setup();
    await dispatcher.dispatch(down);
    let release = (): void => undefined;
    script.gates.set('https://slack.example.test/1', new Promise<void>((r) => (release = r)));
    now = T0 + 10_000;
    const first = clock.sweep();
    await until(() => sent.filter((s) => s.type === 'slack').length === 2, 'the reminder in flight');
    // Long past the 60 s lease: another tick renews it rather than claiming the row again.
    now = T0 + 200_000;
    await clock.sweep();
    expect(data.incidents.rows.get('inc_1')!.lease_until).to.equal(now + 60_000);
    expect(sent.filter((s) => s.type === 'slack').map(brief)).to.deep.equal([
      'slack slack.example.test down',
      'slack slack.example.test reminder #1',
    ]);
    script.gates.delete('https://slack.example.test/1');
    release();
    await first;
  });
});
