import type { EgressPolicy, Logger } from '@telemetry/platform';
import type { Mailer } from './mail.js';

/** The mail settings (mailSpec in config.ts). */
export interface MailConfig {
  smtpUrl: string;
  mailFrom: string;
}

/**
 * TEMPORARY scaffold (issue 40): the SMTP mailer is being written. Refuses every message.
 * `policy` judges a tenant's own server; the operator's SMTP_URL is not judged.
 */
export function createMailer(config: MailConfig, deps: { policy: EgressPolicy; logger: Logger }): Mailer {
  void config;
  void deps;
  return { send: () => Promise.resolve({ statusCode: 0, error: 'network', detail: 'mail is not built yet' }) };
}
