import { channelConfigProblems, type ChannelValidators, type PagerdutyChannelConfig } from '@telemetry/contract';
import type { Notification } from '../notification.js';
import type { Answer, Channel, ChannelContext, RenderContext } from './channel.js';
import { classifyHttp, endpointOf, sendHttp } from './http-send.js';
import { clip, CLIENT, pagingFacts, pagingKey, sourceOf } from './paging.js';

/**
 * PagerDuty Events API v2 (docs/alerting.md, "PagerDuty";
 * https://developer.pagerduty.com/docs/events-api-v2/trigger-events/): one event per
 * notification to `api_url`, `dedup_key` = our incident id, so a redelivery or a reminder
 * updates the same PagerDuty alert instead of paging twice. down, reminder, escalation and
 * test trigger; acknowledged acknowledges; up resolves. 202: accepted; 400: invalid (given
 * up, the answer kept); 429 and 5xx: retried (429 after its Retry-After).
 */

export const PAGERDUTY_EVENTS_URL = 'https://events.pagerduty.com/v2/enqueue';

export type PagerdutyAction = 'trigger' | 'acknowledge' | 'resolve';

/** The event's body, as the Events API v2 documents it. */
export interface PagerdutyEvent {
  routing_key: string;
  event_action: PagerdutyAction;
  dedup_key: string;
  payload?: {
    summary: string;
    source: string;
    severity: 'critical' | 'error' | 'warning' | 'info';
    timestamp: string;
    component: string;
    class: string;
    custom_details: Record<string, unknown>;
  };
  client?: string;
  client_url?: string;
  links?: { href: string; text: string }[];
}

function actionOf(n: Notification): PagerdutyAction {
  if (n.kind === 'up') return 'resolve';
  if (n.kind === 'acknowledged') return 'acknowledge';
  return 'trigger';
}

export function pagerdutyEvent(n: Notification, c: PagerdutyChannelConfig, ctx: RenderContext): PagerdutyEvent {
  const event_action = actionOf(n);
  const base = { routing_key: c.routing_key, event_action, dedup_key: pagingKey(n) };
  if (event_action !== 'trigger') return base;
  const f = pagingFacts('pagerduty', n, ctx);
  const a = f.item.alert;
  const links = [
    ...(f.monitorLink ? [{ href: f.monitorLink, text: 'The monitor in Telemetry' }] : []),
    ...(f.ackLink ? [{ href: f.ackLink, text: 'Acknowledge in Telemetry' }] : []),
  ];
  return {
    ...base,
    payload: {
      summary: clip(n.kind === 'test' ? f.title : `${f.title}: ${f.cause}`, 1024),
      source: sourceOf(f.item),
      severity: n.kind === 'test' ? 'info' : (c.severity ?? 'critical'),
      timestamp: n.kind === 'down' ? a.created_at : new Date(ctx.now).toISOString(),
      component: a.monitor.name,
      class: a.check.error ?? 'unexpected_status',
      custom_details: {
        notification: n.kind,
        monitor: { id: a.monitor_id, name: a.monitor.name, url: a.monitor.url },
        incident_id: a.incident_id,
        cause: f.cause,
        check: a.check,
        ...(f.item.step !== undefined ? { escalation_step: f.item.step } : {}),
        ...(f.item.reminder !== undefined ? { reminder: f.item.reminder } : {}),
        text: clip(f.text, 4000),
      },
    },
    client: CLIENT,
    ...(f.monitorLink ? { client_url: f.monitorLink } : {}),
    ...(links.length ? { links } : {}),
  };
}

export const pagerdutyChannel: Channel<PagerdutyChannelConfig, PagerdutyEvent> = {
  type: 'pagerduty',
  groups: false,
  paging: true,

  validate: (config: unknown, v: ChannelValidators) => channelConfigProblems(v, 'pagerduty', config),

  endpoint: (c) => endpointOf(c.api_url ?? PAGERDUTY_EVENTS_URL, c.routing_key),

  // The routing key is in the body, never in what is shown.
  shown: (c) => `pagerduty: ${new URL(c.api_url ?? PAGERDUTY_EVENTS_URL).host}`,

  render: pagerdutyEvent,

  send: (e: PagerdutyEvent, c: PagerdutyChannelConfig, ctx: ChannelContext): Promise<Answer> =>
    sendHttp({ url: c.api_url ?? PAGERDUTY_EVENTS_URL, body: JSON.stringify(e) }, ctx),

  classify: classifyHttp,
};
