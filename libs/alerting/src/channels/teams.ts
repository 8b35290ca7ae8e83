import type { TeamsChannelConfig } from '@telemetry/contract';
import { truncate, webhookChatChannel, type ChatMessage } from './chat.js';

/**
 * Microsoft Teams: a Workflows webhook ("Post to a channel when a webhook request is
 * received"), sent a message whose one attachment is an Adaptive Card
 * (https://learn.microsoft.com/en-us/connectors/teams/?tabs=text1#microsoft-teams-webhook,
 * https://adaptivecards.io/explorer/): the title, the text, each item as a fact when
 * grouped, and Action.OpenUrl buttons to acknowledge and to open the monitor. Teams
 * takes cards up to 1.5; 1.4 is what every Teams client renders.
 */

/** Teams refuses messages over about 28 KB: the text is kept well within it. */
const LIMITS = { title: 500, text: 12_000, factTitle: 200, factValue: 1000, facts: 50 } as const;

const COLORS = {
  down: 'Attention',
  reminder: 'Attention',
  escalation: 'Attention',
  up: 'Good',
  acknowledged: 'Warning',
  test: 'Accent',
} as const;

type Element =
  | {
      type: 'TextBlock';
      text: string;
      wrap: true;
      weight?: 'Bolder';
      size?: 'Medium';
      color?: string;
      isSubtle?: boolean;
    }
  | { type: 'FactSet'; facts: { title: string; value: string }[] };

export interface TeamsMessage {
  type: 'message';
  attachments: {
    contentType: 'application/vnd.microsoft.card.adaptive';
    contentUrl: null;
    content: {
      $schema: 'http://adaptivecards.io/schemas/adaptive-card.json';
      type: 'AdaptiveCard';
      version: '1.4';
      body: Element[];
      actions?: { type: 'Action.OpenUrl'; title: string; url: string }[];
    };
  }[];
}

export function teamsBody(m: ChatMessage): TeamsMessage {
  const body: Element[] = [
    {
      type: 'TextBlock',
      text: truncate(m.title, LIMITS.title),
      wrap: true,
      weight: 'Bolder',
      size: 'Medium',
      color: COLORS[m.kind],
    },
    { type: 'TextBlock', text: truncate(m.text, LIMITS.text), wrap: true },
  ];
  if (m.grouped) {
    const shown = m.items.slice(0, LIMITS.facts);
    const facts = shown.map((i) => ({
      title: truncate(`${i.label}: ${i.name}`, LIMITS.factTitle),
      value: truncate(i.ackLink ? `${i.cause} · [Acknowledge](${i.ackLink})` : i.cause, LIMITS.factValue),
    }));
    if (m.items.length > shown.length) facts.push({ title: '…', value: `and ${m.items.length - shown.length} more` });
    body.push({ type: 'FactSet', facts });
  }
  const actions = [
    ...(m.ackLink ? [{ type: 'Action.OpenUrl' as const, title: 'Acknowledge', url: m.ackLink }] : []),
    ...(m.monitorLink ? [{ type: 'Action.OpenUrl' as const, title: 'Open the monitor', url: m.monitorLink }] : []),
  ];
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          body,
          ...(actions.length > 0 ? { actions } : {}),
        },
      },
    ],
  };
}

export const teamsChannel = webhookChatChannel('teams', (m: ChatMessage, _c: TeamsChannelConfig) => teamsBody(m));
