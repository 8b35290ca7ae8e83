import { randomBytes } from 'node:crypto';
import {
  ALERTING_LIMITS,
  CHANNEL_SECRETS,
  type AnyChannelTarget,
  type ChannelObject,
  type ChannelType,
} from '@telemetry/contract';
import { AppError, type PgPool, type PgQueryable, type SecretBox } from '@telemetry/platform';
import { MASK, maskWebhookUrl } from '../monitor-secrets.js';
import { toUnixSeconds } from '../monitor-rows.js';
import { refuseTakenKey, setConfigKeyIn } from './config-key-taken.js';
import { epochOf, isoOfEpoch, registryCall, registryWrite } from './pg.js';

/**
 * Alert channels (docs/alerting.md) in PostgreSQL's `channels` table. A channel's config
 * holds its secrets (webhook URLs with tokens in the path, routing keys, bot tokens), so
 * the whole config is sealed (`sealed`, bound to the channel's id) and `spec` holds the
 * settings with the config as shown: each secret of CHANNEL_SECRETS masked, a URL as its
 * scheme and host, anything else as MASK. An update that sends a shown value back keeps
 * the stored one (unmaskConfig).
 */

/** A new channel id: `chn_` and 20 lower-case hex digits. */
export function newChannelId(): string {
  return `chn_${randomBytes(10).toString('hex')}`;
}

/** A channel's settings, but for its config (in `spec` as they are). */
export type ChannelSettings = Omit<ChannelObject, 'id' | 'type' | 'config' | 'version' | 'created_at' | 'updated_at'>;

/** A channel with its real config: what the runner sends with; never in an answer. */
export interface StoredChannel extends ChannelSettings {
  id: string;
  tenant_id: string;
  target: AnyChannelTarget;
  version: number;
  created_at: string;
  updated_at: string;
}

/** The defaults of a new channel's optional settings. */
export const CHANNEL_DEFAULTS = { send_resolved: true, remind_every_seconds: 0, remind_max: 3, templates: {} } as const;

type Json = Record<string, unknown>;

function at(config: Json, pointer: string): { parent: Json; key: string } | undefined {
  const parts = pointer.split('/').slice(1);
  let node: unknown = config;
  for (const p of parts.slice(0, -1)) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Json)[p];
  }
  if (typeof node !== 'object' || node === null) return undefined;
  return { parent: node as Json, key: parts[parts.length - 1]! };
}

/** How a secret value is shown: a URL as scheme and host, anything else as MASK. */
function shownSecret(value: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? maskWebhookUrl(value) : MASK;
}

/** `config` as shown: every secret of its type masked (a deep copy). */
export function maskConfig(type: ChannelType, config: object): Json {
  const out = structuredClone(config) as Json;
  for (const pointer of CHANNEL_SECRETS[type]) {
    const slot = at(out, pointer);
    const v = slot?.parent[slot.key];
    if (slot && typeof v === 'string') slot.parent[slot.key] = shownSecret(v);
  }
  return out;
}

/** The config fields that say where a channel connects: its secrets go back only while these stay where they were. */
export const CONNECT_FIELDS = ['/url', '/api_url', '/server', '/smtp/url'] as const;

function originAt(config: Json, pointer: string): string | undefined {
  const slot = at(config, pointer);
  const v = slot?.parent[slot.key];
  if (typeof v !== 'string') return undefined;
  try {
    const u = new URL(v);
    return `${u.protocol}//${u.host}`;
  } catch {
    return v;
  }
}

/**
 * Whether a channel whose config is `next` connects elsewhere than one whose config is
 * `stored`: some field of CONNECT_FIELDS has another origin. Its stored secrets then do not
 * follow it, whether sent back as shown (unmaskConfig) or as a configuration document's
 * SecretPin (the channels kind): one rule for both.
 */
export function connectsElsewhere(stored: object, next: object): boolean {
  return !CONNECT_FIELDS.every((p) => originAt(next as Json, p) === originAt(stored as Json, p));
}

/**
 * `sent` with each secret that equals its stored value's shown form replaced by the
 * stored value (an update that sends back what it read keeps the secret), but only while
 * every field that says where the channel connects (CONNECT_FIELDS) keeps its stored
 * origin: a secret never follows a channel to another host. A shown secret that cannot go
 * back is a problem at its path (send the secret itself).
 */
export function unmaskConfig(
  type: ChannelType,
  stored: object,
  sent: object,
): { config: Json; problems: { path: string; message: string }[] } {
  const out = structuredClone(sent) as Json;
  const old = stored as Json;
  const shownAt = (pointer: string): { mine: { parent: Json; key: string }; value: string } | undefined => {
    const mine = at(out, pointer);
    const theirs = at(old, pointer);
    const value = theirs?.parent[theirs.key];
    return mine && typeof value === 'string' && mine.parent[mine.key] === shownSecret(value)
      ? { mine, value }
      : undefined;
  };
  // A URL shown as its scheme and host stands for the stored URL on that origin.
  const secrets = CHANNEL_SECRETS[type] as readonly string[];
  for (const pointer of secrets.filter((p) => (CONNECT_FIELDS as readonly string[]).includes(p))) {
    const hit = shownAt(pointer);
    if (hit) hit.mine.parent[hit.mine.key] = hit.value;
  }
  const sameHosts = !connectsElsewhere(old, out);
  const problems: { path: string; message: string }[] = [];
  for (const pointer of secrets) {
    const hit = shownAt(pointer);
    if (!hit) continue;
    if (sameHosts) hit.mine.parent[hit.mine.key] = hit.value;
    else {
      problems.push({
        path: `/config${pointer}`,
        message: 'is shown masked and the channel now connects elsewhere: send the secret itself',
      });
    }
  }
  return { config: out, problems };
}

