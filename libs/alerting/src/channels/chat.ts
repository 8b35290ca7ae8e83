import {
  channelConfigProblems,
  type ChannelValidators,
  type ConfigOf,
  type NotificationKind,
} from '@telemetry/contract';
import { maskWebhookUrl } from '@telemetry/store';
import type { Notification } from '../notification.js';
import { causeText, KIND_TITLES, renderMessage } from '../templates.js';
import type { Answer, Channel, ChannelContext, RenderContext } from './channel.js';
import { classifyHttp, endpointOf, sendHttp, type HttpRequest } from './http-send.js';

/**
 * What the chat channels (slack, teams, discord, google_chat, mattermost, telegram, ntfy,
 * pushover) share: the message in words (the channel's templates, or the defaults), each
 * item's parts for the provider's structured fields (a grouped message lists every item
 * there too), the provider's limits, and for the five webhook providers the whole channel
 * but the body.
 */

/** One incident of a message, for a provider's structured parts (fields, facts, buttons). */
export interface ChatItem {
  kind: NotificationKind;
  /** DOWN, UP, STILL DOWN… */
  label: string;
  name: string;
  url: string;
  cause: string;
  /** The monitor's page in the console ('' when unknown). */
  monitorLink: string;
  /** This recipient's signed acknowledge link; absent for a resolved incident. */
  ackLink?: string;
}

export interface ChatMessage {
  kind: NotificationKind;
  title: string;
  text: string;
  grouped: boolean;
  items: ChatItem[];
  /** The only item's acknowledge link (a single-incident message). */
  ackLink?: string;
  /** The only item's console link (a single-incident message), when known. */
  monitorLink?: string;
}

/** A chat channel's acknowledge links name `<type>:<channel name>` as who acknowledged. */
export function chatRecipient(type: string, ctx: RenderContext): string {
  return `${type}:${ctx.name}`;
}

/** The message of `n` for a chat channel of `type`: the templates' title and text, and each item's parts. */
export function chatMessage(n: Notification, type: string, ctx: RenderContext): ChatMessage {
  const recipient = chatRecipient(type, ctx);
  const words = renderMessage(n, ctx.templates, recipient, ctx.now);
  // A template may render nothing (`{{#grouped}}…{{/grouped}}` for one incident): every
  // provider refuses an empty title or text, so the kind's word stands in.
  const title = words.title || KIND_TITLES[n.kind];
  const text = words.text || title;
  const items: ChatItem[] = n.items.map((i) => {
    const ackLink = i.ackLink?.(recipient);
    return {
      kind: i.kind,
      label: KIND_TITLES[i.kind],
      name: i.alert.monitor.name,
      url: i.alert.monitor.url,
      cause: causeText(i.alert),
      monitorLink: i.monitorLink,
      ...(ackLink ? { ackLink } : {}),
    };
  });
  const grouped = items.length > 1;
  const only = grouped ? undefined : items[0];
  return {
    kind: n.kind,
    title,
    text,
    grouped,
    items,
    ...(only?.ackLink ? { ackLink: only.ackLink } : {}),
    ...(only?.monitorLink ? { monitorLink: only.monitorLink } : {}),
  };
}

/** One line per item: `DOWN: name: cause`. */
export function itemLine(i: ChatItem): string {
  return `${i.label}: ${i.name}: ${i.cause}`;
}

const ELLIPSIS = '…';

/** `s` cut to at most `max` UTF-16 units (a provider's character limit), ending in … when cut; never splits a surrogate pair. */
export function truncate(s: string, max: number): string {
  if (s.length <= max) return s;
  let cut = s.slice(0, Math.max(0, max - ELLIPSIS.length));
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return cut + ELLIPSIS;
}

/** `s` cut to at most `max` UTF-8 bytes (a provider's byte limit), ending in … when cut. */
export function truncateBytes(s: string, max: number): string {
  if (Buffer.byteLength(s) <= max) return s;
  let lo = 0;
  let hi = s.length;
  // The longest prefix that fits with the ellipsis (3 bytes in UTF-8).
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (Buffer.byteLength(truncate(s, mid)) <= max) lo = mid;
    else hi = mid - 1;
  }
  return truncate(s, lo);
}

/**
 * Items listed within a budget: as many whole entries as fit in `max` characters, then
 * one line saying how many more there are (the message text names every one anyway).
 */
export function listWithin<T>(items: readonly T[], max: number, line: (i: T) => string, sep = '\n'): string {
  const out: string[] = [];
  let used = 0;
  for (const [k, item] of items.entries()) {
    const l = line(item);
    const rest = `${sep}… and ${items.length - k} more`;
    if (used + l.length + sep.length + rest.length > max && k < items.length - 1) {
      out.push(`… and ${items.length - k} more`);
      break;
    }
    out.push(l);
    used += l.length + sep.length;
  }
  return truncate(out.join(sep), max);
}

