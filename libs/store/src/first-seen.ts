import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { sqlStringList } from '@telemetry/platform';
import { needsFirstSeen, rowTime, type EventRow, type RowTime } from './events.js';

/**
 * The first copy's time, for events with a client id whose own time (a UUIDv7 id's or
 * a `timestamp`) is missing or outside CLIENT_TIME_WINDOW (the first copy's receive
 * time), or near the window's edge (that time itself, so that a later copy, outside by
 * then, finds it): their id_time (the time in the events' keys) must be the
 * same for every copy, and only the first copy's receive time is. The stream consumer
 * resolves each batch here before inserting it: times it saw lately come from memory,
 * the others from `event_first_seen`, and an event seen for the first time is recorded
 * there before its row is inserted (so a replay after a crash finds it). Copies share a
 * Kafka partition (messages are keyed by event id), so one consumer at a time resolves
 * them, in order. Kept as long as the events (at least 8 days): the retry window.
 */
/** Event ids per look-up query: 2,000 quoted UUIDs are about 80 KB of SQL. */
export const LOOKUP_SLICE = 2000;

export class FirstSeen {
  /** First-seen times lately resolved, as rows hold them (oldest first). */
  private readonly recent = new Map<string, RowTime>();

  private readonly cacheSize: number;

  constructor(
    private readonly client: ClickHouseClient,
    /** `db.event_first_seen` quoted, or on a cluster `db.event_first_seen_all` (tableRef). */
    private readonly table: string,
    private readonly modern: boolean,
    private readonly options: {
      cacheSize?: number;
      /** Of the look-ups (exact reads through `_all` on a cluster). */
      readSettings?: ClickHouseSettings;
      /** Of the inserts (insertSettingsOf: synchronous through `_all` on a cluster). */
      insertSettings?: ClickHouseSettings;
    } = {},
  ) {
    this.cacheSize = options.cacheSize ?? 100_000;
  }

  /** Sets id_time on every row that needs its first copy's time; resolves once recorded. */
  async resolve(rows: readonly EventRow[]): Promise<void> {
    const pending = rows.filter(needsFirstSeen);
    if (pending.length === 0) return;
    const unknown = [...new Set(pending.filter((r) => !this.recent.has(r.event_id)).map((r) => r.event_id))];
    if (unknown.length > 0) {
      // A batch of a consumer catching up holds tens of thousands of ids: asked in slices,
      // each query stays far below ClickHouse's max_query_size (256 KiB).
      for (let i = 0; i < unknown.length; i += LOOKUP_SLICE) {
        const rs = await this.client.query({
          query: `SELECT toString(event_id) AS id, ${this.modern ? 'toUnixTimestamp64Milli(min(id_time))' : 'toUInt32(min(id_time)) * 1000'} AS ms
                  FROM ${this.table} WHERE event_id IN ${sqlStringList(unknown.slice(i, i + LOOKUP_SLICE))} GROUP BY event_id`,
          format: 'JSONEachRow',
          clickhouse_settings: this.options.readSettings,
        });
        for (const r of await rs.json<{ id: string; ms: string | number }>())
          this.remember(r.id, rowTime(Number(r.ms), this.modern));
      }
      const firsts: { tenant_id: string; event_id: string; id_time: EventRow['id_time'] }[] = [];
      for (const r of pending) {
        if (this.recent.has(r.event_id)) continue;
        // The first copy: the time its row holds (its receive time, or its own time near
        // the window's edge: needsFirstSeen).
        this.remember(r.event_id, r.id_time);
        firsts.push({ tenant_id: r.tenant_id, event_id: r.event_id, id_time: r.id_time });
      }
      if (firsts.length > 0) {
        await this.client.insert({
          table: this.table,
          values: firsts,
          format: 'JSONEachRow',
          clickhouse_settings: this.options.insertSettings,
        });
      }
    }
    for (const r of pending) r.id_time = this.recent.get(r.event_id)!;
  }

  private remember(id: string, time: RowTime): void {
    this.recent.delete(id);
    this.recent.set(id, time);
    if (this.recent.size > this.cacheSize) this.recent.delete(this.recent.keys().next().value!);
  }
}
