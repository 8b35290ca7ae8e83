import { Counter, type Registry } from 'prom-client';
import type { ClickHouseClient, Engine, Logger } from '@telemetry/platform';
import { deleteEvents, DeletionQueue, type ClaimedDeletion, type DeletionPlace } from '@telemetry/store';

/**
 * Runs deletion requests (docs/deletions.md): claims the oldest pending one from
 * PostgreSQL under a lease, deletes its ids' rows in ClickHouse (event-deletions.ts),
 * records progress after each statement (renewing the lease), and marks it done. A
 * ClickHouse error sends it back to pending (another try, perhaps by another replica) until
 * it failed `maxAttempts` times; then it is failed with the error.
 */
export class DeletionExecutor {
  private readonly outcomes: Counter;
  private readonly rows: Counter;

  constructor(
    private readonly deps: {
      queue: DeletionQueue;
      ch: ClickHouseClient;
      engine: Engine;
      database: string;
      /** The cluster the deletes run on (CLICKHOUSE_CLUSTER), and how they read through `_all`. */
      place?: DeletionPlace;
      leaseSeconds: number;
      mutationTimeoutMs: number;
      logger: Logger;
      registry: Registry;
      maxAttempts?: number;
    },
  ) {
    this.outcomes = new Counter({
      name: 'deletions_total',
      help: 'Deletion requests this replica ran, by outcome (done, retry, failed, lost: another replica took it over)',
      labelNames: ['outcome'],
      registers: [deps.registry],
    });
    this.rows = new Counter({
      name: 'deleted_rows_total',
      help: 'Rows deleted by deletion requests, by table (rollup_minutes: events_per_minute minutes recomputed)',
      labelNames: ['table'],
      registers: [deps.registry],
    });
  }

  /** Runs pending deletions until there is none (one run of the periodic job). */
  async runPending(): Promise<void> {
    for (;;) {
      const claimed = await this.deps.queue.claim(this.deps.leaseSeconds);
      if (!claimed) return;
      await this.run(claimed);
    }
  }

  private async run(c: ClaimedDeletion): Promise<void> {
    const { logger } = this.deps;
    const before = { ...c.counts };
    let lost = false;
    const count = (counts: Record<string, number>): void => {
      for (const [table, n] of Object.entries(counts)) {
        const added = n - (before[table] ?? 0);
        if (added > 0) this.rows.inc({ table }, added);
        before[table] = n;
      }
    };
    logger.info('deletion started', { deletion_id: c.id, tenant_id: c.tenantId, attempt: c.attempts });
    try {
      const counts = await deleteEvents({
        ch: this.deps.ch,
        engine: this.deps.engine,
        database: this.deps.database,
        place: this.deps.place,
        target: { tenantId: c.tenantId, userIds: c.userIds, anonymousIds: c.anonymousIds },
        done: c.counts,
        mutationTimeoutMs: this.deps.mutationTimeoutMs,
        progress: async (so) => {
          count(so);
          if (!(await this.deps.queue.progress(c, so, this.deps.leaseSeconds))) {
            lost = true;
            throw new Error('the claim was lost');
          }
        },
      });
      count(counts);
      const ok = await this.deps.queue.finish(c, 'done', counts);
      this.outcomes.inc({ outcome: ok ? 'done' : 'lost' });
      logger.info('deletion done', { deletion_id: c.id, tenant_id: c.tenantId, counts });
    } catch (err) {
      if (lost) {
        this.outcomes.inc({ outcome: 'lost' });
        logger.warn('deletion taken over by another replica', { deletion_id: c.id });
        return;
      }
      const final = c.attempts >= (this.deps.maxAttempts ?? 5);
      const outcome = final ? 'failed' : 'retry';
      this.outcomes.inc({ outcome });
      logger.warn('deletion failed', { deletion_id: c.id, attempt: c.attempts, final, err: String(err) });
      await this.deps.queue.finish(c, outcome, c.counts, String(err)).catch((e: unknown) => {
        logger.warn('deletion state not recorded; its lease will expire', { deletion_id: c.id, err: String(e) });
      });
    }
  }
}
