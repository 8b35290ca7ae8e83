import { createHmac } from 'node:crypto';
import { channelConfigProblems, type ChannelValidators, type WebhookChannelConfig } from '@telemetry/contract';
import { maskWebhookUrl } from '@telemetry/store';
import { firstItem, type Notification } from '../notification.js';
import { messageView, renderTemplate } from '../templates.js';
import type { Answer, Channel, ChannelContext, RenderContext } from './channel.js';
import { classifyHttp, endpointOf, sendHttp } from './http-send.js';

/**
 * The signed webhook (docs/monitors.md, "Webhooks"): the alert message, as JSON, POSTed
 * to the URL with the X-Telemetry-* headers, signed with the secret. Notifications other
 * than down and up (a reminder, an escalation, an acknowledgement, a test) send the same
 * message (an `acknowledged` one: its acknowledgement, when there is one) and say their
 * kind in `X-Telemetry-Notification`. `body_template`, when set, is the body instead: a
 * Mustache template over the documented variables, each value JSON-escaped
 * (docs/alerting.md, "Templates").
 */

/**
 * `X-Telemetry-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` with
 * the monitor's webhook secret (the scheme Stripe uses): receivers recompute it and
 * reject old timestamps to stop replays.
 */
export function signature(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/** One attempt's request: the body and the headers of ours (Content-Type and User-Agent are added by send). */
export interface WebhookRequest {
  body: string;
  headers: Record<string, string>;
}

export const webhookChannel: Channel<WebhookChannelConfig, WebhookRequest> = {
  type: 'webhook',
  groups: false,
  paging: false,

  validate: (config: unknown, v: ChannelValidators) => channelConfigProblems(v, 'webhook', config),

  // Deliveries to one URL wait for each other only.
  endpoint: (c) => endpointOf(c.url),

  // Scheme and host: Slack, Discord and Telegram keep their secret in the path.
  shown: (c) => maskWebhookUrl(c.url),

  render(n: Notification, c: WebhookChannelConfig, ctx: RenderContext): WebhookRequest {
    const item = firstItem(n);
    const { attempt } = n;
    const now = ctx.now;
    const message = (item.kind === 'acknowledged' ? item.acknowledgement : undefined) ?? item.alert;
    const repeats = message === item.alert && n.kind !== 'down' && n.kind !== 'up';
    const body =
      c.body_template === undefined
        ? JSON.stringify(message)
        : renderTemplate(c.body_template, messageView(n, `webhook:${ctx.name}`, now), 'json');
    return {
      body,
      headers: {
        'X-Telemetry-Event': message.type,
        // Receivers de-duplicate on it: a down, an up or an acknowledgement is its alert; a
        // reminder, an escalation or a test repeats the down's body and is its own notification
        // (the alert's id would have it dropped as a duplicate).
        'X-Telemetry-Delivery': repeats ? n.id : message.id,
        'X-Telemetry-Attempt': String(attempt),
        'X-Telemetry-Signature': signature(c.secret, body, Math.floor(now / 1000)),
        ...(n.kind === 'down' || n.kind === 'up' ? {} : { 'X-Telemetry-Notification': n.kind }),
      },
    };
  },

  send: (r: WebhookRequest, c: WebhookChannelConfig, ctx: ChannelContext): Promise<Answer> =>
    sendHttp({ url: c.url, headers: r.headers, body: r.body }, ctx),

  classify: classifyHttp,
};
