import type { Express, Request, RequestHandler, Response } from 'express';
import { describeErrors, ok, PERSON_ID_PATTERN, type PeopleValidators, type Scope } from '@telemetry/contract';
import { AppError, rejectUnknown, type Logger, type PgPool } from '@telemetry/platform';
import { changeRole, listMembers, removeMember, type MemberActor } from '@telemetry/store';
import type { Auditor } from './access/audit.js';
import { principalOf } from './access/principal.js';
import { clearSessionCookie } from './access/session-cookie.js';
import { tenantOf } from './params.js';
import { invalid, jsonBody, refuseLimited } from './registry-objects.js';

/**
 * /api/members (docs/access.md, "Members"): a tenant's members, their roles, their removal.
 * Owners and admins change roles and remove members; only an owner grants or takes the
 * owner role or removes an owner; the last owner stays (store/people/memberships.ts).
 */

/** What the members, invitations and settings routes share. */
export interface PeopleRoutesDeps {
  db: PgPool;
  auth: (scope: Scope) => RequestHandler;
  audit: Auditor;
  validators: PeopleValidators;
  logger: Logger;
  /** Whether the session cookie is Secure (PUBLIC_URL: cookieSecure). */
  cookieSecure: boolean;
}

/** The request's JSON body if `validate` accepts it, else 400 VALIDATION_FAILED with each problem's JSON pointer. */
export async function validBody<T>(
  req: Request,
  validate: { (data: unknown): data is T; errors?: Parameters<typeof describeErrors>[0] },
  what: string,
): Promise<T> {
  const body = await jsonBody(req);
  if (!validate(body)) throw invalid(what, describeErrors(validate.errors));
  return body;
}

/** Who is asking, as the owner rules see them: a person's role, or an API key (never an owner). */
export function memberActor(res: Response): MemberActor {
  const s = principalOf(res).session;
  return s ? { role: s.role, personId: s.person.id } : { role: 'api_key' };
}

/** Audits a refusal by the owner rules as access.denied, then throws it. */
export async function refuse(deps: PeopleRoutesDeps, req: Request, res: Response, err: AppError): Promise<never> {
  await deps.audit.denied(req, res, err.code);
  throw err;
}

/** Runs `fn`; a refusal by the owner rules (ROLE_NOT_ALLOWED, LAST_OWNER) is audited (refuse). */
async function ownerRules<T>(deps: PeopleRoutesDeps, req: Request, res: Response, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError && (err.code === 'ROLE_NOT_ALLOWED' || err.code === 'LAST_OWNER'))
      return refuse(deps, req, res, err);
    throw err;
  }
}

const PERSON_ID = new RegExp(PERSON_ID_PATTERN);

function personIdOf(req: Request): string {
  const id = String(req.params.person_id);
  if (!PERSON_ID.test(id)) throw new AppError('MEMBER_NOT_FOUND', 'there is no such member in this tenant');
  return id;
}

export function memberRoutes(app: Express, deps: PeopleRoutesDeps): void {
  app.get('/api/members', deps.auth('members:read'), async (req, res) => {
    rejectUnknown(req, new Set());
    res.setHeader('Cache-Control', 'no-store');
    res.json(ok(await listMembers(deps.db, tenantOf(res))));
  });

  app.patch('/api/members/:person_id', deps.auth('members:write'), async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'members');
    const personId = personIdOf(req);
    const { role } = await validBody(req, deps.validators.memberPatch, 'role change');
    const { before, after } = await ownerRules(deps, req, res, () =>
      changeRole(deps.db, { tenantId: tenantOf(res), personId, role, actor: memberActor(res) }),
    );
    if (before.role !== after.role)
      await deps.audit.record(req, res, {
        action: 'member.role_change',
        target: { type: 'member', id: personId },
        changes: { role: { before: before.role, after: after.role } },
      });
    res.json(ok(after));
  });

  // Any member may leave (remove themself); removing another takes members:write.
  app.delete('/api/members/:person_id', deps.auth('members:read'), async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'members');
    const personId = personIdOf(req);
    const actor = memberActor(res);
    const leaving = actor.personId === personId;
    if (!leaving && !principalOf(res).scopes.has('members:write')) {
      await deps.audit.denied(req, res, 'INSUFFICIENT_SCOPE');
      throw new AppError('INSUFFICIENT_SCOPE', `a ${actor.role} may only remove themself (it needs members:write)`, {
        scope: 'members:write',
      });
    }
    const gone = await ownerRules(deps, req, res, () =>
      removeMember(deps.db, { tenantId: tenantOf(res), personId, actor }),
    );
    await deps.audit.record(req, res, {
      action: 'member.remove',
      target: { type: 'member', id: personId },
      changes: { role: { before: gone.role } },
    });
    // Who left has no session here any more.
    if (leaving) clearSessionCookie(res, deps.cookieSecure);
    res.json(ok({}));
  });
}
