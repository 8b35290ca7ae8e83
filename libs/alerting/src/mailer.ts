import { connect, isIP } from 'node:net';
import nodemailer from 'nodemailer';
import type { SMTPTransportGetSocket, SMTPTransportOptions } from 'nodemailer/lib/smtp-transport';
import type { CheckError } from '@telemetry/contract';
import { egressDenied, unbracket, type EgressPolicy, type EgressVerdict, type Logger } from '@telemetry/platform';
import type { Answer } from './channels/channel.js';
import type { Mailer, MailMessage, MailServer } from './mail.js';

/**
 * The SMTP mailer (docs/alerting.md, "Mail settings"), on nodemailer (MIT-0): the operator's
 * server (SMTP_URL, MAIL_FROM) or a tenant's own (an email channel's `smtp`), which is a
 * target like any other: its address is judged by the egress policy before any connection,
 * and the socket nodemailer speaks over is one opened here to exactly the address judged.
 * One connection per message (alerts are few; a pool would hold sockets to tenants' servers).
 */

/** The mail settings (mailSpec in config.ts). */
export interface MailConfig {
  smtpUrl: string;
  mailFrom: string;
}

/** What an SMTP URL says: where, how, and as whom (never logged: `shown` is). */
export interface SmtpTarget {
  /** A name, or an IP literal without brackets. */
  host: string;
  port: number;
  /** smtps://: TLS from the first byte (implicit TLS, port 465 by default). */
  secure: boolean;
  /** smtp://…?starttls=required: refuse to go on without STARTTLS. */
  requireTLS: boolean;
  auth?: { user: string; pass: string };
  /** `smtp://host:port`: no credentials. */
  shown: string;
}

/**
 * Parses `smtp://user:pass@host:587[?starttls=required]` or `smtps://user:pass@host:465`.
 * Throws with a message that never holds the URL (it may carry a password).
 */
export function parseSmtpUrl(raw: string): SmtpTarget {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error('not a URL');
  }
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:') throw new Error('the scheme must be smtp:// or smtps://');
  if (!u.hostname) throw new Error('it names no host');
  if (u.pathname !== '' && u.pathname !== '/') throw new Error('it may have no path');
  for (const [k, v] of u.searchParams) {
    if (k !== 'starttls' || v !== 'required') throw new Error(`unknown option ${k}= (only starttls=required)`);
  }
  const secure = u.protocol === 'smtps:';
  if (secure && u.searchParams.has('starttls')) throw new Error('starttls=required is for smtp://, not smtps://');
  // The WHATWG host parser of http URLs: `127.1` and `2130706433` become the literal they stand for.
  const host = unbracket(new URL(`http://${u.hostname}/`).hostname);
  const port = u.port ? Number(u.port) : secure ? 465 : 587;
  const user = decodeURIComponent(u.username);
  return {
    host,
    port,
    secure,
    requireTLS: u.searchParams.get('starttls') === 'required',
    ...(user ? { auth: { user, pass: decodeURIComponent(u.password) } } : {}),
    shown: `${u.protocol}//${isIP(host) === 6 ? `[${host}]` : host}:${port}`,
  };
}

