import type { RequestHandler } from 'express';
import { AppError, Snapshot, StoreUnavailableError, type Clock, type Logger } from '@telemetry/platform';
import { monitorIdOf } from './params.js';

/** Current monitor ids: all of them, or those among `ids`. */
export type IdLookup = (ids?: readonly string[]) => Promise<string[]>;

/**
 * Which monitor ids exist, for the 404 of every /api/monitors/{id}/... route. It holds
 * the set of all current ids, reloaded every `refreshMs` (one query, however many
 * requests), so the check routes pay a Set lookup. An id not in the set is looked up
 * on its own, so a monitor just created on another replica is found at once; a monitor
 * deleted on another replica still answers for up to `refreshMs`.
 */
export class MonitorDirectory extends Snapshot<Set<string>> {
  /** Before the first load: ids found one by one (that load replaces them). */
  private readonly empty = new Set<string>();

  constructor(
    private readonly lookup: IdLookup,
    refreshMs: number,
    logger: Logger,
    clock?: Clock,
  ) {
    super({
      name: 'monitor-directory',
      // Without the set every lookup goes to ClickHouse: slower, still correct.
      essential: false,
      load: async () => new Set(await lookup()),
      intervalMs: refreshMs,
      logger,
      failureMessage: 'monitor ids not reloaded',
      // Starts without the set when ClickHouse is away: lookups go one by one meanwhile.
      requireFirstLoad: false,
      staleAfterMs: refreshMs * 3 + 10_000,
      clock,
    });
  }

  private get ids(): Set<string> {
    return this.value() ?? this.empty;
  }

  async exists(id: string): Promise<boolean> {
    if (this.ids.has(id)) return true;
    const found = (await this.lookup([id])).length > 0;
    if (found) this.ids.add(id);
    return found;
  }

  remember(id: string): void {
    this.ids.add(id);
  }

  forget(id: string): void {
    this.ids.delete(id);
  }
}

/** Answers 404 MONITOR_NOT_FOUND for a monitor id the registry does not hold. */
export function requireMonitor(directory: MonitorDirectory, logger: Logger): RequestHandler {
  return async (req, _res, next) => {
    const id = monitorIdOf(req);
    let found: boolean;
    try {
      found = await directory.exists(id);
    } catch (err) {
      logger.warn('monitor lookup failed', { request_id: req.id, err: String(err) });
      throw new StoreUnavailableError();
    }
    if (!found) throw new AppError('MONITOR_NOT_FOUND', `there is no monitor ${id}`);
    next();
  };
}
