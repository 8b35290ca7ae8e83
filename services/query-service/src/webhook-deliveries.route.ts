import type { Request, RequestHandler, Response } from 'express';
import { WEBHOOK_DELIVERY_STATUSES } from '@telemetry/contract';
import { bad, cursorParam, limitParam, rejectUnknown, sendPage, single } from '@telemetry/platform';
import {
  rowToWebhookDelivery,
  webhookDeliveriesSql,
  type WebhookDeliveriesQuery,
  type WebhookDeliveryReadRow,
} from '@telemetry/store';
import { isTimeIdCursor, MONITOR_ID, monitorIdOf, readRows, tenantOf, type ReadDeps } from './params.js';

const KNOWN_PARAMS = new Set(['limit', 'status', 'alert_id', 'cursor']);

export interface WebhookDeliveriesRouteDeps extends ReadDeps {
  /** 404 for an unknown monitor, checked after the parameters. */
  known: RequestHandler;
}

/** What a delivery log is asked (`limit`, `status`, `alert_id`, `cursor`): 400 INVALID_PARAMETER for a bad one. */
export function deliveriesParams(
  req: Request,
): Pick<WebhookDeliveriesQuery, 'limit' | 'status' | 'alertId' | 'cursor'> {
  rejectUnknown(req, KNOWN_PARAMS);
  const limit = limitParam(req, 1000, 100);
  const status = single(req, 'status');
  if (status !== undefined && !(WEBHOOK_DELIVERY_STATUSES as readonly string[]).includes(status)) {
    throw bad('status', `must be one of ${WEBHOOK_DELIVERY_STATUSES.join(', ')}`);
  }
  const alertId = single(req, 'alert_id');
  if (alertId !== undefined && (alertId.length > 128 || !MONITOR_ID.test(alertId))) {
    throw bad('alert_id', 'an alert id is 1-128 letters, digits and . _ : -');
  }
  const cursor = cursorParam(req, isTimeIdCursor);
  return {
    limit,
    ...(status === undefined ? {} : { status }),
    ...(alertId === undefined ? {} : { alertId }),
    ...(cursor === undefined ? {} : { cursor: { ms: cursor[0], id: cursor[1] } }),
  };
}

/** Reads the page of `q` and answers it, newest first. */
export async function sendDeliveries(
  deps: ReadDeps,
  req: Request,
  res: Response,
  q: WebhookDeliveriesQuery,
): Promise<void> {
  const rows = await readRows<WebhookDeliveryReadRow>(deps, req, 'webhook deliveries query', () =>
    webhookDeliveriesSql(deps.database, deps.layout, q),
  );
  sendPage(req, res, rows, q.limit, (r) => [Number(r.attempted_at_ms), r.id], rowToWebhookDelivery);
}

/** GET /api/monitors/{id}/webhook-deliveries: every attempt, newest first; `limit`, `status`, `alert_id`, `cursor`. */
export function webhookDeliveriesRoute(deps: WebhookDeliveriesRouteDeps): RequestHandler[] {
  const params: RequestHandler = (req, res, next) => {
    const monitorId = monitorIdOf(req);
    res.locals.deliveries = { monitorId, ...deliveriesParams(req) };
    next();
  };
  const read: RequestHandler = async (req, res) => {
    const q = { ...(res.locals.deliveries as Omit<WebhookDeliveriesQuery, 'tenantId'>), tenantId: tenantOf(res) };
    await sendDeliveries(deps, req, res, q);
  };
  return [params, deps.known, read];
}
