import type { ClickHouseClient } from '@clickhouse/client';
import { type Logger, PeriodicJob, sqlIdentifier, sqlNumber, sqlString } from '@telemetry/platform';

export interface RetentionRule {
  table: string;
  /** Whole partitions whose newest row is older than this many days are dropped; 0 keeps all. */
  days: number;
}

/**
 * Retention by dropping whole partitions: ClickHouse 18.16 has no TTL, and dropping a
 * partition is cheap and exact on every version. A partition goes only when its newest
 * row (system.parts.max_time) is older than the cut-off. Running it on several
 * replicas at once is harmless.
 */
export async function applyRetention(
  client: ClickHouseClient,
  database: string,
  rules: RetentionRule[],
  logger: Logger,
  nowMs = Date.now(),
): Promise<{ table: string; partition: string }[]> {
  const dropped: { table: string; partition: string }[] = [];
  for (const rule of rules) {
    if (rule.days <= 0) continue;
    const cutoff = Math.floor(nowMs / 1000) - rule.days * 86_400;
    const rs = await client.query({
      query: `SELECT partition, max(toUInt32(max_time)) AS newest FROM system.parts
              WHERE database = ${sqlString(database)} AND table = ${sqlString(rule.table)} AND active
              GROUP BY partition HAVING newest < ${sqlNumber(cutoff)} ORDER BY partition`,
      format: 'JSONEachRow',
    });
    for (const { partition } of await rs.json<{ partition: string }>()) {
      // Our partition keys are toYYYYMMDD / toYYYYMM: plain numbers.
      if (!/^\d{6,8}$/.test(partition)) continue;
      await client.command({
        query: `ALTER TABLE ${sqlIdentifier(database)}.${sqlIdentifier(rule.table)} DROP PARTITION ${sqlNumber(Number(partition))}`,
      });
      dropped.push({ table: rule.table, partition });
      logger.info('retention dropped a partition', { table: rule.table, partition });
    }
  }
  return dropped;
}

/** Runs applyRetention every `intervalMs` (first run at start); rules of 0 days do nothing. */
export function retentionJob(
  client: ClickHouseClient,
  database: string,
  rules: RetentionRule[],
  intervalMs: number,
  logger: Logger,
): PeriodicJob {
  const active = rules.filter((r) => r.days > 0);
  return new PeriodicJob(
    'retention',
    intervalMs,
    async () => {
      if (active.length > 0) await applyRetention(client, database, active, logger);
    },
    logger,
  );
}
