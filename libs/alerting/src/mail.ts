import type { Answer } from './channels/channel.js';

/**
 * Mail (docs/alerting.md, "Mail settings"): one SMTP server for all mail the service
 * sends (SMTP_URL, MAIL_FROM), or a tenant's own server for its email channels. The
 * implementation lives in mailer.ts; channels and tests see this interface.
 */

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** `<…@…>`: stable per notification and recipient, so a redelivery is recognisable. */
  messageId: string;
  headers?: Record<string, string>;
}

/** A tenant's own server (an email channel's `smtp`). */
export interface MailServer {
  url: string;
  from: string;
}

export interface Mailer {
  /** Sends one message; never throws (an SMTP refusal is an Answer with its reply code as statusCode). */
  send(message: MailMessage, server?: MailServer): Promise<Answer>;
}
