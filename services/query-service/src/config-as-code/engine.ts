import {
  CONFIG_KINDS,
  CONFIG_LIMITS,
  CONFIG_SECTIONS,
  CONFIG_DOCUMENT_VERSION,
  createConfigValidators,
  describeErrors,
  type ConfigChange,
  type ConfigDocument,
  type ConfigItem,
  type ConfigKind,
  type ConfigPlan,
  type ConfigSection,
  type ConfigValidators,
  type Problem,
} from '@telemetry/contract';
import { inTransaction, type PgClient, type PgPool } from '@telemetry/platform';
import { newChannelId, newEscalationPolicyId, newMonitorId, registryCall, registryWrite } from '@telemetry/store';
import { invalid } from '../registry-objects.js';
import type { AfterCommit, ApplyContext, ConfigKindModule, ManagedObject, PlanContext } from './kind.js';

/**
 * The configuration engine (docs/as-code.md, "The API"): drives the kind modules
 * (kind.ts) to export a tenant's managed objects as a document, to plan a document against
 * them and to apply it, all of it in one registry write transaction, and to give keys to
 * the objects that have none (adopt).
 */

export interface ConfigEngineDeps {
  /** The registry: apply and adopt run in one registryWrite, export in one read-only snapshot. */
  pool: PgPool;
  /** Fingerprints of secrets (SECRETS_KEYS), keyed per tenant. */
  box: {
    fingerprint(value: string, context: string): string;
    fingerprintMatches(fp: string, value: string, context: string): boolean;
  };
  /** The kinds this server manages, one per section at most (a section without one is refused). */
  kinds: readonly ConfigKindModule[];
  /** The id a create in `section` gets, before its item is prepared (tests make their own). */
  newIds?: Partial<Record<ConfigSection, (item: ConfigItem) => string>>;
  /** An AfterCommit that fails: the apply is committed, so it is reported here, not answered. */
  onAfterCommitError?: (err: unknown) => void;
  validators?: ConfigValidators;
}

export interface ApplyOptions {
  dryRun: boolean;
  prune: boolean;
}

export interface ExportAnswer {
  document: ConfigDocument;
  /** How many objects of each kind have no key (GET /api/config leaves them out). */
  unmanaged: Partial<Record<ConfigSection, number>>;
}

export interface Adopted {
  kind: ConfigKind;
  id: string;
  key: string;
}

/** Sections whose deletes go before the creates and updates (they refer to the others), and after. */
const DELETE_FIRST: readonly ConfigSection[] = ['status_pages', 'monitors'];
const DELETE_LAST: readonly ConfigSection[] = ['escalation_policies', 'channels'];

const DEFAULT_NEW_IDS: Record<ConfigSection, (item: ConfigItem) => string> = {
  channels: () => newChannelId(),
  escalation_policies: () => newEscalationPolicyId(),
  monitors: () => newMonitorId(),
  // A status page's id is its slug; an item without one is refused by its kind.
  status_pages: (item) => (typeof item.slug === 'string' ? item.slug : `(new status page ${item.key})`),
};

/** One item of the document, as the engine follows it through planning. */
interface Entry {
  section: ConfigSection;
  index: number;
  item: ConfigItem;
  current: ManagedObject | undefined;
  /** The id it has or gets (a create's allocated one until its kind says otherwise). */
  id: string;
  desired?: unknown;
}

interface Loaded {
  kind: ConfigKindModule;
  objects: ManagedObject[];
  byKey: Map<string, ManagedObject>;
}

