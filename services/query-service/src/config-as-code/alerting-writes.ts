import type { Problem } from '@telemetry/contract';
import type { PgQueryable } from '@telemetry/platform';
import { recordChange, type Auditor } from '../access/audit.js';
import { nowIso } from '../registry-objects.js';
import { movedUnderLock, type AfterCommit, type ApplyContext } from './kind.js';

/** What the writes of an alert channel or escalation policy need of its store. */
export interface AlertingObjectStore<S extends { id: string; version: number; created_at: string }> {
  createIn(tx: PgQueryable, o: Omit<S, 'version'>): Promise<S>;
  updateIn(tx: PgQueryable, next: Omit<S, 'version'>, basedOn: number): Promise<S | undefined>;
  removeIn(tx: PgQueryable, tenantId: string, id: string): Promise<{ removed: boolean; usedBy: string[] }>;
}

/**
 * The create, update and remove of a kind whose objects are alert channels or escalation
 * policies: written in the apply's transaction, audited as their routes audit them
 * (`<type>.create` …) once it committed; a delete of an object something still uses is a
 * problem (the engine names the object at its section).
 */
export function alertingWrites<
  S extends { id: string; key: string | null; version: number; created_at: string },
>(opts: {
  store: AlertingObjectStore<S>;
  audit: Auditor;
  /** The audit's target type and action prefix: `channel`, `escalation_policy`. */
  type: string;
  /** How an error names the object (`the channel web`). */
  what: (key: string) => string;
  /** The object as the audit log shows it (secrets masked). */
  view: (o: S) => object;
  /** What the audit compares besides the view, so a secret changed behind the same mask is recorded (masked). */
  stored?: (o: S) => object;
}): {
  create(tx: PgQueryable, desired: Omit<S, 'version'>, ctx: ApplyContext): Promise<AfterCommit>;
  update(
    tx: PgQueryable,
    current: S & { key: string },
    desired: Omit<S, 'version'>,
    ctx: ApplyContext,
  ): Promise<AfterCommit>;
  remove(tx: PgQueryable, current: S, ctx: ApplyContext): Promise<AfterCommit | Problem[]>;
} {
  const { store, audit, type, view, stored } = opts;
  const audited =
    (ctx: ApplyContext, action: string, id: string, before: S | undefined, after: S | undefined): AfterCommit =>
    () =>
      recordChange(
        audit,
        ctx.req,
        ctx.res,
        `${type}.${action}`,
        { type, id },
        before && view(before),
        after && view(after),
        stored && before && after ? { before: stored(before), after: stored(after) } : undefined,
      );
  return {
    async create(tx, desired, ctx) {
      const now = nowIso();
      const o = await store.createIn(tx, { ...desired, tenant_id: ctx.tenantId, created_at: now, updated_at: now });
      return audited(ctx, 'create', o.id, undefined, o);
    },
    async update(tx, current, desired, ctx) {
      const next = {
        ...desired,
        id: current.id,
        tenant_id: ctx.tenantId,
        created_at: current.created_at,
        updated_at: nowIso(),
      };
      const o = await store.updateIn(tx, next, current.version);
      if (!o) throw movedUnderLock(opts.what(current.key));
      return audited(ctx, 'update', o.id, current, o);
    },
    async remove(tx, current, ctx) {
      const { removed, usedBy } = await store.removeIn(tx, ctx.tenantId, current.id);
      // The engine names the object (`the channel x cannot be deleted: …`) at its section.
      if (usedBy.length > 0) return [{ path: '', message: `it is still used by ${usedBy.join(', ')}` }];
      return removed ? audited(ctx, 'delete', current.id, current, undefined) : () => Promise.resolve();
    },
  };
}
