import type { RequestHandler } from 'express';
import type { Counter, Registry } from 'prom-client';
import {
  AppError,
  ByteLru,
  type FeedSubscriber,
  counter,
  Snapshot,
  StoreUnavailableError,
  type Clock,
  type Logger,
} from '@telemetry/platform';
import type { VerifiedKey } from '@telemetry/store';
import { monitorIdOf } from './params.js';

/** Current monitors (id and tenant): all of them, or those among `ids`. */
export type IdLookup = (ids?: readonly string[]) => Promise<{ id: string; tenantId: string }[]>;

/** How a directory answer was found (the `answer` label of query_monitor_lookups_total). */
type LookupAnswer = 'held' | 'not_held_cached' | 'looked_up';

/** Bytes of (tenant, id) pairs the directory remembers as not the tenant's. */
const ABSENT_CACHE_BYTES = 1024 * 1024;

/**
 * Which monitor ids exist, and in which tenant, for the 404 of every
 * /api/monitors/{id}/... route: a monitor of another tenant does not exist for a key.
 * It holds a map of all current ids to their tenants, loaded at start and kept current by
 * the registry's change feed (feedSubscriber; a full reload every `refreshMs` is a safety
 * net), so the check routes pay a Map lookup. An id that is not the key's tenant's is looked
 * up on its own (then remembered as absent until the map changes).
 *
 * NOTE: an id of another tenant and an id that does not exist take the same path and cost
 * the same work, so that how long a 404 takes does not tell which ids exist: the first
 * request of a (tenant, id) pair looks the id up (one PostgreSQL read, whether or not the map
 * holds it for another tenant), and the answer is remembered in a bounded LRU until the next
 * reload, so a stream of requests for unknown ids does not cost a read each.
 */
export class MonitorDirectory extends Snapshot<Map<string, string>> {
  /** Before the first load: ids found one by one (that load replaces them). */
  private readonly empty = new Map<string, string>();
  /**
   * "tenant\nid" pairs found not to be the tenant's, each with the map it was found against
   * held weakly (an entry counts only while that map is current, so a reload forgets them
   * all, and an old map is never kept alive by the cache).
   */
  private readonly absent = new ByteLru<WeakRef<Map<string, string>>>(ABSENT_CACHE_BYTES);
  private readonly answers: Counter<'answer'> | undefined;

  constructor(
    private readonly lookup: IdLookup,
    refreshMs: number,
    logger: Logger,
    clock?: Clock,
    registry?: Registry,
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
    this.answers =
      registry &&
      counter(
        registry,
        'query_monitor_lookups_total',
        'monitor ids of /api/monitors/{id}/... requests by how they were answered',
        ['answer'],
      );
  }

  private get ids(): Map<string, string> {
    return this.value() ?? this.empty;
  }

  /** Whether monitor `id` exists in `tenantId` (a monitor never changes tenant). */
  async exists(id: string, tenantId: string): Promise<boolean> {
    const ids = this.ids;
    if (ids.get(id) === tenantId) return this.answered('held', true);
    // Another tenant's or unknown: the same steps either way (see the NOTE above).
    const key = `${tenantId}\n${id}`;
    if (this.absent.get(key)?.deref() === ids) return this.answered('not_held_cached', false);
    const [found] = await this.lookup([id]);
    if (found) ids.set(found.id, found.tenantId);
    if (found?.tenantId === tenantId) return this.answered('looked_up', true);
    this.absent.set(key, new WeakRef(ids), key.length);
    return this.answered('looked_up', false);
  }

  private answered(answer: LookupAnswer, found: boolean): boolean {
    this.answers?.inc({ answer });
    return found;
  }

  remember(id: string, tenantId: string): void {
    this.ids.set(id, tenantId);
    this.absent.delete(`${tenantId}\n${id}`);
  }

  forget(id: string): void {
    this.ids.delete(id);
  }

  /** Keeps the map current from the registry's change feed (a monitor made or deleted on any replica). */
  feedSubscriber(): FeedSubscriber {
    return {
      entity: 'monitors',
      reload: () => this.refresh(),
      apply: async (ids) => {
        const found = new Map((await this.lookup(ids)).map((m) => [m.id, m.tenantId]));
        for (const id of ids) {
          const tenant = found.get(id);
          if (tenant === undefined) this.forget(id);
          else this.remember(id, tenant);
        }
      },
    };
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
      throw err instanceof AppError ? err : new StoreUnavailableError();
    }
    if (!found) throw new AppError('MONITOR_NOT_FOUND', `there is no monitor ${id}`);
    if (key.monitorIds.size > 0 && !key.monitorIds.has(id)) {
      throw new AppError('MONITOR_NOT_ALLOWED', 'this API key may not read that monitor');
    }
    next();
  };
}
