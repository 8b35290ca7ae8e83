/**
 * Where the services find a data table (docs/clickhouse.md, "On a cluster"): on one
 * server, the table itself; with CLICKHOUSE_CLUSTER, its Distributed table `<table>_all`,
 * which spreads inserts over the cluster's shards by the table's sharding key
 * (DISTRIBUTED_TABLES in migrations.ts) and reads every shard. One code path serves a
 * cluster of one shard and of many.
 */
import { sqlIdentifier } from '@telemetry/platform';
import { auditDatabase } from './databases.js';

/** How a service reaches ClickHouse's data tables: through the Distributed tables or not. */
export interface TableLayout {
  /** CLICKHOUSE_CLUSTER is set: read and write `<table>_all`. */
  readonly sharded: boolean;
}

/** One server: the tables themselves. */
export const LOCAL_LAYOUT: TableLayout = { sharded: false };

/** The layout a service's config asks for (CLICKHOUSE_CLUSTER set or not). */
export function layoutOf(config: { clickhouseCluster?: string }): TableLayout {
  return { sharded: (config.clickhouseCluster ?? '') !== '' };
}

/** Tables that live in the `<db>_audit` sibling database rather than the data database. */
const IN_AUDIT_DATABASE = new Set(['audit_log']);

/**
 * `db.table` (quoted) for data database `database` as `layout` reaches it: the
 * Distributed `<table>_all` when sharded. Tables of the audit sibling are found there.
 */
export function tableRef(database: string, table: string, layout: TableLayout): string {
  const db = IN_AUDIT_DATABASE.has(table) ? auditDatabase(database) : database;
  return `${sqlIdentifier(db)}.${sqlIdentifier(layout.sharded ? `${table}_all` : table)}`;
}
