import { type ClickHouseClient, type Component, type Logger } from '@telemetry/platform';
import { lastAlertsSql, type MonitorStore, type StoredMonitor } from '@telemetry/store';

/**
 * The runner's copy of the monitor registry: all monitors (the webhook dispatcher needs
 * any monitor's webhooks; the scheduler picks the ones this runner owns). Reloaded in
 * full every `refreshMs`, and one monitor at a time when a change notice names it.
 */
export class RegistryCache implements Component {
  readonly name = 'registry';
  private monitors = new Map<string, StoredMonitor>();
  private timer: NodeJS.Timeout | undefined;
  private loadedAt = 0;
  private stopped = false;

  constructor(
    private readonly store: Pick<MonitorStore, 'list'>,
    private readonly logger: Logger,
    private readonly refreshMs: number,
    /** Called after every reload that changed something. */
    private readonly onChange: () => void,
  ) {}

  async start(): Promise<void> {
    await this.reloadAll();
    this.schedule();
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
    const had = this.monitors.get(id);
    if (m) {
      if (had && had.version >= m.version) return;
      this.monitors.set(id, m);
    } else if (had) this.monitors.delete(id);
    else return;
    this.onChange();
  }

  async reloadAll(): Promise<void> {
    const list = await this.store.list();
    const next = new Map(list.map((m) => [m.id, m]));
    const changed =
      next.size !== this.monitors.size || list.some((m) => this.monitors.get(m.id)?.version !== m.version);
    this.monitors = next;
    this.loadedAt = Date.now();
    if (changed) this.onChange();
  }

  health(): boolean {
    // Stale for three refreshes: ClickHouse is gone; checks go on from the last copy.
    return Date.now() - this.loadedAt < this.refreshMs * 3 + 10_000;
  }

  readonly essential = false;

  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    return Promise.resolve();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.reloadAll()
        .catch((err: unknown) => this.logger.warn('registry reload failed', { err: String(err) }))
        .finally(() => this.schedule());
    }, this.refreshMs);
  }
}

/** The last alert of each monitor in `ids`: where a runner taking them over starts. */
export async function lastAlerts(
  client: ClickHouseClient,
  database: string,
  ids: readonly string[],
): Promise<Map<string, { type: string; incident_id: string }>> {
  if (ids.length === 0) return new Map();
  const rs = await client.query({ query: lastAlertsSql(database, ids), format: 'JSONEachRow' });
  const rows = await rs.json<{ monitor_id: string; t: string; i: string }>();
  return new Map(rows.map((r) => [r.monitor_id, { type: r.t, incident_id: r.i }]));
}
