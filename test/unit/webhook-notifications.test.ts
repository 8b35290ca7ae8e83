import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { createChannelValidators, type AcknowledgementAlert, type WebhookChannelConfig } from '@telemetry/contract';
import type { Notification, NotifiedAlert } from '@telemetry/alerting';
import { webhookChannel } from '../../libs/alerting/src/channels/webhook.js';
import { sampleAlert } from './support/fakes.js';

/**
 * The signed webhook beyond down and up (docs/alerting.md): reminders, escalations,
 * acknowledgements and tests send the alert message with their kind in
 * X-Telemetry-Notification, and `body_template` replaces the body with JSON-escaped values.
 */

const now = 1_700_000_000_987;
const config: WebhookChannelConfig = {
  url: 'https://hooks.example.test/in',
  secret: 'whsec_0123456789abcdef0123456789abcdef',
};

const acknowledgement: AcknowledgementAlert = {
  id: 'alr_000000000000000000000009',
  type: 'incident.acknowledged',
  monitor_id: sampleAlert.monitor_id,
  incident_id: sampleAlert.incident_id,
  created_at: '2026-11-22T10:03:00.000Z',
  monitor: sampleAlert.monitor,
  actor: 'slack:ops',
};

function notify(kind: NotifiedAlert['kind'], extra: Partial<NotifiedAlert> = {}): Notification {
  return {
    id: 'ntf_1',
    kind,
    items: [{ kind, alert: sampleAlert, monitorLink: 'https://console.example.test/monitors/mon_a', ...extra }],
    attempt: 2,
  };
}

function verify(body: string, header: string): boolean {
  const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header) ?? [];
  return t === '1700000000' && v1 === createHmac('sha256', config.secret).update(`${t}.${body}`).digest('hex');
}

describe('the signed webhook: other notifications and body templates (unit)', () => {
  it('sends a reminder, an escalation and a test as the alert message, naming the kind in a header and delivering it as its own notification', () => {
    for (const kind of ['reminder', 'escalation', 'test'] as const) {
      const r = webhookChannel.render(notify(kind), config, { templates: {}, name: 'hook', now });
      expect(r.body).to.equal(JSON.stringify(sampleAlert));
      expect(r.headers).to.include({
        'X-Telemetry-Event': 'monitor.down',
        // Not the down's id: a receiver de-duplicating on it would drop every reminder.
        'X-Telemetry-Delivery': 'ntf_1',
        'X-Telemetry-Attempt': '2',
        'X-Telemetry-Notification': kind,
      });
      expect(verify(r.body, r.headers['X-Telemetry-Signature']!)).to.equal(true);
    }
  });

  it('sends an acknowledgement as its own message (or the alert when there is none)', () => {
    const r = webhookChannel.render(notify('acknowledged', { acknowledgement }), config, {
      templates: {},
      name: 'hook',
      now,
    });
    expect(JSON.parse(r.body)).to.deep.equal(acknowledgement);
    expect(r.headers).to.include({
      'X-Telemetry-Event': 'incident.acknowledged',
      'X-Telemetry-Delivery': acknowledgement.id,
      'X-Telemetry-Notification': 'acknowledged',
    });
    const bare = webhookChannel.render(notify('acknowledged'), config, { templates: {}, name: 'hook', now });
    expect(bare.body).to.equal(JSON.stringify(sampleAlert));
  });

  it('keeps down and up exactly as before: no X-Telemetry-Notification', () => {
    for (const kind of ['down', 'up'] as const) {
      const r = webhookChannel.render(notify(kind), config, { templates: {}, name: 'hook', now });
      expect(r.headers).not.to.have.property('X-Telemetry-Notification');
    }
  });

  it('renders body_template with every value JSON-escaped, and signs what it sends', () => {
    const tricky = { ...sampleAlert, monitor: { name: 'a "quoted"\nname\\', url: 'http://a.test/' } };
    const n: Notification = {
      id: 'ntf_2',
      kind: 'down',
      items: [
        {
          kind: 'down',
          alert: tricky,
          monitorLink: 'https://console.example.test/monitors/mon_a',
          ackLink: (recipient) => `https://console.example.test/ack/t.${recipient}`,
        },
      ],
      attempt: 1,
    };
    const c = {
      ...config,
      body_template:
        '{"name":"{{monitor.name}}","cause":"{{incident.cause}}","ack":"{{ack_link}}","kind":"{{kind}}","n":{{count}}}',
    };
    expect(webhookChannel.validate(c, createChannelValidators())).to.deep.equal([]);
    const r = webhookChannel.render(n, c, { templates: {}, name: 'hook', now });
    expect(JSON.parse(r.body)).to.deep.equal({
      name: 'a "quoted"\nname\\',
      cause: 'connection refused',
      ack: 'https://console.example.test/ack/t.webhook:hook',
      kind: 'down',
      n: 1,
    });
    expect(r.headers).to.include({ 'X-Telemetry-Event': 'monitor.down', 'X-Telemetry-Delivery': tricky.id });
    expect(verify(r.body, r.headers['X-Telemetry-Signature']!)).to.equal(true);
  });
});
