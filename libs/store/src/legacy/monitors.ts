import type { ClickHouseClient } from '@clickhouse/client';
import { DEFAULT_TENANT } from '@telemetry/contract';
import {
  sqlIdentifier,
  sqlNumber,
  sqlString,
  sqlStringList,
  type MigrationsByVersion,
  type SecretBox,
} from '@telemetry/platform';
import { registryDatabase, tableIn } from '../databases.js';
import { RowVersions } from '../row-versions.js';
import { openMonitor, sealMonitor, toUnixSeconds, WEBHOOKS_SEALED_MARK, type StoredMonitor } from '../monitor-rows.js';

/**
 * The monitor registry as ClickHouse held it before it moved to PostgreSQL (npm run
 * migrate reads it; the migration test writes it), in ClickHouse's `monitors` table (docs/clickhouse.md):
 * every create, change and delete inserts a whole new row with a larger `version`,
 * and the newest row of an id is the monitor. Shared by the query service (which
 * writes) and the check runner (which reads).
 */

/** Statements per migration version (see migrations.ts). */
export const monitorsMigrations: MigrationsByVersion = {
  // One row per change; the newest version of an id is the monitor (deleted = 1: gone).
  3: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.monitors (
        id String, version UInt64, deleted UInt8, spec String, created_at DateTime('UTC'),
        updated_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY id`,
  ],
  // Tenants: the tenant leads the sort key. Secrets move out of `spec` into `sealed`
  // (AES-256-GCM, see MonitorStore); rows copied here keep theirs in `spec` until the
  // query service re-seals them at start (sealLegacy).
  4: (db) => [
    { setAside: { table: 'monitors', marker: 'tenant_id' } },
    `CREATE TABLE IF NOT EXISTS ${db}.monitors (
        tenant_id String, id String, version UInt64, deleted UInt8, spec String, sealed String,
        created_at DateTime('UTC'), updated_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY (tenant_id, id)`,
    {
      copyBack: {
        table: 'monitors',
        sql: (
          from,
        ) => `INSERT INTO ${db}.monitors (tenant_id, id, version, deleted, spec, sealed, created_at, updated_at)
          SELECT '${DEFAULT_TENANT}', id, version, deleted, spec, '', created_at, updated_at FROM ${from}`,
      },
    },
  ],
  // Least privilege: the registry gets its own database (databases.ts).
  5: (_db, name) => [
    `CREATE DATABASE IF NOT EXISTS ${sqlIdentifier(registryDatabase(name))}`,
    { moveTable: { table: 'monitors', to: registryDatabase(name) } },
  ],
};

interface Row {
  id: string;
  s: string;
  x: string;
  v: string | number;
  d: number | string;
}

export interface LegacyListOptions {
  /** Only this tenant's monitors (every API read); all tenants when absent (the runners). */
  tenantId?: string;
  afterId?: string;
  ids?: readonly string[];
  limit?: number;
  /** Deleted monitors too (their last row): for re-sealing. */
  includeDeleted?: boolean;
  /**
   * Only monitors whose newest row is not sealed with this key (plain, or another key),
   * or whose webhook URLs are not sealed yet.
   */
  notSealedWith?: string;
}

/**
 * The registry's rows. Secrets (header values, the URL, webhook URLs, the webhook
 * secret) are sealed with `box` into the `sealed` column, bound to the monitor's tenant
 * and id; `spec` holds the rest, with the secrets masked, so analysts reading the table
 * see none.
 */
export class LegacyMonitorStore {
  private readonly table: string;
  private readonly versions = new RowVersions();

  constructor(
    private readonly client: ClickHouseClient,
    database: string,
    private readonly box: SecretBox,
  ) {
    this.table = tableIn(database, 'registry', 'monitors');
  }

  /**
   * Current monitors in id order: all, those after `afterId`, or those in `ids`.
   * The newest row of each id wins; deleted ones are left out.
   */
  async list(opts: LegacyListOptions = {}): Promise<StoredMonitor[]> {
    return (await this.rows(opts)).map((r) => r.monitor);
  }

  private async rows(opts: LegacyListOptions): Promise<{ monitor: StoredMonitor; deleted: boolean }[]> {
    const where: string[] = [];
    if (opts.tenantId !== undefined) where.push(`tenant_id = ${sqlString(opts.tenantId)}`);
    if (opts.ids !== undefined) {
      if (opts.ids.length === 0) return [];
      where.push(`id IN ${sqlStringList(opts.ids)}`);
    }
    if (opts.afterId !== undefined) where.push(`id > ${sqlString(opts.afterId)}`);
    const having = opts.includeDeleted ? [] : ['argMax(deleted, version) = 0'];
    if (opts.notSealedWith !== undefined) {
      const prefix = `v1.${opts.notSealedWith}.`;
      having.push(
        `(substring(argMax(sealed, version), 1, ${sqlNumber(prefix.length)}) != ${sqlString(prefix)}
          OR position(argMax(spec, version), ${sqlString(WEBHOOKS_SEALED_MARK)}) = 0)`,
      );
    }
    // NOTE: aliases differ from the columns: ClickHouse would substitute an alias named
    // like a column into the aggregate's own argument.
    const rs = await this.client.query({
      query: `SELECT id, argMax(spec, version) AS s, argMax(sealed, version) AS x, max(version) AS v,
          argMax(deleted, version) AS d
        FROM ${this.table}
        ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        GROUP BY id
        ${having.length ? `HAVING ${having.join(' AND ')}` : ''}
        ORDER BY id
        ${opts.limit !== undefined ? `LIMIT ${sqlNumber(opts.limit)}` : ''}`,
      format: 'JSONEachRow',
      clickhouse_settings: { output_format_json_quote_64bit_integers: 1 },
    });
    const rows = await rs.json<Row>();
    return rows.map((r) => ({ monitor: this.decode(r), deleted: Number(r.d) !== 0 }));
  }

  private decode(r: Row): StoredMonitor {
    return openMonitor(r.s, r.x, Number(r.v), this.box);
  }

  async get(id: string, tenantId?: string): Promise<StoredMonitor | undefined> {
    return (await this.list({ ids: [id], tenantId }))[0];
  }

  /** Writes `m` as the newest version (or deletes it); returns that version. */
  async save(m: Omit<StoredMonitor, 'version'>, deleted = false, after = 0): Promise<number> {
    return (await this.saveMany([m], deleted, after))[0]!;
  }

  /**
   * save() for many monitors in one insert. Each version is above `after` (the version
   * the change was based on) and above this process's last, so versions grow even when
   * replicas' clocks differ.
   */
  async saveMany(monitors: readonly Omit<StoredMonitor, 'version'>[], deleted = false, after = 0): Promise<number[]> {
    const versions = monitors.map(() => this.nextVersion(after));
    await this.client.insert({
      table: this.table,
      format: 'JSONEachRow',
      values: monitors.map((m, i) => ({
        tenant_id: m.tenant_id,
        id: m.id,
        version: versions[i],
        deleted: deleted ? 1 : 0,
        ...sealMonitor(m, this.box),
        created_at: toUnixSeconds(m.created_at),
        updated_at: toUnixSeconds(m.updated_at),
      })),
    });
    return versions;
  }

  /**
   * Re-seals every monitor whose newest row holds plain secrets (copied by migration 4,
   * or webhook URLs written before they were sealed) or was sealed with a key other than
   * the ring's first (a key rotation), then merges
   * the table so that the older rows are gone. Returns how many were re-sealed, and
   * whether the merge ran (OPTIMIZE is DDL, which the registry's user may be refused:
   * then the older rows go with ClickHouse's own merges, or an operator's OPTIMIZE).
   */
  async reseal(): Promise<{ resealed: number; merged: boolean }> {
    // Only the stale rows are read (and opened): nothing at all on an ordinary start.
    const stale = await this.rows({ includeDeleted: true, notSealedWith: this.box.keyId });
    for (const deleted of [false, true]) {
      const group = stale.filter((r) => r.deleted === deleted);
      if (group.length > 0) {
        await this.saveMany(
          group.map((r) => r.monitor),
          deleted,
          Math.max(...group.map((r) => r.monitor.version)),
        );
      }
    }
    let merged = true;
    if (stale.length > 0) {
      merged = await this.client.command({ query: `OPTIMIZE TABLE ${this.table} FINAL` }).then(
        () => true,
        () => false,
      );
    }
    return { resealed: stale.length, merged };
  }

  /** Microseconds since the epoch, above `after` and strictly increasing within this process. */
  private nextVersion(after: number): number {
    return this.versions.next(after);
  }
}

/** The ids and tenants (`t`) of the current monitors, or of those among `ids` (for a reader; no FORMAT). */
export function currentMonitorIdsSql(database: string, ids?: readonly string[]): string {
  return `SELECT id, argMax(tenant_id, version) AS t FROM ${tableIn(database, 'registry', 'monitors')}
    ${ids ? `WHERE id IN ${sqlStringList(ids)}` : ''}
    GROUP BY id
    HAVING argMax(deleted, version) = 0`;
}

/** How many current monitors `tenantId` has (column n; for a reader, no FORMAT). */
export function tenantMonitorCountSql(database: string, tenantId: string): string {
  return `SELECT count() AS n FROM (
      SELECT id FROM ${tableIn(database, 'registry', 'monitors')}
      WHERE tenant_id = ${sqlString(tenantId)}
      GROUP BY id
      HAVING argMax(deleted, version) = 0
    )`;
}
