import type { Express, RequestHandler } from 'express';
import { ACCESS_LIMITS, AUDIT_ACTION_FILTER_PATTERN, AUDIT_OUTCOMES, type AuditOutcome } from '@telemetry/contract';
import { bad, cursorParam, limitParam, rejectUnknown, sendPage, single } from '@telemetry/platform';
import { auditLogSql, rowToAuditEntry, type AuditLogReadRow, type AuditQuery } from '@telemetry/store';
import { isTimeIdCursor, rangeParams, readRows, tenantOf, type ReadDeps } from './params.js';

/** GET /api/audit (docs/access.md, "Audit log"; docs/api.md). */

const KNOWN_PARAMS = new Set([
  'from',
  'to',
  'actor',
  'action',
  'target_type',
  'target_id',
  'outcome',
  'limit',
  'cursor',
]);
const ACTION = new RegExp(AUDIT_ACTION_FILTER_PATTERN);
/** One printable token: an id, a key id, an email (no spaces, no control characters: visible ASCII or beyond). */
const TOKEN = /^[\x21-\x7e\u00a0-\uffff]+$/;
const TARGET_TYPE = /^[a-z][a-z_]{0,63}$/;

function tokenParam(req: Parameters<RequestHandler>[0], name: string, max: number): string | undefined {
  const v = single(req, name);
  if (v !== undefined && (v.length > max || !TOKEN.test(v)))
    throw bad(name, `must be 1-${max} printable characters without spaces`);
  return v;
}

/** What GET /api/audit is asked, but the tenant: 400 INVALID_PARAMETER for a bad parameter. */
export function auditParams(req: Parameters<RequestHandler>[0]): Omit<AuditQuery, 'tenantId'> {
  rejectUnknown(req, KNOWN_PARAMS);
  const limit = limitParam(req, ACCESS_LIMITS.maxAuditPage, ACCESS_LIMITS.defaultAuditPage);
  const { from, to } = rangeParams(req);
  const actor = tokenParam(req, 'actor', 254);
  const action = single(req, 'action');
  if (action !== undefined && (action.length > 64 || !ACTION.test(action)))
    throw bad('action', 'must be an action (monitor.update) or a prefix of one ending in . (monitor.)');
  const targetType = single(req, 'target_type');
  if (targetType !== undefined && !TARGET_TYPE.test(targetType))
    throw bad('target_type', 'must be a target type: lower-case letters and _ (monitor, channel, key, route)');
  const targetId = tokenParam(req, 'target_id', 300);
  const outcome = single(req, 'outcome');
  if (outcome !== undefined && !(AUDIT_OUTCOMES as readonly string[]).includes(outcome))
    throw bad('outcome', `must be one of ${AUDIT_OUTCOMES.join(', ')}`);
  const cursor = cursorParam(req, isTimeIdCursor);
  return {
    limit,
    ...(from === undefined ? {} : { from }),
    ...(to === undefined ? {} : { to }),
    ...(actor === undefined ? {} : { actor }),
    ...(action === undefined ? {} : { action }),
    ...(targetType === undefined ? {} : { targetType }),
    ...(targetId === undefined ? {} : { targetId }),
    ...(outcome === undefined ? {} : { outcome: outcome as AuditOutcome }),
    ...(cursor === undefined ? {} : { cursor: { ms: cursor[0], id: cursor[1] } }),
  };
}

/**
 * GET /api/audit: the principal's tenant's audit entries, newest first, filtered; a keyset
 * cursor on (at_ms, id). The tenant is always the principal's: no parameter names one.
 */
export function auditRoutes(app: Express, deps: ReadDeps & { auth: RequestHandler }): void {
  app.get('/api/audit', deps.auth, async (req, res) => {
    const q: AuditQuery = { ...auditParams(req), tenantId: tenantOf(res) };
    const rows = await readRows<AuditLogReadRow>(deps, req, 'audit log query', () =>
      auditLogSql(deps.database, deps.layout, q),
    );
    sendPage(req, res, rows, q.limit, (r) => [Number(r.at_ms), r.id], rowToAuditEntry);
  });
}
