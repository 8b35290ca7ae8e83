import { createHash } from 'node:crypto';
import { channelConfigProblems, type ChannelValidators, type EmailChannelConfig } from '@telemetry/contract';
import type { MailMessage, MailServer } from '../mail.js';
import { smtpUrlProblem, smtpVerdict } from '../mailer.js';
import type { Notification, NotifiedAlert } from '../notification.js';
import { escapeHtml, renderMessage } from '../templates.js';
import type { Answer, Channel, ChannelContext, RenderContext } from './channel.js';

/**
 * Email (docs/alerting.md, "Email"): one message per address of `to`, each with its own
 * acknowledge link (recipient `email:<address>`), a text and an HTML part, and a Message-ID
 * stable per notification and recipient (a redelivery is the same message to mail clients).
 * Sent through the operator's SMTP_URL, or the channel's own `smtp` server (judged by the
 * egress policy in the mailer).
 */

/** What one attempt sends: one message per recipient. */
export interface EmailRendered {
  messages: MailMessage[];
}

/** The first 16 hex digits of SHA-256 of `s`: a short, stable, non-reversible tag of an address. */
function tag(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 16);
}

/** A Message-ID's left part: only what RFC 5322's dot-atom allows, stable for the same input. */
function atom(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]/g, '-');
}

/** `<{n.id}.{sha256(recipient) first 16 hex}@telemetry>` */
export function emailMessageId(notificationId: string, recipient: string): string {
  return `<${atom(notificationId)}.${tag(recipient)}@telemetry>`;
}

/**
 * Every message about one incident to one recipient names the same thread root in
 * References (and, after the first, In-Reply-To), so mail clients show an incident's down,
 * reminders, acknowledgement and up as one conversation.
 */
export function incidentThreadId(incidentId: string, recipient: string): string {
  return `<incident.${atom(incidentId)}.${tag(recipient)}@telemetry>`;
}

const COLORS: Record<string, string> = {
  down: '#cf222e',
  reminder: '#cf222e',
  escalation: '#cf222e',
  up: '#1a7f37',
  acknowledged: '#9a6700',
  test: '#0969da',
};

function button(href: string, label: string): string {
  return (
    `<a href="${escapeHtml(href)}" style="display:inline-block;padding:10px 18px;background:#1f6feb;color:#ffffff;` +
    `text-decoration:none;border-radius:6px;font-weight:600">${escapeHtml(label)}</a>`
  );
}

/** The acknowledge links of a notification for `recipient`: one per item that has one. */
function ackLinks(items: readonly NotifiedAlert[], recipient: string): { name: string; href: string }[] {
  return items.flatMap((i) => (i.ackLink ? [{ name: i.alert.monitor.name, href: i.ackLink(recipient) }] : []));
}

/** The HTML part: the rendered (HTML-escaped) title and text in a small inline-styled layout. */
function htmlPart(n: Notification, title: string, text: string, recipient: string): string {
  const color = COLORS[n.kind] ?? '#1f2328';
  const links = ackLinks(n.items, recipient);
  const acks =
    links.length === 1
      ? `<p style="margin:24px 0 0">${button(links[0]!.href, 'Acknowledge')}</p>`
      : links.map((l) => `<p style="margin:12px 0 0">${button(l.href, `Acknowledge ${l.name}`)}</p>`).join('');
  const monitor = n.items.length === 1 && n.items[0]!.monitorLink ? n.items[0]!.monitorLink : '';
  return [
    '<!DOCTYPE html><html><head><meta charset="utf-8"></head>',
    '<body style="margin:0;padding:0;background:#f6f8fa">',
    '<div style="max-width:600px;margin:0 auto;padding:24px;background:#ffffff;',
    "font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#1f2328\">",
    `<h1 style="margin:0 0 16px;font-size:20px;color:${color}">${title}</h1>`,
    `<div style="font-size:14px;line-height:1.5;white-space:pre-wrap">${text}</div>`,
    acks,
    monitor
      ? `<p style="margin:24px 0 0;font-size:13px"><a href="${escapeHtml(monitor)}" style="color:#0969da">Open the monitor</a></p>`
      : '',
    '<p style="margin:24px 0 0;font-size:12px;color:#656d76">Sent by Telemetry alerting.</p>',
    '</div></body></html>',
  ].join('');
}

/** One message of `n` to `address`. */
export function renderEmail(n: Notification, address: string, ctx: RenderContext): MailMessage {
  const recipient = `email:${address}`;
  const plain = renderMessage(n, ctx.templates, recipient, ctx.now, 'text');
  const html = renderMessage(n, ctx.templates, recipient, ctx.now, 'html');
  const headers: Record<string, string> = {};
  const only = n.items.length === 1 ? n.items[0]! : undefined;
  if (only && n.kind !== 'test') {
    const root = incidentThreadId(only.alert.incident_id, recipient);
    headers.References = root;
    if (n.kind !== 'down') headers['In-Reply-To'] = root;
  }
  return {
    to: address,
    // One line, as a Subject must be.
    subject: plain.title.replace(/\s+/g, ' ').slice(0, 200),
    text: plain.text,
    html: htmlPart(n, html.title, html.text, recipient),
    messageId: emailMessageId(n.id, recipient),
    headers,
  };
}

/** The worst of several answers: one worth retrying, else one given up, else the last delivered. */
function worst(answers: Answer[]): Answer {
  return (
    answers.find((a) => smtpVerdict(a) === 'retry') ??
    answers.find((a) => smtpVerdict(a) === 'give_up') ??
    answers[answers.length - 1] ?? { statusCode: 0, error: 'network', detail: 'no recipients' }
  );
}

export const emailChannel: Channel<EmailChannelConfig, EmailRendered> = {
  type: 'email',
  groups: true,
  paging: false,

  validate(config: unknown, v: ChannelValidators) {
    const problems = channelConfigProblems(v, 'email', config);
    const url = (config as { smtp?: { url?: unknown } } | null)?.smtp?.url;
    const bad = problems.length === 0 && typeof url === 'string' ? smtpUrlProblem(url) : undefined;
    return bad ? [...problems, { path: '/smtp/url', message: bad }] : problems;
  },

  // One queue per server and set of recipients: a greylisting recipient holds only their own mail.
  endpoint(c) {
    const to = tag([...c.to].sort().join(','));
    if (!c.smtp) return `smtp:operator ${to}`;
    try {
      return `smtp:${new URL(c.smtp.url).host} ${to}`;
    } catch {
      return `smtp:tenant ${to}`;
    }
  },

  // Addresses are personal data: the count and the domains only.
  shown(c) {
    const domains = [...new Set(c.to.map((a) => `@${a.slice(a.lastIndexOf('@') + 1).toLowerCase()}`))].sort();
    return `email: ${c.to.length} recipient${c.to.length === 1 ? '' : 's'} ${domains.join(', ')}`;
  },

  render: (n: Notification, c: EmailChannelConfig, ctx: RenderContext): EmailRendered => ({
    messages: c.to.map((address) => renderEmail(n, address, ctx)),
  }),

  /**
   * Every recipient is sent to, whatever another answered. NOTE: a retry sends to all of
   * them again; those who had it get the same Message-ID, which mail clients treat as one.
   */
  async send(r: EmailRendered, c: EmailChannelConfig, ctx: ChannelContext): Promise<Answer> {
    const server: MailServer | undefined = c.smtp ? { url: c.smtp.url, from: c.smtp.from } : undefined;
    const answers: Answer[] = [];
    for (const m of r.messages) answers.push(await ctx.mail.send(m, server));
    return worst(answers);
  },

  classify: smtpVerdict,
};