/** A JSON pointer's segment (RFC 6901). */
export function pointerSegment(s: string | number): string {
  return String(s).replace(/~/g, '~0').replace(/\//g, '~1');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every key's comparison: code units, so that the order does not depend on a locale. */
function byKey(a: { key: string }, b: { key: string }): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

export class ConfigEngine {
  private readonly validators: ConfigValidators;
  private readonly kinds = new Map<ConfigSection, ConfigKindModule>();
  private readonly newIds: Record<ConfigSection, (item: ConfigItem) => string>;

  constructor(private readonly deps: ConfigEngineDeps) {
    this.validators = deps.validators ?? createConfigValidators();
    for (const k of deps.kinds) {
      if (this.kinds.has(k.section)) throw new Error(`two configuration kinds for the section ${k.section}`);
      this.kinds.set(k.section, k);
    }
    this.newIds = { ...DEFAULT_NEW_IDS, ...deps.newIds };
  }

  /** The sections this server manages, in CONFIG_SECTIONS order. */
  get sections(): ConfigSection[] {
    return CONFIG_SECTIONS.filter((s) => this.kinds.has(s));
  }

  /**
   * Plans `body` (a ConfigDocument) against the tenant's managed objects and, unless a dry
   * run, applies it, all in one registry write transaction. Any problem of any item (or a
   * delete its kind refuses) answers 400 VALIDATION_FAILED with all of them, and nothing is
   * written. After COMMIT the kinds' AfterCommit functions run, in order.
   */
  async apply(
    tenantId: string,
    body: unknown,
    options: ApplyOptions,
    ctx: Omit<ApplyContext, 'tenantId'>,
  ): Promise<ConfigPlan> {
    const { document, problems } = this.checkDocument(body);
    const { plan, after } = await registryWrite(this.deps.pool, async (tx) => {
      const loaded = await this.loadAll(tx, tenantId);
      const entries = this.match(document, loaded);
      const plan = this.plan(tenantId, document, entries, loaded, options, problems);
      if (!options.dryRun) return { plan, after: await this.write(tx, tenantId, plan, entries, loaded, ctx) };
      // A dry run makes the writes too, so that it answers what the apply would (a key taken,
      // a delete refused), and takes them back: nothing is kept, nothing is announced.
      await tx.query('SAVEPOINT config_dry_run');
      await this.write(tx, tenantId, plan, entries, loaded, ctx);
      await tx.query('ROLLBACK TO SAVEPOINT config_dry_run');
      return { plan, after: [] };
    });
    for (const fn of after) {
      try {
        await fn();
      } catch (err) {
        this.deps.onAfterCommitError?.(err);
      }
    }
    return plan;
  }

  /** The tenant's managed objects as a document, and how many objects of each kind have no key. */
  async export(tenantId: string): Promise<ExportAnswer> {
    return readSnapshot(this.deps.pool, async (tx) => {
      const loaded = new Map<ConfigSection, ManagedObject[]>();
      const unmanaged: Partial<Record<ConfigSection, number>> = {};
      for (const section of this.sections) {
        const kind = this.kinds.get(section)!;
        loaded.set(section, await kind.load(tx, tenantId));
        unmanaged[section] = (await kind.unkeyed(tx, tenantId)).length;
      }
      const keys = new Map<ConfigSection, Map<string, string>>();
      for (const [section, objects] of loaded) keys.set(section, new Map(objects.map((o) => [o.id, o.key])));
      const exportCtx = {
        tenantId,
        keyOf: (section: ConfigSection, id: string) => keys.get(section)?.get(id),
        fingerprint: (value: string) => this.deps.box.fingerprint(value, tenantId),
      };
      const document: ConfigDocument = { version: CONFIG_DOCUMENT_VERSION };
      for (const section of this.sections) {
        const kind = this.kinds.get(section)!;
        document[section] = [...loaded.get(section)!].sort(byKey).map((o) => kind.exportOf(o, exportCtx));
      }
      return { document, unmanaged };
    });
  }

  /**
   * Gives every object without a key one made from its name (slugKey), unique among its
   * kind's keys in the tenant, in one registry write.
   */
  async adopt(tenantId: string): Promise<Adopted[]> {
    return registryWrite(this.deps.pool, async (tx) => {
      const adopted: Adopted[] = [];
      for (const section of this.sections) {
        const kind = this.kinds.get(section)!;
        const taken = new Set((await kind.load(tx, tenantId)).map((o) => o.key));
        for (const o of await kind.unkeyed(tx, tenantId)) {
          const key = uniqueKey(slugKey(o.name, kind.kind), taken);
          if (await kind.setKey(tx, tenantId, o.id, key)) {
            taken.add(key);
            adopted.push({ kind: kind.kind, id: o.id, key });
          }
        }
      }
      return adopted;
    });
  }

  /**
   * The document's shape and size (refused at once), then its sections (each one this server
   * manages) and its keys (each once per section): those problems go with the items' own.
   */
  private checkDocument(body: unknown): { document: ConfigDocument; problems: Problem[] } {
    if (!this.validators.document(body)) {
      throw invalid('configuration document', describeErrors(this.validators.document.errors));
    }
    const document = body;
    const total = CONFIG_SECTIONS.reduce((n, s) => n + (document[s]?.length ?? 0), 0);
    if (total > CONFIG_LIMITS.maxObjects) {
      throw invalid('configuration document', [
        { path: '/', message: `holds ${total} objects; at most ${CONFIG_LIMITS.maxObjects} in one document` },
      ]);
    }
    const problems: Problem[] = [];
    for (const section of CONFIG_SECTIONS) {
      const items = document[section];
      if (items === undefined) continue;
      if (!this.kinds.has(section)) {
        problems.push({ path: `/${section}`, message: `this server does not manage ${section} from a document` });
        continue;
      }
      const first = new Map<string, number>();
      items.forEach((item, i) => {
        const seen = first.get(item.key);
        if (seen === undefined) first.set(item.key, i);
        else
          problems.push({
            path: `/${section}/${i}/key`,
            message: `the key ${item.key} is given twice (also at /${section}/${seen})`,
          });
      });
      // A status page's slug is its id and its public address: two items cannot both have it
      // (one problem at the later item, rather than the store's 409 SLUG_TAKEN for the whole document).
      if (section === 'status_pages') {
        const slugs = new Map<string, number>();
        items.forEach((item, i) => {
          if (typeof item.slug !== 'string') return;
          const seen = slugs.get(item.slug);
          if (seen === undefined) slugs.set(item.slug, i);
          else
            problems.push({
              path: `/${section}/${i}/slug`,
              message: `the slug ${item.slug} is given twice (also at /${section}/${seen})`,
            });
        });
      }
    }
    return { document, problems };
  }

  private async loadAll(tx: PgClient, tenantId: string): Promise<Map<ConfigSection, Loaded>> {
    const loaded = new Map<ConfigSection, Loaded>();
    for (const section of this.sections) {
      const kind = this.kinds.get(section)!;
      const objects = await kind.load(tx, tenantId);
      loaded.set(section, { kind, objects, byKey: new Map(objects.map((o) => [o.key, o])) });
    }
    return loaded;
  }

  /** The document's items matched by key to the tenant's objects; creates get their ids. */
  private match(document: ConfigDocument, loaded: Map<ConfigSection, Loaded>): Entry[] {
    const entries: Entry[] = [];
    for (const section of this.sections) {
      const items = document[section];
      if (!items) continue;
      const { byKey: current } = loaded.get(section)!;
      items.forEach((item, index) => {
        const c = current.get(item.key);
        entries.push({ section, index, item, current: c, id: c?.id ?? this.newIds[section](item) });
      });
    }
    return entries;
  }

  /** Resolves SecretPins, prepares every item (all problems of all items, or none) and plans. */
  private plan(
    tenantId: string,
    document: ConfigDocument,
    entries: Entry[],
    loaded: Map<ConfigSection, Loaded>,
    options: ApplyOptions,
    problems: Problem[],
  ): ConfigPlan {
    // The ids of the document's keys: the first item with a key names the object.
    const ids = new Map<ConfigSection, Map<string, Entry>>();
    for (const e of entries) {
      const m = ids.get(e.section) ?? new Map<string, Entry>();
      ids.set(e.section, m);
      if (!m.has(e.item.key)) m.set(e.item.key, e);
    }
    // With prune, the keys this apply deletes name nothing: a kept object may not refer to them.
    const pruned = new Map<ConfigSection, Set<string>>();
    if (options.prune) {
      for (const section of this.sections) {
        const items = document[section];
        if (!items) continue;
        const keep = new Set(items.map((i) => i.key));
        pruned.set(section, new Set(loaded.get(section)!.objects.flatMap((o) => (keep.has(o.key) ? [] : [o.key]))));
      }
    }
    const idOf = (section: ConfigSection, key: string): string | undefined =>
      ids.get(section)?.get(key)?.id ??
      (pruned.get(section)?.has(key) ? undefined : loaded.get(section)?.byKey.get(key)?.id);
    const missing = (section: ConfigSection, key: string): string => missingMessage(section, key, pruned);
    for (const e of entries) {
      const kind = loaded.get(e.section)!.kind;
      const at = `/${e.section}/${e.index}`;
      const { item, pinned, problems: pins } = this.resolvePins(e.item, e.current, kind, tenantId);
      problems.push(...pins.map((p) => under(at, p)));
      if (pins.length > 0) continue;
      const ctx: PlanContext = { tenantId, idOf, missing, newId: () => e.id };
      const prepared = kind.prepare(item, e.current, ctx);
      if ('problems' in prepared) {
        problems.push(...prepared.problems.map((p) => under(at, p)));
        continue;
      }
      // A stored secret stays where it was stored: not with an object that now connects elsewhere.
      if (e.current && pinned.length > 0 && kind.keepsSecret) {
        const keeps = kind.keepsSecret(e.current, prepared.desired);
        const refused = pinned.filter((path) => !keeps(path));
        problems.push(
          ...refused.map((path) => ({
            path: at + path,
            message: `the ${kind.kind} now connects to another origin: give the value, not a fingerprint`,
          })),
        );
        if (refused.length > 0) continue;
      }
      e.id = prepared.id;
      e.desired = prepared.desired;
    }
    if (problems.length > 0) throw invalid('configuration document', problems);

    const creates: ConfigChange[] = [];
    const summary = { create: 0, update: 0, delete: 0, unchanged: 0 };
    for (const e of entries) {
      const kind = loaded.get(e.section)!.kind;
      let change: ConfigChange | undefined;
      if (e.current === undefined) {
        change = { kind: kind.kind, key: e.item.key, action: 'create', id: e.id, fields: fieldsOf(e.item) };
      } else {
        const fields = kind.changes(e.current, e.desired);
        if (fields.length > 0) change = { kind: kind.kind, key: e.item.key, action: 'update', id: e.id, fields };
      }
      if (change) {
        summary[change.action]++;
        creates.push(change);
      } else summary.unchanged++;
    }
    const deletes = new Map<ConfigSection, ConfigChange[]>();
    if (options.prune) {
      for (const section of this.sections) {
        const items = document[section];
        // A section the document leaves out is not managed by it: never pruned.
        if (!items) continue;
        const keep = new Set(items.map((i) => i.key));
        const { kind, objects } = loaded.get(section)!;
        const gone = objects
          .filter((o) => !keep.has(o.key))
          .sort(byKey)
          .map((o): ConfigChange => ({ kind: kind.kind, key: o.key, action: 'delete', id: o.id, fields: [] }));
        summary.delete += gone.length;
        deletes.set(section, gone);
      }
    }
    const sectionOf = new Map(CONFIG_SECTIONS.map((s) => [CONFIG_KINDS[s], s] as const));
    const inSections = (list: ConfigChange[], sections: readonly ConfigSection[]) =>
      sections.flatMap((s) => list.filter((c) => sectionOf.get(c.kind) === s));
    const changes = [
      ...DELETE_FIRST.flatMap((s) => deletes.get(s) ?? []),
      ...inSections(creates, CONFIG_SECTIONS),
      ...DELETE_LAST.flatMap((s) => deletes.get(s) ?? []),
    ];
    return { applied: !options.dryRun, changes, summary };
  }

  /** Runs the plan's writes in its order; a delete its kind refuses fails the apply (400, all its phase's). */
  private async write(
    tx: PgClient,
    tenantId: string,
    plan: ConfigPlan,
    entries: Entry[],
    loaded: Map<ConfigSection, Loaded>,
    ctx: Omit<ApplyContext, 'tenantId'>,
  ): Promise<AfterCommit[]> {
    const applyCtx: ApplyContext = { ...ctx, tenantId };
    const sectionOf = new Map(CONFIG_SECTIONS.map((s) => [CONFIG_KINDS[s], s] as const));
    const entryOf = new Map(entries.map((e) => [`${e.section}\0${e.item.key}`, e]));
    const after: AfterCommit[] = [];
    let refused: Problem[] = [];
    let phase: 'first' | 'upserts' | 'last' | undefined;
    const endPhase = () => {
      if (refused.length > 0) throw invalid('configuration document', refused);
      refused = [];
    };
    for (const change of plan.changes) {
      const section = sectionOf.get(change.kind)!;
      const { kind, byKey: current } = loaded.get(section)!;
      const next = change.action !== 'delete' ? 'upserts' : DELETE_FIRST.includes(section) ? 'first' : 'last';
      if (next !== phase) {
        endPhase();
        phase = next;
      }
      if (change.action === 'delete') {
        const done = await kind.remove(tx, current.get(change.key)!, applyCtx);
        if (Array.isArray(done)) {
          refused.push(
            ...done.map((p) =>
              under(`/${section}`, {
                ...p,
                message: `the ${change.kind} ${change.key} cannot be deleted: ${p.message}`,
              }),
            ),
          );
        } else after.push(done);
        continue;
      }
      const e = entryOf.get(`${section}\0${change.key}`)!;
      after.push(
        change.action === 'create'
          ? await kind.create(tx, e.desired, applyCtx)
          : await kind.update(tx, e.current!, e.desired, applyCtx),
      );
    }
    endPhase();
    return after;
  }

  /**
   * The item with each SecretPin (`{fingerprint}`, anywhere below its top) replaced by the
   * object's stored secret at that path, when the stored value still has that fingerprint.
   */
  private resolvePins(
    item: ConfigItem,
    current: ManagedObject | undefined,
    kind: ConfigKindModule,
    tenantId: string,
  ): { item: ConfigItem; pinned: string[]; problems: Problem[] } {
    const problems: Problem[] = [];
    const pinned: string[] = [];
    let stored: Map<string, string> | undefined;
    const walk = (v: unknown, path: string): unknown => {
      if (path !== '' && isRecord(v) && this.validators.secretPin(v)) {
        stored ??= current ? kind.secrets(current) : new Map<string, string>();
        const value = stored.get(path);
        if (value === undefined) {
          problems.push({ path, message: 'has no stored value to keep: give the value' });
        } else if (!this.deps.box.fingerprintMatches(v.fingerprint, value, tenantId)) {
          problems.push({
            path,
            message: `the stored value's fingerprint is not ${v.fingerprint} (it was changed): give the value (set the environment variable)`,
          });
        } else {
          pinned.push(path);
          return value;
        }
        return v;
      }
      if (Array.isArray(v)) return v.map((x, i) => walk(x, `${path}/${i}`));
      if (isRecord(v)) {
        return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, `${path}/${pointerSegment(k)}`)]));
      }
      return v;
    };
    return { item: walk(item, '') as ConfigItem, pinned, problems };
  }
}

