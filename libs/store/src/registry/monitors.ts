import { randomBytes } from 'node:crypto';
import { toIsoSeconds } from '@telemetry/contract';
import { AppError, type PgClient, type PgPool, type PgQueryable, type SecretBox } from '@telemetry/platform';
import {
  isSealedWith,
  openMonitor,
  sealMonitor,
  toUnixSeconds,
  WEBHOOKS_SEALED_MARK,
  type StoredMonitor,
} from '../monitor-rows.js';
import { ChannelStore } from './channels.js';
import { EscalationPolicyStore } from './escalation-policies.js';
import { refuseTakenKey, setConfigKeyIn } from './config-key-taken.js';
import { registryCall, registryWrite } from './pg.js';

/** Runs a write that stores `key`; another monitor of the tenant with it is 409 KEY_TAKEN (details.key). */
function keyed<T>(key: string | null, write: () => Promise<T>): Promise<T> {
  return refuseTakenKey('monitors', key, 'monitor', write);
}

/**
 * 400 VALIDATION_FAILED unless every channel the monitor names is one of its tenant's and
 * its escalation policy too: checked in the transaction that stores the monitor, so a
 * channel deleted meanwhile (ChannelStore.remove checks the other way) cannot be named.
 */
async function checkAlerting(tx: PgQueryable, m: Omit<StoredMonitor, 'version'>): Promise<void> {
  const missing = new Set(await ChannelStore.missing(tx, m.tenant_id, m.channels));
  const problems = m.channels.flatMap((id, i) =>
    missing.has(id) ? [{ path: `/channels/${i}`, message: `there is no channel ${id}` }] : [],
  );
  if (m.escalation_policy !== null && !(await EscalationPolicyStore.exists(tx, m.tenant_id, m.escalation_policy))) {
    problems.push({ path: '/escalation_policy', message: `there is no escalation policy ${m.escalation_policy}` });
  }
  if (problems.length > 0) {
    throw new AppError('VALIDATION_FAILED', `the monitor is not valid: ${problems[0]!.path} ${problems[0]!.message}`, {
      problems,
    });
  }
}

export interface ListOptions {
  /** Only this tenant's monitors (every API read); all tenants when absent (the runners). */
  tenantId?: string;
  afterId?: string;
  ids?: readonly string[];
  limit?: number;
  /** Only those with a configuration key. */
  keyed?: boolean;
}

/** A monitor with its heartbeat token's nonce ('' : a token from before nonces; absent: not a heartbeat monitor). */
export type MonitorWithNonce = StoredMonitor & { heartbeat_nonce?: string };

/** A monitor managed by a configuration file: one with a key. */
export type KeyedMonitor = MonitorWithNonce & { key: string };

interface Row {
  id: string;
  version: string;
  spec: string;
  sealed: string;
  config_key?: string | null;
  nonce?: string | null;
}

/** What anyone may know of a monitor without its secrets: the monitors dimension table's columns. */
export interface MonitorSummary {
  tenant_id: string;
  id: string;
  name: string;
  type: string;
  interval_seconds: number;
  paused: boolean;
  version: number;
  created_at: string;
  updated_at: string;
}

/** A new heartbeat nonce: 16 random bytes, hex. */
export function newHeartbeatNonce(): string {
  return randomBytes(16).toString('hex');
}

/**
 * The monitor registry in PostgreSQL's `monitors` table (schema.ts). Every change is
 * conditional on the version it was based on (`UPDATE … WHERE version = $n`), so two
 * replicas taking the same If-Match cannot both pass; a create counts the tenant's
 * monitors inside the registry's write lock, so a quota holds across replicas.
 * Secrets are sealed (monitor-rows.ts): the runner's role reads them, the gateway's may
 * not read the table at all.
 */
export class MonitorStore {
  constructor(
    private readonly db: PgPool,
    private readonly box: SecretBox,
    /** Read heartbeat nonces too (the query service's role may; the runner's may not). */
    private readonly withNonces = false,
  ) {}

