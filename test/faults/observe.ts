/**
 * What the fault suite looks at from outside the services: ClickHouse through the
 * documented read patterns (docs/clickhouse.md), the consumer group's committed offsets
 * against the topic's end, and every service's /readyz and /metrics.
 */
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { sqlIdentifier, sqlNumber, sqlString, sqlStringList, type ClickHouseClient } from '@telemetry/platform';
import { DISTRIBUTED_READ_SETTINGS, LOCAL_LAYOUT, tableRef, type TableLayout } from '@telemetry/store';
import { metricsText, metricSum as sumOf, readyStatus, type Child } from '../../harness/processes.js';

/** The Observer's reads through the `_all` tables carry the store's exact-read settings. */
export const EXACT_DISTRIBUTED_READS = DISTRIBUTED_READ_SETTINGS;

export interface GroupProgress {
  /** Messages on the events topic (sum of the partitions' end offsets). */
  end: number;
  /** Messages past the group's committed offsets (0: everything is inserted). */
  uncommitted: number;
  perPartition: { partition: number; end: number; committed: number }[];
}

export interface ReadCounts {
  /** client_event_id -> rows as read with FINAL. */
  perId: Map<string, number>;
  /** Rows as read with FINAL (sum of perId). */
  finalRows: number;
  /** Rows as read with LIMIT 1 BY event_id. */
  limitOneByRows: number;
  /** Rows as stored (copies not merged away yet included). */
  storedRows: number;
}

export class Observer {
  private readonly kafka: Kafka;
  private readonly db: string;
  /** `events` and `checks` as this Observer reads them: the tables, or their `_all` over a cluster. */
  private readonly events: string;
  private readonly checksTable: string;

  /** `layout` sharded: reads go through `events_all` and `checks_all` with EXACT_DISTRIBUTED_READS. */
  constructor(
    private readonly ch: ClickHouseClient,
    database: string,
    brokers: string,
    private readonly topic: string,
    private readonly groupId: string,
    private readonly layout: TableLayout = LOCAL_LAYOUT,
  ) {
    this.db = sqlIdentifier(database);
    this.events = tableRef(database, 'events', layout);
    this.checksTable = tableRef(database, 'checks', layout);
    this.kafka = new Kafka({
      brokers: brokers.split(','),
      clientId: 'faults-observer',
      logLevel: logLevel.NOTHING,
      connectionTimeout: 2000,
      requestTimeout: 5000,
      retry: { retries: 1 },
    });
  }

