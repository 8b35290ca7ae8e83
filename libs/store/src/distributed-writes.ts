/**
 * How the services write through the Distributed `_all` tables in cluster mode
 * (docs/clickhouse.md, "On a cluster"): inserts, and the mutations that cannot go
 * through a Distributed table at all.
 */
import type { ClickHouseSettings } from '@clickhouse/client';
import { clusterDdl, sqlIdentifier } from '@telemetry/platform';
import type { TableLayout } from './layout.js';

/**
 * The settings of every INSERT through an `_all` table. `insert_distributed_sync`: the
 * insert returns once every shard it touched has its rows (on one replica, which
 * replicates them to the others), not once the Distributed table has queued them on the
 * server that took the insert. So a committed Kafka offset still means the rows are in
 * the shard's tables, and a failure of a shard fails the insert (which the consumer
 * retries: the same block again, deduplicated by the shard's replicated table). Known
 * to 18.16 and to current ClickHouse (there an alias of distributed_foreground_insert).
 */
export const DISTRIBUTED_INSERT_SETTINGS: Readonly<ClickHouseSettings> = Object.freeze({
  insert_distributed_sync: 1,
});

/** The settings an INSERT with `layout` carries: DISTRIBUTED_INSERT_SETTINGS on a cluster, none on one server. */
export function insertSettingsOf(layout: TableLayout): ClickHouseSettings {
  return layout.sharded ? { ...DISTRIBUTED_INSERT_SETTINGS } : {};
}

/**
 * `sql` (an `ALTER TABLE db.t …` or a lightweight `DELETE FROM db.t WHERE …`: a mutation,
 * a partition dropped, a TTL set) as it runs with CLICKHOUSE_CLUSTER `cluster`. A
 * Distributed table takes none of them, so on a cluster each runs on the local tables
 * `ON CLUSTER`, reaching every shard (and, the tables replicated, every replica); on one
 * server ('') as it is.
 */
export function mutationSql(sql: string, cluster: string): string {
  if (cluster === '') return sql;
  const del = /^(\s*DELETE\s+FROM\s+(?:`[^`]+`|\w+)(?:\.(?:`[^`]+`|\w+))?)\s/i.exec(sql);
  if (del) return `${del[1]} ON CLUSTER ${sqlIdentifier(cluster)}${sql.slice(del[1]!.length)}`;
  if (!/^\s*ALTER\s+TABLE\s/i.test(sql)) throw new Error(`not a mutation: ${sql.slice(0, 80)}`);
  return clusterDdl(sql, cluster, 'mutation');
}
