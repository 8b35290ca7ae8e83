import { randomBytes } from 'node:crypto';
import { DELETION_LIMITS, type DeletionState, type DeletionView } from '@telemetry/contract';
import { AppError, Mirror, type PgPool, type PgQueryable } from '@telemetry/platform';
import { registryCall, registryWrite } from './pg.js';
import { SUPPRESSIONS_ENTITY } from './schema-deletions.js';

/**
 * Deletion requests and suppressions in the registry (docs/deletions.md). The query
 * service writes a request and its suppressions in one transaction; the stream consumer
 * claims pending requests under a lease (`FOR UPDATE SKIP LOCKED`: two consumers never run
 * one request at once; a consumer that dies leaves its lease to expire) and records its
 * progress. A claim is fenced by its lease: a consumer whose lease was taken over writes
 * nothing back.
 */

/** A new deletion id: `del_` and 20 lower-case hex digits. */
export function newDeletionId(): string {
  return `del_${randomBytes(10).toString('hex')}`;
}

interface DeletionRow {
  deletion_id: string;
  tenant_id: string;
  requested_by: string;
  created_at: Date;
  user_ids: string[];
  anonymous_ids: string[];
  state: DeletionState;
  counts: Record<string, number>;
  error: string;
  started_at: Date | null;
  finished_at: Date | null;
}

const COLUMNS =
  'deletion_id, tenant_id, requested_by, created_at, user_ids, anonymous_ids, state, counts, error, started_at, finished_at';

function viewOf(r: DeletionRow): DeletionView {
  return {
    id: r.deletion_id,
    state: r.state,
    requested_by: r.requested_by,
    created_at: r.created_at.toISOString(),
    started_at: r.started_at ? r.started_at.toISOString() : null,
    finished_at: r.finished_at ? r.finished_at.toISOString() : null,
    user_ids: r.user_ids,
    anonymous_ids: r.anonymous_ids,
    counts: r.counts,
    error: r.error,
  };
}

/**
 * Records a deletion request of `tenantId` and suppresses its ids, in one transaction:
 * once this resolves, the request is committed and every gateway drops new events of the
 * ids as soon as its change feed brings them (within a second).
 *
 * The tenant's limits (DELETION_LIMITS) are checked in the same transaction, under the
 * registry's write lock (registryWrite), so two requests at once cannot both pass them:
 * at most maxOpenPerTenant deletions pending or running (RATE_LIMITED with Retry-After),
 * at most maxSuppressionsPerTenant suppressed ids counting the request's new ones
 * (QUOTA_EXCEEDED). `limits` replaces them (tests).
 */
export async function createDeletion(
  pool: PgPool,
  req: { tenantId: string; requestedBy: string; userIds: readonly string[]; anonymousIds: readonly string[] },
  limits: { maxOpen: number; maxSuppressions: number } = {
    maxOpen: DELETION_LIMITS.maxOpenPerTenant,
    maxSuppressions: DELETION_LIMITS.maxSuppressionsPerTenant,
  },
): Promise<DeletionView> {
  return registryWrite(pool, async (tx) => {
    const open = await tx.query<{ n: string }>(
      `SELECT count(*) AS n FROM deletions WHERE tenant_id = $1 AND state IN ('pending', 'running')`,
      [req.tenantId],
    );
    if (Number(open.rows[0]?.n ?? 0) >= limits.maxOpen) {
      throw new AppError(
        'RATE_LIMITED',
        `this tenant has ${limits.maxOpen} deletions pending or running; retry when one is done`,
        { limit: 'deletions_open_per_tenant', max: limits.maxOpen },
        { 'Retry-After': String(DELETION_LIMITS.retryAfterSeconds) },
      );
    }
    const supp = await tx.query<{ have: string; added: string }>(
      `SELECT (SELECT count(*) FROM suppressions WHERE tenant_id = $1) AS have,
         (SELECT count(*) FROM (
            SELECT 'user_id' AS k, unnest($2::text[]) AS v
            UNION ALL SELECT 'anonymous_id', unnest($3::text[])) ids
          WHERE NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.tenant_id = $1 AND s.kind = ids.k AND s.value = ids.v)
         ) AS added`,
      [req.tenantId, [...req.userIds], [...req.anonymousIds]],
    );
    const have = Number(supp.rows[0]?.have ?? 0);
    const added = Number(supp.rows[0]?.added ?? 0);
    if (added > 0 && have + added > limits.maxSuppressions) {
      throw new AppError(
        'QUOTA_EXCEEDED',
        `this tenant may have ${limits.maxSuppressions} suppressed ids; it has ${have} and this request adds ${added}`,
        { quota: limits.maxSuppressions, suppressions: have, adding: added },
      );
    }
    const id = newDeletionId();
    const { rows } = await tx.query<DeletionRow>(
      `INSERT INTO deletions (deletion_id, tenant_id, requested_by, user_ids, anonymous_ids)
       VALUES ($1, $2, $3, $4::text[], $5::text[]) RETURNING ${COLUMNS}`,
      [id, req.tenantId, req.requestedBy, [...req.userIds], [...req.anonymousIds]],
    );
    // An id suppressed already keeps its first deletion.
    await tx.query(
      `INSERT INTO suppressions (tenant_id, kind, value, deletion_id)
       SELECT $1, k, v, $2 FROM (
         SELECT 'user_id' AS k, unnest($3::text[]) AS v
         UNION ALL SELECT 'anonymous_id', unnest($4::text[])) ids
       ON CONFLICT DO NOTHING`,
      [req.tenantId, id, [...req.userIds], [...req.anonymousIds]],
    );
    return viewOf(rows[0]!);
  });
}

