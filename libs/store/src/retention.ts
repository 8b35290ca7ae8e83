import type { ClickHouseClient } from '@clickhouse/client';
import { type Engine, type Logger, PeriodicJob, sqlIdentifier, sqlNumber, sqlString } from '@telemetry/platform';
import { mutationSql } from './distributed-writes.js';

export interface RetentionRule {
  table: string;
  /** Rows older than this many days go; 0 keeps all. */
  days: number;
  /** The time column the table is partitioned by, which the TTL (current ClickHouse) reads. */
  column: string;
}

/** Days to keep, per kind of table (the consumer's RETENTION_*_DAYS); 0 keeps all. */
export interface RetentionDays {
  events: number;
  checks: number;
  rollups: number;
  /** check_screenshots (SCREENSHOT_RETENTION_DAYS). */
  screenshots: number;
}

/** The retention of every table the stream consumer writes (docs/clickhouse.md, "Retention"). */
export function retentionRules(days: RetentionDays): RetentionRule[] {
  return [
    { table: 'events', days: days.events, column: 'id_time' },
    // The retry window for events without a time of their own: as long as the events, at least 8 days.
    { table: 'event_first_seen', days: days.events === 0 ? 0 : Math.max(8, days.events), column: 'id_time' },
    { table: 'checks', days: days.checks, column: 'created_at' },
    // Delivery attempts are kept as long as the checks whose alerts they carried.
    { table: 'webhook_deliveries', days: days.checks, column: 'attempted_at' },
    { table: 'events_per_minute', days: days.rollups, column: 'minute' },
    { table: 'checks_hourly', days: days.rollups, column: 'hour' },
    // Browser checks' failure screenshots: large, so kept apart from (and by default shorter than) the checks.
    { table: 'check_screenshots', days: days.screenshots, column: 'created_at' },
    // Rows of replicas long gone.
    { table: 'freshness', days: 7, column: 'updated_at' },
  ];
}

/** What a run changed: a partition dropped (18.16), or a table's TTL set (days) or removed (0). */
export type RetentionAction = { table: string; partition: string } | { table: string; ttlDays: number };

/**
 * Retention, on each engine the way its users expect (docs/clickhouse.md, "Retention").
 * On current ClickHouse it is the table's own `TTL <column> + N days`, set when the
 * configured days differ from the table's and removed at 0: ClickHouse then deletes rows
 * in its merges, and an analyst sees the rule in SHOW CREATE TABLE. ClickHouse 18.16 has
 * no TTL: whole partitions go, and only when their newest row (system.parts.max_time) is
 * older than the cut-off. Running either on several replicas at once is harmless.
 *
 * With CLICKHOUSE_CLUSTER `cluster` (docs/clickhouse.md, "On a cluster") each statement
 * runs on the local tables ON CLUSTER, so every shard drops the partition or takes the
 * TTL, and 18.16's partitions are planned from every shard's parts (the `cluster` table
 * function: one replica of each shard), the newest row of a partition on any shard.
 */
export async function applyRetention(
  client: ClickHouseClient,
  database: string,
  rules: RetentionRule[],
  logger: Logger,
  engine: Engine,
  nowMs = Date.now(),
  cluster = '',
): Promise<RetentionAction[]> {
  const actions: RetentionAction[] = [];
  for (const rule of rules) {
    if (engine.modern) {
      const days = await followTtl(client, database, rule, cluster);
      if (days !== null) {
        actions.push({ table: rule.table, ttlDays: days });
        logger.info('retention set the TTL', { table: rule.table, days });
      }
      continue;
    }
    if (rule.days <= 0) continue;
    const cutoff = Math.floor(nowMs / 1000) - rule.days * 86_400;
    const rs = await client.query({
      query: `SELECT partition, max(toUInt32(max_time)) AS newest FROM ${partsOf(cluster)}
              WHERE database = ${sqlString(database)} AND table = ${sqlString(rule.table)} AND active
              GROUP BY partition HAVING newest < ${sqlNumber(cutoff)} ORDER BY partition`,
      format: 'JSONEachRow',
    });
    for (const { partition } of await rs.json<{ partition: string }>()) {
      // Our partition keys are toYYYYMMDD / toYYYYMM: plain numbers.
      if (!/^\d{6,8}$/.test(partition)) continue;
      await client.command({
        query: mutationSql(
          `ALTER TABLE ${sqlIdentifier(database)}.${sqlIdentifier(rule.table)} DROP PARTITION ${sqlNumber(Number(partition))}`,
          cluster,
        ),
      });
      actions.push({ table: rule.table, partition });
      logger.info('retention dropped a partition', { table: rule.table, partition });
    }
  }
  return actions;
}

/**
 * Makes the table's TTL say `rule.days` (none at 0); returns the days set, or null when
 * the table already said so or does not exist. The days are read back from the TTL
 * ClickHouse prints in system.tables.engine_full (`... TTL toDateTime(col) + toIntervalDay(N)`).
 */
async function followTtl(
  client: ClickHouseClient,
  database: string,
  rule: RetentionRule,
  cluster: string,
): Promise<number | null> {
  const rs = await client.query({
    query: `SELECT engine_full FROM system.tables WHERE database = ${sqlString(database)} AND name = ${sqlString(rule.table)}`,
    format: 'JSONEachRow',
  });
  const [table] = await rs.json<{ engine_full: string }>();
  if (table === undefined) return null;
  const ttl = /\sTTL\s/.test(table.engine_full);
  const current = /\sTTL\s.*?toIntervalDay\((\d+)\)/.exec(table.engine_full)?.[1];
  const target = `${sqlIdentifier(database)}.${sqlIdentifier(rule.table)}`;
  if (rule.days > 0 && Number(current) !== rule.days) {
    await client.command({
      query: mutationSql(
        `ALTER TABLE ${target} MODIFY TTL toDateTime(${sqlIdentifier(rule.column)}) + toIntervalDay(${sqlNumber(rule.days)})`,
        cluster,
      ),
    });
    return rule.days;
  }
  if (rule.days <= 0 && ttl) {
    await client.command({ query: mutationSql(`ALTER TABLE ${target} REMOVE TTL`, cluster) });
    return 0;
  }
  return null;
}

/** The parts of this server (''), or of one replica of every shard of `cluster`. */
function partsOf(cluster: string): string {
  return cluster === '' ? 'system.parts' : `cluster(${sqlString(cluster)}, system, parts)`;
}

/**
 * Runs applyRetention every `intervalMs` (first run at start). On 18.16 rules of 0 days
 * do nothing; on current ClickHouse they remove a TTL set before. `cluster`:
 * CLICKHOUSE_CLUSTER ('' for one server).
 */
export function retentionJob(
  client: ClickHouseClient,
  database: string,
  rules: RetentionRule[],
  intervalMs: number,
  logger: Logger,
  engine: Engine,
  cluster = '',
): PeriodicJob {
  const active = engine.modern ? rules : rules.filter((r) => r.days > 0);
  return new PeriodicJob(
    'retention',
    intervalMs,
    async () => {
      if (active.length > 0) await applyRetention(client, database, active, logger, engine, Date.now(), cluster);
    },
    logger,
  );
}
