import type { Express, RequestHandler } from 'express';
import {
  DELETION_ID_PATTERN,
  DELETION_LIMITS,
  describeErrors,
  ok,
  createDeletionValidator,
  type DeletionView,
} from '@telemetry/contract';
import { AppError, bad, cursorParam, limitParam, rejectUnknown, sendPage, type PgPool } from '@telemetry/platform';
import { createDeletion, deletionById, listDeletions, type Scope } from '@telemetry/store';
import { principalOf } from './access/principal.js';
import { recordChange, type Auditor } from './access/audit.js';
import { isTimeCursorOf, tenantOf } from './params.js';
import { invalid, jsonBody } from './registry-objects.js';

/**
 * Deletion on request (docs/deletions.md): POST /api/deletions records the request and
 * suppresses its ids in one PostgreSQL transaction (202; the stream consumer deletes the
 * stored events), GET lists and follows them. Every id is the caller's tenant's: the
 * tenant comes from the principal, never from the request.
 */
export interface DeletionRouteDeps {
  pool: PgPool;
  auth: (scope: Scope) => RequestHandler;
  audit: Auditor;
  validate: ReturnType<typeof createDeletionValidator>;
}

const ID = new RegExp(DELETION_ID_PATTERN);

function isUsCursor(v: unknown): v is [number, string] {
  return isTimeCursorOf(v, ID);
}

/** What the audit log and requested_by call the caller: a person's id, or key:<key id>. */
function requesterOf(res: Parameters<RequestHandler>[1]): string {
  const p = principalOf(res);
  return p.actor.type === 'person' ? p.actor.id : `key:${p.keyId}`;
}

export function deletionRoutes(app: Express, deps: DeletionRouteDeps): void {
  app.post('/api/deletions', deps.auth('deletions:write'), async (req, res) => {
    rejectUnknown(req, new Set());
    const body = await jsonBody(req);
    if (!deps.validate(body)) throw invalid('deletion request', describeErrors(deps.validate.errors));
    const userIds = body.user_ids ?? [];
    const anonymousIds = body.anonymous_ids ?? [];
    const total = userIds.length + anonymousIds.length;
    if (total > DELETION_LIMITS.maxIdsPerRequest) {
      throw new AppError(
        'TOO_MANY_IDS',
        `a deletion request names at most ${DELETION_LIMITS.maxIdsPerRequest} ids in all; this one names ${total}`,
        { limit: DELETION_LIMITS.maxIdsPerRequest },
      );
    }
    const deletion = await createDeletion(deps.pool, {
      tenantId: tenantOf(res),
      requestedBy: requesterOf(res),
      userIds,
      anonymousIds,
    });
    await recordChange(deps.audit, req, res, 'deletion.create', { type: 'deletion', id: deletion.id }, undefined, {
      user_ids: userIds,
      anonymous_ids: anonymousIds,
    });
    res.status(202).setHeader('Location', `/api/deletions/${deletion.id}`).json(ok(deletion));
  });

  app.get('/api/deletions', deps.auth('deletions:read'), async (req, res) => {
    rejectUnknown(req, new Set(['limit', 'cursor']));
    const limit = limitParam(req, DELETION_LIMITS.maxPage, DELETION_LIMITS.defaultPage);
    const cursor = cursorParam(req, isUsCursor);
    const rows = await listDeletions(
      deps.pool,
      tenantOf(res),
      limit + 1,
      cursor === undefined ? undefined : { us: cursor[0], id: cursor[1] },
    );
    res.setHeader('Cache-Control', 'no-store');
    sendPage(
      req,
      res,
      rows,
      limit,
      (r) => [r.at_us, r.id],
      ({ at_us: _, ...view }): DeletionView => view,
    );
  });

  app.get('/api/deletions/:id', deps.auth('deletions:read'), async (req, res) => {
    rejectUnknown(req, new Set());
    const raw = req.params.id;
    const id = typeof raw === 'string' ? raw : '';
    if (!ID.test(id)) throw bad('id', 'must be a deletion id (del_ and 20 lower-case letters or digits)');
    const deletion = await deletionById(deps.pool, tenantOf(res), id);
    if (!deletion) throw new AppError('DELETION_NOT_FOUND', `no deletion ${id} in this tenant`);
    res.setHeader('Cache-Control', 'no-store');
    res.json(ok(deletion));
  });
}
