import type { Registry } from 'prom-client';
import {
  ChangeFeed,
  listenOn,
  type ChangeLog,
  type FeedChange,
  type Logger,
  type PgPool,
  type PostgresConfig,
} from '@telemetry/platform';
import { REGISTRY_CHANNEL } from './schema.js';

/** The registry's change log (registry_changes) and its NOTIFY channel, for a ChangeFeed. */
export class PgChangeLog implements ChangeLog {
  constructor(
    private readonly pool: PgPool,
    private readonly config: PostgresConfig,
    private readonly applicationName: string,
  ) {}

  async head(): Promise<{ newest: number; oldest: number }> {
    const { rows } = await this.pool.query<{ newest: string | null; oldest: string | null }>(
      'SELECT max(seq) AS newest, min(seq) AS oldest FROM registry_changes',
    );
    return { newest: Number(rows[0]?.newest ?? 0), oldest: Number(rows[0]?.oldest ?? 0) };
  }

  async after(seq: number, limit: number): Promise<FeedChange[]> {
    const { rows } = await this.pool.query<{ seq: string; entity: string; id: string }>(
      'SELECT seq, entity, id FROM registry_changes WHERE seq > $1 ORDER BY seq LIMIT $2',
      [seq, limit],
    );
    return rows.map((r) => ({ seq: Number(r.seq), entity: r.entity, id: r.id }));
  }

  async listen(wake: () => void, lost: (err: Error) => void): Promise<{ close(): Promise<void> }> {
    const client = await listenOn(this.config, REGISTRY_CHANNEL, `${this.applicationName}-listen`, wake, lost);
    return { close: () => client.end() };
  }
}

/** A service's feed of registry changes (subscribe its copies, then start it). */
export function registryFeed(opts: {
  pool: PgPool;
  config: PostgresConfig & { registryCatchUpMs: number };
  name: string;
  logger: Logger;
  registry?: Registry;
}): ChangeFeed {
  return new ChangeFeed({
    name: opts.name,
    log: new PgChangeLog(opts.pool, opts.config, opts.name),
    catchUpMs: opts.config.registryCatchUpMs,
    logger: opts.logger,
    registry: opts.registry,
  });
}

/**
 * Removes change-log entries older than `keepDays` (the newest always stays). A replica
 * whose copies are older than the oldest entry left loads everything again (ChangeFeed),
 * so this only bounds the log's size. Returns how many went.
 */
export async function pruneRegistryChanges(pool: PgPool, keepDays: number): Promise<number> {
  const { rows } = await pool.query<{ n: string }>('SELECT prune_registry_changes(make_interval(days => $1)) AS n', [
    keepDays,
  ]);
  return Number(rows[0]?.n ?? 0);
}
