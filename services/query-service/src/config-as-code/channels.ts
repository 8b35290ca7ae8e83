import { CHANNEL_SECRETS, channelCreateSchema, type ConfigItem, type SecretPin } from '@telemetry/contract';
import {
  CONNECT_FIELDS,
  channelView,
  connectsElsewhere,
  type ChannelStore,
  type KeyedChannel,
  type StoredChannel,
} from '@telemetry/store';
import type { Auditor } from '../access/audit.js';
import { channelOfCreate, type ChannelDraft, type ChannelRules } from '../channel-rules.js';
import { alertingWrites } from './alerting-writes.js';
import { described, differing, type ConfigKindModule } from './kind.js';

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

type Field = Exclude<keyof typeof channelCreateSchema.properties, 'key'>;

/** The item's fields: POST /api/channels's body's but `key`, in the schema's order (as a plan names them). */
export const CHANNEL_ITEM_FIELDS: readonly Field[] = (
  Object.keys(channelCreateSchema.properties) as (keyof typeof channelCreateSchema.properties)[]
).filter((f): f is Field => f !== 'key');

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
  const writes = alertingWrites({
    store: deps.store,
    audit: deps.audit,
    type: 'channel',
    what: (key) => `the channel ${key}`,
    view: channelView,
    stored: (c) => ({ config: c.target.config }),
  });
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
      return described(checked.channel, item, current, ctx);
    },

    // As a PATCH (unmaskConfig): no secret follows a channel to another host, but for
    // the connecting fields themselves (a pinned one is the stored value, where it was).
    keepsSecret(current, desired) {
      const elsewhere = connectsElsewhere(current.target.config, desired.target.config);
      return (pointer) => !elsewhere || (CONNECT_FIELDS as readonly string[]).includes(pointer.slice('/config'.length));
    },

    changes(current, desired) {
      return differing(CHANNEL_ITEM_FIELDS, fieldsOf(current), fieldsOf(desired));
    },

    ...writes,

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
