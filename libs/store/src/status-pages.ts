import type { ClickHouseClient } from '@clickhouse/client';
import { toIsoSeconds, type StatusPage } from '@telemetry/contract';
import { sqlIdentifier, sqlNumber, sqlString, sqlStringList, type MigrationsByVersion } from '@telemetry/platform';
import { registryDatabase, tableIn } from './databases.js';
import { RowVersions } from './row-versions.js';

/**
 * Public status pages (docs/console.md), stored in the registry database's
 * `status_pages` table as the monitors are: every create, change and delete inserts a
 * whole row with a larger `version`, and the newest row of a slug is the page. Slugs are
 * public paths, so they are unique across tenants and lead the sort key.
 */
export const statusPagesMigrations: MigrationsByVersion = {
  9: (_db, name) => [
    `CREATE TABLE IF NOT EXISTS ${sqlIdentifier(registryDatabase(name))}.status_pages (
        slug String, tenant_id String, version UInt64, deleted UInt8, spec String,
        created_at DateTime('UTC'), updated_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY slug`,
  ],
};

/** A status page as stored: its tenant and row version. */
export interface StoredStatusPage extends StatusPage {
  tenant_id: string;
  version: number;
}

interface Row {
  slug: string;
  t: string;
  s: string;
  v: string | number;
  c: number | string;
  u: number | string;
}

export class StatusPageStore {
  private readonly table: string;
  private readonly versions = new RowVersions();

  constructor(
    private readonly client: ClickHouseClient,
    database: string,
  ) {
    this.table = tableIn(database, 'registry', 'status_pages');
  }

  /** Every current status page of every tenant, in slug order (the public directory). */
  async all(): Promise<StoredStatusPage[]> {
    // NOTE: aliases differ from the columns (see MonitorStore.rows).
    const rs = await this.client.query({
      query: `SELECT slug, argMax(tenant_id, version) AS t, argMax(spec, version) AS s, max(version) AS v,
          toUnixTimestamp(argMax(created_at, version)) AS c, toUnixTimestamp(argMax(updated_at, version)) AS u
        FROM ${this.table}
        GROUP BY slug
        HAVING argMax(deleted, version) = 0
        ORDER BY slug`,
      format: 'JSONEachRow',
      clickhouse_settings: { output_format_json_quote_64bit_integers: 1 },
    });
    return (await rs.json<Row>()).map((r) => {
      const spec = JSON.parse(r.s) as Pick<StatusPage, 'title' | 'description' | 'monitor_ids'>;
      return {
        slug: r.slug,
        tenant_id: r.t,
        title: spec.title,
        description: spec.description,
        monitor_ids: spec.monitor_ids,
        created_at: toIsoSeconds(Number(r.c)),
        updated_at: toIsoSeconds(Number(r.u)),
        version: Number(r.v),
      };
    });
  }

  /** Writes `page` as the newest version of its slug (or deletes it); returns that version. */
  async save(page: Omit<StoredStatusPage, 'version'>, deleted = false, after = 0): Promise<number> {
    const version = this.versions.next(after);
    await this.client.insert({
      table: this.table,
      format: 'JSONEachRow',
      values: [
        {
          slug: page.slug,
          tenant_id: page.tenant_id,
          version,
          deleted: deleted ? 1 : 0,
          spec: JSON.stringify({ title: page.title, description: page.description, monitor_ids: page.monitor_ids }),
          created_at: Math.floor(Date.parse(page.created_at) / 1000),
          updated_at: Math.floor(Date.parse(page.updated_at) / 1000),
        },
      ],
    });
    return version;
  }
}

/** Only what anyone may see of a status page's own settings. */
export function publicStatusPageOf(p: StoredStatusPage): StatusPage {
  return {
    slug: p.slug,
    title: p.title,
    description: p.description,
    monitor_ids: p.monitor_ids,
    created_at: p.created_at,
    updated_at: p.updated_at,
  };
}

/**
 * Checks per day (UTC), monitor and status of `tenantId`'s monitors in `ids`, from the
 * hourly rollup, over [from, to) (unix seconds on day boundaries). Columns monitor_id,
 * t (the day), status, n.
 */
export function dailyCountsSql(
  database: string,
  tenantId: string,
  ids: readonly string[],
  from: number,
  to: number,
): string {
  return `SELECT monitor_id, toUInt32(toStartOfDay(hour)) AS t, status, uniqExactMerge(checks) AS n
    FROM ${sqlIdentifier(database)}.checks_hourly
    WHERE tenant_id = ${sqlString(tenantId)} AND monitor_id IN ${sqlStringList(ids)}
      AND hour >= toDateTime(${sqlNumber(from)}) AND hour < toDateTime(${sqlNumber(to)})
    GROUP BY monitor_id, t, status`;
}

/** A row of dailyCountsSql's result. */
export interface DailyCountRow {
  monitor_id: string;
  t: number | string;
  status: string;
  n: number | string;
}

/**
 * The open incident of each of `tenantId`'s monitors in `ids` that has one: columns
 * monitor_id and started (unix seconds). An incident is open while its down alert has
 * no up alert with the same incident id.
 */
export function openIncidentsSql(database: string, tenantId: string, ids: readonly string[]): string {
  return `SELECT monitor_id, toUnixTimestamp(minIf(created_at, type = 'monitor.down')) AS started
    FROM ${sqlIdentifier(database)}.alerts
    WHERE tenant_id = ${sqlString(tenantId)} AND monitor_id IN ${sqlStringList(ids)}
    GROUP BY monitor_id, incident_id
    HAVING countIf(type = 'monitor.down') > 0 AND countIf(type = 'monitor.up') = 0
    ORDER BY started DESC`;
}

/** A row of openIncidentsSql's result. */
export interface OpenIncidentRow {
  monitor_id: string;
  started: number | string;
}
