import type { ClickHouseClient } from '@clickhouse/client';
import { storedStatusPageOf, type StoredStatusPage } from '../status-pages.js';
import { sqlIdentifier, type MigrationsByVersion } from '@telemetry/platform';
import { registryDatabase, tableIn } from '../databases.js';
import { RowVersions } from '../row-versions.js';

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

interface Row {
  slug: string;
  t: string;
  s: string;
  v: string | number;
  c: number | string;
  u: number | string;
}

/** The status pages as ClickHouse held them before the registry moved to PostgreSQL (npm run migrate reads them). */
export class LegacyStatusPageStore {
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
      const spec = JSON.parse(r.s) as Pick<StoredStatusPage, 'title' | 'description' | 'monitor_ids'>;
      return storedStatusPageOf({ slug: r.slug, tenant_id: r.t, ...spec }, r.c, r.u, r.v);
    });
  }

  /** Writes `page` as the newest version of its slug (or deletes it); returns that version. */
  async save(page: Omit<StoredStatusPage, 'version' | 'key'>, deleted = false, after = 0): Promise<number> {
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
