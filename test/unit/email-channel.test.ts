import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { createChannelValidators, type EmailChannelConfig } from '@telemetry/contract';
import {
  CHANNELS,
  type Answer,
  type ChannelContext,
  type Mailer,
  type MailMessage,
  type MailServer,
} from '@telemetry/alerting';
import type { Notification, NotifiedAlert } from '@telemetry/alerting';
import { emailChannel } from '../../libs/alerting/src/channels/email.js';
import { sampleAlert } from './support/fakes.js';

/** The email channel (libs/alerting/src/channels/email.ts); real SMTP is in test/e2e/mail.int.test.ts. */

const validators = createChannelValidators();
const now = Date.parse('2026-11-22T10:05:00.000Z');
const config: EmailChannelConfig = { to: ['ops@example.com', 'Lead@Example.com', 'noc@corp.example'] };

function notification(kind: Notification['kind'], extra: Partial<NotifiedAlert> = {}): Notification {
  const item: NotifiedAlert = {
    kind,
    alert: sampleAlert,
    monitorLink: 'https://telemetry.example.com/monitors/mon_a',
    ackLink: (r) => `https://telemetry.example.com/ack/tok?r=${encodeURIComponent(r)}&x=1`,
    ...extra,
  };
  return { id: 'alr_1:chan_9', kind, items: [item], attempt: 1 };
}

const sha16 = (s: string): string => createHash('sha256').update(s).digest('hex').slice(0, 16);

describe('the email channel (unit)', () => {
  it('is the registry’s email channel: groups, does not page', () => {
    expect(CHANNELS.email).to.equal(emailChannel);
    expect([emailChannel.groups, emailChannel.paging]).to.deep.equal([true, false]);
  });

  it('renders one message per recipient, each with its own acknowledge link and a stable Message-ID', () => {
    const n = notification('down');
    const r = emailChannel.render(n, config, { templates: {}, name: 'Ops mail', now });
    expect(r.messages.map((m) => m.to)).to.deep.equal(config.to);
    for (const m of r.messages) {
      const recipient = `email:${m.to}`;
      expect(m.messageId).to.equal(`<alr_1-chan_9.${sha16(recipient)}@telemetry>`);
      expect(m.subject).to.equal('DOWN: a');
      expect(m.text).to.include('a (http://a.test/) is down: connection refused');
      expect(m.text).to.include(
        `Acknowledge: https://telemetry.example.com/ack/tok?r=${encodeURIComponent(recipient)}&x=1`,
      );
      // The HTML part: the same words, escaped, and the acknowledge button-link (its & escaped).
      expect(m.html).to.match(/^<!DOCTYPE html>/);
      expect(m.html).to.include(
        `<a href="https://telemetry.example.com/ack/tok?r=${encodeURIComponent(recipient)}&amp;x=1" style=`,
      );
      expect(m.html).to.include('>Acknowledge</a>');
      expect(m.html).to.include('Open the monitor');
      expect(m.headers).to.deep.equal({ References: `<incident.chk_1.${sha16(recipient)}@telemetry>` });
    }
    // Stable: a redelivery renders the same ids.
    const again = emailChannel.render({ ...n, attempt: 2 }, config, { templates: {}, name: 'Ops mail', now });
    expect(again.messages.map((m) => m.messageId)).to.deep.equal(r.messages.map((m) => m.messageId));
    expect(new Set(r.messages.map((m) => m.messageId)).size).to.equal(3);
  });

  it('threads an incident’s later messages under its root, escapes HTML, and has no button once resolved', () => {
    const evil = { ...sampleAlert, monitor: { name: '<script>alert(1)</script>', url: 'http://a.test/' } };
    const n: Notification = {
      id: 'n2',
      kind: 'up',
      items: [{ kind: 'up', alert: evil, monitorLink: '' }],
      attempt: 1,
    };
    const [m] = emailChannel.render(n, { to: ['ops@example.com'] }, { templates: {}, name: 'x', now }).messages;
    const root = `<incident.chk_1.${sha16('email:ops@example.com')}@telemetry>`;
    expect(m!.headers).to.deep.equal({ References: root, 'In-Reply-To': root });
    expect(m!.subject).to.equal('UP: <script>alert(1)</script>');
    expect(m!.html).not.to.include('<script>');
    expect(m!.html).to.include('&lt;script&gt;');
    expect(m!.html).not.to.include('>Acknowledge</a>');
  });

  it('shows the recipients’ count and domains only, and queues per server and recipients', () => {
    expect(emailChannel.shown(config)).to.equal('email: 3 recipients @corp.example, @example.com');
    expect(emailChannel.shown({ to: ['a@x.example'] })).to.equal('email: 1 recipient @x.example');
    expect(emailChannel.endpoint(config)).to.match(/^smtp:operator [0-9a-f]{16}$/);
    expect(emailChannel.endpoint({ to: ['a@x.example'] })).not.to.equal(emailChannel.endpoint(config));
    expect(
      emailChannel.endpoint({
        ...config,
        smtp: { url: 'smtp://u:secret@mail.tenant.example:587', from: 'a@b.example' },
      }),
    ).to.match(/^smtp:mail\.tenant\.example:587 [0-9a-f]{16}$/);
  });

  it('validates the config with the contract’s schema and the SMTP URL’s options, at their paths', () => {
    expect(emailChannel.validate(config, validators)).to.deep.equal([]);
    expect(emailChannel.validate({ to: [] }, validators).map((p) => p.path)).to.deep.equal(['/to']);
    expect(
      emailChannel.validate(
        { to: ['a@b.example'], smtp: { url: 'smtp://mail.example.com?tls=1', from: 'a@b.example' } },
        validators,
      ),
    ).to.deep.equal([{ path: '/smtp/url', message: 'unknown option tls= (only starttls=required)' }]);
  });

  it('sends to every recipient through the channel’s server; the answer is the worst one', async () => {
    const sent: [MailMessage, MailServer | undefined][] = [];
    const replies: Answer[] = [{ statusCode: 250 }, { statusCode: 550, detail: 'no such user' }, { statusCode: 250 }];
    const mail: Mailer = {
      send: (m, s) => {
        sent.push([m, s]);
        return Promise.resolve(replies.shift()!);
      },
    };
    const ctx = { mail } as unknown as ChannelContext;
    const c: EmailChannelConfig = {
      ...config,
      smtp: { url: 'smtp://mail.tenant.example', from: 'noc@tenant.example' },
    };
    const r = emailChannel.render(notification('down'), c, { templates: {}, name: 'x', now });
    const a = await emailChannel.send(r, c, ctx);
    expect(sent.map(([m]) => m.to)).to.deep.equal(config.to);
    expect(sent[0]![1]).to.deep.equal({ url: 'smtp://mail.tenant.example', from: 'noc@tenant.example' });
    expect(a.statusCode).to.equal(550);
    expect(emailChannel.classify(a)).to.equal('give_up');
    // A retriable failure wins over one given up: the whole notification is tried again.
    replies.push({ statusCode: 550 }, { statusCode: 421 }, { statusCode: 250 });
    expect((await emailChannel.send(r, c, ctx)).statusCode).to.equal(421);
    replies.push({ statusCode: 250 }, { statusCode: 250 }, { statusCode: 250 });
    expect(emailChannel.classify(await emailChannel.send(r, c, ctx))).to.equal('delivered');
  });
});