  /** A fresh admin client per call: the broker may have restarted since the last one. */
  private async withAdmin<T>(fn: (admin: Admin) => Promise<T>): Promise<T> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      return await fn(admin);
    } finally {
      await admin.disconnect();
    }
  }

  async progress(): Promise<GroupProgress> {
    return this.withAdmin(async (admin) => {
      const ends = await admin.fetchTopicOffsets(this.topic);
      const committed = await admin.fetchOffsets({ groupId: this.groupId, topics: [this.topic] });
      const byPartition = new Map<number, number>();
      for (const t of committed) for (const p of t.partitions) byPartition.set(p.partition, Number(p.offset));
      const perPartition = ends.map((e) => {
        const c = byPartition.get(e.partition) ?? -1;
        return { partition: e.partition, end: Number(e.high), committed: c < 0 ? 0 : c };
      });
      return {
        end: perPartition.reduce((n, p) => n + p.end, 0),
        uncommitted: perPartition.reduce((n, p) => n + Math.max(0, p.end - p.committed), 0),
        perPartition,
      };
    });
  }

  /** The group's state and its members (ids). */
  async group(): Promise<{ state: string; members: number; memberIds: string[] }> {
    return this.withAdmin(async (admin) => {
      const { groups } = await admin.describeGroups([this.groupId]);
      const g = groups[0];
      const memberIds = (g?.members ?? []).map((m) => m.memberId);
      return { state: g?.state ?? 'Unknown', members: memberIds.length, memberIds };
    });
  }

  /** Checks of `monitorId` made in [fromMs, toMs) that ClickHouse holds (each once). */
  async checks(monitorId: string, fromMs: number, toMs: number): Promise<number> {
    const [r] = await this.rows<{ n: string }>(
      `SELECT uniqExact(id) AS n FROM ${this.checksTable} WHERE monitor_id = ${sqlString(monitorId)}
        AND created_at >= toDateTime(${sqlNumber(Math.floor(fromMs / 1000))})
        AND created_at < toDateTime(${sqlNumber(Math.ceil(toMs / 1000))})`,
    );
    return Number(r?.n ?? 0);
  }

  /** INSERT statements into the events table running in ClickHouse right now. */
  async insertsRunning(): Promise<number> {
    const [r] = await this.rows<{ n: string }>(
      `SELECT count() AS n FROM system.processes WHERE query LIKE 'INSERT INTO%' AND query LIKE ${sqlString(`%${this.db}.%events%`)}`,
    );
    return Number(r?.n ?? 0);
  }

  /** The documented read patterns, for one source. */
  async counts(source: string): Promise<ReadCounts> {
    const src = sqlString(source);
    const perIdRows = await this.rows<{ client_event_id: string; n: string }>(
      `SELECT client_event_id, count() AS n FROM ${this.events} FINAL WHERE source = ${src} GROUP BY client_event_id`,
    );
    const perId = new Map<string, number>();
    let finalRows = 0;
    for (const r of perIdRows) {
      perId.set(r.client_event_id, Number(r.n));
      finalRows += Number(r.n);
    }
    const [limited] = await this.rows<{ n: string }>(
      `SELECT count() AS n FROM (SELECT event_id FROM ${this.events} WHERE source = ${src} LIMIT 1 BY event_id)`,
    );
    const [stored] = await this.rows<{ n: string }>(`SELECT count() AS n FROM ${this.events} WHERE source = ${src}`);
    return { perId, finalRows, limitOneByRows: Number(limited?.n ?? 0), storedRows: Number(stored?.n ?? 0) };
  }

  /** How many of `ids` (client event ids of `source`) have at least one row. */
  async present(source: string, ids: string[]): Promise<number> {
    const [r] = await this.rows<{ n: string }>(
      `SELECT uniqExact(client_event_id) AS n FROM ${this.events}
       WHERE source = ${sqlString(source)} AND client_event_id IN ${sqlStringList(ids)}`,
    );
    return Number(r?.n ?? 0);
  }

  private async rows<T>(query: string): Promise<T[]> {
    const rs = await this.ch.query({
      query,
      format: 'JSONEachRow',
      ...(this.layout.sharded ? { clickhouse_settings: { ...EXACT_DISTRIBUTED_READS } } : {}),
    });
    return rs.json<T>();
  }
}

/** /readyz of every service: label -> status (200, 503, or an error name). */
export async function readiness(services: Child[]): Promise<Record<string, number | string>> {
  const statuses = await Promise.all(services.map((s) => readyStatus(s.url)));
  return Object.fromEntries(services.map((s, i) => [s.name, statuses[i]!]));
}

export function allReady(r: Record<string, number | string>): boolean {
  return Object.values(r).every((s) => s === 200);
}

/** The sum of a metric's samples in a service's /metrics (0 when absent). */
export async function metricSum(url: string, name: string): Promise<number> {
  return sumOf(await metricsText(url), name);
}

/** What the stored events say of the acknowledged and refused ids: found, lost, read twice, landed though refused, never sent. */
export function judge(
  counts: ReadCounts,
  acked: Set<string>,
  failed: Set<string>,
): {
  found: number;
  lost: number;
  duplicatedAsRead: number;
  landedDespiteError: number;
  unexpected: number;
  lostSample: string[];
  dupSample: string[];
} & {
  lostSample: string[];
  dupSample: string[];
} {
  let found = 0;
  const lostSample: string[] = [];
  for (const id of acked) {
    if ((counts.perId.get(id) ?? 0) > 0) found++;
    else if (lostSample.length < 5) lostSample.push(id);
  }
  let duplicatedAsRead = 0;
  let landedDespiteError = 0;
  let unexpected = 0;
  const dupSample: string[] = [];
  for (const [id, n] of counts.perId) {
    if (n > 1) {
      duplicatedAsRead++;
      if (dupSample.length < 5) dupSample.push(`${id} x${n}`);
    }
    if (failed.has(id)) landedDespiteError++;
    else if (!acked.has(id)) unexpected++;
  }
  return {
    found,
    lost: acked.size - found,
    duplicatedAsRead,
    landedDespiteError,
    unexpected,
    lostSample,
    dupSample,
  };
}
