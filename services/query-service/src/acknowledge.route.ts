import { createHash } from 'node:crypto';
import type { Express, Request, RequestHandler, Response } from 'express';
import { ok, type AcknowledgementAlert, type AlertMessage } from '@telemetry/contract';
import type { AckClaim, AckLinks } from '@telemetry/alerting';
import { AppError, rejectUnknown, type Logger } from '@telemetry/platform';
import type { IncidentAlertState, IncidentAlertStore } from '@telemetry/store';
import { sendAckPage } from './ack-page.js';
import { isoSecondsOf, MONITOR_ID, storeCall as storeCallOf, tenantOf } from './params.js';
import { jsonBody, keyOf } from './registry-objects.js';

/**
 * Acknowledgement (docs/alerting.md, "Acknowledging"): POST /api/incidents/{id}/acknowledge
 * and /unacknowledge with an API key, and the signed links of notifications, GET and POST
 * /ack/{token}, whose token is the credential. Each change is published to the alerts
 * topic (the runners' dispatchers tell paging services, the alerts table records it)
 * inside the registry transaction that makes it: Kafka not taking it changes nothing.
 */

import type { Auditor } from './access/audit.js';

export interface AcknowledgeRoutesDeps {
  incidents: IncidentAlertStore;
  links: AckLinks;
  /** Publishes to the alerts topic; resolves once Kafka acknowledged. */
  publish: (alert: AlertMessage) => Promise<void>;
  logger: Logger;
  auth: { write: RequestHandler };
  /** The audit log (docs/access.md): each acknowledgement (or taking one back) is recorded. */
  audit: Auditor;
}

type AckType = AcknowledgementAlert['type'];

/** The id of an acknowledgement's alert: the same for the same incident, change and time. */
export function ackAlertId(incidentId: string, type: AckType, at: number): string {
  const h = createHash('sha256').update(`${incidentId}\n${type}\n${at}`).digest('hex');
  return `alr_${h.slice(0, 24)}`;
}

/** The alert of an acknowledgement (or of taking it back) of `s`, at `at` (ms). */
export function ackAlertOf(s: IncidentAlertState, type: AckType, actor: string | null, at: number): AlertMessage {
  return {
    id: ackAlertId(s.incident_id, type, at),
    type,
    monitor_id: s.monitor_id,
    tenant_id: s.tenant_id,
    incident_id: s.incident_id,
    created_at: new Date(at).toISOString(),
    ...(actor === null ? {} : { actor }),
    // The down alert's monitor: its URL masked as every alert's is.
    monitor: { name: s.alert.monitor.name, url: s.alert.monitor.url },
  };
}

const iso = isoSecondsOf;

/** A body that is empty or `{}`: nothing else is accepted. */
async function emptyBody(req: Request): Promise<void> {
  const length = req.get('content-length');
  if (req.get('transfer-encoding') === undefined && (length === undefined || length === '0')) return;
  const body = await jsonBody(req);
  if (typeof body !== 'object' || body === null || Array.isArray(body) || Object.keys(body).length > 0) {
    throw new AppError('VALIDATION_FAILED', 'the body must be empty or {}', {
      problems: [{ path: '/', message: 'must be empty or {}' }],
    });
  }
}

function wantsJson(req: Request): boolean {
  return req.accepts(['text/html', 'application/json']) === 'application/json';
}

