import type { RequestHandler } from 'express';
import { WEBHOOK_DELIVERY_STATUSES } from '@telemetry/contract';
import {
  bad,
  cursorParam,
  limitParam,
  rejectUnknown,
  sendPage,
  single,
  StoreUnavailableError,
} from '@telemetry/platform';
import {
  rowToWebhookDelivery,
  webhookDeliveriesSql,
  type WebhookDeliveriesQuery,
  type WebhookDeliveryReadRow,
} from '@telemetry/store';
import { MONITOR_ID, monitorIdOf, tenantOf, type ReadDeps } from './params.js';

const KNOWN_PARAMS = new Set(['limit', 'status', 'alert_id', 'cursor']);

/** A deliveries cursor: the (attempted_at in ms, id) of the last attempt of the page. */
function isDeliveryCursor(v: unknown): v is [number, string] {
  return (
    Array.isArray(v) &&
    v.length === 2 &&
    Number.isSafeInteger(v[0]) &&
    (v[0] as number) >= 0 &&
    typeof v[1] === 'string' &&
    v[1].length <= 128 &&
    MONITOR_ID.test(v[1])
  );
}

export interface WebhookDeliveriesRouteDeps extends ReadDeps {
  /** 404 for an unknown monitor, checked after the parameters. */
  known: RequestHandler;
}

/** GET /api/monitors/{id}/webhook-deliveries: every attempt, newest first; `limit`, `status`, `alert_id`, `cursor`. */
export function webhookDeliveriesRoute(deps: WebhookDeliveriesRouteDeps): RequestHandler[] {
  const params: RequestHandler = (req, res, next) => {
    const monitorId = monitorIdOf(req);
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
    const cursor = cursorParam(req, isDeliveryCursor);
    const q: Omit<WebhookDeliveriesQuery, 'tenantId'> = {
      monitorId,
      limit,
      ...(status === undefined ? {} : { status }),
      ...(alertId === undefined ? {} : { alertId }),
      ...(cursor === undefined ? {} : { cursor: { ms: cursor[0], id: cursor[1] } }),
    };
    res.locals.deliveries = q;
    next();
  };
  const read: RequestHandler = async (req, res) => {
    const q = { ...(res.locals.deliveries as Omit<WebhookDeliveriesQuery, 'tenantId'>), tenantId: tenantOf(res) };
    let rows: WebhookDeliveryReadRow[];
    try {
      const sql = webhookDeliveriesSql(deps.database, q);
      rows = (await deps.reader.query<WebhookDeliveryReadRow>(sql, AbortSignal.timeout(deps.queryTimeoutMs))).data;
    } catch (err) {
      deps.logger.warn('webhook deliveries query failed', { request_id: req.id, err: String(err) });
      throw new StoreUnavailableError();
    }
    sendPage(req, res, rows, q.limit, (r) => [Number(r.attempted_at_ms), r.id], rowToWebhookDelivery);
  };
  return [params, deps.known, read];
}
