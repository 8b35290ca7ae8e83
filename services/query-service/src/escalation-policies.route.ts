import type { Express, Request, RequestHandler, Response } from 'express';
import { describeErrors, ESCALATION_POLICY_ID_PATTERN, ok, type Validators } from '@telemetry/contract';
import { AppError, rejectUnknown, type Logger } from '@telemetry/platform';
import {
  newEscalationPolicyId,
  policyView,
  type EscalationPolicyStore,
  type PolicyStep,
  type StoredPolicy,
} from '@telemetry/store';
import { recordChange, type Auditor } from './access/audit.js';
import { policyOfCreate, shortDelayProblems } from './escalation-policy-rules.js';
import { storeCall as storeCallOf, tenantOf } from './params.js';
import { checkIfMatch, conditionally, etagOf, invalid, jsonBody, nowIso, refuseLimited } from './registry-objects.js';

export interface EscalationPolicyRoutesDeps {
  store: EscalationPolicyStore;
  validators: Validators;
  logger: Logger;
  auth: { read: RequestHandler; write: RequestHandler };
  /** ALERT_MIN_DELAY_SECONDS: the shortest escalation delay. */
  minDelaySeconds: number;
  /** The audit log (docs/access.md): each committed write is recorded. */
  audit: Auditor;
}

const POLICY_ID = new RegExp(ESCALATION_POLICY_ID_PATTERN);

function policyIdOf(req: Request): string {
  const id = String(req.params.id);
  if (!POLICY_ID.test(id)) throw new AppError('ESCALATION_POLICY_NOT_FOUND', 'there is no such escalation policy');
  return id;
}

/** /api/escalation-policies and /api/escalation-policies/{id} (docs/alerting.md, "API"). */
export function escalationPolicyRoutes(app: Express, deps: EscalationPolicyRoutesDeps): void {
  const storeCall = <T>(req: Request, what: string, fn: () => Promise<T>): Promise<T> =>
    storeCallOf(deps.logger, req, what, fn);
  const load = async (req: Request, res: Response): Promise<StoredPolicy> => {
    const id = policyIdOf(req);
    const p = await storeCall(req, 'escalation policy lookup', () => deps.store.get(tenantOf(res), id));
    if (!p) throw new AppError('ESCALATION_POLICY_NOT_FOUND', `there is no escalation policy ${id}`);
    return p;
  };
  /** Every step's delay is at least ALERT_MIN_DELAY_SECONDS (the channels are checked in the store's transaction). */
  const refuseShortDelays = (steps: readonly PolicyStep[]): void => {
    const problems = shortDelayProblems(steps, deps.minDelaySeconds);
    if (problems.length > 0) throw invalid('escalation policy', problems);
  };
  const shown = (res: Response, p: StoredPolicy) => {
    res.setHeader('ETag', etagOf(p.version));
    return ok(policyView(p));
  };

  app.get('/api/escalation-policies', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set());
    const all = await storeCall(req, 'escalation policy list', () => deps.store.list(tenantOf(res)));
    res.json(ok(all.map(policyView)));
  });

  app.post('/api/escalation-policies', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'escalation policies');
    const checked = policyOfCreate(await jsonBody(req), deps);
    if ('problems' in checked) throw invalid('escalation policy', checked.problems);
    const now = nowIso();
    const p = await storeCall(req, 'escalation policy insert', () =>
      deps.store.create({
        ...checked.policy,
        id: newEscalationPolicyId(),
        tenant_id: tenantOf(res),
        created_at: now,
        updated_at: now,
      }),
    );
    const target = { type: 'escalation_policy', id: p.id };
    await recordChange(deps.audit, req, res, 'escalation_policy.create', target, undefined, policyView(p));
    res.status(201).setHeader('Location', `/api/escalation-policies/${p.id}`);
    res.json(shown(res, p));
  });

  app.get('/api/escalation-policies/:id', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set());
    res.setHeader('Cache-Control', 'no-store');
    res.json(shown(res, await load(req, res)));
  });

  app.patch('/api/escalation-policies/:id', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'escalation policies');
    policyIdOf(req);
    const patch = await jsonBody(req);
    if (!deps.validators.escalationPolicyPatch(patch)) {
      throw invalid('escalation policy', describeErrors(deps.validators.escalationPolicyPatch.errors));
    }
    if (patch.steps) refuseShortDelays(patch.steps);
    let before: StoredPolicy | undefined;
    const p = await conditionally(
      req,
      'escalation policy',
      () => load(req, res),
      (current) => {
        before = current;
        const { version: _v, ...rest } = current;
        return storeCall(req, 'escalation policy update', () =>
          deps.store.update(
            {
              ...rest,
              key: patch.key === undefined ? current.key : patch.key,
              name: patch.name ?? current.name,
              steps: patch.steps ?? current.steps,
              updated_at: nowIso(),
            },
            current.version,
          ),
        );
      },
    );
    const target = { type: 'escalation_policy', id: p.id };
    await recordChange(
      deps.audit,
      req,
      res,
      'escalation_policy.update',
      target,
      before && policyView(before),
      policyView(p),
    );
    res.json(shown(res, p));
  });

  app.delete('/api/escalation-policies/:id', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'escalation policies');
    const current = await load(req, res);
    checkIfMatch(req, current.version, 'escalation policy');
    // IN_USE is decided in the delete's transaction.
    const gone = await storeCall(req, 'escalation policy delete', () =>
      deps.store.remove(current.tenant_id, current.id),
    );
    if (!gone) throw new AppError('ESCALATION_POLICY_NOT_FOUND', `there is no escalation policy ${current.id}`);
    const target = { type: 'escalation_policy', id: current.id };
    await recordChange(deps.audit, req, res, 'escalation_policy.delete', target, policyView(current), undefined);
    res.json(ok(null));
  });
}
