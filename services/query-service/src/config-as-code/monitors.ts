import {
  SETTING_NAMES,
  type ConfigItem,
  type MonitorCreate,
  type MonitorSettings,
  type Problem,
  type SecretPin,
} from '@telemetry/contract';
import { AppError, type Logger } from '@telemetry/platform';
import {
  createSettings,
  maskUrl,
  newWebhookSecret,
  settingsOf,
  type KeyedMonitor,
  type MonitorStore,
  type StoredMonitor,
} from '@telemetry/store';
import { changedFields, recordChange, type Auditor } from '../access/audit.js';
import type { MonitorDirectory } from '../monitor-directory.js';
import {
  announce,
  audited,
  checkCreate,
  isRefusal,
  refusalProblems,
  type ChangeNotifier,
  type MonitorRules,
} from '../monitor-rules.js';
import { nowIso } from '../registry-objects.js';
import type { ApplyContext, ConfigKindModule, ExportContext, PlanContext, Prepared } from './kind.js';

/**
 * The monitors of a configuration document (docs/as-code.md): each item is the body of
 * POST /api/monitors with its `key`, channels and escalation policy named by their keys,
 * checked by the same rules as the API (monitor-rules.ts). An item is the whole monitor:
 * what it leaves out is the create route's default.
 */

export interface MonitorConfigDeps extends MonitorRules {
  store: MonitorStore;
  directory: MonitorDirectory;
  notifier: ChangeNotifier;
  /** Monitors a tenant may have (counted in the apply's transaction at each create). */
  quotaOf: (tenantId: string) => number;
  audit: Auditor;
  logger: Logger;
}

/** A document's monitor, as it is to be stored. */
export interface DesiredMonitor {
  monitor: Omit<StoredMonitor, 'version'> & { key: string };
  /** Whether the item sets the webhook signing secret; otherwise it is the stored (or a new) one, never compared. */
  setsWebhookSecret: boolean;
}

/** The secret that the engine may resolve but that an export leaves out: the server makes it. */
const WEBHOOK_SECRET = '/webhook_secret';

export function monitorConfigKind(deps: MonitorConfigDeps): ConfigKindModule<KeyedMonitor, DesiredMonitor> {
  const target = (id: string) => ({ type: 'monitor', id });
  return {
    section: 'monitors',
    kind: 'monitor',

    load: (tx, tenantId) => deps.store.keyedIn(tx, tenantId),
    unkeyed: (tx, tenantId) => deps.store.unkeyedIn(tx, tenantId),
    setKey: (tx, tenantId, id, key) => deps.store.setKeyIn(tx, tenantId, id, key),

    secrets: monitorSecrets,

    prepare: (item, current, ctx) => prepare(deps, item, current, ctx),

    changes(current, desired) {
      const out: string[] = SETTING_NAMES.filter((name) => !same(current[name], desired.monitor[name]));
      if (desired.setsWebhookSecret && current.webhook_secret !== desired.monitor.webhook_secret) {
        out.push('webhook_secret');
      }
      return out;
    },

    async create(tx, desired, ctx) {
      const m = await deps.store.createIn(tx, { ...desired.monitor, updated_at: nowIso() }, deps.quotaOf(ctx.tenantId));
      return async () => {
        deps.directory.remember(m.id, m.tenant_id);
        await announce(deps.notifier, deps.logger, ctx.req.id, { id: m.id, version: m.version, deleted: false });
        await deps.audit.record(ctx.req, ctx.res, {
          action: 'monitor.create',
          target: target(m.id),
          changes: changedFields(undefined, audited(m)),
        });
      };
    },

    async update(tx, current, desired, ctx) {
      const m = await deps.store.updateIn(tx, { ...desired.monitor, updated_at: nowIso() }, current.version);
      if (!m) throw moved(current);
      return async () => {
        await announce(deps.notifier, deps.logger, ctx.req.id, { id: m.id, version: m.version, deleted: false });
        // A secret that changed behind the same mask is recorded masked.
        await recordChange(deps.audit, ctx.req, ctx.res, 'monitor.update', target(m.id), audited(current), audited(m), {
          before: current,
          after: m,
        });
      };
    },

    async remove(tx, current, ctx: ApplyContext) {
      if (!(await deps.store.removeIn(tx, current.id, current.tenant_id, current.version))) throw moved(current);
      return async () => {
        deps.directory.forget(current.id);
        await announce(deps.notifier, deps.logger, ctx.req.id, {
          id: current.id,
          version: current.version + 1,
          deleted: true,
        });
        await deps.audit.record(ctx.req, ctx.res, {
          action: 'monitor.delete',
          target: target(current.id),
          changes: changedFields(audited(current), undefined),
        });
      };
    },

    exportOf: monitorItem,
  };
}

/** The engine reads the monitors in the apply's transaction under the write lock: one that moved is a bug or a manual edit. */
function moved(m: KeyedMonitor): AppError {
  return new AppError('PRECONDITION_FAILED', `the monitor ${m.key} changed while the document was applied; plan again`);
}

