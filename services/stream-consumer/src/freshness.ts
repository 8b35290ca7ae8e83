import { Gauge, type Registry } from 'prom-client';
import type { FreshnessRow } from '@telemetry/store';

export interface FreshnessDeps {
  /** Each topic read and the table (`db`.name, as the writer knows it) its rows go to. */
  tables: () => { topic: string; table: string }[];
  /** Per topic, the messages the consumer group has not committed (so not yet written). */
  lags: (topics: string[]) => Promise<Map<string, number>>;
  lastInsertAt: (table: string) => number | undefined;
  /** This replica's name in the `consumer` column. */
  consumer: string;
  /** Inserts rows into the freshness table. */
  insert: (rows: FreshnessRow[]) => Promise<void>;
  registry: Registry;
}

/** `name` of `` `db`.`name` `` or `db.name`. */
function shortName(table: string): string {
  // On a cluster the consumer writes `events_all`: the table is still `events`.
  return table
    .slice(table.lastIndexOf('.') + 1)
    .replace(/`/g, '')
    .replace(/_all$/, '');
}

/**
 * How far behind each table is, for people who query ClickHouse directly and for
 * /metrics: the consumer group's lag per topic (messages not yet committed, so not yet
 * written) and when this replica's last insert into the table succeeded.
 * report() writes one row per table to the `freshness` table.
 */
export class Freshness {
  constructor(private readonly deps: FreshnessDeps) {
    const tables = (): { table: string; at: number }[] =>
      deps.tables().map(({ table }) => ({ table: shortName(table), at: deps.lastInsertAt(table) ?? 0 }));
    new Gauge({
      name: 'consumer_table_last_insert_timestamp_seconds',
      help: 'When an insert into the table last succeeded (unix seconds; absent before the first)',
      labelNames: ['table'],
      registers: [deps.registry],
      collect(this: Gauge<'table'>) {
        this.reset();
        for (const t of tables()) if (t.at > 0) this.set({ table: t.table }, t.at);
      },
    });
  }

  async rows(): Promise<FreshnessRow[]> {
    const tables = this.deps.tables();
    const lags = await this.deps.lags(tables.map((t) => t.topic));
    const now = Math.floor(Date.now() / 1000);
    return tables.map(({ topic, table }) => ({
      table_name: shortName(table),
      topic,
      consumer: this.deps.consumer,
      lag_messages: lags.get(topic) ?? 0,
      last_insert_at: this.deps.lastInsertAt(table) ?? 0,
      updated_at: now,
    }));
  }

  async report(): Promise<void> {
    await this.deps.insert(await this.rows());
  }
}
