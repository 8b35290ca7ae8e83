import { Mirror, type ClickHouseClient } from '@telemetry/platform';
import type { CheckMessage } from '@telemetry/contract';
import {
  checksSql,
  lastAlertsSql,
  LOOKUP_SLICE,
  rowToCheck,
  type CheckHistoryRow,
  type ChecksQuery,
  type LastAlertRow,
  type MonitorStore,
  type StoredMonitor,
  type TableLayout,
} from '@telemetry/store';

/**
 * The runner's copy of the monitor registry: all monitors (the webhook dispatcher needs
 * any monitor's webhooks; the scheduler picks the ones this runner owns). Loaded in full
 * at start, then kept current by the registry's change feed (subscribe `mirror`), and
 * one monitor at a time when a change notice names it. While PostgreSQL is away checks go
 * on from this copy.
 */
export class RegistryCache {
  readonly mirror: Mirror<StoredMonitor>;

  constructor(
    private readonly store: Pick<MonitorStore, 'list'>,
    /** Called after every change of the copy. */
    onChange: () => void,
  ) {
    this.mirror = new Mirror<StoredMonitor>(
      'monitors',
      (ids) => store.list(ids === undefined ? {} : { ids }),
      (m) => m.id,
      (m) => m.version,
    );
    this.mirror.onChange(() => onChange());
  }

  get(id: string): StoredMonitor | undefined {
    return this.mirror.get(id);
  }

  all(): Iterable<StoredMonitor> {
    return this.mirror.values();
  }

  /** Reloads one monitor (a change notice): newer versions replace, deletions remove. */
  async reload(id: string): Promise<void> {
    const had = this.mirror.get(id);
    const [m] = await this.store.list({ ids: [id] });
    if (m && had && had.version >= m.version) return;
    if (!m && !had) return;
    await this.mirror.apply([id]);
  }
}

/** The last alert of each monitor in `ids`: where a runner taking them over starts. */
export async function lastAlerts(
  client: ClickHouseClient,
  database: string,
  layout: TableLayout,
  ids: readonly string[],
): Promise<Map<string, { type: string; incident_id: string; maintenance: boolean }>> {
  const rows: LastAlertRow[] = [];
  // A runner taking on thousands of monitors asks in slices (ClickHouse's max_query_size is 256 KiB).
  for (let i = 0; i < ids.length; i += LOOKUP_SLICE) {
    const rs = await client.query({
      query: lastAlertsSql(database, layout, ids.slice(i, i + LOOKUP_SLICE)),
      format: 'JSONEachRow',
    });
    rows.push(...(await rs.json<LastAlertRow>()));
  }
  return new Map(rows.map((r) => [r.monitor_id, { type: r.t, incident_id: r.i, maintenance: Number(r.h) === 1 }]));
}

/** Stored checks of `m` (its tenant) by the query `q` leaves open: the runner's reads of its checks. */
async function storedChecks(
  client: ClickHouseClient,
  database: string,
  layout: TableLayout,
  m: Pick<StoredMonitor, 'id' | 'tenant_id'>,
  q: Pick<ChecksQuery, 'from' | 'statuses' | 'ids' | 'locations' | 'limit' | 'order'>,
): Promise<CheckMessage[]> {
  const sql = checksSql(database, layout, {
    tenantId: m.tenant_id,
    monitorId: m.id,
    to: undefined,
    cursor: undefined,
    ...q,
  });
  const rs = await client.query({ query: sql, format: 'JSONEachRow' });
  return (await rs.json<CheckHistoryRow>()).map((r) => {
    const { tls_days_left: _days, error, location, detail, timings: _t, screenshot: _s, ...c } = rowToCheck(r);
    return {
      ...c,
      tenant_id: m.tenant_id,
      ...(error ? { error } : {}),
      ...(location ? { location } : {}),
      ...(detail ? { detail } : {}),
    };
  });
}

/** Other locations' checks of a slot, by id (from a second before the slot). */
export function slotChecks(
  client: ClickHouseClient,
  database: string,
  layout: TableLayout,
  m: StoredMonitor,
  ids: string[],
  slot: number,
): Promise<CheckMessage[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return storedChecks(client, database, layout, m, {
    ids,
    from: Math.floor(slot / 1000) - 1,
    statuses: [],
    limit: null,
    order: 'asc',
  });
}

/** A heartbeat monitor's newest call since `sinceSeconds`: its newest `up` check of no location (runners' checks have one). */
export async function lastHeartbeat(
  client: ClickHouseClient,
  database: string,
  layout: TableLayout,
  m: StoredMonitor,
  sinceSeconds: number,
): Promise<{ id: string; created_at: string } | undefined> {
  const [c] = await storedChecks(client, database, layout, m, {
    from: sinceSeconds,
    statuses: ['up'],
    locations: [''],
    // A page asks one row more than its limit: LIMIT 1.
    limit: 0,
    order: 'desc',
  });
  return c ? { id: c.id, created_at: c.created_at } : undefined;
}