interface Row {
  id: string;
  tenant_id: string;
  config_key: string | null;
  type: ChannelType;
  version: string;
  spec: string;
  sealed: string;
  c: string;
  u: string;
}

const COLUMNS = `id, tenant_id, config_key, type, version, spec, sealed, ${epochOf('created_at')} AS c, ${epochOf('updated_at')} AS u`;
const iso = isoOfEpoch;
const unix = toUnixSeconds;

/** A channel that has a configuration key (docs/as-code.md). */
export type KeyedChannel = StoredChannel & { key: string };

/** Who uses a channel (a monitor or an escalation policy of its tenant), as `monitor mon_…`. */
async function usersOf(tx: PgQueryable, tenantId: string, id: string): Promise<string[]> {
  const { rows } = await tx.query<{ what: string }>(
    `SELECT 'monitor ' || id AS what FROM monitors
       WHERE tenant_id = $1 AND (spec::jsonb -> 'channels') ? $2
     UNION ALL
     SELECT 'escalation policy ' || id FROM escalation_policies
       WHERE tenant_id = $1 AND jsonb_path_exists(steps, '$[*].channels[*] ? (@ == $id)', jsonb_build_object('id', $2::text))
     ORDER BY 1 LIMIT 20`,
    [tenantId, id],
  );
  return rows.map((r) => r.what);
}

/**
 * The channels of a tenant, and of the runner (which reads them with their secrets).
 * Each write has an `…In(tx, …)` form that runs in a caller's registry write (an apply of
 * a configuration document is one transaction); the plain form is its own registry write.
 */
export class ChannelStore {
  constructor(
    private readonly db: PgPool,
    private readonly box: SecretBox,
  ) {}

  private decode(r: Row): StoredChannel {
    const settings = JSON.parse(r.spec) as ChannelSettings & { config: unknown };
    const { config: _shown, key: _k, ...rest } = settings;
    const config = JSON.parse(this.box.open(r.sealed, `channel:${r.id}`)) as Json;
    return {
      ...rest,
      id: r.id,
      tenant_id: r.tenant_id,
      key: r.config_key,
      target: { type: r.type, config } as AnyChannelTarget,
      version: Number(r.version),
      created_at: iso(r.c),
      updated_at: iso(r.u),
    };
  }

  /** The channels of `tenantId` (those of `ids` only, when given), by id. */
  async list(tenantId: string, ids?: readonly string[]): Promise<StoredChannel[]> {
    const { rows } = await registryCall(() =>
      ids === undefined
        ? this.db.query<Row>(`SELECT ${COLUMNS} FROM channels WHERE tenant_id = $1 ORDER BY id`, [tenantId])
        : this.db.query<Row>(
            `SELECT ${COLUMNS} FROM channels WHERE tenant_id = $1 AND id = ANY($2::text[]) ORDER BY id`,
            [tenantId, ids],
          ),
    );
    return rows.map((r) => this.decode(r));
  }

  async get(tenantId: string, id: string): Promise<StoredChannel | undefined> {
    return (await this.list(tenantId, [id]))[0];
  }

  /** The tenant's channels that have a key, by key, read in `tx`. */
  async keyedIn(tx: PgQueryable, tenantId: string): Promise<KeyedChannel[]> {
    const { rows } = await tx.query<Row>(
      `SELECT ${COLUMNS} FROM channels WHERE tenant_id = $1 AND config_key IS NOT NULL ORDER BY config_key`,
      [tenantId],
    );
    return rows.map((r) => this.decode(r) as KeyedChannel);
  }

  /** The tenant's channels without a key (id and name), by id, read in `tx`. */
  async unkeyedIn(tx: PgQueryable, tenantId: string): Promise<{ id: string; name: string }[]> {
    const { rows } = await tx.query<{ id: string; name: string }>(
      `SELECT id, spec::jsonb ->> 'name' AS name FROM channels
       WHERE tenant_id = $1 AND config_key IS NULL ORDER BY id`,
      [tenantId],
    );
    return rows;
  }

  /** Stores `key` on the channel `id` in `tx` (its version moves on): false when it is gone; 409 KEY_TAKEN. */
  async setKeyIn(tx: PgQueryable, tenantId: string, id: string, key: string): Promise<boolean> {
    return setConfigKeyIn(tx, 'channels', 'channel', tenantId, id, key);
  }