/** A colour per kind: red for down, green for up, amber for acknowledged, blue for a test. */
export function kindColor(kind: NotificationKind): number {
  if (kind === 'up') return 0x1e8e3e;
  if (kind === 'acknowledged') return 0xf9ab00;
  if (kind === 'test') return 0x1a73e8;
  return 0xd93025;
}

/** `#rrggbb` of kindColor. */
export function kindHex(kind: NotificationKind): string {
  return `#${kindColor(kind).toString(16).padStart(6, '0')}`;
}

/** A JSON answer's field, or undefined when the body is not JSON or lacks it. */
export function jsonField(body: string | undefined, read: (json: Record<string, unknown>) => unknown): unknown {
  if (!body) return undefined;
  try {
    const json: unknown = JSON.parse(body);
    return typeof json === 'object' && json !== null ? read(json as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A 429 whose wait is in its JSON body (Telegram's `parameters.retry_after`, Discord's
 * `retry_after`, in seconds) rather than in a Retry-After header: the answer with that wait.
 */
export function bodyRetryAfter(a: Answer, read: (json: Record<string, unknown>) => unknown): Answer {
  if (a.statusCode !== 429 || a.retryAfterMs !== undefined) return a;
  const seconds = jsonField(a.response, read);
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) return a;
  return { ...a, retryAfterMs: Math.min(Math.ceil(seconds * 1000), 3_600_000) };
}

/** The chat channel types (this module's). */
export type ChatType = 'slack' | 'teams' | 'discord' | 'google_chat' | 'mattermost' | 'telegram' | 'ntfy' | 'pushover';

/** What makes one chat channel: where its deliveries queue and how they are shown, its body and its request. */
export interface ChatChannelSpec<T extends ChatType, B> {
  type: T;
  /** Deliveries with the same endpoint go one at a time: the provider's origin, or its API plus the chat/topic. */
  endpoint: (c: ConfigOf<T>) => string;
  /** No secret in it. */
  shown: (c: ConfigOf<T>) => string;
  body: (m: ChatMessage, c: ConfigOf<T>) => B;
  /** The HTTP request of a rendered body (the secrets of the config go in here, never into the body). */
  request: (r: B, c: ConfigOf<T>) => HttpRequest;
  /** Reads what the provider says beyond the status (a 429's wait in its body). */
  answer?: (a: Answer) => Answer;
}

/** A chat channel: groups, never pages, validated by its contract schema, judged as any HTTP answer. */
export function chatChannel<T extends ChatType, B>(spec: ChatChannelSpec<T, B>): Channel<ConfigOf<T>, B> {
  const { type, answer = (a: Answer) => a } = spec;
  return {
    type,
    groups: true,
    paging: false,
    validate: (config: unknown, v: ChannelValidators) => channelConfigProblems(v, type, config),
    endpoint: spec.endpoint,
    shown: spec.shown,
    render: (n: Notification, c: ConfigOf<T>, ctx: RenderContext) => spec.body(chatMessage(n, type, ctx), c),
    send: async (r: B, c: ConfigOf<T>, ctx: ChannelContext) => answer(await sendHttp(spec.request(r, c), ctx)),
    classify: classifyHttp,
  };
}

/** The chat types sent to a webhook URL of the provider's (the URL holds the secret). */
export type WebhookChatType = 'slack' | 'teams' | 'discord' | 'google_chat' | 'mattermost';

/**
 * A channel posting JSON to its config's webhook URL: queued per origin, shown as scheme
 * and host (the path holds the token). `body` builds the provider's JSON from the message.
 */
export function webhookChatChannel<T extends WebhookChatType, B>(
  type: T,
  body: (m: ChatMessage, c: ConfigOf<T>) => B,
  answer?: (a: Answer) => Answer,
): Channel<ConfigOf<T>, B> {
  return chatChannel<T, B>({
    type,
    endpoint: (c) => endpointOf(c.url),
    shown: (c) => maskWebhookUrl(c.url),
    body,
    request: (r, c) => ({ url: c.url, body: JSON.stringify(r) }),
    ...(answer ? { answer } : {}),
  });
}

/** An API base without its trailing slashes (`https://api.telegram.org`). */
export function apiBase(url: string | undefined, fallback: string): string {
  return (url ?? fallback).replace(/\/+$/, '');
}

/**
 * `s` escaped with `escape` in at most `max` characters: cut before escaping (so no
 * escape is split), shorter again while the escaped form is too long.
 */
export function fitEscaped(s: string, max: number, escape: (s: string) => string): string {
  let budget = max;
  for (;;) {
    const out = escape(truncate(s, budget));
    if (out.length <= max || budget <= 1) return out.length <= max ? out : '';
    budget -= out.length - max;
  }
}

/** For providers of plain text only: a grouped message's line per item with its acknowledge link. */
export function ackLines(m: ChatMessage): string[] {
  if (!m.grouped) return [];
  return m.items.map((i) => `• ${itemLine(i)}${i.ackLink ? ` · Acknowledge: ${i.ackLink}` : ''}`);
}
