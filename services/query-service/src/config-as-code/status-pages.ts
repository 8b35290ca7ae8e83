import { AppError } from '@telemetry/platform';
import type { ConfigItem, Problem, Validators } from '@telemetry/contract';
import { publicStatusPageOf, type StatusPageStore, type StoredStatusPage } from '@telemetry/store';
import { recordChange, type Auditor } from '../access/audit.js';
import { createdPage, nowIso, type StatusPageDraft, type StatusPageHooks } from '../status-pages.route.js';
import type { ConfigKindModule, ManagedObject } from './kind.js';

/** A status page a document manages: its id is its slug. */
export type ManagedStatusPage = StoredStatusPage & ManagedObject;

/** A document's status page as the page it describes (monitor keys made ids, defaults applied). */
export type DesiredStatusPage = StatusPageDraft & { key: string };

export interface StatusPageKindDeps {
  store: Pick<StatusPageStore, 'keyedIn' | 'unkeyedIn' | 'setKeyIn' | 'createIn' | 'updateIn' | 'removeIn'>;
  validators: Pick<Validators, 'statusPageCreate'>;
  audit: Auditor;
  /** The status page routes' hooks (app.ts): this replica's directory and rendered page follow a committed change. */
  pages: Pick<StatusPageHooks, 'changed'>;
}

/** The item fields a plan compares, in the order an item has them (the key matches by construction). */
const FIELDS = ['slug', 'title', 'description', 'monitor_ids'] as const;

const managed = (p: StoredStatusPage): ManagedStatusPage => ({ ...p, id: p.slug, key: p.key! });

/** The page as stored (without the `id` the engine reads). */
function storedOf(p: ManagedStatusPage): StoredStatusPage {
  const { id: _id, ...page } = p;
  return page;
}

const target = (slug: string) => ({ type: 'status_page', id: slug });

/**
 * Status pages in a configuration document (docs/console.md, "In a configuration file"): an item is
 * POST /api/status-pages's body plus its `key`, `monitor_ids` naming the monitors by their
 * keys. It is validated by the route's own function (createdPage); an applied page is
 * served, audited and cached as one made through the API. A page's slug is its id and its
 * public address, which the API cannot change: an item that changes it is a problem.
 * Pages have no secrets.
 */
export function statusPageConfigKind(deps: StatusPageKindDeps): ConfigKindModule<ManagedStatusPage, DesiredStatusPage> {
  const changedPage = (page: StoredStatusPage | string, audit: () => Promise<void>) => async () => {
    deps.pages.changed(page);
    await audit();
  };
  const movedOn = (slug: string): AppError =>
    new AppError('PRECONDITION_FAILED', `the status page ${slug} changed while the document was applied; retry`);

  return {
    section: 'status_pages',
    kind: 'status_page',

    load: async (tx, tenantId) => (await deps.store.keyedIn(tx, tenantId)).map(managed),

    unkeyed: async (tx, tenantId) =>
      (await deps.store.unkeyedIn(tx, tenantId)).map((p) => ({ id: p.slug, name: p.title })),

    setKey: (tx, tenantId, id, key) => deps.store.setKeyIn(tx, tenantId, id, key),

    secrets: () => new Map(),

    prepare(item, current, ctx) {
      const problems: Problem[] = [];
      // Monitor keys → ids (of the tenant's monitors, or of those this document creates).
      // A key that names none stays in place, so the other problems keep their indexes;
      // the route's rules would then say it is no monitor id, which the key's problem says better.
      const unknown = new Set<string>();
      const body: Record<string, unknown> = { ...item };
      if (Array.isArray(item.monitor_ids)) {
        body.monitor_ids = item.monitor_ids.map((ref: unknown, i) => {
          if (typeof ref !== 'string') return ref;
          const id = ctx.idOf('monitors', ref);
          if (id !== undefined) return id;
          unknown.add(`/monitor_ids/${i}`);
          problems.push({ path: `/monitor_ids/${i}`, message: `there is no monitor with key ${ref}` });
          return ref;
        });
      }
      const checked = createdPage(deps.validators, body);
      if ('problems' in checked) problems.unshift(...checked.problems.filter((p) => !unknown.has(p.path)));
      if (current && typeof item.slug === 'string' && item.slug !== current.slug) {
        problems.push({
          path: '/slug',
          message: `the slug of status page ${item.key} is ${current.slug} and cannot change (it is the page's public address); give the page a new key to publish it under the new slug`,
        });
      }
      if (problems.length > 0 || 'problems' in checked) return { problems };
      return { desired: { ...checked.page, key: item.key }, id: checked.page.slug };
    },

    changes: (current, desired) => FIELDS.filter((f) => JSON.stringify(current[f]) !== JSON.stringify(desired[f])),

    async create(tx, desired, ctx) {
      const now = nowIso();
      const page = await deps.store.createIn(tx, {
        ...desired,
        tenant_id: ctx.tenantId,
        created_at: now,
        updated_at: now,
      });
      return changedPage(page, () =>
        recordChange(
          deps.audit,
          ctx.req,
          ctx.res,
          'status_page.create',
          target(page.slug),
          undefined,
          publicStatusPageOf(page),
        ),
      );
    },

    async update(tx, current, desired, ctx) {
      const before = storedOf(current);
      const page = await deps.store.updateIn(tx, { ...before, ...desired, updated_at: nowIso() }, current.version);
      if (!page) throw movedOn(current.slug);
      return changedPage(page, () =>
        recordChange(
          deps.audit,
          ctx.req,
          ctx.res,
          'status_page.update',
          target(page.slug),
          publicStatusPageOf(before),
          publicStatusPageOf(page),
        ),
      );
    },

    async remove(tx, current, ctx) {
      if (!(await deps.store.removeIn(tx, current.slug, current.tenant_id, current.version)))
        throw movedOn(current.slug);
      return changedPage(current.slug, () =>
        recordChange(
          deps.audit,
          ctx.req,
          ctx.res,
          'status_page.delete',
          target(current.slug),
          publicStatusPageOf(storedOf(current)),
          undefined,
        ),
      );
    },

    exportOf(current, ctx): ConfigItem {
      return {
        key: current.key,
        slug: current.slug,
        title: current.title,
        ...(current.description === null ? {} : { description: current.description }),
        // A monitor without a key is not in the document: it cannot be named here (docs/as-code.md).
        monitor_ids: current.monitor_ids.flatMap((id) => {
          const key = ctx.keyOf('monitors', id);
          return key === undefined ? [] : [key];
        }),
      };
    },
  };
}
