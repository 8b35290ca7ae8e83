import type { SlackChannelConfig } from '@telemetry/contract';
import { fitEscaped, itemLine, listWithin, truncate, webhookChatChannel, type ChatMessage } from './chat.js';

/**
 * Slack: an incoming webhook (https://api.slack.com/messaging/webhooks) sent Block Kit
 * (https://api.slack.com/reference/block-kit/blocks): `text` as the notification's
 * fallback, and a header, the message, a list of every item when grouped, a context line
 * and an Acknowledge button. Slack answers 200 `ok`, or 4xx with its reason as the body
 * (`invalid_payload`, `channel_not_found`, `channel_is_archived`…): given up, the reason
 * kept for the test endpoint.
 */

/** Block Kit's limits: header 150, section and context text 3000, button label 75, URL 3000; `text` best under 4000. */
const LIMITS = { text: 4000, header: 150, section: 3000, button: 75, url: 3000 } as const;

/** mrkdwn's three escapes (https://api.slack.com/reference/surfaces/formatting#escaping). */
export function slackEscape(s: string): string {
  return s.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]!);
}

function link(url: string, label: string): string {
  return url && url.length <= LIMITS.url ? `<${url}|${slackEscape(label)}>` : slackEscape(label);
}

type Text = { type: 'plain_text' | 'mrkdwn'; text: string; emoji?: boolean };
type Block =
  | { type: 'header'; text: Text }
  | { type: 'section'; text: Text }
  | { type: 'context'; elements: Text[] }
  | {
      type: 'actions';
      elements: { type: 'button'; text: Text; url: string; action_id: string; style?: 'primary' | 'danger' }[];
    };

export interface SlackMessage {
  text: string;
  blocks: Block[];
}

export function slackBody(m: ChatMessage): SlackMessage {
  const blocks: Block[] = [
    { type: 'header', text: { type: 'plain_text', text: truncate(m.title, LIMITS.header), emoji: true } },
    { type: 'section', text: { type: 'mrkdwn', text: fitEscaped(m.text, LIMITS.section, slackEscape) } },
  ];
  if (m.grouped) {
    const list = listWithin(m.items, LIMITS.section, (i) => {
      const ack = i.ackLink && i.ackLink.length <= LIMITS.url ? ` · <${i.ackLink}|Acknowledge>` : '';
      return `• ${link(i.monitorLink, itemLine(i))}${ack}`;
    });
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: list } });
  }
  const context = [`*${m.grouped ? `${m.items.length} incidents` : m.items[0]!.label}*`];
  if (m.monitorLink) context.push(link(m.monitorLink, 'Open the monitor'));
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: truncate(context.join(' · '), LIMITS.section) }] });
  if (m.ackLink && m.ackLink.length <= LIMITS.url) {
    blocks.push({
      type: 'actions',
      elements: [
        {
          type: 'button',
          text: { type: 'plain_text', text: 'Acknowledge' },
          url: m.ackLink,
          action_id: 'acknowledge',
          style: 'primary',
        },
      ],
    });
  }
  // `text` is mrkdwn too (it notifies, and shows where blocks cannot): escaped the same.
  return { text: fitEscaped(`${m.title}\n${m.text}`, LIMITS.text, slackEscape), blocks };
}

export const slackChannel = webhookChatChannel('slack', (m: ChatMessage, _c: SlackChannelConfig) => slackBody(m));
