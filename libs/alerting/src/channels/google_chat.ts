import type { GoogleChatChannelConfig } from '@telemetry/contract';
import { truncate, truncateBytes, webhookChatChannel, type ChatMessage } from './chat.js';

/**
 * Google Chat: a space's incoming webhook
 * (https://developers.google.com/workspace/chat/quickstart/webhooks) sent a text message
 * (https://developers.google.com/workspace/chat/format-messages): the title in bold, the
 * text, and for a grouped message a line per item with its acknowledge link, in Chat's
 * `<url|label>` link syntax. A message is at most 32,000 bytes.
 */

const LIMITS = { bytes: 32_000, title: 500 } as const;

export interface GoogleChatMessage {
  text: string;
}

/** Chat's link syntax; `|`, `<` and `>` would end it early, so a label holds none. */
function chatLink(url: string, label: string): string {
  return url ? `<${url}|${label.replace(/[|<>]/g, ' ')}>` : label;
}

export function googleChatBody(m: ChatMessage): GoogleChatMessage {
  const lines = [`*${truncate(m.title, LIMITS.title)}*`, m.text];
  if (m.grouped) {
    for (const i of m.items) {
      const ack = i.ackLink ? ` ${chatLink(i.ackLink, 'Acknowledge')}` : '';
      lines.push(`• ${chatLink(i.monitorLink, `${i.label}: ${i.name}`)}: ${i.cause}${ack}`);
    }
  }
  return { text: truncateBytes(lines.join('\n'), LIMITS.bytes) };
}

export const googleChatChannel = webhookChatChannel('google_chat', (m: ChatMessage, _c: GoogleChatChannelConfig) =>
  googleChatBody(m),
);
