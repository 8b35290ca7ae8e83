import type { RequestHandler } from 'express';
import { AppError, StoreUnavailableError, type Component, type Logger } from '@telemetry/platform';
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
export class MonitorDirectory implements Component {
  readonly name = 'monitor-directory';
  // Without the set every lookup goes to ClickHouse: slower, still correct.
  readonly essential = false;
  private ids = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private loadedAt = 0;
  private stopped = false;

  constructor(
    private readonly lookup: IdLookup,
    private readonly refreshMs: number,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    await this.refresh();
    this.schedule();
  }

  health(): boolean {
    return Date.now() - this.loadedAt < this.refreshMs * 3 + 10_000;
  }

  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    return Promise.resolve();
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

  private async refresh(): Promise<void> {
    try {
      this.ids = new Set(await this.lookup());
      this.loadedAt = Date.now();
    } catch (err) {
      this.logger.warn('monitor ids not reloaded', { err: String(err) });
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.refresh().finally(() => this.schedule()), this.refreshMs);
    this.timer.unref();
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
