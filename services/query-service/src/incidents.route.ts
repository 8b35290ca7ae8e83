import type { RequestHandler } from 'express';
import { bad, limitParam, rejectUnknown, single } from '@telemetry/platform';
import { incidentsSql, rowToIncident, type IncidentRow } from '@telemetry/store';
import { monitorIdOf, readRows, tenantOf, type ReadDeps } from './params.js';

export interface IncidentsRouteDeps extends ReadDeps {
  /** 404 for an unknown monitor, checked after the parameters. */
  known: RequestHandler;
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
      incidentsSql(deps.database, tenantOf(res), id, limit, status),
    );
    const now = Math.floor(Date.now() / 1000);
    res.json({ success: true, data: rows.map((r) => rowToIncident(r, id, now)) });
  };
  return [params, deps.known, read];
}
