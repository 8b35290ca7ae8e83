import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createValidators, DEFAULT_TENANT } from '@telemetry/contract';
import { createLogger } from '@telemetry/platform';
import { decodeCheck, rowToCheck, type CheckHistoryRow, type ChecksQuery } from '@telemetry/store';
import { CheckTail, type TailReader } from '../../services/query-service/src/check-tail.js';
import { prng } from '../../harness/prng.js';

/**
 * The tail's pages against a reference of ClickHouse's read pattern (checksSql: filters,
 * ORDER BY created_at, id, LIMIT 1 BY id, LIMIT n + 1) over random histories, random
 * arrival orders, duplicates and random queries: whenever the tail answers, it answers
 * what ClickHouse would; and it answers every first page.
 */

const logger = createLogger({ service: 'test', level: 'silent' });
const validators = createValidators();
const STATUSES = ['up', 'down', 'degraded'] as const;

interface Stored {
  t: number;
  row: CheckHistoryRow;
}

/** ClickHouse's answer to checksSql(q) over `all`. */
function reference(all: Stored[], q: ChecksQuery): string[] {
  const dir = q.order === 'desc' ? -1 : 1;
  const cmp = (a: Stored, b: Stored) => (a.t - b.t || (a.row.id < b.row.id ? -1 : a.row.id > b.row.id ? 1 : 0)) * dir;
  const seen = new Set<string>();
  return all
    .filter(
      (s) =>
        (q.from === undefined || s.t >= q.from) &&
        (q.to === undefined || s.t < q.to) &&
        (q.statuses.length === 0 || q.statuses.includes(s.row.status)) &&
        (q.cursor === undefined ||
          (q.order === 'desc'
            ? s.t < q.cursor.t || (s.t === q.cursor.t && s.row.id < q.cursor.id)
            : s.t > q.cursor.t || (s.t === q.cursor.t && s.row.id > q.cursor.id))),
    )
    .sort(cmp)
    .filter((s) => !seen.has(s.row.id) && seen.add(s.row.id))
    .slice(0, (q.limit ?? Infinity) + 1)
    .map((s) => JSON.stringify(rowToCheck(s.row)));
}

class FakeReader implements TailReader {
  at: number[] = [0];
  positions(): readonly number[] {
    return this.at;
  }
  committedOffsets(): Promise<number[]> {
    return Promise.resolve([0]);
  }
  earliestOffsets(): Promise<number[]> {
    return Promise.resolve([0]);
  }
}

/** A tail over one partition, read from offset 0, whose loads answer with `load`. */
function newTail(
  reader: FakeReader,
  perMonitor: number,
  maxMonitors: number,
  load: (limit: number) => Promise<CheckHistoryRow[]>,
): CheckTail {
  const tail = new CheckTail({
    load: (_t, _m, limit) => load(limit),
    decode: (v) => decodeCheck(validators, v),
    perMonitor,
    maxMonitors,
    maxBuffered: 10_000,
    committedEveryMs: 60_000,
    staleAfterMs: 60_000,
    logger,
    registry: new Registry(),
  });
  tail.attach(reader);
  tail.onStart([0]);
  return tail;
}

