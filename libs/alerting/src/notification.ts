import type { AlertMessage, NotificationKind, StateAlert } from '@telemetry/contract';

/**
 * What a channel is given to send (docs/alerting.md, "What is sent"): one notification
 * about one incident, or several grouped into one message when many would reach the
 * channel at once. The dispatcher builds it; a channel renders it (templates.ts for the
 * words, its own module for the provider's body) and sends it.
 */

/** One incident's part of a notification. */
export interface NotifiedAlert {
  kind: NotificationKind;
  /** The incident's down (or up) alert: monitor, incident, check. */
  alert: StateAlert;
  /** For `up`: the down alert that opened the incident (when it started, and why). */
  opening?: StateAlert;
  /** The acknowledgement behind an `acknowledged` notification, if any. */
  acknowledgement?: AlertMessage;
  /** 1-based: the escalation step notified (escalation), or the reminder's number (reminder). */
  step?: number;
  reminder?: number;
  /** Who acknowledged the incident, when someone has. */
  acknowledged_by?: string;
  /** The monitor's page in the console. */
  monitorLink: string;
  /**
   * A signed, expiring link whose page acknowledges the incident as `recipient`
   * (`email:ops@example.com`, `slack:<channel name>`); absent for a resolved incident.
   */
  ackLink?: (recipient: string) => string;
}

export interface Notification {
  /** Stable per notification and channel (a redelivery has the same): email Message-ID, log lines. */
  id: string;
  /** The kind of the first item (a group holds items of one kind or mixed: see items). */
  kind: NotificationKind;
  /** One item, or several for a grouped message. */
  items: readonly NotifiedAlert[];
  /** 1 for the first attempt to this channel. */
  attempt: number;
}

/** The first item: what a one-incident notification is about. */
export function firstItem(n: Notification): NotifiedAlert {
  const first = n.items[0];
  if (!first) throw new Error(`notification ${n.id} has no items`);
  return first;
}
