import type { NotificationKind, NtfyChannelConfig } from '@telemetry/contract';
import { ackLines, apiBase, chatChannel, truncate, truncateBytes, type ChatMessage } from './chat.js';

/**
 * ntfy: a JSON publish to the server's root (https://docs.ntfy.sh/publish/#publish-as-json):
 * topic, message, title, priority (the config's, else 4 for a down alert and 3 for the
 * rest), tags (shown as emoji), the monitor's page on click, and view actions
 * (https://docs.ntfy.sh/publish/#action-buttons, at most 3) to acknowledge. A protected
 * topic's access token goes as `Authorization: Bearer` (https://docs.ntfy.sh/publish/#access-tokens).
 */

const DEFAULT_SERVER = 'https://ntfy.sh';
/** Above 4096 bytes ntfy turns a message into an attachment; at most 3 actions. */
const LIMITS = { bytes: 4096, title: 250, actions: 3, label: 40 } as const;

const TAGS: Record<NotificationKind, string> = {
  down: 'rotating_light',
  escalation: 'rotating_light',
  reminder: 'warning',
  up: 'white_check_mark',
  acknowledged: 'eyes',
  test: 'test_tube',
};

export interface NtfyAction {
  action: 'view';
  label: string;
  url: string;
  clear?: boolean;
}

export interface NtfyMessage {
  topic: string;
  message: string;
  title: string;
  priority: number;
  tags: string[];
  click?: string;
  actions?: NtfyAction[];
}

function isDown(kind: NotificationKind): boolean {
  return kind === 'down' || kind === 'escalation' || kind === 'reminder';
}

export function ntfyBody(m: ChatMessage, c: NtfyChannelConfig): NtfyMessage {
  const acks = m.items.filter((i) => i.ackLink !== undefined);
  const actions: NtfyAction[] = m.grouped
    ? acks.slice(0, LIMITS.actions).map((i) => ({
        action: 'view',
        label: truncate(`Acknowledge ${i.name}`, LIMITS.label),
        url: i.ackLink!,
        clear: true,
      }))
    : [
        ...(m.ackLink ? [{ action: 'view' as const, label: 'Acknowledge', url: m.ackLink, clear: true }] : []),
        ...(m.monitorLink ? [{ action: 'view' as const, label: 'Open the monitor', url: m.monitorLink }] : []),
      ];
  return {
    topic: c.topic,
    message: truncateBytes([m.text, ...ackLines(m)].join('\n'), LIMITS.bytes),
    title: truncate(m.title, LIMITS.title),
    priority: c.priority ?? (m.items.some((i) => isDown(i.kind)) ? 4 : 3),
    tags: [...new Set(m.items.map((i) => TAGS[i.kind]))],
    ...(m.monitorLink ? { click: m.monitorLink } : {}),
    ...(actions.length > 0 ? { actions } : {}),
  };
}

function where(c: NtfyChannelConfig): string {
  return `${apiBase(c.server, DEFAULT_SERVER)}/${c.topic}`;
}

export const ntfyChannel = chatChannel<'ntfy', NtfyMessage>({
  type: 'ntfy',
  // One topic's queue: a topic that refuses holds no other.
  endpoint: where,
  shown: where,
  body: ntfyBody,
  request: (r, c) => ({
    url: `${apiBase(c.server, DEFAULT_SERVER)}/`,
    body: JSON.stringify(r),
    ...(c.token ? { headers: { Authorization: `Bearer ${c.token}` } } : {}),
  }),
});
