import { expect } from 'chai';
import { sqlString, sqlStringList } from '@telemetry/platform';
import { adminClickHouse, eventually, selectRows, testStack } from './fixtures.js';

/** One row of `events FINAL` as the trackers' tests read it (times in epoch ms). */
export interface CompatRow {
  client_event_id: string;
  protocol: string;
  category: string;
  source: string;
  payload: string;
  anonymous_id: string;
  user_id: string;
  client_ip: string;
  user_agent: string;
  event_time: number;
  client_ts: number | null;
  sent_at: number | null;
  received_at: number;
  /** How many rows `events FINAL` holds for this id: 1 when it is read once. */
  n: number;
}

/** A time column in epoch ms; the columns keep seconds on the older servers (docs/clickhouse.md). */
const ms = (column: string): string => `toUnixTimestamp(${column}) * 1000`;

/**
 * Waits until `events FINAL` of `tenantId` holds every id of `ids`, then returns its rows
 * by id, each having been read once (a client's retried copies fold into one row).
 */
export async function storedOnce(tenantId: string, ids: readonly string[]): Promise<Map<string, CompatRow>> {
  const ch = adminClickHouse();
  try {
    const rows = await eventually(
      () => `all ${ids.length} events in ClickHouse`,
      async () => {
        const got = await selectRows<CompatRow>(
          ch,
          `SELECT client_event_id, any(protocol) AS protocol, any(category) AS category, any(source) AS source,
             any(payload) AS payload, any(anonymous_id) AS anonymous_id, any(user_id) AS user_id,
             any(client_ip) AS client_ip, any(user_agent) AS user_agent, any(${ms('event_time')}) AS event_time,
             any(${ms('client_ts')}) AS client_ts, any(${ms('sent_at')}) AS sent_at,
             any(${ms('received_at')}) AS received_at, count() AS n
           FROM ${testStack().database}.events FINAL
           WHERE tenant_id = ${sqlString(tenantId)} AND client_event_id IN (${sqlStringList([...ids])})
           GROUP BY client_event_id`,
        );
        return got.length === new Set(ids).size ? got : undefined;
      },
      60_000,
    );
    const out = new Map<string, CompatRow>();
    for (const r of rows) {
      const row = { ...r, n: Number(r.n) };
      for (const k of ['event_time', 'client_ts', 'sent_at', 'received_at'] as const) {
        if (row[k] !== null) row[k] = Number(row[k]);
      }
      out.set(r.client_event_id, row);
    }
    expect(
      rows.filter((r) => Number(r.n) !== 1).map((r) => r.client_event_id),
      'ids read more than once',
    ).to.deep.equal([]);
    return out;
  } finally {
    await ch.close();
  }
}

/** How many rows `tenantId` has in `events` at all (nothing stored: 0). */
export async function countOf(tenantId: string): Promise<number> {
  const ch = adminClickHouse();
  try {
    const r = await selectRows<{ n: string }>(
      ch,
      `SELECT count() AS n FROM ${testStack().database}.events WHERE tenant_id = ${sqlString(tenantId)}`,
    );
    return Number(r[0]!.n);
  } finally {
    await ch.close();
  }
}

/**
 * A client time as the row keeps it: `client_ts` is the client's own time (to the
 * millisecond, or the second the column keeps); `event_time` is within `slackMs` of
 * the real time `realMs` the event happened (our clock-skew correction).
 */
export function expectTimes(row: CompatRow, clientMs: number, realMs: number, slackMs = 5_000): void {
  expect(row.client_ts, 'client_ts').to.not.equal(null);
  expect(Math.abs(row.client_ts! - clientMs), `client_ts ${row.client_ts} vs the client's ${clientMs}`).to.be.below(
    1_000,
  );
  expect(Math.abs(row.event_time - realMs), `event_time ${row.event_time} vs real ${realMs}`).to.be.below(slackMs);
}