  /** Of `ids`, those that are not channels of `tenantId` (checked inside a registry write by monitors and policies). */
  static async missing(tx: PgQueryable, tenantId: string, ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const { rows } = await tx.query<{ id: string }>(
      'SELECT id FROM channels WHERE tenant_id = $1 AND id = ANY($2::text[])',
      [tenantId, ids],
    );
    const found = new Set(rows.map((r) => r.id));
    return ids.filter((id) => !found.has(id));
  }

  private sealed(c: Omit<StoredChannel, 'version'>): { spec: string; sealed: string } {
    // NOTE: the key is its own column (unique per tenant), never in `spec`.
    const { id, tenant_id: _t, key: _k, target, created_at: _c, updated_at: _u, ...settings } = c;
    const spec = JSON.stringify({ ...settings, config: maskConfig(target.type, target.config) });
    return { spec, sealed: this.box.seal(JSON.stringify(target.config), `channel:${id}`) };
  }

  /** Stores a new channel: 403 QUOTA_EXCEEDED past ALERTING_LIMITS.maxChannelsPerTenant, 409 KEY_TAKEN. */
  async create(c: Omit<StoredChannel, 'version'>): Promise<StoredChannel> {
    return registryWrite(this.db, (tx) => this.createIn(tx, c));
  }

  /** `create` in a caller's registry write. */
  async createIn(tx: PgQueryable, c: Omit<StoredChannel, 'version'>): Promise<StoredChannel> {
    const { spec, sealed } = this.sealed(c);
    const quota = ALERTING_LIMITS.maxChannelsPerTenant;
    const { rows } = await tx.query<{ n: string }>('SELECT count(*) AS n FROM channels WHERE tenant_id = $1', [
      c.tenant_id,
    ]);
    if (Number(rows[0]?.n ?? 0) >= quota) {
      throw new AppError('QUOTA_EXCEEDED', `this tenant may have ${quota} alert channels`, { quota });
    }
    await refuseTakenKey('channels', c.key, 'channel', () =>
      tx.query(
        `INSERT INTO channels (id, tenant_id, config_key, type, version, spec, sealed, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 1, $5, $6, to_timestamp($7), to_timestamp($8))`,
        [c.id, c.tenant_id, c.key, c.target.type, spec, sealed, unix(c.created_at), unix(c.updated_at)],
      ),
    );
    return { ...c, version: 1 };
  }

  /** Stores `next` if the channel is still at `basedOn`; undefined when another change came first or it is gone. */
  async update(next: Omit<StoredChannel, 'version'>, basedOn: number): Promise<StoredChannel | undefined> {
    return registryWrite(this.db, (tx) => this.updateIn(tx, next, basedOn));
  }

  /** `update` in a caller's registry write (its type too: a document may change it; 409 KEY_TAKEN). */
  async updateIn(
    tx: PgQueryable,
    next: Omit<StoredChannel, 'version'>,
    basedOn: number,
  ): Promise<StoredChannel | undefined> {
    const { spec, sealed } = this.sealed(next);
    const { rows } = await refuseTakenKey('channels', next.key, 'channel', () =>
      tx.query<{ version: string }>(
        `UPDATE channels SET version = version + 1, config_key = $1, type = $2, spec = $3, sealed = $4,
           updated_at = to_timestamp($5)
         WHERE id = $6 AND tenant_id = $7 AND version = $8 RETURNING version`,
        [next.key, next.target.type, spec, sealed, unix(next.updated_at), next.id, next.tenant_id, basedOn],
      ),
    );
    return rows[0] ? { ...next, version: Number(rows[0].version) } : undefined;
  }

  /**
   * Deletes the channel unless a monitor or an escalation policy of its tenant uses it
   * (409 IN_USE naming them); false when it is gone already.
   */
  async remove(tenantId: string, id: string): Promise<boolean> {
    return registryWrite(this.db, async (tx) => {
      const { removed, usedBy } = await this.removeIn(tx, tenantId, id);
      if (usedBy.length > 0) {
        throw new AppError('IN_USE', `the channel is used by ${usedBy.join(', ')}`, { used_by: usedBy });
      }
      return removed;
    });
  }

  /**
   * `remove` in a caller's registry write: deletes the channel unless something uses it
   * (`usedBy` names them, at most 20, and nothing is deleted); `removed` false when it is gone.
   */
  async removeIn(tx: PgQueryable, tenantId: string, id: string): Promise<{ removed: boolean; usedBy: string[] }> {
    const usedBy = await usersOf(tx, tenantId, id);
    if (usedBy.length > 0) return { removed: false, usedBy };
    const { rowCount } = await tx.query('DELETE FROM channels WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
    return { removed: rowCount === 1, usedBy: [] };
  }
}

/** A channel as the API shows it: its config masked. */
export function channelView(c: StoredChannel): ChannelObject {
  return {
    id: c.id,
    key: c.key,
    type: c.target.type,
    name: c.name,
    config: maskConfig(c.target.type, c.target.config),
    send_resolved: c.send_resolved,
    remind_every_seconds: c.remind_every_seconds,
    remind_max: c.remind_max,
    templates: c.templates,
    version: c.version,
    created_at: c.created_at,
    updated_at: c.updated_at,
  };
}
