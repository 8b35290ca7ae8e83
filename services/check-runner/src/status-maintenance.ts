import { maintenanceOccurrences, type MaintenanceOccurrence, type PublicMaintenance } from '@telemetry/contract';
import { inTransaction, PeriodicJob, type Logger, type PgPool } from '@telemetry/platform';
import { insertNotice, type NoticeDraft, type StoredMonitor, type StoredStatusPage } from '@telemetry/store';

export interface StatusMaintenanceDeps {
  /** The registry (its runner role inserts notices and their deliveries). */
  pool: PgPool;
  /** Every status page (StatusPageStore.all). */
  pages: () => Promise<Pick<StoredStatusPage, 'slug' | 'tenant_id' | 'monitor_ids'>[]>;
  /** The runner's copy of the monitors. */
  monitor: (id: string) => Pick<StoredMonitor, 'id' | 'tenant_id' | 'name' | 'maintenance_windows'> | undefined;
  /** STATUS_MAINTENANCE_NOTICE_HOURS: how long before it starts a window is announced. */
  noticeHours: number;
  /** How often pages are looked at (a minute). */
  intervalMs: number;
  logger: Logger;
  now?: () => number;
}

/** `2026-11-27 02:00 UTC`. */
function utc(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The notice of one occurrence of a monitor's window on a page (plain text; the payload as webhooks send it). */
export function maintenanceNotice(
  page: Pick<StoredStatusPage, 'slug' | 'tenant_id'>,
  monitor: { id: string; name: string },
  o: MaintenanceOccurrence,
  kind: 'maintenance_scheduled' | 'maintenance_started',
): NoticeDraft {
  const started = kind === 'maintenance_started';
  const maintenance: PublicMaintenance = {
    monitor: { id: monitor.id, name: monitor.name },
    starts_at: new Date(o.start).toISOString(),
    ends_at: new Date(o.end).toISOString(),
    in_progress: started,
    message: o.window.message ?? null,
  };
  const when = `from ${utc(o.start)} to ${utc(o.end)}`;
  const said = o.window.message ? `\n\n${o.window.message}` : '';
  return {
    slug: page.slug,
    tenantId: page.tenant_id,
    kind,
    monitorIds: [monitor.id],
    title: started ? `Maintenance in progress: ${monitor.name}` : `Scheduled maintenance: ${monitor.name}`,
    body: started
      ? `Maintenance of ${monitor.name} has started (${when}).${said}`
      : `${monitor.name} is scheduled for maintenance ${when}.${said}`,
    payload: { maintenance },
    // Once per page, monitor, occurrence and kind, whichever runner sees it first.
    dedupKey: `maintenance:${page.slug}:${monitor.id}:${o.start}:${kind}`,
  };
}

/**
 * The maintenance notices of status pages (docs/console.md, "Delivery"): every minute, for
 * each monitor of each page, an occurrence of its maintenance windows that starts within
 * STATUS_MAINTENANCE_NOTICE_HOURS makes a `maintenance_scheduled` notice, and one that has
 * started and not ended a `maintenance_started` notice. Every runner looks; the notice's
 * dedup key makes it once across runners and restarts (each runner also remembers the keys
 * it made or found taken, so it tries each once).
 */
export class StatusMaintenance extends PeriodicJob {
  private readonly now: () => number;
  /** Keys tried, with the end of their occurrence (forgotten after it). */
  private readonly tried = new Map<string, number>();

  constructor(private readonly deps: StatusMaintenanceDeps) {
    super('status-maintenance', deps.intervalMs, () => this.sweep(), deps.logger);
    this.now = deps.now ?? Date.now;
  }

  /** Looks at every page once; the number of notices made (tests call it; the loop does too). */
  async sweep(): Promise<number> {
    const now = this.now();
    for (const [key, end] of this.tried) if (end <= now) this.tried.delete(key);
    let made = 0;
    for (const page of await this.deps.pages()) {
      for (const id of page.monitor_ids) {
        const m = this.deps.monitor(id);
        if (!m || m.tenant_id !== page.tenant_id || m.maintenance_windows.length === 0) continue;
        const ahead = now + this.deps.noticeHours * 3_600_000;
        for (const o of maintenanceOccurrences(m.maintenance_windows, now, Math.max(ahead, now + 1))) {
          const kind = o.start <= now ? 'maintenance_started' : 'maintenance_scheduled';
          const notice = maintenanceNotice(page, m, o, kind);
          if (this.tried.has(notice.dedupKey!)) continue;
          const made1 = await inTransaction(this.deps.pool, (tx) => insertNotice(tx, notice));
          this.tried.set(notice.dedupKey!, o.end);
          if (made1) {
            made++;
            this.deps.logger.info('maintenance notice made', {
              slug: page.slug,
              monitor_id: m.id,
              kind,
              notice_id: made1.noticeId,
              deliveries: made1.deliveries,
            });
          }
        }
      }
    }
    return made;
  }
}
