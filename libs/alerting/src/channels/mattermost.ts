import type { MattermostChannelConfig } from '@telemetry/contract';
import { kindHex, truncate, webhookChatChannel, type ChatItem, type ChatMessage } from './chat.js';

/**
 * Mattermost: an incoming webhook (https://developers.mattermost.com/integrate/webhooks/incoming/)
 * sent `text` (the title and the message), the config's `channel` and `username`
 * overrides, and one message attachment
 * (https://developers.mattermost.com/integrate/reference/message-attachments/) with the
 * kind's colour, the monitor's link, and a field per item when grouped (or the
 * acknowledge link). A post is at most 16383 characters.
 */

const LIMITS = { text: 16_383, title: 500, fields: 50, field: 1000 } as const;

interface Field {
  short: boolean;
  title: string;
  value: string;
}

export interface MattermostMessage {
  text: string;
  channel?: string;
  username?: string;
  attachments: {
    fallback: string;
    color: string;
    title: string;
    title_link?: string;
    text?: string;
    fields?: Field[];
  }[];
}

function itemField(i: ChatItem): Field {
  const value = [
    i.cause,
    i.monitorLink ? `[Monitor](${i.monitorLink})` : '',
    i.ackLink ? `[Acknowledge](${i.ackLink})` : '',
  ]
    .filter((s) => s !== '')
    .join(' · ');
  return { short: false, title: truncate(`${i.label}: ${i.name}`, LIMITS.title), value: truncate(value, LIMITS.field) };
}

export function mattermostBody(m: ChatMessage, c: MattermostChannelConfig): MattermostMessage {
  const title = truncate(m.title, LIMITS.title);
  const shown = m.items.slice(0, LIMITS.fields);
  const fields = m.grouped
    ? [
        ...shown.map(itemField),
        ...(m.items.length > shown.length
          ? [{ short: false, title: '…', value: `and ${m.items.length - shown.length} more` }]
          : []),
      ]
    : m.ackLink
      ? [
          {
            short: false,
            title: 'Acknowledge',
            value: truncate(`[Acknowledge the incident](${m.ackLink})`, LIMITS.field),
          },
        ]
      : [];
  return {
    text: truncate(`#### ${title}\n${m.text}`, LIMITS.text),
    ...(c.channel ? { channel: c.channel } : {}),
    ...(c.username ? { username: c.username } : {}),
    attachments: [
      {
        fallback: truncate(m.title, LIMITS.title),
        color: kindHex(m.kind),
        title,
        ...(m.monitorLink ? { title_link: m.monitorLink } : {}),
        ...(fields.length > 0 ? { fields } : {}),
      },
    ],
  };
}

export const mattermostChannel = webhookChatChannel('mattermost', mattermostBody);