/** A JSON pointer's token (RFC 6901): a header named `X~Y/Z` is `X~0Y~1Z`. */
function token(name: string): string {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * What the API shows masked (monitor-secrets.ts), unmasked, at its place in an item:
 * the URL when it has credentials or query values, each header value, each webhook URL,
 * each variable's value, and the webhook signing secret.
 */
export function monitorSecrets(m: StoredMonitor): Map<string, string> {
  const out = new Map<string, string>();
  if (maskUrl(m.url) !== m.url) out.set('/url', m.url);
  for (const [name, value] of Object.entries(m.headers)) out.set(`/headers/${token(name)}`, value);
  m.webhooks.forEach((url, i) => out.set(`/webhooks/${i}`, url));
  for (const [name, value] of Object.entries(m.variables)) out.set(`/variables/${token(name)}`, value);
  out.set(WEBHOOK_SECRET, m.webhook_secret);
  return out;
}

/** References are keys: each becomes the id it names, or a problem at its path. */
function resolveReferences(item: ConfigItem, ctx: PlanContext, problems: Problem[]): Record<string, unknown> {
  const body: Record<string, unknown> = { ...item };
  if (Array.isArray(item.channels)) {
    body.channels = item.channels.map((key: unknown, i) => {
      if (typeof key !== 'string') return key; // the schema says what is wrong with it
      const id = ctx.idOf('channels', key);
      if (id === undefined) problems.push({ path: `/channels/${i}`, message: `there is no channel with key ${key}` });
      return id ?? key;
    });
  }
  if (typeof item.escalation_policy === 'string') {
    const id = ctx.idOf('escalation_policies', item.escalation_policy);
    if (id === undefined) {
      problems.push({
        path: '/escalation_policy',
        message: `there is no escalation policy with key ${item.escalation_policy}`,
      });
    }
    body.escalation_policy = id ?? item.escalation_policy;
  }
  return body;
}

function prepare(
  deps: MonitorRules,
  item: ConfigItem,
  current: KeyedMonitor | undefined,
  ctx: PlanContext,
): Prepared<DesiredMonitor> {
  const id = current?.id ?? ctx.newId();
  const missing: Problem[] = [];
  const body = resolveReferences(item, ctx, missing);
  const checked = checkCreate(deps, body, id, current);
  if (isRefusal(checked)) {
    // A key that names nothing is said once, not again as an id of the wrong form.
    const said = new Set(missing.map((p) => p.path));
    return { problems: [...missing, ...refusalProblems(checked).filter((p) => !said.has(p.path))] };
  }
  if (missing.length > 0) return { problems: missing };
  const { create, settings } = checked;
  const now = nowIso();
  return {
    id,
    desired: {
      monitor: {
        tenant_id: ctx.tenantId,
        id,
        key: item.key,
        ...settings,
        // Kept unless the item sets it: a new one would stop every receiver's verification.
        webhook_secret: create.webhook_secret ?? current?.webhook_secret ?? newWebhookSecret(),
        created_at: current?.created_at ?? now,
        updated_at: now,
      },
      setsWebhookSecret: create.webhook_secret !== undefined,
    },
  };
}

/**
 * The monitor as a document item: its key, the settings an item must state to make it
 * again (those that are not what the create route would make of the rest), references as
 * keys (one to an object without a key is left out), secrets as SecretPins.
 */
export function monitorItem(m: KeyedMonitor, ctx: ExportContext): ConfigItem {
  // A copy: pins replace values in its lists and maps.
  const item: Record<string, unknown> = { key: m.key, ...necessary(structuredClone(settingsOf(m)), m.id) };
  if (Array.isArray(item.channels)) {
    const keys = m.channels.flatMap((id) => ctx.keyOf('channels', id) ?? []);
    if (keys.length > 0) item.channels = keys;
    else delete item.channels;
  }
  if (typeof item.escalation_policy === 'string') {
    const key = ctx.keyOf('escalation_policies', item.escalation_policy);
    if (key !== undefined) item.escalation_policy = key;
    else delete item.escalation_policy;
  }
  for (const [pointer, value] of monitorSecrets(m)) {
    if (pointer !== WEBHOOK_SECRET) pinAt(item, pointer, { fingerprint: ctx.fingerprint(value) });
  }
  return item as ConfigItem;
}

/**
 * `settings` without each setting that the create route makes anyway from the others
 * (its default, its type's, a timeout fitted to the interval, a heartbeat URL): each one
 * left out is checked against the whole result, so the item makes exactly these settings.
 */
function necessary(settings: MonitorSettings, id: string): Record<string, unknown> {
  const item: Record<string, unknown> = { ...settings };
  if (!same(createSettings(item as MonitorCreate, id), settings)) return item;
  for (const name of SETTING_NAMES) {
    if (name === 'name' || name === 'type') continue; // what a reader looks for first
    const { [name]: _left, ...without } = item;
    if (same(createSettings(without as MonitorCreate, id), settings)) delete item[name];
  }
  return item;
}

/** Puts a SecretPin at `pointer` (`/url`, `/headers/<name>`, `/webhooks/<i>`) if its parent is in the item. */
function pinAt(item: Record<string, unknown>, pointer: string, pin: SecretPin): void {
  const [first, ...rest] = pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (first === undefined || !(first in item)) return;
  if (rest.length === 0) {
    item[first] = pin;
    return;
  }
  const parent = item[first];
  if (Array.isArray(parent)) {
    const i = Number(rest[0]);
    parent[i] = pin;
  } else if (parent !== null && typeof parent === 'object') {
    // NOTE: defineProperty, not assignment: `__proto__` is a valid variable name.
    Object.defineProperty(parent, rest[0]!, { value: pin, enumerable: true, writable: true, configurable: true });
  }
}

/** Deep equality where an object's key order does not matter (a list's order does). */
function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object') {
    return Object.keys(v)
      .sort()
      .map((k) => [k, canonical((v as Record<string, unknown>)[k])]);
  }
  return v;
}
