import type { RequestHandler } from 'express';
import { bad, limitParam, rejectUnknown, single } from '@telemetry/platform';
import { incidentsSql, rowToIncident, type IncidentAlertStore, type IncidentRow } from '@telemetry/store';
import { isoSecondsOf, monitorIdOf, readRows, storeCall, tenantOf, type ReadDeps } from './params.js';

export interface IncidentsRouteDeps extends ReadDeps {
  /** 404 for an unknown monitor, checked after the parameters. */
  known: RequestHandler;
  /** Who acknowledged which of these incidents, and when (the registry's incident_alerts). */
  acknowledgements: Pick<IncidentAlertStore, 'ofIncidents'>;
}

/** GET /api/monitors/{id}/incidents: newest first, `limit`, `status`. */
export function incidentsRoute(deps: IncidentsRouteDeps): RequestHandler[] {
  const params: RequestHandler = (req, res, next) => {
    const id = monitorIdOf(req);
    rejectUnknown(req, new Set(['limit', 'status']));
    const limit = limitParam(req, 1000, 100);
    const status = single(req, 'status');
    if (status !== undefined && status !== 'open' && status !== 'resolved') {
      throw bad('status', 'must be open or resolved');
    }
    res.locals.incidents = { id, limit, status };
    next();
  };
  const read: RequestHandler = async (req, res) => {
    const { id, limit, status } = res.locals.incidents as { id: string; limit: number; status?: string };
    const rows = await readRows<IncidentRow>(deps, req, 'incidents query', () =>
      incidentsSql(deps.database, deps.layout, tenantOf(res), id, limit, status),
    );
    const now = Math.floor(Date.now() / 1000);
    const incidents = rows.map((r) => rowToIncident(r, id, now));
    const acks = await storeCall(deps.logger, req, 'incident acknowledgements', () =>
      deps.acknowledgements.ofIncidents(
        tenantOf(res),
        incidents.map((i) => i.id),
      ),
    );
    res.json({
      success: true,
      data: incidents.map((i) => {
        const a = acks.get(i.id);
        return {
          ...i,
          acknowledged_at: isoSecondsOf(a?.acknowledged_at ?? null),
          acknowledged_by: a?.acknowledged_by ?? null,
        };
      }),
    });
  };
  return [params, deps.known, read];
}
