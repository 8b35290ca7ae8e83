import { randomBytes } from 'node:crypto';
import { ALERTING_LIMITS, type EscalationPolicy } from '@telemetry/contract';
import { AppError, type PgPool, type PgQueryable } from '@telemetry/platform';
import { ChannelStore } from './channels.js';
import { toUnixSeconds } from '../monitor-rows.js';
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
  version: string;
  name: string;
  steps: PolicyStep[];
  c: string;
  u: string;
}

const COLUMNS = `id, tenant_id, version, name, steps, ${epochOf('created_at')} AS c, ${epochOf('updated_at')} AS u`;
const iso = isoOfEpoch;
const unix = toUnixSeconds;

function decode(r: Row): StoredPolicy {
  return {
    id: r.id,
    tenant_id: r.tenant_id,
    name: r.name,
    steps: r.steps,
    version: Number(r.version),
    created_at: iso(r.c),
    updated_at: iso(r.u),
  };
}

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

  /** Is `id` a policy of `tenantId` (inside a registry write: a monitor naming it)? */
  static async exists(tx: PgQueryable, tenantId: string, id: string): Promise<boolean> {
    const { rowCount } = await tx.query('SELECT 1 FROM escalation_policies WHERE tenant_id = $1 AND id = $2', [
      tenantId,
      id,
    ]);
    return rowCount === 1;
  }

  /** Stores a new policy: 403 QUOTA_EXCEEDED past the tenant's limit, 400 for a channel it does not have. */
  async create(p: Omit<StoredPolicy, 'version'>): Promise<StoredPolicy> {
    return registryWrite(this.db, async (tx) => {
      const quota = ALERTING_LIMITS.maxPoliciesPerTenant;
      const { rows } = await tx.query<{ n: string }>(
        'SELECT count(*) AS n FROM escalation_policies WHERE tenant_id = $1',
        [p.tenant_id],
      );
      if (Number(rows[0]?.n ?? 0) >= quota) {
        throw new AppError('QUOTA_EXCEEDED', `this tenant may have ${quota} escalation policies`, { quota });
      }
      await checkChannels(tx, p);
      await tx.query(
        `INSERT INTO escalation_policies (id, tenant_id, version, name, steps, created_at, updated_at)
         VALUES ($1, $2, 1, $3, $4::jsonb, to_timestamp($5), to_timestamp($6))`,
        [p.id, p.tenant_id, p.name, JSON.stringify(p.steps), unix(p.created_at), unix(p.updated_at)],
      );
      return { ...p, version: 1 };
    });
  }

  /** Stores `next` if still at `basedOn`; undefined when another change came first or it is gone. */
  async update(next: Omit<StoredPolicy, 'version'>, basedOn: number): Promise<StoredPolicy | undefined> {
    return registryWrite(this.db, async (tx) => {
      await checkChannels(tx, next);
      const { rows } = await tx.query<{ version: string }>(
        `UPDATE escalation_policies SET version = version + 1, name = $1, steps = $2::jsonb, updated_at = to_timestamp($3)
         WHERE id = $4 AND tenant_id = $5 AND version = $6 RETURNING version`,
        [next.name, JSON.stringify(next.steps), unix(next.updated_at), next.id, next.tenant_id, basedOn],
      );
      return rows[0] ? { ...next, version: Number(rows[0].version) } : undefined;
    });
  }

  /** Deletes the policy unless a monitor uses it (409 IN_USE); false when it is gone already. */
  async remove(tenantId: string, id: string): Promise<boolean> {
    return registryWrite(this.db, async (tx) => {
      const { rows } = await tx.query<{ id: string }>(
        `SELECT id FROM monitors WHERE tenant_id = $1 AND spec::jsonb ->> 'escalation_policy' = $2 ORDER BY id LIMIT 20`,
        [tenantId, id],
      );
      if (rows.length > 0) {
        const used = rows.map((r) => `monitor ${r.id}`);
        throw new AppError('IN_USE', `the policy is used by ${used.join(', ')}`, { used_by: used });
      }
      const { rowCount } = await tx.query('DELETE FROM escalation_policies WHERE tenant_id = $1 AND id = $2', [
        tenantId,
        id,
      ]);
      return rowCount === 1;
    });
  }
}
