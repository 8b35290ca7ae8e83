import { createServer, type Server, type Socket } from 'node:net';
import { expect } from 'chai';
import {
  createMailer,
  parseSmtpUrl,
  smtpUrlProblem,
  smtpUrlVerdict,
  smtpVerdict,
  type MailMessage,
} from '@telemetry/alerting';
import { EgressPolicy } from '@telemetry/platform';
import { LineLogger, silentLogger } from './support/fakes.js';

/**
 * The SMTP mailer (libs/alerting/src/mailer.ts) against a scripted SMTP server on loopback:
 * what an SMTP reply or a failure becomes, AUTH from the URL's userinfo without the password
 * ever logged, and a tenant's server judged by the egress policy before any connection.
 * The real server (Mailpit) is in test/e2e/mail.int.test.ts.
 */

interface FakeSmtp {
  port: number;
  /** Connections accepted so far. */
  connections: number;
  /** Every command line received, in order. */
  commands: string[];
  /** The DATA of each message. */
  messages: string[];
  close(): Promise<void>;
}

/** An SMTP server that answers RCPT with `rcpt` (default 250) and greets unless `silent`. */
async function fakeSmtp(opts: { rcpt?: string; silent?: boolean } = {}): Promise<FakeSmtp> {
  const sockets = new Set<Socket>();
  const state: Omit<FakeSmtp, 'port' | 'close'> = { connections: 0, commands: [], messages: [] };
  const server: Server = createServer((socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buffer = '';
    let data: string[] | undefined;
    const reply = (line: string): boolean => socket.write(`${line}\r\n`);
    if (!opts.silent) reply('220 fake.test ESMTP');
    socket.on('data', (chunk: Buffer) => {
      if (opts.silent) return;
      buffer += chunk.toString('utf8');
      for (let i = buffer.indexOf('\r\n'); i >= 0; i = buffer.indexOf('\r\n')) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        if (data) {
          if (line === '.') {
            state.messages.push(data.join('\n'));
            data = undefined;
            reply('250 2.0.0 Ok: queued as FAKE1');
          } else data.push(line);
          continue;
        }
        state.commands.push(line);
        const verb = line.split(' ')[0]!.toUpperCase();
        if (verb === 'EHLO') reply('250-fake.test\r\n250 AUTH PLAIN LOGIN');
        else if (verb === 'AUTH') reply('235 2.7.0 Authentication successful');
        else if (verb === 'MAIL') reply('250 2.1.0 Ok');
        else if (verb === 'RCPT') reply(opts.rcpt ?? '250 2.1.5 Ok');
        else if (verb === 'DATA') {
          data = [];
          reply('354 End data with <CR><LF>.<CR><LF>');
        } else if (verb === 'QUIT') {
          reply('221 2.0.0 Bye');
          socket.end();
        } else if (verb === 'RSET') reply('250 2.0.0 Ok');
        else reply('502 5.5.2 Error: command not recognized');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    get connections() {
      return state.connections;
    },
    commands: state.commands,
    messages: state.messages,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const message: MailMessage = {
  to: 'ops@example.com',
  subject: 'DOWN: shop',
  text: 'shop is down',
  html: '<p>shop is down</p>',
  messageId: '<n1.0123456789abcdef@telemetry>',
};

/** The default policy: loopback, private ranges and link-local denied. */
const denyAll = new EgressPolicy({ denyPorts: [25] });
const allowLoopback = new EgressPolicy({ allow: ['127.0.0.1/32'], denyPorts: [25] });

describe('the SMTP mailer (unit)', () => {
  const servers: FakeSmtp[] = [];
  const server = async (opts?: Parameters<typeof fakeSmtp>[0]): Promise<FakeSmtp> => {
    const s = await fakeSmtp(opts);
    servers.push(s);
    return s;
  };
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  describe('SMTP URLs', () => {
    it('reads smtp:// (STARTTLS when offered, ?starttls=required insists), smtps:// (implicit TLS) and AUTH from the userinfo', () => {
      expect(parseSmtpUrl('smtp://mail.example.com')).to.deep.include({
        host: 'mail.example.com',
        port: 587,
        secure: false,
        requireTLS: false,
        shown: 'smtp://mail.example.com:587',
      });
      expect(parseSmtpUrl('smtp://u%40x:p%3Ass@mail.example.com:2525?starttls=required')).to.deep.include({
        port: 2525,
        requireTLS: true,
        auth: { user: 'u@x', pass: 'p:ss' },
        shown: 'smtp://mail.example.com:2525',
      });
      expect(parseSmtpUrl('smtps://mail.example.com')).to.deep.include({ port: 465, secure: true });
      // The host parser of http URLs: 2130706433 is 127.0.0.1, judged as such.
      expect(parseSmtpUrl('smtp://2130706433:587').host).to.equal('127.0.0.1');
      expect(parseSmtpUrl('smtp://[::1]:587')).to.deep.include({ host: '::1', shown: 'smtp://[::1]:587' });
    });

    it('names what is wrong with a bad SMTP URL, never its password', () => {
      expect(smtpUrlProblem('http://mail.example.com')).to.match(/smtp:\/\/ or smtps:\/\//);
      expect(smtpUrlProblem('smtp://mail.example.com?tls=yes')).to.match(/unknown option tls=/);
      expect(smtpUrlProblem('smtps://mail.example.com?starttls=required')).to.match(/not smtps/);
      expect(smtpUrlProblem('smtp://mail.example.com/path')).to.match(/no path/);
      expect(() =>
        createMailer({ smtpUrl: 'smtpx://u:hunter2@h', mailFrom: 'a@b.c' }, { policy: denyAll, logger: silentLogger }),
      )
        .to.throw(/^SMTP_URL is not a valid SMTP URL/)
        .and.not.match(/hunter2/);
    });
  });

  describe("the operator's server (SMTP_URL, not judged by the egress policy)", () => {
    it('sends with AUTH from the URL, MAIL_FROM as From and the Message-ID; 250 is delivered; the password is never logged', async () => {
      const s = await server();
      const log = new LineLogger();
      const mailer = createMailer(
        { smtpUrl: `smtp://alerts:hunter2-s3cret@127.0.0.1:${s.port}`, mailFrom: 'Alerts <alerts@example.net>' },
        { policy: denyAll, logger: log.logger },
      );
      const answer = await mailer.send({ ...message, headers: { 'In-Reply-To': '<n0.0123456789abcdef@telemetry>' } });
      expect(answer).to.deep.include({ statusCode: 250 });
      expect(answer.error).to.equal(undefined);
      expect(answer.response).to.match(/^250 2\.0\.0 Ok: queued/);
      expect(smtpVerdict(answer)).to.equal('delivered');
      expect(s.commands.some((c) => c.startsWith('AUTH PLAIN') || c.startsWith('AUTH LOGIN'))).to.equal(true);
      expect(s.commands).to.include('MAIL FROM:<alerts@example.net>');
      expect(s.commands).to.include('RCPT TO:<ops@example.com>');
      const data = s.messages[0]!;
      expect(data).to.match(/^Message-ID: <n1\.0123456789abcdef@telemetry>$/m);
      expect(data).to.match(/^In-Reply-To: <n0\.0123456789abcdef@telemetry>$/m);
      expect(data).to.match(/^Subject: DOWN: shop$/m);
      expect(data).to.match(/multipart\/alternative/);
      const logged = JSON.stringify(log.entries());
      expect(logged).to.include(`smtp://127.0.0.1:${s.port}`);
      expect(logged).not.to.include('hunter2');
    });

    it('answers an SMTP refusal with its reply code: 4xx is retried, 5xx given up', async () => {
      for (const [rcpt, code, verdict] of [
        ['451 4.7.1 Try again later', 451, 'retry'],
        ['550 5.1.1 No such user', 550, 'give_up'],
      ] as const) {
        const s = await server({ rcpt });
        const mailer = createMailer(
          { smtpUrl: `smtp://127.0.0.1:${s.port}`, mailFrom: 'a@example.net' },
          { policy: denyAll, logger: silentLogger },
        );
        const answer = await mailer.send(message);
        expect(answer.statusCode, rcpt).to.equal(code);
        expect(answer.error).to.equal(undefined);
        expect(smtpVerdict(answer)).to.equal(verdict);
      }
    });

    it('answers no answer with statusCode 0 and its kind: connection_refused, timeout (retried)', async () => {
      const closed = await server();
      await closed.close();
      servers.pop();
      const refused = createMailer(
        { smtpUrl: `smtp://127.0.0.1:${closed.port}`, mailFrom: 'a@example.net' },
        { policy: denyAll, logger: silentLogger },
      );
      const a = await refused.send(message);
      expect(a).to.deep.include({ statusCode: 0, error: 'connection_refused' });
      expect(smtpVerdict(a)).to.equal('retry');

      const silent = await server({ silent: true });
      const slow = createMailer(
        { smtpUrl: `smtp://127.0.0.1:${silent.port}`, mailFrom: 'a@example.net' },
        { policy: denyAll, logger: silentLogger, timeoutMs: 300 },
      );
      const started = Date.now();
      const b = await slow.send(message);
      expect(b).to.deep.include({ statusCode: 0, error: 'timeout' });
      expect(Date.now() - started).to.be.lessThan(5000);
      expect(smtpVerdict(b)).to.equal('retry');
    });

    it('says mail is not configured when there is no SMTP_URL and no server of the channel', async () => {
      const mailer = createMailer(
        { smtpUrl: '', mailFrom: 'a@example.net' },
        { policy: denyAll, logger: silentLogger },
      );
      const a = await mailer.send(message);
      expect(a.statusCode).to.equal(0);
      expect(a.detail).to.match(/not configured/);
    });
  });

  describe("a tenant's own server (the egress policy judges it)", () => {
    it('refuses a denied IP literal before any connection: target_not_allowed, given up', async () => {
      const mailer = createMailer(
        { smtpUrl: '', mailFrom: 'a@example.net' },
        { policy: denyAll, logger: silentLogger },
      );
      // NOTE: literals only; nothing may connect to a non-loopback address from a test.
      for (const url of [
        'smtp://10.0.0.1:587',
        'smtps://169.254.169.254',
        'smtp://[::ffff:169.254.169.254]:587',
        'smtp://0xa9.254.169.254:587',
      ]) {
        const started = Date.now();
        const a = await mailer.send(message, { url, from: 'noc@tenant.example' });
        expect(a, url).to.deep.include({ statusCode: 0, error: 'target_not_allowed' });
        expect(Date.now() - started, url).to.be.lessThan(200);
        expect(smtpVerdict(a)).to.equal('give_up');
      }
    });

    it('refuses a denied port (EGRESS_DENY_PORTS: 25) at once, before any lookup; the API can ask the same first', async () => {
      const mailer = createMailer(
        { smtpUrl: '', mailFrom: 'a@example.net' },
        { policy: denyAll, logger: silentLogger },
      );
      const a = await mailer.send(message, { url: 'smtp://mail.tenant.invalid:25', from: 'noc@tenant.example' });
      expect(a).to.deep.include({ statusCode: 0, error: 'target_not_allowed' });
      expect(a.detail).to.match(/port 25/);
      expect(smtpUrlVerdict(denyAll, 'smtp://mail.tenant.invalid:25')).to.deep.include({ allowed: false });
      expect(smtpUrlVerdict(denyAll, 'smtps://u:p@169.254.169.254')).to.deep.include({ allowed: false });
      expect(smtpUrlVerdict(denyAll, 'smtp://mail.tenant.example:587')).to.equal(undefined);
      expect(smtpUrlVerdict(allowLoopback, 'smtp://127.0.0.1:2525')).to.deep.equal({ allowed: true });
    });

    it('never connects to a denied address, as a literal in any form or behind a name', async () => {
      const s = await server();
      const mailer = createMailer(
        { smtpUrl: '', mailFrom: 'a@example.net' },
        { policy: denyAll, logger: silentLogger },
      );
      for (const host of ['127.0.0.1', '2130706433', '127.1', 'localhost']) {
        const a = await mailer.send(message, { url: `smtp://${host}:${s.port}`, from: 'noc@tenant.example' });
        expect(a, host).to.deep.include({ statusCode: 0, error: 'target_not_allowed' });
      }
      expect(s.connections).to.equal(0);
    });

    it('sends through an allowed server, with its own From, on the socket opened to the address judged', async () => {
      const s = await server();
      const mailer = createMailer(
        { smtpUrl: 'smtp://operator.invalid:587', mailFrom: 'operator@example.net' },
        { policy: allowLoopback, logger: silentLogger },
      );
      const a = await mailer.send(message, {
        url: `smtp://noc:pw@localhost:${s.port}`,
        from: 'noc@tenant.example',
      });
      expect(a).to.deep.include({ statusCode: 250 });
      expect(s.connections).to.equal(1);
      expect(s.commands).to.include('MAIL FROM:<noc@tenant.example>');
    });
  });
});
