import { Snapshot, type ClickHouseClient, type Clock, type Logger } from '@telemetry/platform';
import { lastAlertsSql, type LastAlertRow, type MonitorStore, type StoredMonitor } from '@telemetry/store';

/**
 * The runner's copy of the monitor registry: all monitors (the webhook dispatcher needs
 * any monitor's webhooks; the scheduler picks the ones this runner owns). Reloaded in
 * full every `refreshMs`, and one monitor at a time when a change notice names it.
 */
export class RegistryCache extends Snapshot<Map<string, StoredMonitor>> {
  /** Before the first load: empty (a patch made here is replaced by that load). */
  private readonly empty = new Map<string, StoredMonitor>();

  constructor(
    private readonly store: Pick<MonitorStore, 'list'>,
    logger: Logger,
    refreshMs: number,
    /** Called after every reload that changed something. */
    private readonly onChange: () => void,
    clock?: Clock,
  ) {
    super({
      name: 'registry',
      // Checks go on from the last copy while ClickHouse is away.
      essential: false,
      load: async () => new Map((await store.list()).map((m) => [m.id, m])),
      intervalMs: refreshMs,
      logger,
      failureMessage: 'registry reload failed',
      // Stale for three refreshes: ClickHouse is gone; checks go on from the last copy.
      staleAfterMs: refreshMs * 3 + 10_000,
      onLoad: (next, previous = new Map()) => {
        const changed =
          next.size !== previous.size || [...next.values()].some((m) => previous.get(m.id)?.version !== m.version);
        if (changed) onChange();
      },
      clock,
    });
  }

  private get monitors(): Map<string, StoredMonitor> {
    return this.value() ?? this.empty;
  }

  get(id: string): StoredMonitor | undefined {
    return this.monitors.get(id);
  }

  all(): Iterable<StoredMonitor> {
    return this.monitors.values();
  }

  /** Reloads one monitor (a change notice): newer versions replace, deletions remove. */
  async reload(id: string): Promise<void> {
    const [m] = await this.store.list({ ids: [id] });
    const monitors = this.monitors;
    const had = monitors.get(id);
    if (m) {
      if (had && had.version >= m.version) return;
      monitors.set(id, m);
    } else if (had) monitors.delete(id);
    else return;
    this.onChange();
  }

  reloadAll(): Promise<void> {
    return this.refresh();
  }
}

/** The last alert of each monitor in `ids`: where a runner taking them over starts. */
export async function lastAlerts(
  client: ClickHouseClient,
  database: string,
  ids: readonly string[],
): Promise<Map<string, { type: string; incident_id: string; maintenance: boolean }>> {
  if (ids.length === 0) return new Map();
  const rs = await client.query({ query: lastAlertsSql(database, ids), format: 'JSONEachRow' });
  const rows = await rs.json<LastAlertRow>();
  return new Map(rows.map((r) => [r.monitor_id, { type: r.t, incident_id: r.i, maintenance: Number(r.h) === 1 }]));
}