/** One deletion of the tenant, or undefined. */
export async function deletionById(db: PgQueryable, tenantId: string, id: string): Promise<DeletionView | undefined> {
  const { rows } = await registryCall(() =>
    db.query<DeletionRow>(`SELECT ${COLUMNS} FROM deletions WHERE tenant_id = $1 AND deletion_id = $2`, [tenantId, id]),
  );
  return rows[0] ? viewOf(rows[0]) : undefined;
}

/** A page of the tenant's deletions, newest first, after the keyset cursor (created_at in microseconds, id). */
export async function listDeletions(
  db: PgQueryable,
  tenantId: string,
  limit: number,
  cursor?: { us: number; id: string },
): Promise<(DeletionView & { at_us: number })[]> {
  const { rows } = await registryCall(() =>
    db.query<DeletionRow & { at_us: string }>(
      `SELECT ${COLUMNS}, (extract(epoch from created_at) * 1000000)::bigint AS at_us FROM deletions
       WHERE tenant_id = $1
         AND ($3::bigint IS NULL OR ((extract(epoch from created_at) * 1000000)::bigint, deletion_id) < ($3::bigint, $4::text))
       ORDER BY created_at DESC, deletion_id DESC LIMIT $2`,
      [tenantId, limit, cursor?.us ?? null, cursor?.id ?? ''],
    ),
  );
  return rows.map((r) => ({ ...viewOf(r), at_us: Number(r.at_us) }));
}

/** A claimed deletion: what to delete, and the fence of the claim. */
export interface ClaimedDeletion {
  id: string;
  tenantId: string;
  userIds: string[];
  anonymousIds: string[];
  /** Rows deleted so far per table (a claim taken over goes on from there). */
  counts: Record<string, number>;
  attempts: number;
  /** The lease's end as the database wrote it: every write back names it. */
  fence: string;
}

/**
 * The executor's side (the stream consumer's PostgreSQL role: SELECT and UPDATE on
 * deletions only).
 */
export class DeletionQueue {
  constructor(private readonly db: PgQueryable) {}

  /** Claims the oldest pending (or abandoned running) deletion for `leaseSeconds`, if any. */
  async claim(leaseSeconds: number): Promise<ClaimedDeletion | undefined> {
    const { rows } = await registryCall(() =>
      this.db.query<{
        deletion_id: string;
        tenant_id: string;
        user_ids: string[];
        anonymous_ids: string[];
        counts: Record<string, number>;
        attempts: number;
        fence: string;
      }>(
        `WITH next AS (
           SELECT deletion_id FROM deletions
           WHERE state IN ('pending', 'running') AND (lease_until IS NULL OR lease_until < now())
           ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
         UPDATE deletions d SET state = 'running', lease_until = now() + make_interval(secs => $1),
           started_at = coalesce(d.started_at, now()), attempts = d.attempts + 1
         FROM next WHERE d.deletion_id = next.deletion_id
         RETURNING d.deletion_id, d.tenant_id, d.user_ids, d.anonymous_ids, d.counts, d.attempts,
           d.lease_until::text AS fence`,
        [leaseSeconds],
      ),
    );
    const r = rows[0];
    return r
      ? {
          id: r.deletion_id,
          tenantId: r.tenant_id,
          userIds: r.user_ids,
          anonymousIds: r.anonymous_ids,
          counts: r.counts,
          attempts: r.attempts,
          fence: r.fence,
        }
      : undefined;
  }

