import type { RequestHandler } from 'express';
import { AppError, Snapshot, StoreUnavailableError, type Clock, type Logger } from '@telemetry/platform';
import type { VerifiedKey } from '@telemetry/store';
import { monitorIdOf } from './params.js';

/** Current monitors (id and tenant): all of them, or those among `ids`. */
export type IdLookup = (ids?: readonly string[]) => Promise<{ id: string; tenantId: string }[]>;

/**
 * Which monitor ids exist, and in which tenant, for the 404 of every
 * /api/monitors/{id}/... route: a monitor of another tenant does not exist for a key.
 * It holds a map of all current ids to their tenants, reloaded every `refreshMs` (one
 * query, however many requests), so the check routes pay a Map lookup. An id not in
 * the map is looked up on its own, so a monitor just created on another replica is
 * found at once; a monitor deleted on another replica still answers for up to `refreshMs`.
 */
export class MonitorDirectory extends Snapshot<Map<string, string>> {
  /** Before the first load: ids found one by one (that load replaces them). */
  private readonly empty = new Map<string, string>();

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
      load: async () => new Map((await lookup()).map((m) => [m.id, m.tenantId])),
      intervalMs: refreshMs,
      logger,
      failureMessage: 'monitor ids not reloaded',
      // Starts without the set when ClickHouse is away: lookups go one by one meanwhile.
      requireFirstLoad: false,
      staleAfterMs: refreshMs * 3 + 10_000,
      clock,
    });
  }

  private get ids(): Map<string, string> {
    return this.value() ?? this.empty;
  }

  /** Whether monitor `id` exists in `tenantId` (a monitor never changes tenant). */
  async exists(id: string, tenantId: string): Promise<boolean> {
    const known = this.ids.get(id);
    if (known !== undefined) return known === tenantId;
    const [found] = await this.lookup([id]);
    if (found) this.ids.set(found.id, found.tenantId);
    return found?.tenantId === tenantId;
  }

  remember(id: string, tenantId: string): void {
    this.ids.set(id, tenantId);
  }

  forget(id: string): void {
    this.ids.delete(id);
  }
}

/**
 * After the key check: 404 MONITOR_NOT_FOUND for a monitor id that the key's tenant does
 * not hold (never 403: that would confirm another tenant's monitor exists), then 403
 * MONITOR_NOT_ALLOWED when the key is limited to other monitors of its tenant.
 */
export function requireMonitor(directory: MonitorDirectory, logger: Logger): RequestHandler {
  return async (req, res, next) => {
    const id = monitorIdOf(req);
    const key = res.locals.key as VerifiedKey;
    let found: boolean;
    try {
      found = await directory.exists(id, key.tenantId);
    } catch (err) {
      logger.warn('monitor lookup failed', { request_id: req.id, err: String(err) });
      throw new StoreUnavailableError();
    }
    if (!found) throw new AppError('MONITOR_NOT_FOUND', `there is no monitor ${id}`);
    if (key.monitorIds.size > 0 && !key.monitorIds.has(id)) {
      throw new AppError('MONITOR_NOT_ALLOWED', 'this API key may not read that monitor');
    }
    next();
  };
}
