import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { EmailChannelConfig, StateAlert } from '@telemetry/contract';
import { CHANNELS, createMailer, type ChannelContext, type Mailer, type Notification } from '@telemetry/alerting';
import { createLogger, EgressPolicy, LineCollector } from '@telemetry/platform';
import { startMailpit, type Mailpit } from '../../tools/devstack/mailpit.js';
import { mailpitSmtpUrl, uid } from '../support/fixtures.js';
import { mailpitClient, runMailpit, type MailpitClient } from '../support/mailpit.js';

/**
 * Email against a real SMTP server (Mailpit, started once per run by the global setup),
 * read back through Mailpit's HTTP API: the operator's SMTP_URL with AUTH, a tenant's own
 * server through the egress policy, and a denied address refused before any connection.
 */

const email = CHANNELS.email;
const now = Date.now();

function downAlert(monitor: string): StateAlert {
  return {
    id: uid('alr'),
    type: 'monitor.down',
    monitor_id: 'mon_mail',
    incident_id: uid('inc'),
    created_at: new Date(now - 60_000).toISOString(),
    check: {
      id: uid('chk'),
      status: 'down',
      response_time: 5,
      status_code: 503,
      error: 'unexpected_status',
      created_at: new Date(now - 60_000).toISOString(),
    },
    monitor: { name: monitor, url: 'https://shop.example.com/health' },
  };
}

function notification(alert: StateAlert, kind: 'down' | 'up' = 'down'): Notification {
  return {
    id: `${alert.id}.chan_mail`,
    kind,
    items: [
      {
        kind,
        alert,
        monitorLink: 'http://127.0.0.1:8082/monitors/mon_mail',
        ...(kind === 'down'
          ? { ackLink: (r: string) => `http://127.0.0.1:8082/ack/token-for-${encodeURIComponent(r)}` }
          : {}),
      },
    ],
    attempt: 1,
  };
}

function context(mail: Mailer): ChannelContext {
  return {
    mail,
    http: () => Promise.reject(new Error('no HTTP in this test')),
    userAgent: 'test',
    timeoutMs: 10_000,
    signal: new AbortController().signal,
    now: () => now,
  };
}

/** Mailpit's MessageID: ours without the angle brackets. */
const bare = (id: string): string => id.replace(/^<|>$/g, '');

