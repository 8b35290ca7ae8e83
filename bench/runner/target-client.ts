/**
 * The benchmark's side of the target (target.ts, its own process): resetting its window,
 * reading its counts and arrivals, and waiting until every monitor has been checked.
 */
import { fetchJson, until, type Child } from '../../harness/processes.js';

interface TargetStats {
  requests: number;
  monitors: number;
  seconds: number;
}

export interface TargetWindow extends TargetStats {
  perSecond: number[];
  arrivals: Record<string, number[]>;
}

export class Target {
  constructor(readonly server: Child) {}

  private call<T>(path: string, method = 'GET'): Promise<T> {
    return fetchJson<T>(`${this.server.url}${path}`, method);
  }

  reset(): Promise<TargetStats> {
    return this.call('/reset', 'POST');
  }

  stats(): Promise<TargetStats> {
    return this.call('/stats');
  }

  window(): Promise<TargetWindow> {
    return this.call('/window');
  }

  /** Resets, then waits until every one of `monitors` has been checked at least once. */
  async allSeen(monitors: number, timeoutMs: number): Promise<void> {
    await this.reset();
    let last: TargetStats | undefined;
    await until(
      () => `the target to see every monitor (${last?.monitors ?? 0} of ${monitors})`,
      async () => ((last = await this.stats()).monitors >= monitors ? true : undefined),
      timeoutMs,
      200,
    );
  }
}