export function acknowledgeRoutes(app: Express, deps: AcknowledgeRoutesDeps): void {
  const storeCall = <T>(req: Request, what: string, fn: () => Promise<T>): Promise<T> =>
    storeCallOf(deps.logger, req, what, fn);
  const notFound = (id: string): AppError => new AppError('INCIDENT_NOT_FOUND', `there is no open incident ${id}`);

  /**
   * Acknowledges (actor set) or takes back (actor null) the tenant's open incident, and
   * publishes it before the change commits. `allowed` may refuse the incident's monitor.
   */
  const change = async (
    req: Request,
    tenantId: string,
    incidentId: string,
    actor: string | null,
    allowed: (monitorId: string) => boolean,
  ): Promise<{ state: IncidentAlertState; changed: boolean } | undefined> => {
    const type: AckType = actor === null ? 'incident.unacknowledged' : 'incident.acknowledged';
    const at = Date.now();
    return storeCall(req, 'incident acknowledgement', () =>
      deps.incidents.acknowledge(tenantId, incidentId, actor, at, async (s) => {
        if (!allowed(s.monitor_id)) throw notFound(incidentId);
        // StoreUnavailableError (503) when Kafka does not take it: the transaction rolls back.
        await deps.publish(ackAlertOf(s, type, actor, at));
      }),
    );
  };

  /** incident.acknowledge / incident.unacknowledge, once it changed (by a link: its recipient, in its tenant). */
  const recordAck = (req: Request, res: Response, s: IncidentAlertState, acknowledge: boolean, claim?: AckClaim) =>
    deps.audit.record(req, res, {
      action: acknowledge ? 'incident.acknowledge' : 'incident.unacknowledge',
      target: { type: 'incident', id: s.incident_id },
      changes: { acknowledged_by: { after: s.acknowledged_by }, monitor_id: { after: s.monitor_id } },
      ...(claim ? { tenantId: claim.tenant_id, actor: { type: 'anonymous', id: claim.recipient, email: '' } } : {}),
    });

  const apiRoute = (acknowledge: boolean) => async (req: Request, res: Response) => {
    rejectUnknown(req, new Set());
    const id = String(req.params.id);
    if (id.length > 128 || !MONITOR_ID.test(id)) throw notFound(id);
    await emptyBody(req);
    const key = keyOf(res);
    const allowed = (monitorId: string): boolean => key.monitorIds.size === 0 || key.monitorIds.has(monitorId);
    const done = await change(req, tenantOf(res), id, acknowledge ? `key:${key.keyId}` : null, allowed);
    // Unchanged (already in that state): `then` did not run, so the monitor is checked here.
    if (!done || !allowed(done.state.monitor_id)) throw notFound(id);
    const s = done.state;
    if (done.changed) await recordAck(req, res, s, acknowledge);
    res.json(ok({ acknowledged_at: iso(s.acknowledged_at), acknowledged_by: s.acknowledged_by }));
  };
  app.post('/api/incidents/:id/acknowledge', deps.auth.write, apiRoute(true));
  app.post('/api/incidents/:id/unacknowledge', deps.auth.write, apiRoute(false));

  /** The token's claim, or 400 LINK_INVALID (a page, or JSON when asked for). */
  const claimOf = (req: Request, res: Response): AckClaim | undefined => {
    const claim = deps.links.verify(String(req.params.token), Date.now());
    if (claim) return claim;
    if (wantsJson(req)) throw new AppError('LINK_INVALID', 'this acknowledge link is not valid or has expired');
    sendAckPage(res, {
      status: 400,
      title: 'This link does not work',
      lines: [
        'This acknowledge link is not valid or has expired (LINK_INVALID).',
        'Acknowledge the incident from the console instead.',
      ],
    });
    return undefined;
  };
  /** The page of an incident that is not open (resolved, or unknown). */
  const closedPage = (req: Request, res: Response, s: IncidentAlertState | undefined, id: string): void => {
    if (!s && wantsJson(req)) throw notFound(id);
    sendAckPage(res, {
      status: s ? 200 : 404,
      title: s ? `${s.alert.monitor.name}: resolved` : 'No such incident',
      lines: s
        ? [`The incident that began ${iso(s.opened_at)} is resolved: there is nothing to acknowledge.`]
        : [`There is no incident ${id} (INCIDENT_NOT_FOUND).`],
    });
  };
  const lookup = async (req: Request, claim: AckClaim): Promise<IncidentAlertState | undefined> => {
    const s = await storeCall(req, 'incident lookup', () => deps.incidents.get(claim.incident_id));
    return s && s.tenant_id === claim.tenant_id ? s : undefined;
  };
  const acknowledgedLines = (s: IncidentAlertState): string[] => [
    `Acknowledged by ${s.acknowledged_by} at ${iso(s.acknowledged_at)}.`,
    'Reminders and escalation of this incident have stopped.',
  ];

  // A GET only shows: mail scanners follow links, and must not acknowledge anything.
  app.get('/ack/:token', async (req, res) => {
    const claim = claimOf(req, res);
    if (!claim) return;
    const s = await lookup(req, claim);
    if (!s || s.resolved_at !== null) return closedPage(req, res, s, claim.incident_id);
    const title = `${s.alert.monitor.name} is down`;
    if (s.acknowledged_at !== null) {
      return sendAckPage(res, {
        status: 200,
        title,
        lines: ['This incident is already acknowledged.', ...acknowledgedLines(s)],
      });
    }
    sendAckPage(res, {
      status: 200,
      title,
      lines: [
        `Incident ${s.incident_id} began ${iso(s.opened_at)} (${s.alert.monitor.url}).`,
        `Acknowledge it as ${claim.recipient}? Reminders and escalation stop.`,
      ],
      formAction: `/ack/${String(req.params.token)}`,
    });
  });

  app.post('/ack/:token', async (req, res) => {
    const claim = claimOf(req, res);
    if (!claim) return;
    const done = await change(req, claim.tenant_id, claim.incident_id, claim.recipient, () => true);
    if (!done) return closedPage(req, res, await lookup(req, claim), claim.incident_id);
    const s = done.state;
    if (done.changed) await recordAck(req, res, s, true, claim);
    if (wantsJson(req)) {
      res.json(ok({ acknowledged_at: iso(s.acknowledged_at), acknowledged_by: s.acknowledged_by }));
      return;
    }
    sendAckPage(res, {
      status: 200,
      title: `${s.alert.monitor.name} is down`,
      lines: [
        done.changed ? 'Thank you: the incident is acknowledged.' : 'This incident was already acknowledged.',
        ...acknowledgedLines(s),
      ],
    });
  });
}
