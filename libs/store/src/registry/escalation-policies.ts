import { randomBytes } from 'node:crypto';
import { ALERTING_LIMITS, type EscalationPolicy } from '@telemetry/contract';
import { AppError, type PgPool, type PgQueryable } from '@telemetry/platform';
import { ChannelStore } from './channels.js';
import { toUnixSeconds } from '../monitor-rows.js';
import { refuseTakenKey, setConfigKeyIn } from './config-key-taken.js';
import { epochOf, isoOfEpoch, registryCall, registryWrite } from './pg.js';

/**
 * Escalation policies (docs/alerting.md, "Escalation") in PostgreSQL's
 * `escalation_policies` table: ordered steps of channels of the same tenant, each
 * checked to exist in the same transaction that stores the policy.
 */

/** A new policy id: `esc_` and 20 lower-case hex digits. */
export function newEscalationPolicyId(): string {
  return `esc_${randomBytes(10).toString('hex')}`;
}

export type PolicyStep = EscalationPolicy['steps'][number];

export interface StoredPolicy extends EscalationPolicy {
  tenant_id: string;
}

interface Row {
  id: string;
  tenant_id: string;
  config_key: string | null;
  version: string;
  name: string;
  steps: PolicyStep[];
  c: string;
  u: string;
}

const COLUMNS = `id, tenant_id, config_key, version, name, steps, ${epochOf('created_at')} AS c, ${epochOf('updated_at')} AS u`;
const iso = isoOfEpoch;
const unix = toUnixSeconds;

function decode(r: Row): StoredPolicy {
  return {
    id: r.id,
    tenant_id: r.tenant_id,
    key: r.config_key,
    name: r.name,
    steps: r.steps,
    version: Number(r.version),
    created_at: iso(r.c),
    updated_at: iso(r.u),
  };
}

/** A policy that has a configuration key (docs/as-code.md). */
export type KeyedPolicy = StoredPolicy & { key: string };

/** 400 VALIDATION_FAILED naming each step's channel that is not one of the tenant's. */
async function checkChannels(tx: PgQueryable, p: Pick<StoredPolicy, 'tenant_id' | 'steps'>): Promise<void> {
  const ids = [...new Set(p.steps.flatMap((s) => s.channels))];
  const missing = new Set(await ChannelStore.missing(tx, p.tenant_id, ids));
  if (missing.size === 0) return;
  const problems = p.steps.flatMap((s, i) =>
    s.channels.flatMap((c, j) =>
      missing.has(c) ? [{ path: `/steps/${i}/channels/${j}`, message: 'is not a channel of this tenant' }] : [],
    ),
  );
  throw new AppError('VALIDATION_FAILED', 'the policy names channels this tenant does not have', { problems });
}

/**
 * The escalation policies of a tenant. Each write has an `…In(tx, …)` form that runs in a
 * caller's registry write (an apply of a configuration document is one transaction); the
 * plain form is its own registry write.
 */
export class EscalationPolicyStore {
  constructor(private readonly db: PgPool) {}

  async list(tenantId: string, ids?: readonly string[]): Promise<StoredPolicy[]> {
    const { rows } = await registryCall(() =>
      ids === undefined
        ? this.db.query<Row>(`SELECT ${COLUMNS} FROM escalation_policies WHERE tenant_id = $1 ORDER BY id`, [tenantId])
        : this.db.query<Row>(
            `SELECT ${COLUMNS} FROM escalation_policies WHERE tenant_id = $1 AND id = ANY($2::text[]) ORDER BY id`,
            [tenantId, ids],
          ),
    );
    return rows.map(decode);
  }

  async get(tenantId: string, id: string): Promise<StoredPolicy | undefined> {
    return (await this.list(tenantId, [id]))[0];
  }

  /** The tenant's policies that have a key, by key, read in `tx`. */
  async keyedIn(tx: PgQueryable, tenantId: string): Promise<KeyedPolicy[]> {
    const { rows } = await tx.query<Row>(
      `SELECT ${COLUMNS} FROM escalation_policies WHERE tenant_id = $1 AND config_key IS NOT NULL ORDER BY config_key`,
      [tenantId],
    );
    return rows.map((r) => decode(r) as KeyedPolicy);
  }

  /** The tenant's policies without a key (id and name), by id, read in `tx`. */
  async unkeyedIn(tx: PgQueryable, tenantId: string): Promise<{ id: string; name: string }[]> {
    const { rows } = await tx.query<{ id: string; name: string }>(
      'SELECT id, name FROM escalation_policies WHERE tenant_id = $1 AND config_key IS NULL ORDER BY id',
      [tenantId],
    );
    return rows;
  }

  /** Stores `key` on the policy `id` in `tx` (its version moves on): false when it is gone; 409 KEY_TAKEN. */
  async setKeyIn(tx: PgQueryable, tenantId: string, id: string, key: string): Promise<boolean> {
    return setConfigKeyIn(tx, 'escalation_policies', 'escalation policy', tenantId, id, key);
  }

