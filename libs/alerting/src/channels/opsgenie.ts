import { channelConfigProblems, type ChannelValidators, type OpsgenieChannelConfig } from '@telemetry/contract';
import type { Notification } from '../notification.js';
import type { Answer, Channel, ChannelContext, RenderContext } from './channel.js';
import { classifyHttp, endpointOf, sendHttp } from './http-send.js';
import { clip, CLIENT, pagingFacts, pagingKey, sourceOf } from './paging.js';

/**
 * Opsgenie Alert API (docs/alerting.md, "Opsgenie"; https://docs.opsgenie.com/docs/alert-api):
 * `alias` = our incident id, so a redelivery or a reminder adds to the same open alert
 * (Opsgenie de-duplicates by alias) instead of paging twice. down, reminder, escalation and
 * test create (POST /v2/alerts); acknowledged acknowledges and up closes the alert by its
 * alias (POST /v2/alerts/{alias}/acknowledge|close?identifierType=alias). Authorization:
 * GenieKey. Opsgenie answers 202 (the request is queued).
 */

export const OPSGENIE_API_URL = 'https://api.opsgenie.com';

/** One request to the Alert API: its path (with query) and JSON body. */
export interface OpsgenieRequest {
  path: string;
  body: Record<string, unknown>;
}

export function opsgenieRequest(n: Notification, c: OpsgenieChannelConfig, ctx: RenderContext): OpsgenieRequest {
  const alias = clip(pagingKey(n), 512);
  const f = pagingFacts('opsgenie', n, ctx);
  const action = n.kind === 'up' ? 'close' : n.kind === 'acknowledged' ? 'acknowledge' : undefined;
  if (action) {
    const who = f.item.acknowledged_by;
    return {
      path: `/v2/alerts/${encodeURIComponent(alias)}/${action}?identifierType=alias`,
      body: {
        source: CLIENT,
        ...(action === 'acknowledge' && who ? { user: clip(who, 100) } : {}),
        note: clip(action === 'close' ? f.text : `Acknowledged in Telemetry${who ? ` by ${who}` : ''}.`, 25000),
      },
    };
  }
  const a = f.item.alert;
  // Opsgenie's details are a map of strings.
  const details: Record<string, string> = {
    monitor_id: a.monitor_id,
    monitor_name: a.monitor.name,
    monitor_url: a.monitor.url,
    incident_id: a.incident_id,
    cause: f.cause,
    check_id: a.check.id,
    checked_at: a.check.created_at,
    status_code: String(a.check.status_code),
    response_time_ms: String(a.check.response_time),
    ...(f.monitorLink ? { console: f.monitorLink } : {}),
    ...(f.ackLink ? { acknowledge: f.ackLink } : {}),
  };
  return {
    path: '/v2/alerts',
    body: {
      message: clip(n.kind === 'test' ? f.title : `${f.title}: ${f.cause}`, 130),
      alias,
      description: clip(f.text, 15000),
      priority: n.kind === 'test' ? 'P5' : (c.priority ?? 'P1'),
      source: CLIENT,
      entity: clip(sourceOf(f.item), 512),
      details,
      tags: ['telemetry', n.kind],
    },
  };
}

export const opsgenieChannel: Channel<OpsgenieChannelConfig, OpsgenieRequest> = {
  type: 'opsgenie',
  groups: false,
  paging: true,

  validate: (config: unknown, v: ChannelValidators) => channelConfigProblems(v, 'opsgenie', config),

  endpoint: (c) => endpointOf(c.api_url ?? OPSGENIE_API_URL, c.api_key),

  // The key is a header, never in what is shown.
  shown: (c) => `opsgenie: ${new URL(c.api_url ?? OPSGENIE_API_URL).host}`,

  render: opsgenieRequest,

  send: (r: OpsgenieRequest, c: OpsgenieChannelConfig, ctx: ChannelContext): Promise<Answer> =>
    sendHttp(
      {
        url: `${(c.api_url ?? OPSGENIE_API_URL).replace(/\/+$/, '')}${r.path}`,
        headers: { Authorization: `GenieKey ${c.api_key}` },
        body: JSON.stringify(r.body),
      },
      ctx,
    ),

  classify: classifyHttp,
};
