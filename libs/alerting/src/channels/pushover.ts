import { createHash } from 'node:crypto';
import type { PushoverChannelConfig } from '@telemetry/contract';
import { originOf } from '@telemetry/store';
import { ackLines, apiBase, chatChannel, truncate, type ChatMessage } from './chat.js';

/**
 * Pushover: the Message API (https://pushover.net/api#messages), a form POST to
 * `{api_url}/1/messages.json`: the application token, the user (or group) key, the
 * message and its title, a supplementary URL (the acknowledge link, else the monitor's
 * page) with its title, the priority and the device. It answers 200 `{"status":1}`, or
 * 4xx `{"status":0,"errors":[…]}` which must not be sent again (given up), or 5xx (retried).
 * The token and the user key are added at send: never in what render returns, in
 * endpoint or in shown.
 */

const DEFAULT_API = 'https://api.pushover.net';
/** message 1024, title 250, url 512, url_title 100 characters. */
const LIMITS = { message: 1024, title: 250, url: 512, urlTitle: 100 } as const;

/** The message's fields (without the token and the user key). */
export interface PushoverMessage {
  message: string;
  title: string;
  url?: string;
  url_title?: string;
  priority?: string;
  device?: string;
}

export function pushoverBody(m: ChatMessage, c: PushoverChannelConfig): PushoverMessage {
  const link =
    m.ackLink && m.ackLink.length <= LIMITS.url
      ? { url: m.ackLink, url_title: 'Acknowledge' }
      : m.monitorLink && m.monitorLink.length <= LIMITS.url
        ? { url: m.monitorLink, url_title: 'Open the monitor' }
        : {};
  return {
    message: truncate([m.text, ...ackLines(m)].join('\n'), LIMITS.message),
    title: truncate(m.title, LIMITS.title),
    ...link,
    ...(c.priority === undefined ? {} : { priority: String(c.priority) }),
    ...(c.device ? { device: c.device } : {}),
  };
}

function api(c: PushoverChannelConfig): string {
  return apiBase(c.api_url, DEFAULT_API);
}

export const pushoverChannel = chatChannel<'pushover', PushoverMessage>({
  type: 'pushover',
  // One user's queue, named by a digest of the key (the key itself is a secret).
  endpoint: (c) => `${api(c)} user ${createHash('sha256').update(c.user_key).digest('hex').slice(0, 16)}`,
  shown: (c) => `${originOf(api(c))}${c.device ? ` device ${c.device}` : ''}`,
  body: pushoverBody,
  request: (r, c) => ({
    url: `${api(c)}/1/messages.json`,
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: c.token, user: c.user_key, ...r }).toString(),
  }),
});
