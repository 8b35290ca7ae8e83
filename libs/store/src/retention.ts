import type { ClickHouseClient } from '@clickhouse/client';
import { type Component, type Logger, sqlIdentifier, sqlNumber, sqlString } from '@telemetry/platform';

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

/** Runs applyRetention every `intervalMs` (first run at start). */
export class RetentionJob implements Component {
  readonly name = 'retention';
  readonly essential = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private ok = true;

  constructor(
    private readonly client: ClickHouseClient,
    private readonly database: string,
    private readonly rules: RetentionRule[],
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  start(): Promise<void> {
    if (this.rules.every((r) => r.days <= 0)) return Promise.resolve();
    const tick = (): void => {
      this.running = applyRetention(this.client, this.database, this.rules, this.logger).then(
        () => (this.ok = true),
        (err: unknown) => {
          this.ok = false;
          this.logger.warn('retention run failed', { err: String(err) });
        },
      );
    };
    tick();
    this.timer = setInterval(tick, this.intervalMs);
    this.timer.unref();
    return Promise.resolve();
  }

  health(): boolean {
    return this.ok;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
