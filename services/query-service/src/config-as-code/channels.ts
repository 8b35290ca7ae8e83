import { isDeepStrictEqual } from 'node:util';
import { CHANNEL_SECRETS, type ConfigItem, type Problem, type SecretPin } from '@telemetry/contract';
import { AppError } from '@telemetry/platform';
import { channelView, type ChannelStore, type KeyedChannel, type StoredChannel } from '@telemetry/store';
import { recordChange, type Auditor } from '../access/audit.js';
import { channelOfCreate, type ChannelDraft, type ChannelRules } from '../channel-rules.js';
import { nowIso } from '../registry-objects.js';
import type { ConfigKindModule } from './kind.js';

/**
 * Alert channels as a configuration document's `channels` (docs/as-code.md): each item is
 * a POST /api/channels body with its `key`, checked by the same function as that route
 * (channelOfCreate: schema, reminders, the type's config, templates, egress). Its secrets
 * are its type's CHANNEL_SECRETS under `/config`.
 */

export interface ChannelKindDeps extends ChannelRules {
  store: ChannelStore;
  audit: Auditor;
}

/** A channel as a document describes it: what is stored, but its version. */
export type DesiredChannel = Omit<StoredChannel, 'version'> & { key: string };

/** The item's fields (a create body's, but `key`), in the order a plan names them. */
export const CHANNEL_ITEM_FIELDS = [
  'type',
  'name',
  'config',
  'send_resolved',
  'remind_every_seconds',
  'remind_max',
  'templates',
] as const;
type Field = (typeof CHANNEL_ITEM_FIELDS)[number];

function fieldsOf(c: ChannelDraft): Record<Field, unknown> {
  return {
    type: c.target.type,
    name: c.name,
    config: c.target.config,
    send_resolved: c.send_resolved,
    remind_every_seconds: c.remind_every_seconds,
    remind_max: c.remind_max,
    templates: c.templates,
  };
}

type Json = Record<string, unknown>;

/** The parent object and last segment of a JSON pointer (`/smtp/url`) in `root`, if the parent is there. */
function slotAt(root: unknown, pointer: string): { parent: Json; key: string } | undefined {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  let node = root;
  for (const p of parts.slice(0, -1)) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Json)[p];
  }
  if (typeof node !== 'object' || node === null || parts.length === 0) return undefined;
  return { parent: node as Json, key: parts[parts.length - 1]! };
}

/** The channel's secrets: `/config<pointer>` → value, for each of its type's secret pointers it has. */
function secretsOf(c: StoredChannel): Map<string, string> {
  const out = new Map<string, string>();
  for (const pointer of CHANNEL_SECRETS[c.target.type] as readonly string[]) {
    const slot = slotAt(c.target.config, pointer);
    const value = slot?.parent[slot.key];
    if (typeof value === 'string') out.set(`/config${pointer}`, value);
  }
  return out;
}

export function channelConfigKind(deps: ChannelKindDeps): ConfigKindModule<KeyedChannel, DesiredChannel> {
  const what = (key: string) => `the channel ${key}`;
  return {
    section: 'channels',
    kind: 'channel',

    load: (tx, tenantId) => deps.store.keyedIn(tx, tenantId),
    unkeyed: (tx, tenantId) => deps.store.unkeyedIn(tx, tenantId),
    setKey: (tx, tenantId, id, key) => deps.store.setKeyIn(tx, tenantId, id, key),

    secrets: secretsOf,

    prepare(item, current, ctx) {
      const checked = channelOfCreate(item, deps);
      if ('faults' in checked) return { problems: checked.faults.flatMap((f) => f.problems) };
      const id = current?.id ?? ctx.newId();
      const now = nowIso();
      return {
        id,
        desired: {
          ...checked.channel,
          key: item.key,
          id,
          tenant_id: ctx.tenantId,
          created_at: current?.created_at ?? now,
          updated_at: now,
        },
      };
    },

    changes(current, desired) {
      const before = fieldsOf(current);
      const after = fieldsOf(desired);
      return CHANNEL_ITEM_FIELDS.filter((f) => !isDeepStrictEqual(before[f], after[f]));
    },

    async create(tx, desired, ctx) {
      const now = nowIso();
      const c = await deps.store.createIn(tx, {
        ...desired,
        tenant_id: ctx.tenantId,
        created_at: now,
        updated_at: now,
      });
      return () =>
        recordChange(
          deps.audit,
          ctx.req,
          ctx.res,
          'channel.create',
          { type: 'channel', id: c.id },
          undefined,
          channelView(c),
        );
    },

    async update(tx, current, desired, ctx) {
      const next = {
        ...desired,
        id: current.id,
        tenant_id: ctx.tenantId,
        created_at: current.created_at,
        updated_at: nowIso(),
      };
      const c = await deps.store.updateIn(tx, next, current.version);
      if (!c) {
        throw new AppError(
          'PRECONDITION_FAILED',
          `${what(current.key)} changed while the document was applied; plan again`,
        );
      }
      return () =>
        recordChange(
          deps.audit,
          ctx.req,
          ctx.res,
          'channel.update',
          { type: 'channel', id: c.id },
          channelView(current),
          channelView(c),
          { before: { config: current.target.config }, after: { config: c.target.config } },
        );
    },

    async remove(tx, current, ctx): Promise<Problem[] | (() => Promise<void>)> {
      const { removed, usedBy } = await deps.store.removeIn(tx, ctx.tenantId, current.id);
      if (usedBy.length > 0) {
        // The engine names the object (`the channel x cannot be deleted: …`) at its section.
        return [
          {
            path: '',
            message: `it is still used by ${usedBy.join(', ')}`,
          },
        ];
      }
      return removed
        ? () =>
            recordChange(
              deps.audit,
              ctx.req,
              ctx.res,
              'channel.delete',
              { type: 'channel', id: current.id },
              channelView(current),
              undefined,
            )
        : () => Promise.resolve();
    },

    exportOf(current, ctx): ConfigItem {
      const config = structuredClone(current.target.config) as Json;
      for (const [path, value] of secretsOf(current)) {
        const slot = slotAt({ config }, path);
        if (slot) slot.parent[slot.key] = { fingerprint: ctx.fingerprint(value) } satisfies SecretPin;
      }
      return { key: current.key, ...fieldsOf(current), config };
    },
  };
}