/** A kind's problem (its path relative to the item, `/` the item itself) at `at`. */
function under(at: string, p: Problem): Problem {
  return { path: p.path === '/' || p.path === '' ? at : at + p.path, message: p.message };
}

/** The form of the ids of each section's objects (a status page's id is its slug, which a key may be). */
const ID_FORMS: Partial<Record<ConfigSection, RegExp>> = {
  monitors: /^mon_[0-9a-f]{16}$/,
  channels: /^chn_[0-9a-f]{20}$/,
  escalation_policies: /^esc_[0-9a-f]{20}$/,
};

/** The problem of a reference to `key` in `section` that names nothing (PlanContext.missing). */
export function missingMessage(
  section: ConfigSection,
  key: string,
  pruned: ReadonlyMap<ConfigSection, ReadonlySet<string>>,
): string {
  const what = CONFIG_KINDS[section].replace(/_/g, ' ');
  if (pruned.get(section)?.has(key)) {
    return `the ${what} ${key} is deleted by this apply (prune): keep it in the document, or do not refer to it`;
  }
  // An export keeps the id of an object without a key (it is not in the document).
  if (ID_FORMS[section]?.test(key)) {
    return `${key} has no key: give it one (telemetry export --adopt, POST /api/config/adopt)`;
  }
  return `there is no ${what} with key ${key}`;
}

/** A create's fields: the item's top-level fields but its key. */
function fieldsOf(item: ConfigItem): string[] {
  return Object.keys(item).filter((k) => k !== 'key');
}

/**
 * A key made from a name: lower case, accents dropped, every run of other characters a
 * `-`, starting with a letter or digit, at most 63 characters; `fallback` when nothing is left.
 */
export function slugKey(name: string, fallback: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 63)
    .replace(/[._-]+$/, '');
  return slug === '' ? fallback : slug;
}

/** `base`, or `base-2`, `base-3`… (shortened to stay within 63 characters): the first not in `taken`. */
export function uniqueKey(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `-${n}`;
    const key = `${base.slice(0, 63 - suffix.length).replace(/[._-]+$/, '')}${suffix}`;
    if (!taken.has(key)) return key;
  }
}

/** A read-only snapshot of the registry (REPEATABLE READ): every kind's objects as of one moment. */
async function readSnapshot<T>(pool: PgPool, fn: (tx: PgClient) => Promise<T>): Promise<T> {
  return registryCall(() => inTransaction(pool, fn, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY'));
}
