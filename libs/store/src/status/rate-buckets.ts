import type { PgQueryable } from '@telemetry/platform';
import { registryCall } from '../registry/pg.js';

/**
 * Fixed-window counters in PostgreSQL's `rate_buckets` (docs/api.md, "Subscribers"): every
 * query service replica counts in the same row, so a limit holds across replicas. One
 * statement per hit: the row is made, counted in its window, or started again in a new one.
 */

/** What a hit found: within the limit, or over it with the seconds until the window ends. */
export type RateVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export class RateBuckets {
  constructor(private readonly db: PgQueryable) {}

  /**
   * Counts one hit in `bucket`, whose window is `windowSeconds` long (aligned on the epoch),
   * and says whether it is one of the first `limit` of its window.
   */
  async hit(bucket: string, limit: number, windowSeconds: number): Promise<RateVerdict> {
    const { rows } = await registryCall(() =>
      this.db.query<{ hits: number; retry_after: string }>(
        `INSERT INTO rate_buckets AS b (bucket, window_start, hits)
         VALUES ($1, to_timestamp(floor(extract(epoch from now()) / $2::int) * $2::int), 1)
         ON CONFLICT (bucket) DO UPDATE SET
           hits = CASE WHEN b.window_start = EXCLUDED.window_start THEN b.hits + 1 ELSE 1 END,
           window_start = EXCLUDED.window_start
         RETURNING hits,
           ceil(extract(epoch from window_start + make_interval(secs => $2::int) - now()))::bigint AS retry_after`,
        [bucket, windowSeconds],
      ),
    );
    const row = rows[0]!;
    return row.hits <= limit
      ? { allowed: true }
      : { allowed: false, retryAfterSeconds: Math.max(1, Number(row.retry_after)) };
  }

  /** Forgets buckets whose window started more than `olderThanSeconds` ago (a periodic job). */
  async prune(olderThanSeconds: number): Promise<number> {
    const { rowCount } = await registryCall(() =>
      this.db.query(`DELETE FROM rate_buckets WHERE window_start < now() - make_interval(secs => $1::int)`, [
        olderThanSeconds,
      ]),
    );
    return rowCount ?? 0;
  }
}