  /** Records progress and extends the lease; false when the claim was lost (another executor has it). */
  async progress(c: ClaimedDeletion, counts: Record<string, number>, leaseSeconds: number): Promise<boolean> {
    const { rows } = await registryCall(() =>
      this.db.query<{ fence: string }>(
        `UPDATE deletions SET counts = $3::jsonb, lease_until = now() + make_interval(secs => $4)
         WHERE deletion_id = $1 AND state = 'running' AND lease_until::text = $2
         RETURNING lease_until::text AS fence`,
        [c.id, c.fence, JSON.stringify(counts), leaseSeconds],
      ),
    );
    if (!rows[0]) return false;
    c.fence = rows[0].fence;
    c.counts = counts;
    return true;
  }

  /** Ends the claim: done, failed (for good), or back to pending after a transient error. */
  async finish(
    c: ClaimedDeletion,
    outcome: 'done' | 'failed' | 'retry',
    counts: Record<string, number>,
    error = '',
  ): Promise<boolean> {
    const { rowCount } = await registryCall(() =>
      this.db.query(
        `UPDATE deletions SET counts = $3::jsonb, error = $4,
           state = CASE WHEN $5 = 'retry' THEN 'pending' ELSE $5 END,
           finished_at = CASE WHEN $5 = 'retry' THEN NULL ELSE now() END,
           lease_until = CASE WHEN $5 = 'retry' THEN now() + interval '5 seconds' ELSE NULL END
         WHERE deletion_id = $1 AND state = 'running' AND lease_until::text = $2`,
        [c.id, c.fence, JSON.stringify(counts), error.slice(0, 2000), outcome],
      ),
    );
    return (rowCount ?? 0) > 0;
  }
}

/** One tenant's suppressed ids. */
export interface TenantSuppressions {
  tenantId: string;
  userIds: ReadonlySet<string>;
  anonymousIds: ReadonlySet<string>;
}

/** The suppressions of these tenants (every tenant's when undefined), grouped by tenant. */
export async function loadSuppressions(db: PgQueryable, tenantIds?: readonly string[]): Promise<TenantSuppressions[]> {
  const { rows } = await (tenantIds === undefined
    ? db.query<{ tenant_id: string; kind: string; value: string }>('SELECT tenant_id, kind, value FROM suppressions')
    : db.query<{ tenant_id: string; kind: string; value: string }>(
        'SELECT tenant_id, kind, value FROM suppressions WHERE tenant_id = ANY($1::text[])',
        [[...tenantIds]],
      ));
  const by = new Map<string, { tenantId: string; userIds: Set<string>; anonymousIds: Set<string> }>();
  for (const r of rows) {
    let t = by.get(r.tenant_id);
    if (!t) by.set(r.tenant_id, (t = { tenantId: r.tenant_id, userIds: new Set(), anonymousIds: new Set() }));
    (r.kind === 'user_id' ? t.userIds : t.anonymousIds).add(r.value);
  }
  return [...by.values()];
}

/**
 * Every tenant's suppression list, kept current by the registry's change feed (the
 * gateway's copy, like KeyStore's): checking an event costs no I/O, a new deletion's ids
 * reach every gateway within a second, and while PostgreSQL is away the last copy holds.
 */
export class SuppressionList {
  readonly mirror: Mirror<TenantSuppressions>;

  constructor(db: PgQueryable) {
    this.mirror = new Mirror<TenantSuppressions>(
      SUPPRESSIONS_ENTITY,
      (ids) => loadSuppressions(db, ids),
      (t) => t.tenantId,
    );
  }

  /** Whether an event of `tenantId` with these ids must be dropped. */
  suppressed(tenantId: string, userId: string | undefined, anonymousId: string | undefined): boolean {
    const t = this.mirror.get(tenantId);
    if (!t) return false;
    return (
      (userId !== undefined && userId !== '' && t.userIds.has(userId)) ||
      (anonymousId !== undefined && anonymousId !== '' && t.anonymousIds.has(anonymousId))
    );
  }
}

/**
 * Whether a Kafka message of the events topic (a dead letter's value, say) is an event of a
 * suppressed id: its JSON names a tenant and a user_id or anonymous_id on that tenant's
 * list. A value that is not such JSON is not judged (false).
 */
export function isSuppressedMessage(
  value: Buffer | string | null | undefined,
  suppressed: (tenantId: string, userId: string | undefined, anonymousId: string | undefined) => boolean,
): boolean {
  if (value === null || value === undefined) return false;
  let v: unknown;
  try {
    v = JSON.parse(value.toString());
  } catch {
    return false;
  }
  if (typeof v !== 'object' || v === null) return false;
  const { tenant_id: tenant, user_id: user, anonymous_id: anon } = v as Record<string, unknown>;
  if (typeof tenant !== 'string') return false;
  return suppressed(tenant, typeof user === 'string' ? user : undefined, typeof anon === 'string' ? anon : undefined);
}
