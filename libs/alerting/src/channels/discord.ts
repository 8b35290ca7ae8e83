import type { DiscordChannelConfig } from '@telemetry/contract';
import { bodyRetryAfter, kindColor, truncate, webhookChatChannel, type ChatItem, type ChatMessage } from './chat.js';

/**
 * Discord: a channel webhook (https://discord.com/developers/docs/resources/webhook#execute-webhook)
 * sent `content` (the title) and one embed (https://discord.com/developers/docs/resources/message#embed-object):
 * title, description (the text), colour, the monitor's link, and a field per item when
 * grouped or the acknowledge link. `allowed_mentions: {parse: []}`: a monitor named
 * `@everyone` pings nobody. A 429's wait is in the Retry-After header and, in seconds,
 * in the body's `retry_after`.
 */

/** Discord's limits: content 2000; embed title 256, description 4096, 25 fields of name 256 and value 1024, 6000 in all. */
const LIMITS = {
  content: 2000,
  title: 256,
  description: 4096,
  fields: 25,
  name: 256,
  value: 1024,
  embed: 6000,
} as const;

interface Field {
  name: string;
  value: string;
  inline?: boolean;
}

export interface DiscordMessage {
  content: string;
  embeds: { title: string; description: string; color: number; url?: string; fields?: Field[] }[];
  allowed_mentions: { parse: [] };
}

function itemField(i: ChatItem): Field {
  const name = truncate(`${i.label}: ${i.name}`, LIMITS.name);
  const links = [i.monitorLink ? `[Monitor](${i.monitorLink})` : '', i.ackLink ? `[Acknowledge](${i.ackLink})` : ''];
  const value = [i.cause, ...links].filter((s) => s !== '').join(' · ');
  return { name, value: truncate(value, LIMITS.value) };
}

/** Fields within the count and the embed's total, the last saying how many more there are. */
function fieldsWithin(items: readonly ChatItem[], budget: number): Field[] {
  const out: Field[] = [];
  let used = 0;
  for (const [k, item] of items.entries()) {
    const f = itemField(item);
    const last = k === items.length - 1;
    // Room for the closing "… and N more" field unless this is the last item.
    const slots = last ? LIMITS.fields : LIMITS.fields - 1;
    const room = last ? 0 : 40;
    if (out.length >= slots || used + f.name.length + f.value.length + room > budget) {
      out.push({ name: '…', value: `and ${items.length - k} more` });
      break;
    }
    out.push(f);
    used += f.name.length + f.value.length;
  }
  return out;
}

export function discordBody(m: ChatMessage): DiscordMessage {
  const title = truncate(m.title, LIMITS.title);
  const description = truncate(m.text, Math.min(LIMITS.description, LIMITS.embed - title.length - 1500));
  const fields = m.grouped
    ? fieldsWithin(m.items, LIMITS.embed - title.length - description.length)
    : m.ackLink
      ? [{ name: 'Acknowledge', value: truncate(`[Acknowledge the incident](${m.ackLink})`, LIMITS.value) }]
      : [];
  return {
    content: truncate(m.title, LIMITS.content),
    embeds: [
      {
        title,
        description,
        color: kindColor(m.kind),
        ...(m.monitorLink ? { url: m.monitorLink } : {}),
        ...(fields.length > 0 ? { fields } : {}),
      },
    ],
    allowed_mentions: { parse: [] },
  };
}

export const discordChannel = webhookChatChannel(
  'discord',
  (m: ChatMessage, _c: DiscordChannelConfig) => discordBody(m),
  (a) => bodyRetryAfter(a, (json) => json['retry_after']),
);
