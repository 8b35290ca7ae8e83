import { randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import type { AuditEntry, AuditOutcome, ErrorCode } from '@telemetry/contract';
import type { Logger } from '@telemetry/platform';
import type { Actor, Principal } from './principal.js';
import { clientAddress } from './throttled.js';

/**
 * The audit log's writer (docs/access.md, "Audit log"). Every write route records what it
 * did once it is committed (`record`); refusals of a known principal are recorded as
 * `denied`. Entries go to AUDIT_TOPIC (the stream consumer writes them to `audit_log`).
 */

export interface AuditRecord {
  /** `<object>.<verb>` (docs/access.md lists them). */
  action: string;
  target: { type: string; id: string };
  outcome?: AuditOutcome;
  /** Each changed field's before and after, as the API shows them (secrets masked). */
  changes?: AuditEntry['changes'];
  /** The tenant, when the request's principal has none (a sign-in). */
  tenantId?: string;
  /** The actor, when the request's principal is not it (a sign-in, an invitation accepted). */
  actor?: Actor;
}

export interface Auditor {
  /** Records an action; resolves once the entry is in Kafka (logged, never thrown, when it cannot be). */
  record(req: Request, res: Response, r: AuditRecord): Promise<void>;
  /** Records a refusal of the request's principal (the route it tried, the code it got). */
  denied(req: Request, res: Response, code: ErrorCode): Promise<void>;
}

const MAX_USER_AGENT = 512;

/** The fields that differ between two views of an object (top level), as before and after. */
export function changedFields(
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown> | undefined,
  ignore: readonly string[] = ['version', 'updated_at', 'created_at'],
): AuditEntry['changes'] {
  const out: AuditEntry['changes'] = {};
  const keys = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  for (const k of keys) {
    if (ignore.includes(k)) continue;
    const b = before?.[k];
    const a = after?.[k];
    if (JSON.stringify(b) === JSON.stringify(a)) continue;
    out[k] = { ...(before ? { before: b ?? null } : {}), ...(after ? { after: a ?? null } : {}) };
  }
  return out;
}

/** The route's pattern (`/api/monitors/:id`), not the path with its ids. */
function routePath(req: Request): string {
  const route = req.route as { path?: unknown } | undefined;
  return `${req.baseUrl}${typeof route?.path === 'string' ? route.path : req.path}`;
}

/** An Auditor that publishes each entry with `publish` (Kafka, acknowledged). */
export function publishingAuditor(publish: (entry: AuditEntry) => Promise<void>, logger: Logger): Auditor {
  const record = async (req: Request, res: Response, r: AuditRecord): Promise<void> => {
    const principal = res.locals.key as Principal | undefined;
    const tenantId = r.tenantId ?? principal?.tenantId;
    // Only what concerns a tenant is audited (an unknown key concerns none).
    if (!tenantId) return;
    const entry: AuditEntry = {
      id: `aud_${randomBytes(12).toString('hex')}`,
      tenant_id: tenantId,
      at: new Date().toISOString(),
      actor: r.actor ?? principal?.actor ?? { type: 'anonymous', id: '', email: '' },
      action: r.action,
      target: r.target,
      outcome: r.outcome ?? 'ok',
      changes: r.changes ?? {},
      ip: clientAddress(req),
      user_agent: (req.get('user-agent') ?? '').slice(0, MAX_USER_AGENT),
      request_id: String(req.id ?? ''),
    };
    try {
      await publish(entry);
    } catch (err) {
      // The write it records is committed: answering an error would make the client retry it.
      logger.error('audit entry not published', {
        request_id: entry.request_id,
        action: entry.action,
        tenant_id: entry.tenant_id,
        err: String(err),
      });
    }
  };
  return {
    record,
    denied: (req, res, code) =>
      record(req, res, {
        action: 'access.denied',
        target: { type: 'route', id: `${req.method} ${routePath(req)}` },
        outcome: 'denied',
        changes: { code: { after: code } },
      }),
  };
}

/** How the audit log shows a secret that changed but whose shown form did not (a header value, a signing secret). */
export const CHANGED_SECRET = '****';

/**
 * Records a committed write of one object (`<type>.<verb>`): the fields that differ between
 * its views before and after, as the API answers them (undefined: made, or removed). With
 * `stored` (the objects as stored, secrets in the clear), a field whose secret changed
 * while its shown form stayed the same is recorded too, in its shown (masked) form.
 */
export function recordChange(
  audit: Auditor,
  req: Request,
  res: Response,
  action: string,
  target: { type: string; id: string },
  before: object | undefined,
  after: object | undefined,
  stored?: { before: object | undefined; after: object | undefined },
): Promise<void> {
  type Fields = Record<string, unknown> | undefined;
  const [b, a] = [before as Fields, after as Fields];
  const changes = changedFields(b, a);
  if (stored) {
    for (const k of Object.keys(changedFields(stored.before as Fields, stored.after as Fields))) {
      if (k in changes) continue;
      // Never the stored value: the shown one, or a mask where the API shows none.
      const shown = (o: Fields) => (o && k in o ? o[k] : CHANGED_SECRET);
      changes[k] = { ...(b ? { before: shown(b) } : {}), ...(a ? { after: shown(a) } : {}) };
    }
  }
  return audit.record(req, res, { action, target, changes });
}
