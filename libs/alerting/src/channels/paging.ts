import { firstItem, type Notification, type NotifiedAlert } from '../notification.js';
import { causeText, renderMessage } from '../templates.js';
import type { RenderContext } from './channel.js';

/**
 * What PagerDuty and Opsgenie share: each of our incidents is theirs too, keyed by our
 * incident id (a test notification by its own key, so it never touches a real incident),
 * and their bodies carry the same facts: the rendered title and text, the monitor, the
 * cause, the check and the links (console, acknowledge).
 */

/** The client named in their incidents. */
export const CLIENT = 'Telemetry';

/** Our incident's key at the provider: the incident id, or `test-<n.id>` for a test. */
export function pagingKey(n: Notification): string {
  return n.kind === 'test' ? `test-${n.id}` : firstItem(n).alert.incident_id;
}

/** `s` cut to `max` characters (the provider's limit), marked with an ellipsis when cut. */
export function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

/** The host of the monitor's URL, else its id: what is affected. */
export function sourceOf(item: NotifiedAlert): string {
  try {
    return new URL(item.alert.monitor.url).host || item.alert.monitor_id;
  } catch {
    return item.alert.monitor_id;
  }
}

export interface PagingFacts {
  item: NotifiedAlert;
  /** The rendered title (e.g. `DOWN: shop`) and text (the channel's templates or the defaults). */
  title: string;
  text: string;
  cause: string;
  /** The console's page of the monitor ('' when unknown). */
  monitorLink: string;
  /** The acknowledge link for `<type>:<channel name>`, when the incident is open. */
  ackLink?: string;
}

/** The facts of a (one-incident) notification for the channel `type`. */
export function pagingFacts(type: string, n: Notification, ctx: RenderContext): PagingFacts {
  const item = firstItem(n);
  const recipient = `${type}:${ctx.name}`;
  const { title, text } = renderMessage(n, ctx.templates, recipient, ctx.now);
  const ackLink = item.ackLink?.(recipient);
  return {
    item,
    title,
    text,
    cause: causeText(item.alert),
    monitorLink: item.monitorLink,
    ...(ackLink ? { ackLink } : {}),
  };
}