/** What is wrong with an SMTP URL (undefined: nothing); for an email channel's `/smtp/url`. */
export function smtpUrlProblem(raw: string): string | undefined {
  try {
    parseSmtpUrl(raw);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** An SMTP reply code's meaning, as the channels' dispatcher judges answers. */
export function smtpVerdict(a: Answer): 'delivered' | 'retry' | 'give_up' {
  if (a.error === undefined && a.statusCode >= 200 && a.statusCode < 300) return 'delivered';
  // Refused before anything was sent: another attempt would be refused too.
  if (a.error === 'target_not_allowed') return 'give_up';
  if (a.error !== undefined || a.statusCode === 0) return 'retry';
  // 4xx: try again later (greylisting, a full queue); 5xx: the server refuses for good.
  return a.statusCode >= 400 && a.statusCode < 500 ? 'retry' : 'give_up';
}

/** The error kind of a failure without an SMTP reply. */
function errorKind(err: { code?: string; message?: string }): CheckError {
  const code = err.code ?? '';
  const message = err.message ?? '';
  if (code === 'EGRESS_DENIED') return 'target_not_allowed';
  if (code === 'ETIMEDOUT' || /timeout|timed out/i.test(message)) return 'timeout';
  if (/ECONNREFUSED/.test(code) || /ECONNREFUSED/.test(message)) return 'connection_refused';
  if (code === 'EDNS' || /ENOTFOUND|EAI_AGAIN/.test(`${code} ${message}`)) return 'dns';
  if (code === 'ETLS' || /TLS|SSL|certificate|CERT_/i.test(message)) return 'tls';
  if (/ECONNRESET|EPIPE/.test(`${code} ${message}`)) return 'connection_reset';
  return 'network';
}

/** A sending failure as an Answer: the server's reply code when it answered, else 0 and the kind. */
function failureAnswer(err: unknown): Answer {
  const e = (err ?? {}) as { code?: string; message?: string; responseCode?: number; response?: string };
  const detail = String(e.message ?? err).slice(0, 500);
  // A STARTTLS that failed (or was refused by a server that lacks it) is a TLS failure, whatever it answered.
  const tls = e.code === 'ETLS';
  if (typeof e.responseCode === 'number' && e.responseCode >= 200 && e.code !== 'EGRESS_DENIED' && !tls) {
    return { statusCode: e.responseCode, detail, response: String(e.response ?? '').slice(0, 1024) };
  }
  return { statusCode: 0, error: errorKind(e), detail };
}

/** The policy's verdict before any lookup: on an IP literal host, or a denied port; undefined for a name (judged at connect). */
function verdictOf(policy: EgressPolicy, t: SmtpTarget): EgressVerdict | undefined {
  return policy.checkUrl(new URL(`http://${isIP(t.host) === 6 ? `[${t.host}]` : t.host}:${t.port}/`));
}

/**
 * What the egress policy says of a tenant's SMTP URL before any lookup (for the API, which
 * refuses a denied address at once): undefined when its host is a name on an allowed port.
 * Throws, like parseSmtpUrl, on what is not an SMTP URL.
 */
export function smtpUrlVerdict(policy: EgressPolicy, url: string): EgressVerdict | undefined {
  return verdictOf(policy, parseSmtpUrl(url));
}

/** The refusal of an address or port the policy denies (judged before anything connects). */
function literalRefused(policy: EgressPolicy, t: SmtpTarget): Answer | undefined {
  const verdict = verdictOf(policy, t);
  return !verdict || verdict.allowed
    ? undefined
    : { statusCode: 0, error: 'target_not_allowed', detail: verdict.reason };
}

/**
 * nodemailer's socket for a tenant's server: resolved once, the address judged by the policy
 * and that exact address connected to (pinnedLookup), within `timeoutMs`.
 */
function egressSocket(policy: EgressPolicy, t: SmtpTarget, timeoutMs: number): SMTPTransportGetSocket {
  return (_options, callback) => {
    const refused = literalRefused(policy, t);
    if (refused) {
      callback(egressDenied(t.shown));
      return;
    }
    const socket = connect({ host: t.host, port: t.port, lookup: policy.pinnedLookup(t.port) });
    const timer = setTimeout(() => {
      socket.destroy(Object.assign(new Error(`no connection within ${timeoutMs} ms`), { code: 'ETIMEDOUT' }));
    }, timeoutMs);
    const fail = (err: Error): void => {
      clearTimeout(timer);
      callback(err);
    };
    socket.once('error', fail);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeListener('error', fail);
      callback(null, { connection: socket });
    });
  };
}

export interface MailerDeps {
  /** Judges a tenant's own server; the operator's SMTP_URL is not judged. */
  policy: EgressPolicy;
  logger: Logger;
  /** One connection's greeting, and each SMTP command's answer, within this long (default 30 s). */
  timeoutMs?: number;
}

/**
 * The mailer of a composition root. Throws at once when SMTP_URL is set but is no SMTP URL
 * (the message names the variable, never its value).
 */
export function createMailer(config: MailConfig, deps: MailerDeps): Mailer {
  const { policy, logger } = deps;
  const timeoutMs = deps.timeoutMs ?? 30_000;
  let operator: SmtpTarget | undefined;
  if (config.smtpUrl) {
    try {
      operator = parseSmtpUrl(config.smtpUrl);
    } catch (err) {
      throw new Error(`SMTP_URL is not a valid SMTP URL: ${(err as Error).message}`);
    }
  }

  const transportOptions = (t: SmtpTarget, tenant: boolean): SMTPTransportOptions => ({
    host: t.host,
    port: t.port,
    secure: t.secure,
    requireTLS: t.requireTLS,
    ...(t.auth ? { auth: t.auth } : {}),
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    dnsTimeout: timeoutMs,
    // Never a file or URL as content, never nodemailer's own logging (it could show AUTH).
    disableFileAccess: true,
    disableUrlAccess: true,
    logger: false,
    debug: false,
    ...(tenant ? { getSocket: egressSocket(policy, t, timeoutMs) } : {}),
  });

  return {
    async send(message: MailMessage, server?: MailServer): Promise<Answer> {
      let target = operator;
      if (server) {
        try {
          target = parseSmtpUrl(server.url);
        } catch (err) {
          return { statusCode: 0, error: 'network', detail: `the channel's smtp.url: ${(err as Error).message}` };
        }
        const refused = literalRefused(policy, target);
        if (refused) return refused;
      }
      if (!target) {
        return {
          statusCode: 0,
          error: 'network',
          detail: "mail is not configured: set SMTP_URL, or the channel's smtp",
        };
      }
      const transport = nodemailer.createTransport(transportOptions(target, server !== undefined));
      try {
        const info = await transport.sendMail({
          from: server?.from ?? config.mailFrom,
          to: message.to,
          subject: message.subject,
          text: message.text,
          html: message.html,
          messageId: message.messageId,
          ...(message.headers ? { headers: message.headers } : {}),
        });
        const response = String(info.response ?? '');
        const code = Number(/^\d{3}/.exec(response)?.[0] ?? 250);
        logger.debug('mail sent', { server: target.shown, message_id: message.messageId, reply: code });
        return { statusCode: code, response: response.slice(0, 1024) };
      } catch (err) {
        const answer = failureAnswer(err);
        logger.debug('mail not sent', {
          server: target.shown,
          message_id: message.messageId,
          reply: answer.statusCode,
          error: answer.error,
        });
        return answer;
      } finally {
        transport.close();
      }
    },
  };
}
