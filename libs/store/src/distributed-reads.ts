/**
 * The ClickHouse settings every read through the Distributed `_all` tables carries
 * (docs/clickhouse.md, "What to query, and why"). Most are the servers' defaults: they are
 * sent anyway, so that a server or user profile that changed one cannot make a read
 * silently skip, split or double a shard's rows. Each exists on ClickHouse 18.16 and on
 * current ClickHouse (test/unit/distributed-reads.test.ts lists them; the current-engine
 * lane and the 18.16 server check their names).
 */
import { sqlNumber } from '@telemetry/platform';
import type { TableLayout } from './layout.js';

/**
 * A replica further behind its shard than this many seconds is not read (with
 * fallback_to_stale_replicas_for_distributed_queries = 0): a replica cut off from
 * ZooKeeper, or restarted and still fetching what it missed, would answer without rows
 * its shard holds. Normal replication lag is well under a second; a shard whose every
 * replica is this far behind fails the query (503 STORE_UNAVAILABLE) rather than answer
 * from stale rows. ClickHouse's default is 300.
 */
export const MAX_REPLICA_DELAY_SECONDS = 30;

export const DISTRIBUTED_READ_SETTINGS: Readonly<Record<string, string | number>> = Object.freeze({
  // A shard that no replica answers fails the query: never an answer without its rows.
  skip_unavailable_shards: 0,
  // One replica reads a shard's rows: never split between replicas (which, without a
  // sampling key, would read them twice).
  max_parallel_replicas: 1,
  // The initiator merges the shards' aggregation states (uniqExactMerge, quantiles, argMax,
  // GROUP BY across shards): a shard's partial groups are never returned as final.
  distributed_group_by_no_merge: 0,
  // A stale replica is never read (see MAX_REPLICA_DELAY_SECONDS).
  fallback_to_stale_replicas_for_distributed_queries: 0,
  max_replica_delay_for_distributed_queries: MAX_REPLICA_DELAY_SECONDS,
  // `IN (SELECT … FROM x_all)` inside a distributed read is refused, not run against each
  // shard's own rows only (what a profile's 'local' would do): such reads say GLOBAL IN.
  distributed_product_mode: 'deny',
});

/** The settings a read with `layout` carries: DISTRIBUTED_READ_SETTINGS on a cluster, none on one server. */
export function readSettingsOf(layout: TableLayout): Record<string, string | number> {
  return layout.sharded ? { ...DISTRIBUTED_READ_SETTINGS } : {};
}

/**
 * A page read (`SELECT … ORDER BY <order> LIMIT 1 BY id LIMIT n`, `sql`) as it must run
 * through `_all`: each shard runs all of it (distributed_group_by_no_merge = 1: the
 * Complete stage, LIMIT 1 BY id before LIMIT), and the initiator sorts, folds and limits
 * the shards' pages again (`order` names the page's output columns). Else `sql` itself.
 * NOTE: ClickHouse 18.16 runs a distributed query's `LIMIT n` on each shard before its
 * `LIMIT 1 BY id` (InterpreterSelectQuery's preliminary limit), so a shard holding two
 * copies of a row among its first n sends fewer than n ids, and the page comes out short:
 * a history ended early (seen on the two-shard harness). The copies need not be
 * identical (a check run twice at a hand-over keeps its id, not its timings), so no
 * DISTINCT folds them all. Every copy of a row is on one shard (the sharding key), so a
 * shard's page keeps the copy one server's `LIMIT 1 BY id` keeps, and the union of the
 * shards' first n distinct ids holds the first n of all. Current ClickHouse applies
 * LIMIT BY first anyway; the same SQL gives the same answer there. Reads without a
 * limit (exports) have no preliminary limit and need none.
 */
export function pageRead(layout: TableLayout, limit: number | null, sql: string, order: string): string {
  if (!layout.sharded || limit === null) return sql;
  return `SELECT * FROM (
    ${sql}
    SETTINGS distributed_group_by_no_merge = 1
  )
  ORDER BY ${order}
  LIMIT 1 BY id
  LIMIT ${sqlNumber(limit)}`;
}
