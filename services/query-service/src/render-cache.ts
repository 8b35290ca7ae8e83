/** A value kept by RenderCache, and when it was made (ms). */
interface Good<T> {
  value: T;
  at: number;
}

interface Entry<T> {
  good?: Good<T>;
  /** The render in flight: every request for the key waits for this one. */
  pending?: Promise<Good<T>>;
  /** The last render failed: no other starts before `at` + retryMs. */
  failed?: { err: unknown; at: number };
}

/** What a request gets: the value, whether it is older than it should be, and until when it holds (ms). */
export interface Rendered<T> {
  value: T;
  stale: boolean;
  until: number;
}

/**
 * Values rendered at most once per `ttlMs` per key, for callers that may come in crowds
 * (anonymous readers of a public page):
 * - one render in flight per key, whoever asks while it runs waits for it;
 * - a failed render is not tried again before `retryMs`; meanwhile the last good value is
 *   answered, marked stale, or, when there never was one, the failure;
 * - evict(key) forgets one key (a render it had in flight is answered to its waiters, and
 *   kept nowhere).
 */
export class RenderCache<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(
    private readonly ttlMs: number,
    private readonly retryMs: number,
    /** Told of each render's outcome (metrics). */
    private readonly rendered: (outcome: 'ok' | 'failed') => void,
    private readonly now: () => number = Date.now,
  ) {}

  async get(key: string, render: () => Promise<T>): Promise<Rendered<T>> {
    let e = this.entries.get(key);
    if (!e) {
      e = {};
      this.entries.set(key, e);
    }
    if (e.good && this.now() - e.good.at < this.ttlMs) return this.fresh(e.good);
    if (!e.failed || this.now() - e.failed.at >= this.retryMs) {
      e.pending ??= this.run(e, render);
      try {
        return this.fresh(await e.pending);
      } catch {
        // e.failed says what, and since when
      }
    }
    if (e.good) return { value: e.good.value, stale: true, until: e.failed!.at + this.retryMs };
    throw e.failed!.err;
  }

  evict(key: string): void {
    this.entries.delete(key);
  }

  private fresh(good: Good<T>): Rendered<T> {
    return { value: good.value, stale: false, until: good.at + this.ttlMs };
  }

  private async run(e: Entry<T>, render: () => Promise<T>): Promise<Good<T>> {
    try {
      const good = { value: await render(), at: this.now() };
      this.rendered('ok');
      e.good = good;
      e.failed = undefined;
      return good;
    } catch (err) {
      this.rendered('failed');
      e.failed = { err, at: this.now() };
      throw err;
    } finally {
      e.pending = undefined;
    }
  }
}
