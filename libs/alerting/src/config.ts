import { v } from '@telemetry/platform';

/**
 * Alerting settings shared by the check runner (which sends) and the query service
 * (which sends test notifications and answers acknowledge links): docs/alerting.md.
 */
export const alertingSpec = {
  publicUrl: v.url(
    'PUBLIC_URL',
    'http://127.0.0.1:8082',
    "the query service's address as people reach it: the base of the console links and acknowledge links in notifications",
  ),
  ackLinkTtlSeconds: v.int(
    'ACK_LINK_TTL_SECONDS',
    7 * 86_400,
    'how long an acknowledge link in a notification works',
    60,
    90 * 86_400,
  ),
  alertMinDelaySeconds: v.int(
    'ALERT_MIN_DELAY_SECONDS',
    60,
    'the shortest escalation delay and reminder interval accepted (production minimum 60; tests lower it)',
    1,
    3600,
  ),
} as const;

/**
 * The operator's mail settings (docs/alerting.md, "Mail settings"): one SMTP server for
 * all mail the service sends. Without SMTP_URL, email channels answer that mail is not
 * configured (and a channel with its own `smtp` still sends).
 */
export const mailSpec = {
  smtpUrl: v.secret(
    'SMTP_URL',
    '',
    'the SMTP server for all mail: smtp://user:pass@host:587 (STARTTLS when offered; ?starttls=required insists) or smtps://user:pass@host:465 (implicit TLS); empty: no mail',
  ),
  mailFrom: v.str('MAIL_FROM', 'Telemetry Alerts <alerts@localhost>', 'the From address of all mail'),
} as const;