describe('CheckTail: pages from memory equal ClickHouse pages', () => {
  const cap = 25;
  const tenantId = DEFAULT_TENANT;

  async function scenario(seed: number): Promise<{ hits: number; firstPages: number }> {
    const rnd = prng(seed);
    const monitorId = `m${seed}`;
    const base = 1_790_000_000;
    const n = 10 + Math.floor(rnd() * 60);
    // Some checks share a second; the ids' order then decides.
    const history: Stored[] = Array.from({ length: n }, (_, i) => {
      const t = base + Math.floor(i * (1 + rnd() * 40));
      const status = STATUSES[Math.floor(rnd() * 3)]!;
      const id = `c${String(Math.floor(rnd() * 1e6)).padStart(6, '0')}-${i}`;
      return {
        t,
        row: {
          id,
          monitor_id: monitorId,
          status,
          response_time: 1 + i,
          status_code: 200,
          error: '',
          location: i % 2 ? 'eu-west' : '',
          tls_days_left: i % 3 ? null : i,
          detail: i % 4 ? '' : `assertion $.n == ${i} failed`,
          timings: i % 5 ? '' : JSON.stringify({ steps: [{ name: 'a', duration_ms: i, ok: true }] }),
          screenshot: i % 7 ? 0 : 1,
          ts: t,
        },
      };
    });
    // ClickHouse holds the first part (loaded), Kafka brings the rest in a shuffled order with copies.
    const inClickHouse = history.slice(0, Math.floor(rnd() * n));
    const later = history.slice(inClickHouse.length);
    const arrivals = [...later, ...later.filter(() => rnd() < 0.3)].sort(() => rnd() - 0.5);
    const reader = new FakeReader();
    const tail = newTail(reader, cap, 10, (limit) =>
      Promise.resolve(reference(inClickHouse, q({ limit: limit - 1 })).map(parseBack)),
    );
    const parsed = new Map(history.map((s) => [JSON.stringify(rowToCheck(s.row)), s.row]));
    function parseBack(json: string): CheckHistoryRow {
      return parsed.get(json)!;
    }
    function q(o: Partial<ChecksQuery>): ChecksQuery {
      return {
        tenantId,
        monitorId,
        limit: 10,
        order: 'desc',
        from: undefined,
        to: undefined,
        statuses: [],
        cursor: undefined,
        ...o,
      };
    }
    const send = (s: Stored, offset: number) => {
      const message = {
        id: s.row.id,
        monitor_id: monitorId,
        status: s.row.status,
        response_time: s.row.response_time,
        status_code: 200,
        ...(s.row.location ? { location: s.row.location } : {}),
        ...(s.row.tls_days_left !== null ? { tls_days_left: Number(s.row.tls_days_left) } : {}),
        ...(s.row.detail ? { detail: s.row.detail } : {}),
        ...(s.row.timings ? { timings: JSON.parse(s.row.timings) as unknown } : {}),
        ...(Number(s.row.screenshot) === 1 ? { screenshot: true } : {}),
        created_at: new Date(s.t * 1000).toISOString(),
      };
      tail.onRecords(0, [{ offset, value: Buffer.from(JSON.stringify(message)) }]);
      reader.at = [offset + 1];
    };
    let offset = 0;
    let hits = 0;
    let firstPages = 0;
    // Half arrive before the monitor is loaded (held in the buffer), half after.
    const half = Math.floor(arrivals.length / 2);
    arrivals.slice(0, half).forEach((s) => send(s, offset++));
    const everything = [...inClickHouse, ...later];
    for (let step = half; step <= arrivals.length; step++) {
      const known = [...inClickHouse, ...arrivals.slice(0, step)];
      const ts = everything.map((s) => s.t);
      const pick = () => ts[Math.floor(rnd() * ts.length)]!;
      const queries: ChecksQuery[] = [q({})];
      for (let i = 0; i < 8; i++) {
        const a = pick();
        const b = pick();
        const cursorOf = everything[Math.floor(rnd() * everything.length)]!;
        queries.push(
          q({
            limit: 1 + Math.floor(rnd() * 30),
            order: rnd() < 0.5 ? 'desc' : 'asc',
            from: rnd() < 0.5 ? Math.min(a, b) + Math.floor(rnd() * 2) : undefined,
            to: rnd() < 0.4 ? Math.max(a, b) + 1 : undefined,
            statuses: rnd() < 0.3 ? [STATUSES[Math.floor(rnd() * 3)]!] : [],
            cursor: rnd() < 0.4 ? { t: cursorOf.t, id: cursorOf.row.id } : undefined,
          }),
        );
      }
      for (const query of queries) {
        const got = await tail.page(query);
        if (query === queries[0] && got) firstPages++;
        if (got) {
          hits++;
          expect(
            got.map((r) => JSON.stringify(r.check)),
            `seed ${seed} step ${step} ${JSON.stringify(query)}`,
          ).to.deep.equal(reference(known, query));
        }
      }
      if (step < arrivals.length) send(arrivals[step]!, offset++);
    }
    return { hits, firstPages };
  }

  it('answers what ClickHouse answers over 300 random histories, and every first page', async () => {
    let hits = 0;
    let firstPages = 0;
    let steps = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const r = await scenario(seed);
      hits += r.hits;
      firstPages += r.firstPages;
      steps++;
    }
    expect(firstPages).to.be.greaterThan(steps * 5);
    expect(hits).to.be.greaterThan(steps * 10);
  });

  it('holds no more checks than its cap per monitor, nor more monitors than its limit', async () => {
    const reader = new FakeReader();
    const tail = newTail(reader, 5, 3, () => Promise.resolve([]));
    const query = (monitorId: string): ChecksQuery => ({
      tenantId,
      monitorId,
      limit: 2,
      order: 'desc',
      from: undefined,
      to: undefined,
      statuses: [],
      cursor: undefined,
    });
    for (const m of ['a', 'b', 'c', 'd']) expect(await tail.page(query(m))).to.deep.equal([]);
    let offset = 0;
    for (let i = 0; i < 20; i++) {
      const message = {
        id: `x${i}`,
        monitor_id: 'd',
        status: 'up',
        response_time: 1,
        status_code: 200,
        created_at: new Date((1_790_000_000 + i) * 1000).toISOString(),
      };
      tail.onRecords(0, [{ offset, value: Buffer.from(JSON.stringify(message)) }]);
      reader.at = [++offset];
    }
    expect(tail.stats()).to.include({ monitors: 3, checks: 5 });
    expect((await tail.page(query('d')))!.map((r) => r.id)).to.deep.equal(['x19', 'x18', 'x17']);
  });

  it('tells its watcher of every check read, and whether a monitor has checks at or below a time still uncommitted', () => {
    const reader = new FakeReader();
    const tail = newTail(reader, 5, 3, () => Promise.resolve([]));
    const seen: string[] = [];
    tail.watch({ onCheck: (_t, m, t) => seen.push(`${m}@${t}`), clear: () => seen.push('clear') });
    const t0 = 1_790_000_000;
    expect(tail.settled(tenantId, 'a', t0 + 100)).to.equal(true);
    const message = { id: 'x1', monitor_id: 'a', status: 'up', response_time: 1, status_code: 200 };
    tail.onRecords(0, [
      { offset: 0, value: Buffer.from(JSON.stringify({ ...message, created_at: new Date(t0 * 1000).toISOString() })) },
    ]);
    reader.at = [1];
    expect(seen).to.deep.equal([`a@${t0}`]);
    // The check (offset 0) is not committed yet (the consumer's commit is 0): it may not be in ClickHouse.
    expect(tail.settled(tenantId, 'a', t0)).to.equal(false);
    expect(tail.settled(tenantId, 'a', t0 - 1)).to.equal(true);
    expect(tail.settled(tenantId, 'b', t0 + 100)).to.equal(true);
    // Not caught up: it cannot tell.
    reader.at = [0];
    tail.onStart([1]);
    expect(seen).to.deep.equal([`a@${t0}`, 'clear']);
    expect(tail.settled(tenantId, 'b', t0)).to.equal(false);
  });
});
