import { ByteLru } from '@telemetry/platform';
import { TDigest } from '@telemetry/store';

/**
 * Completed summary buckets (an hour or a day of one monitor) as ClickHouse answered them:
 * counts per status, quantiles, and the t-digest state the totals are merged from. A bucket
 * is completed once it ended more than CLOSED_AFTER_SECONDS ago (params.ts: the rule the
 * closed-range cache and Cache-Control follow too; checks reach ClickHouse within seconds).
 * A bucket without checks is kept too (`n` undefined): ClickHouse has no row for it.
 *
 * Bounded by bytes (least recently read first out) and by age: an entry older than
 * `maxAgeMs` is asked again, so a check later than the margin, a retention drop or a
 * rewrite of checks_hourly shows within that time.
 */
export interface Bucket {
  /** Checks per status of CHECK_STATUSES, in that order; undefined: no checks. */
  n: number[] | undefined;
  /** ClickHouse's quantiles (p50, p95, p99) of the bucket. */
  q: number[];
  digest: TDigest | undefined;
}

interface Kept {
  bucket: Bucket;
  at: number;
}

export class SummaryBuckets {
  private readonly lru: ByteLru<Kept>;

  constructor(
    maxBytes: number,
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.lru = new ByteLru(maxBytes);
  }

  static key(tenantId: string, monitorId: string, interval: string, t: number): string {
    return `${tenantId}\u0000${monitorId}\u0000${interval}\u0000${t}`;
  }

  get(key: string): Bucket | undefined {
    const k = this.lru.get(key);
    if (!k) return undefined;
    if (this.now() - k.at > this.maxAgeMs) {
      this.lru.delete(key);
      return undefined;
    }
    return k.bucket;
  }

  set(key: string, bucket: Bucket): void {
    // Two numbers per centroid and the rest of the entry, roughly.
    const bytes = key.length * 2 + 160 + (bucket.digest?.size ?? 0) * 16;
    this.lru.set(key, { bucket, at: this.now() }, bytes);
  }

  size(): { entries: number; bytes: number } {
    return this.lru.size();
  }
}
