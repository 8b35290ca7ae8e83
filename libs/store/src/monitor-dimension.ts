import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import type { FeedSubscriber, Logger, MigrationsByVersion } from '@telemetry/platform';
import { sqlStringList } from '@telemetry/platform';
import { insertSettingsOf } from './distributed-writes.js';
import { layoutOf, tableRef } from './layout.js';
import type { MonitorSummary } from './registry/monitors.js';

/**
 * The `monitors` dimension table of the data database (docs/clickhouse.md, "Monitors"):
 * what analysts join check history with. Its rows come from the registry (PostgreSQL),
 * written by the query service on every change it learns from the change feed, and hold
 * no secret: no URL, header, webhook or signing secret, only a monitor's tenant, id, name,
 * type, interval and whether it is paused or deleted. The newest `version` of an id wins
 * (`FINAL` or `argMax`); a deleted monitor keeps its row with deleted = 1, so old checks
 * still have a name.
 */
export const monitorDimensionMigrations: MigrationsByVersion = {
  13: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.monitors (
        tenant_id String, id String, name String, type String, interval_seconds UInt32, paused UInt8,
        deleted UInt8, version UInt64, created_at DateTime('UTC'), updated_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY (tenant_id, id)`,
  ],
};

/** A deleted monitor's row outranks any version it had (registry versions count changes from 1). */
const DELETED_VERSION = 2 ** 53 - 1;

interface DimensionRow {
  tenant_id: string;
  id: string;
  name: string;
  type: string;
  interval_seconds: number;
  paused: number;
  deleted: number;
  version: number;
  created_at: number;
  updated_at: number;
}

/** A row the table shows: tenant, id, newest name (n) and type (t). */
interface Shown {
  tenant_id: string;
  id: string;
  n: string;
  t: string;
}

function rowOf(m: MonitorSummary): DimensionRow {
  return {
    tenant_id: m.tenant_id,
    id: m.id,
    name: m.name,
    type: m.type,
    interval_seconds: m.interval_seconds,
    paused: m.paused ? 1 : 0,
    deleted: 0,
    version: m.version,
    created_at: Math.floor(Date.parse(m.created_at) / 1000),
    updated_at: Math.floor(Date.parse(m.updated_at) / 1000),
  };
}

/**
 * Keeps the dimension table in step with the registry: a feed subscriber (entity
 * `monitors`). At start (and when the feed reloads) every monitor is written, and every
 * id the table still shows as current but the registry no longer has gets a deleted row;
 * then each change writes the changed monitors' rows. Writing the same row twice is
 * harmless (ReplacingMergeTree keeps one per version), so every replica may do it.
 */
export class MonitorDimension implements FeedSubscriber {
  readonly entity = 'monitors';
  private readonly table: string;
  private readonly insertSettings: ClickHouseSettings;
  private readonly readSettings: ClickHouseSettings;

  constructor(
    private readonly client: ClickHouseClient,
    database: string,
    private readonly summaries: (ids?: readonly string[]) => Promise<MonitorSummary[]>,
    private readonly logger: Logger,
    /**
     * The service's config: with CLICKHOUSE_CLUSTER set (layoutOf) the table is written and
     * read through `monitors_all`, the reads with `readSettings` (exact reads).
     */
    cluster: { clickhouseCluster?: string; readSettings?: ClickHouseSettings } = {},
  ) {
    const layout = layoutOf(cluster);
    this.table = tableRef(database, 'monitors', layout);
    this.insertSettings = insertSettingsOf(layout);
    this.readSettings = cluster.readSettings ?? {};
  }

  /** Work not written yet: everything (at start, and after a failed write), and changed ids. */
  private pendingAll = false;
  private readonly pendingIds = new Set<string>();
  private running: Promise<void> | undefined;

  // NOTE: reload() and apply() only queue the write and return: the feed that keeps the
  // registry's other copies (keys, status pages) current never waits for ClickHouse, even
  // a slow one. One write runs at a time; a failed one is made good by a full write at the
  // next change.
  reload(): Promise<void> {
    this.pendingAll = true;
    this.kick();
    return Promise.resolve();
  }

  apply(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.pendingIds.add(id);
    this.kick();
    return Promise.resolve();
  }

  /** Resolves when the queued writes are done (or failed). */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  private kick(): void {
    if (this.running) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
    });
  }

  private async drain(): Promise<void> {
    while (this.pendingAll || this.pendingIds.size > 0) {
      const all = this.pendingAll;
      const ids = [...this.pendingIds];
      this.pendingAll = false;
      this.pendingIds.clear();
      try {
        await (all ? this.writeAll() : this.writeSome(ids));
      } catch (err) {
        this.pendingAll = true;
        this.logger.warn('monitors dimension table not written; written in full at the next change', {
          err: String(err),
        });
        return;
      }
    }
  }

  private async writeAll(): Promise<void> {
    // ClickHouse first: a monitor made after this read and before the registry's is no
    // "gone" one (ids are never reused, so what this read shows and the registry then
    // lacks was deleted).
    const shown = await this.client.query({
      query: `SELECT tenant_id, id, argMax(name, version) AS n, argMax(type, version) AS t,
          argMax(deleted, version) AS d
        FROM ${this.table} GROUP BY tenant_id, id HAVING d = 0`,
      format: 'JSONEachRow',
      clickhouse_settings: this.readSettings,
    });
    const showing = await shown.json<Shown>();
    const current = await this.summaries();
    const known = new Set(current.map((m) => m.id));
    const gone = showing.filter((r) => !known.has(r.id));
    await this.write([...current.map(rowOf), ...gone.map((r) => this.deletedRow(r))]);
  }

  private async writeSome(ids: readonly string[]): Promise<void> {
    const found = await this.summaries(ids);
    const present = new Set(found.map((m) => m.id));
    const missing = ids.filter((id) => !present.has(id));
    let gone: DimensionRow[] = [];
    if (missing.length > 0) {
      // The tenant and name of a deleted monitor: from the row the table holds.
      const rs = await this.client.query({
        query: `SELECT tenant_id, id, argMax(name, version) AS n, argMax(type, version) AS t
          FROM ${this.table} WHERE id IN ${sqlStringList(missing)} GROUP BY tenant_id, id`,
        format: 'JSONEachRow',
        clickhouse_settings: this.readSettings,
      });
      gone = (await rs.json<Shown>()).map((r) => this.deletedRow(r));
    }
    await this.write([...found.map(rowOf), ...gone]);
  }

  private deletedRow(r: Shown): DimensionRow {
    const now = Math.floor(Date.now() / 1000);
    return {
      tenant_id: r.tenant_id,
      id: r.id,
      name: r.n,
      type: r.t,
      interval_seconds: 0,
      paused: 0,
      deleted: 1,
      version: DELETED_VERSION,
      created_at: now,
      updated_at: now,
    };
  }

  private async write(rows: DimensionRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.client.insert({
      table: this.table,
      values: rows,
      format: 'JSONEachRow',
      clickhouse_settings: this.insertSettings,
    });
    this.logger.debug('monitors dimension written', { rows: rows.length });
  }
}