  /** Current monitors in id order: all, those after `afterId`, or those in `ids`. */
  async list(opts: ListOptions = {}): Promise<MonitorWithNonce[]> {
    return registryCall(() => this.select(this.db, opts));
  }

  async get(id: string, tenantId?: string): Promise<MonitorWithNonce | undefined> {
    return (await this.list({ ids: [id], tenantId }))[0];
  }

  /** Ids and tenants of the monitors: all, or those among `ids` (no secrets opened). */
  async idsOf(ids?: readonly string[]): Promise<{ id: string; tenantId: string }[]> {
    const { rows } = await registryCall(() =>
      ids === undefined
        ? this.db.query<{ id: string; tenant_id: string }>('SELECT id, tenant_id FROM monitors')
        : this.db.query<{ id: string; tenant_id: string }>(
            'SELECT id, tenant_id FROM monitors WHERE id = ANY($1::text[])',
            [ids],
          ),
    );
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id }));
  }

  /** Summaries of the monitors (all, or those among `ids`), from their masked settings: no secret is opened. */
  async summaries(ids?: readonly string[]): Promise<MonitorSummary[]> {
    const { rows } = await registryCall(() =>
      ids === undefined
        ? this.db.query<Row & { tenant_id: string }>('SELECT id, tenant_id, version, spec FROM monitors')
        : this.db.query<Row & { tenant_id: string }>(
            'SELECT id, tenant_id, version, spec FROM monitors WHERE id = ANY($1::text[])',
            [ids],
          ),
    );
    return rows.map((r) => {
      const spec = JSON.parse(r.spec) as Partial<StoredMonitor>;
      return {
        tenant_id: r.tenant_id,
        id: r.id,
        name: spec.name ?? '',
        type: spec.type ?? 'http',
        interval_seconds: spec.interval_seconds ?? 0,
        paused: spec.paused === true,
        version: Number(r.version),
        created_at: spec.created_at ?? '1970-01-01T00:00:00Z',
        updated_at: spec.updated_at ?? '1970-01-01T00:00:00Z',
      };
    });
  }

  /** How many monitors the tenant has. */
  async count(tenantId: string): Promise<number> {
    const { rows } = await registryCall(() =>
      this.db.query<{ n: string }>('SELECT count(*) AS n FROM monitors WHERE tenant_id = $1', [tenantId]),
    );
    return Number(rows[0]?.n ?? 0);
  }

  private async select(db: PgQueryable, opts: ListOptions): Promise<MonitorWithNonce[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const param = (v: unknown): string => {
      params.push(v);
      return `$${params.length}`;
    };
    if (opts.tenantId !== undefined) where.push(`m.tenant_id = ${param(opts.tenantId)}`);
    if (opts.ids !== undefined) {
      if (opts.ids.length === 0) return [];
      where.push(`m.id = ANY(${param(opts.ids)}::text[])`);
    }
    if (opts.afterId !== undefined) where.push(`m.id > ${param(opts.afterId)}`);
    if (opts.keyed === true) where.push('m.config_key IS NOT NULL');
    const nonce = this.withNonces ? ', h.nonce' : '';
    const join = this.withNonces ? 'LEFT JOIN heartbeat_tokens h ON h.monitor_id = m.id' : '';
    const { rows } = await db.query<Row>(
      `SELECT m.id, m.version, m.spec, m.sealed, m.config_key${nonce} FROM monitors m ${join}
       ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY m.id ${opts.limit !== undefined ? `LIMIT ${param(opts.limit)}` : ''}`,
      params,
    );
    return rows.map((r) => this.decode(r));
  }

  private decode(r: Row): MonitorWithNonce {
    const m: MonitorWithNonce = openMonitor(r.spec, r.sealed, Number(r.version), this.box, r.config_key ?? null);
    if (r.nonce !== undefined && r.nonce !== null) m.heartbeat_nonce = r.nonce;
    return m;
  }

  /**
   * Stores a new monitor at version 1 unless its tenant has `quota` monitors already
   * (403 QUOTA_EXCEEDED), counted in the same transaction. A heartbeat monitor gets its
   * token's nonce. Returns the stored monitor.
   */
  async create(m: Omit<StoredMonitor, 'version'>, quota: number): Promise<MonitorWithNonce> {
    return registryWrite(this.db, (tx) => this.createIn(tx, m, quota));
  }

  /**
   * `create` inside the caller's registry write transaction (registryWrite: the quota's
   * count holds at COMMIT). 409 KEY_TAKEN when another monitor of the tenant has its key.
   */
  async createIn(tx: PgClient, m: Omit<StoredMonitor, 'version'>, quota: number): Promise<MonitorWithNonce> {
    const { rows } = await tx.query<{ n: string }>('SELECT count(*) AS n FROM monitors WHERE tenant_id = $1', [
      m.tenant_id,
    ]);
    const count = Number(rows[0]?.n ?? 0);
    if (count >= quota) {
      throw new AppError('QUOTA_EXCEEDED', `this tenant may have ${quota} monitors and has ${count}`, { quota });
    }
    await checkAlerting(tx, m);
    await keyed(m.key, () => this.insert(tx, m, 1));
    const nonce = await this.syncToken(tx, m, undefined);
    return { ...strip(m), version: 1, ...(nonce !== undefined ? { heartbeat_nonce: nonce } : {}) };
  }

  /**
   * Stores `next` as the monitor's next version if it is still at `basedOn`; undefined
   * (nothing changed) when another change came first or the monitor is gone.
   */
  async update(next: Omit<StoredMonitor, 'version'>, basedOn: number): Promise<MonitorWithNonce | undefined> {
    return registryWrite(this.db, (tx) => this.updateIn(tx, next, basedOn));
  }

  /** `update` inside the caller's registry write transaction. 409 KEY_TAKEN when another monitor of the tenant has its key. */
  async updateIn(
    tx: PgClient,
    next: Omit<StoredMonitor, 'version'>,
    basedOn: number,
  ): Promise<MonitorWithNonce | undefined> {
    await checkAlerting(tx, next);
    const version = await this.writeVersion(tx, next, basedOn);
    if (version === undefined) return undefined;
    const nonce = await this.syncToken(tx, next, undefined);
    return { ...strip(next), version, ...(nonce !== undefined ? { heartbeat_nonce: nonce } : {}) };
  }

  /** `next` as the monitor's next version if it is still at `basedOn`: that version, or undefined. */
  private async writeVersion(
    tx: PgClient,
    next: Omit<StoredMonitor, 'version'>,
    basedOn: number,
  ): Promise<number | undefined> {
    const { spec, sealed } = sealMonitor(strip(next), this.box);
    const { rows } = await keyed(next.key, () =>
      tx.query<{ version: string }>(
        `UPDATE monitors SET version = version + 1, spec = $1, sealed = $2, updated_at = to_timestamp($3),
           config_key = $7
         WHERE id = $4 AND tenant_id = $5 AND version = $6 RETURNING version`,
        [spec, sealed, toUnixSeconds(next.updated_at), next.id, next.tenant_id, basedOn, next.key],
      ),
    );
    return rows[0] ? Number(rows[0].version) : undefined;
  }

  /** The tenant's monitors with a key, in id order, read in the caller's transaction. */
  async keyedIn(tx: PgClient, tenantId: string): Promise<KeyedMonitor[]> {
    return (await this.select(tx, { tenantId, keyed: true })) as KeyedMonitor[];
  }

  /** The tenant's monitors without a key (id and name; no secret opened), in id order. */
  async unkeyedIn(tx: PgClient, tenantId: string): Promise<{ id: string; name: string }[]> {
    const { rows } = await tx.query<{ id: string; spec: string }>(
      'SELECT id, spec FROM monitors WHERE tenant_id = $1 AND config_key IS NULL ORDER BY id',
      [tenantId],
    );
    return rows.map((r) => ({ id: r.id, name: (JSON.parse(r.spec) as { name?: string }).name ?? r.id }));
  }

  /**
   * Gives the monitor `key` (a new version: its answers change), in the caller's
   * transaction; false when it is gone. 409 KEY_TAKEN when another monitor of the tenant has it.
   */
  async setKeyIn(tx: PgClient, tenantId: string, id: string, key: string): Promise<boolean> {
    return setConfigKeyIn(tx, 'monitors', 'monitor', tenantId, id, key);
  }

  /** A new heartbeat token nonce (the old token stops at once), if the monitor is still at `basedOn`. */
  async rotateHeartbeatToken(m: StoredMonitor, basedOn: number): Promise<MonitorWithNonce | undefined> {
    const next = { ...strip(m), updated_at: toIsoSeconds(Math.floor(Date.now() / 1000)) };
    return registryWrite(this.db, async (tx) => {
      const version = await this.writeVersion(tx, next, basedOn);
      if (version === undefined) return undefined;
      const nonce = await this.syncToken(tx, m, newHeartbeatNonce());
      return { ...next, version, heartbeat_nonce: nonce };
    });
  }

  /** Deletes the monitor if it is still at `basedOn` (its heartbeat token goes with it); false otherwise. */
  async remove(id: string, tenantId: string, basedOn: number): Promise<boolean> {
    return registryWrite(this.db, (tx) => this.removeIn(tx, id, tenantId, basedOn));
  }

  /** `remove` inside the caller's registry write transaction. */
  async removeIn(tx: PgClient, id: string, tenantId: string, basedOn: number): Promise<boolean> {
    const { rowCount } = await tx.query('DELETE FROM monitors WHERE id = $1 AND tenant_id = $2 AND version = $3', [
      id,
      tenantId,
      basedOn,
    ]);
    return rowCount === 1;
  }

  /**
   * Stores monitors as they are, at their own versions, unless their id is stored already,
   * inside the caller's registry write transaction (npm run migrate). A heartbeat monitor's
   * nonce is '' (its token from before keeps working until rotated). Returns how many were new.
   */
  async insertMigratedIn(tx: PgClient, monitors: readonly StoredMonitor[]): Promise<number> {
    let added = 0;
    for (const m of monitors) {
      if (await this.insert(tx, m, m.version, true)) {
        added++;
        await this.syncToken(tx, m, '');
      }
    }
    return added;
  }

  /**
   * Writes monitors as they are, made or replaced whatever their version (or deletes
   * them): for tests and benchmarks that set up a registry, never for API writes, which
   * are conditional. Returns their versions.
   */
  async saveMany(monitors: readonly Omit<StoredMonitor, 'version'>[], deleted = false): Promise<number[]> {
    if (deleted) {
      await registryWrite(this.db, (tx) =>
        tx.query('DELETE FROM monitors WHERE id = ANY($1::text[])', [monitors.map((m) => m.id)]),
      );
      return monitors.map(() => 0);
    }
    return registryWrite(this.db, async (tx) => {
      const versions: number[] = [];
      for (const m of monitors) {
        const { spec, sealed } = sealMonitor(strip(m), this.box);
        const { rows } = await tx.query<{ version: string }>(
          `INSERT INTO monitors (id, tenant_id, version, spec, sealed, created_at, updated_at, config_key)
           VALUES ($1, $2, 1, $3, $4, to_timestamp($5), to_timestamp($6), $7)
           ON CONFLICT (id) DO UPDATE SET version = monitors.version + 1, spec = EXCLUDED.spec,
             sealed = EXCLUDED.sealed, updated_at = EXCLUDED.updated_at, config_key = EXCLUDED.config_key
           RETURNING version`,
          [m.id, m.tenant_id, spec, sealed, toUnixSeconds(m.created_at), toUnixSeconds(m.updated_at), m.key],
        );
        await this.syncToken(tx, m, undefined);
        versions.push(Number(rows[0]!.version));
      }
      return versions;
    });
  }

  /**
   * Seals again every monitor not sealed with the ring's first key (a key rotation), or
   * whose webhook URLs are still in `spec` (sealed before they were secrets).
   * Returns how many; versions stay (the settings did not change).
   */
  async reseal(): Promise<number> {
    const prefix = `v1.${this.box.keyId}.`;
    const { rows } = await registryCall(() =>
      this.db.query<Row>(
        `SELECT id, version, spec, sealed, config_key FROM monitors
         WHERE NOT (starts_with(sealed, $1) AND strpos(spec, $2) > 0)`,
        [prefix, WEBHOOKS_SEALED_MARK],
      ),
    );
    let n = 0;
    for (const r of rows) {
      if (isSealedWith(r.spec, r.sealed, this.box.keyId)) continue;
      const m = this.decode(r);
      const { spec, sealed } = sealMonitor(strip(m), this.box);
      await registryWrite(this.db, (tx) =>
        tx.query('UPDATE monitors SET spec = $1, sealed = $2 WHERE id = $3 AND version = $4', [
          spec,
          sealed,
          m.id,
          m.version,
        ]),
      );
      n++;
    }
    return n;
  }

  private async insert(
    tx: PgClient,
    m: Omit<StoredMonitor, 'version'>,
    version: number,
    skipTaken = false,
  ): Promise<boolean> {
    const { spec, sealed } = sealMonitor(strip(m), this.box);
    const { rowCount } = await tx.query(
      `INSERT INTO monitors (id, tenant_id, version, spec, sealed, created_at, updated_at, config_key)
       VALUES ($1, $2, $3, $4, $5, to_timestamp($6), to_timestamp($7), $8)
       ${skipTaken ? 'ON CONFLICT (id) DO NOTHING' : ''}`,
      [m.id, m.tenant_id, version, spec, sealed, toUnixSeconds(m.created_at), toUnixSeconds(m.updated_at), m.key],
    );
    return rowCount === 1;
  }

  /**
   * A heartbeat monitor has a token row (kept, or made with `nonce` or a new one); any
   * other has none. Returns the nonce, or undefined for other types.
   */
  private async syncToken(
    tx: PgClient,
    m: Pick<StoredMonitor, 'id' | 'tenant_id' | 'type'>,
    nonce: string | undefined,
  ): Promise<string | undefined> {
    if (m.type !== 'heartbeat') {
      await tx.query('DELETE FROM heartbeat_tokens WHERE monitor_id = $1', [m.id]);
      return undefined;
    }
    const { rows } = await tx.query<{ nonce: string }>(
      nonce === undefined
        ? `INSERT INTO heartbeat_tokens (monitor_id, tenant_id, nonce) VALUES ($1, $2, $3)
           ON CONFLICT (monitor_id) DO UPDATE SET nonce = heartbeat_tokens.nonce RETURNING nonce`
        : `INSERT INTO heartbeat_tokens (monitor_id, tenant_id, nonce) VALUES ($1, $2, $3)
           ON CONFLICT (monitor_id) DO UPDATE SET nonce = EXCLUDED.nonce RETURNING nonce`,
      [m.id, m.tenant_id, nonce ?? newHeartbeatNonce()],
    );
    return rows[0]!.nonce;
  }
}

/** Only the stored monitor's own fields (not a nonce read with it). */
function strip(m: Omit<StoredMonitor, 'version'> & { heartbeat_nonce?: string }): Omit<StoredMonitor, 'version'> {
  const { heartbeat_nonce: _n, ...rest } = m;
  return rest;
}
