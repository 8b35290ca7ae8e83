import type { TelegramChannelConfig } from '@telemetry/contract';
import { originOf } from '@telemetry/store';
import {
  apiBase,
  bodyRetryAfter,
  chatChannel,
  fitEscaped,
  itemLine,
  listWithin,
  truncate,
  type ChatMessage,
} from './chat.js';

/**
 * Telegram: the Bot API's sendMessage (https://core.telegram.org/bots/api#sendmessage),
 * POSTed as JSON to `{api_url}/bot{bot_token}/sendMessage`: the chat, the text in HTML
 * parse mode (https://core.telegram.org/bots/api#html-style: `&`, `<` and `>` escaped),
 * link previews off, and URL buttons (inline keyboard) to acknowledge and to open the
 * monitor. A 429 says how long to wait in `parameters.retry_after` (seconds) of its body.
 * The token is in the URL only: never in what render returns, in endpoint or in shown.
 */

const DEFAULT_API = 'https://api.telegram.org';
/** Text is 1-4096 characters after entities parsing; the HTML source is kept within that, so the text is too. */
const LIMITS = { text: 4096, title: 256, list: 1500, name: 200 } as const;

export function telegramEscape(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

export interface TelegramMessage {
  chat_id: string;
  text: string;
  parse_mode: 'HTML';
  link_preview_options: { is_disabled: true };
  reply_markup?: { inline_keyboard: { text: string; url: string }[][] };
}

function anchor(url: string, label: string): string {
  const l = telegramEscape(truncate(label, LIMITS.name));
  return url ? `<a href="${telegramEscape(url)}">${l}</a>` : l;
}

export function telegramBody(m: ChatMessage, c: TelegramChannelConfig): TelegramMessage {
  const title = `<b>${telegramEscape(truncate(m.title, LIMITS.title))}</b>`;
  const list = m.grouped
    ? listWithin(m.items, LIMITS.list, (i) => {
        const ack = i.ackLink ? ` · ${anchor(i.ackLink, 'Acknowledge')}` : '';
        return `• ${anchor(i.monitorLink, itemLine(i))}${ack}`;
      })
    : '';
  const room = LIMITS.text - title.length - list.length - 2;
  const text = [title, fitEscaped(m.text, room, telegramEscape), list].filter((s) => s !== '').join('\n');
  const buttons = [
    ...(m.ackLink ? [[{ text: 'Acknowledge', url: m.ackLink }]] : []),
    ...(m.monitorLink ? [[{ text: 'Open the monitor', url: m.monitorLink }]] : []),
  ];
  return {
    chat_id: c.chat_id,
    text,
    parse_mode: 'HTML',
    link_preview_options: { is_disabled: true },
    ...(buttons.length > 0 ? { reply_markup: { inline_keyboard: buttons } } : {}),
  };
}

function where(c: TelegramChannelConfig): string {
  return `${originOf(apiBase(c.api_url, DEFAULT_API))} chat ${c.chat_id}`;
}

export const telegramChannel = chatChannel<'telegram', TelegramMessage>({
  type: 'telegram',
  // One chat's queue: a chat that refuses (or a bot blocked in it) holds no other.
  endpoint: where,
  shown: where,
  body: telegramBody,
  request: (r, c) => ({
    url: `${apiBase(c.api_url, DEFAULT_API)}/bot${c.bot_token}/sendMessage`,
    body: JSON.stringify(r),
  }),
  answer: (a) =>
    bodyRetryAfter(a, (json) => (json['parameters'] as Record<string, unknown> | undefined)?.['retry_after']),
});