describe('email through a real SMTP server (Mailpit)', function () {
  this.timeout(60_000);
  const lines = new LineCollector();
  const logger = createLogger({ service: 'test', level: 'debug', stream: lines });
  const policy = new EgressPolicy({ denyPorts: [25] });
  let mailpit: MailpitClient;

  before(() => {
    mailpit = runMailpit();
  });

  it("delivers through the operator's SMTP_URL with AUTH: subject, text and HTML parts, Message-ID, acknowledge link", async () => {
    // Mailpit accepts any AUTH: the URL's userinfo is sent as credentials, and never logged.
    const operator = mailpitSmtpUrl().replace('smtp://', 'smtp://alerts:hunter2-pass@');
    const mailer = createMailer(
      { smtpUrl: operator, mailFrom: 'Telemetry Alerts <alerts@telemetry.test>' },
      { policy, logger },
    );
    const to = [`${uid('ops')}@example.com`, `${uid('lead')}@example.org`];
    const config: EmailChannelConfig = { to };
    const alert = downAlert(`shop ${uid('m')}`);
    const n = notification(alert);
    const rendered = email.render(n, config, { templates: {}, name: 'Ops mail', now });
    const answer = await email.send(rendered, config, context(mailer));
    expect(answer.error, answer.detail).to.equal(undefined);
    expect(answer.statusCode).to.equal(250);
    expect(email.classify(answer)).to.equal('delivered');

    for (const address of to) {
      const [m] = await mailpit.waitFor(`to:${address}`);
      const recipient = `email:${address}`;
      expect(m!.Subject).to.equal(`DOWN: ${alert.monitor.name}`);
      expect(m!.From).to.deep.include({ Address: 'alerts@telemetry.test', Name: 'Telemetry Alerts' });
      expect(m!.To.map((a) => a.Address)).to.deep.equal([address]);
      const ack = `http://127.0.0.1:8082/ack/token-for-${encodeURIComponent(recipient)}`;
      expect(m!.Text).to.include(`${alert.monitor.name} (https://shop.example.com/health) is down: HTTP 503`);
      expect(m!.Text).to.include(`Acknowledge: ${ack}`);
      expect(m!.HTML).to.include(`href="${ack}"`);
      expect(m!.HTML).to.include('>Acknowledge</a>');
      const ids = (rendered as { messages: { to: string; messageId: string }[] }).messages;
      const id = ids.find((x) => x.to === address)!.messageId;
      expect(m!.MessageID).to.equal(bare(id));
      expect(m!.headers['Message-Id'] ?? m!.headers['Message-ID']).to.deep.equal([id]);
      expect(m!.headers['Content-Type']![0]).to.match(/^multipart\/alternative/);
    }
    expect(lines.lines.join('\n')).not.to.include('hunter2');

    // The incident's up answers in the same thread.
    const upAlert: StateAlert = { ...alert, id: uid('alr'), type: 'monitor.up' };
    const up = email.render(notification(upAlert, 'up'), { to: [to[0]!] }, { templates: {}, name: 'Ops mail', now });
    expect((await email.send(up, { to: [to[0]!] }, context(mailer))).statusCode).to.equal(250);
    const [down, upMail] = await mailpit.waitFor(`to:${to[0]}`, 2);
    expect(upMail!.Subject).to.equal(`UP: ${alert.monitor.name}`);
    expect(upMail!.headers['In-Reply-To']).to.deep.equal(down!.headers.References);
    expect(upMail!.HTML).not.to.include('>Acknowledge</a>');
  });

  it('upgrades with STARTTLS whenever the server offers it and verifies its certificate: nothing goes in clear to an untrusted one', async () => {
    const logDir = mkdtempSync(join(tmpdir(), 'mail-tls-'));
    // Mailpit with STARTTLS and a self-signed certificate it makes itself.
    const tls = await startMailpit({
      logDir,
      args: ['--smtp-tls-cert=sans:localhost', '--smtp-tls-key=sans:localhost'],
    });
    try {
      const api = mailpitClient(tls.httpUrl);
      const to = `${uid('tls')}@example.com`;
      for (const smtpUrl of [tls.smtpUrl, tls.smtpUrl.replace('smtp://', 'smtps://')]) {
        const mailer = createMailer(
          { smtpUrl, mailFrom: 'alerts@telemetry.test' },
          { policy, logger, timeoutMs: 5000 },
        );
        const config: EmailChannelConfig = { to: [to] };
        const r = email.render(notification(downAlert('tls')), config, { templates: {}, name: 't', now });
        const answer = await email.send(r, config, context(mailer));
        expect(answer, `${smtpUrl}: ${answer.detail}`).to.deep.include({ statusCode: 0, error: 'tls' });
      }
      // The same through a tenant's server, on the socket the egress policy's check opened.
      const allowed = new EgressPolicy({ allow: [`127.0.0.1:${new URL(tls.smtpUrl).port}`] });
      const tenantMailer = createMailer({ smtpUrl: '', mailFrom: 'x@telemetry.test' }, { policy: allowed, logger });
      for (const url of [tls.smtpUrl, tls.smtpUrl.replace('smtp://', 'smtps://')]) {
        const config: EmailChannelConfig = { to: [to], smtp: { url, from: 'noc@tenant.example' } };
        const r = email.render(notification(downAlert('tls')), config, { templates: {}, name: 't', now });
        const answer = await email.send(r, config, context(tenantMailer));
        expect(answer, `tenant ${url}: ${answer.detail}`).to.deep.include({ statusCode: 0, error: 'tls' });
      }
      expect(await api.search(`to:${to}`)).to.have.length(0);
    } finally {
      await tls.stop();
      rmSync(logDir, { recursive: true, force: true });
    }
  });

  describe("a tenant's own SMTP server", () => {
    let tenant: Mailpit;
    let tenantApi: MailpitClient;
    let logDir: string;

    before(async () => {
      logDir = mkdtempSync(join(tmpdir(), 'mail-test-'));
      tenant = await startMailpit({ logDir });
      tenantApi = mailpitClient(tenant.httpUrl);
    });
    after(async () => {
      await tenant?.stop();
      rmSync(logDir, { recursive: true, force: true });
    });

    it('is a target like any other: allowed by the egress policy, mail goes there with its own From', async () => {
      const port = new URL(tenant.smtpUrl).port;
      const allowed = new EgressPolicy({ allow: [`127.0.0.1:${port}`], denyPorts: [25] });
      const mailer = createMailer(
        { smtpUrl: mailpitSmtpUrl(), mailFrom: 'alerts@telemetry.test' },
        { policy: allowed, logger },
      );
      const to = `${uid('tenant')}@tenant.example`;
      const config: EmailChannelConfig = {
        to: [to],
        smtp: { url: tenant.smtpUrl.replace('smtp://', 'smtp://noc:pw@'), from: 'noc@tenant.example' },
      };
      const alert = downAlert(`tenant ${uid('m')}`);
      const answer = await email.send(
        email.render(notification(alert), config, { templates: {}, name: 't', now }),
        config,
        context(mailer),
      );
      expect(answer.statusCode, answer.detail).to.equal(250);
      const [m] = await tenantApi.waitFor(`to:${to}`);
      expect(m!.From.Address).to.equal('noc@tenant.example');
      expect(m!.Subject).to.equal(`DOWN: ${alert.monitor.name}`);
      // Not through the operator's server.
      expect(await mailpit.search(`to:${to}`)).to.have.length(0);
    });

    it('refuses a denied address before connecting: nothing arrives (loopback under the default policy, a metadata literal)', async () => {
      const mailer = createMailer({ smtpUrl: mailpitSmtpUrl(), mailFrom: 'alerts@telemetry.test' }, { policy, logger });
      const to = `${uid('denied')}@tenant.example`;
      for (const url of [tenant.smtpUrl, 'smtp://169.254.169.254:587', 'smtps://10.0.0.1']) {
        const config: EmailChannelConfig = { to: [to], smtp: { url, from: 'noc@tenant.example' } };
        const r = email.render(notification(downAlert('denied')), config, { templates: {}, name: 't', now });
        const answer = await email.send(r, config, context(mailer));
        expect(answer, url).to.deep.include({ statusCode: 0, error: 'target_not_allowed' });
        expect(email.classify(answer)).to.equal('give_up');
      }
      expect(await tenantApi.search(`to:${to}`)).to.have.length(0);
      expect(await mailpit.search(`to:${to}`)).to.have.length(0);
    });

    it('insists on STARTTLS with ?starttls=required: a server without it gets nothing (error tls)', async () => {
      const port = new URL(tenant.smtpUrl).port;
      const allowed = new EgressPolicy({ allow: [`127.0.0.1:${port}`] });
      const mailer = createMailer({ smtpUrl: '', mailFrom: 'alerts@telemetry.test' }, { policy: allowed, logger });
      const to = `${uid('tls')}@tenant.example`;
      const config: EmailChannelConfig = {
        to: [to],
        smtp: { url: `${tenant.smtpUrl}?starttls=required`, from: 'noc@tenant.example' },
      };
      const r = email.render(notification(downAlert('tls')), config, { templates: {}, name: 't', now });
      const answer = await email.send(r, config, context(mailer));
      expect(answer, answer.detail).to.deep.include({ statusCode: 0, error: 'tls' });
      expect(await tenantApi.search(`to:${to}`)).to.have.length(0);
    });
  });
});