  /** Is `id` a policy of `tenantId` (inside a registry write: a monitor naming it)? */
  static async exists(tx: PgQueryable, tenantId: string, id: string): Promise<boolean> {
    const { rowCount } = await tx.query('SELECT 1 FROM escalation_policies WHERE tenant_id = $1 AND id = $2', [
      tenantId,
      id,
    ]);
    return rowCount === 1;
  }

  /** Stores a new policy: 403 QUOTA_EXCEEDED past the tenant's limit, 400 for a channel it does not have, 409 KEY_TAKEN. */
  async create(p: Omit<StoredPolicy, 'version'>): Promise<StoredPolicy> {
    return registryWrite(this.db, (tx) => this.createIn(tx, p));
  }

  /** `create` in a caller's registry write. */
  async createIn(tx: PgQueryable, p: Omit<StoredPolicy, 'version'>): Promise<StoredPolicy> {
    const quota = ALERTING_LIMITS.maxPoliciesPerTenant;
    const { rows } = await tx.query<{ n: string }>(
      'SELECT count(*) AS n FROM escalation_policies WHERE tenant_id = $1',
      [p.tenant_id],
    );
    if (Number(rows[0]?.n ?? 0) >= quota) {
      throw new AppError('QUOTA_EXCEEDED', `this tenant may have ${quota} escalation policies`, { quota });
    }
    await checkChannels(tx, p);
    await refuseTakenKey('escalation_policies', p.key, 'escalation policy', () =>
      tx.query(
        `INSERT INTO escalation_policies (id, tenant_id, config_key, version, name, steps, created_at, updated_at)
         VALUES ($1, $2, $3, 1, $4, $5::jsonb, to_timestamp($6), to_timestamp($7))`,
        [p.id, p.tenant_id, p.key, p.name, JSON.stringify(p.steps), unix(p.created_at), unix(p.updated_at)],
      ),
    );
    return { ...p, version: 1 };
  }

  /** Stores `next` if still at `basedOn`; undefined when another change came first or it is gone. */
  async update(next: Omit<StoredPolicy, 'version'>, basedOn: number): Promise<StoredPolicy | undefined> {
    return registryWrite(this.db, (tx) => this.updateIn(tx, next, basedOn));
  }

  /** `update` in a caller's registry write. */
  async updateIn(
    tx: PgQueryable,
    next: Omit<StoredPolicy, 'version'>,
    basedOn: number,
  ): Promise<StoredPolicy | undefined> {
    await checkChannels(tx, next);
    const { rows } = await refuseTakenKey('escalation_policies', next.key, 'escalation policy', () =>
      tx.query<{ version: string }>(
        `UPDATE escalation_policies SET version = version + 1, config_key = $1, name = $2, steps = $3::jsonb,
           updated_at = to_timestamp($4)
         WHERE id = $5 AND tenant_id = $6 AND version = $7 RETURNING version`,
        [next.key, next.name, JSON.stringify(next.steps), unix(next.updated_at), next.id, next.tenant_id, basedOn],
      ),
    );
    return rows[0] ? { ...next, version: Number(rows[0].version) } : undefined;
  }

  /** Deletes the policy unless a monitor uses it (409 IN_USE); false when it is gone already. */
  async remove(tenantId: string, id: string): Promise<boolean> {
    return registryWrite(this.db, async (tx) => {
      const { removed, usedBy } = await this.removeIn(tx, tenantId, id);
      if (usedBy.length > 0) {
        throw new AppError('IN_USE', `the policy is used by ${usedBy.join(', ')}`, { used_by: usedBy });
      }
      return removed;
    });
  }

  /**
   * `remove` in a caller's registry write: deletes the policy unless a monitor uses it
   * (`usedBy` names them, at most 20, and nothing is deleted); `removed` false when it is gone.
   */
  async removeIn(tx: PgQueryable, tenantId: string, id: string): Promise<{ removed: boolean; usedBy: string[] }> {
    const { rows } = await tx.query<{ id: string }>(
      `SELECT id FROM monitors WHERE tenant_id = $1 AND spec::jsonb ->> 'escalation_policy' = $2 ORDER BY id LIMIT 20`,
      [tenantId, id],
    );
    if (rows.length > 0) return { removed: false, usedBy: rows.map((r) => `monitor ${r.id}`) };
    const { rowCount } = await tx.query('DELETE FROM escalation_policies WHERE tenant_id = $1 AND id = $2', [
      tenantId,
      id,
    ]);
    return { removed: rowCount === 1, usedBy: [] };
  }
}

/** A policy as the API shows it: its tenant is the key's, not shown. */
export function policyView({ tenant_id: _t, ...p }: StoredPolicy): EscalationPolicy {
  return p;
}
