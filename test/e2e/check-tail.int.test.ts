import { expect } from 'chai';
import { type ClickHouseClient } from '@telemetry/platform';
import {
  adminClickHouse,
  eventually,
  newKey,
  produce,
  registerMonitors,
  runConsumer,
  runQuery,
  testStack,
  uid,
  type Running,
  selectCount,
} from '../support/fixtures.js';

/**
 * The hot tail (issue 17) on real Kafka and ClickHouse: a query service with the tail
 * answers exactly as one without it (ClickHouse only), byte for byte (rows, order,
 * cursors, ETags), across new checks, late checks, Kafka redeliveries, a restart of the
 * tail's service and a rebalance of the stream consumer's group; and a check is readable
 * from the tail while it is in Kafka only.
 */
describe('hot tail of check history (real Kafka and ClickHouse)', function () {
  this.timeout(180_000);
  const group = uid('tail-group');
  // Small numbers, so that pages run past the tail and the tail drops its oldest checks.
  const tailEnv = { CONSUMER_GROUP_ID: group, TAIL_CHECKS_PER_MONITOR: '30', CHECKS_DEFAULT_LIMIT: '10' };
  let consumer: Running | undefined;
  let tail: Running;
  let plain: Running;
  let ch: ClickHouseClient;
  let apiKey: string;
  const monitor = uid('tail-mon');
  const published: Record<string, unknown>[] = [];
  const base = Date.parse('2026-11-20T00:00:00Z');
  let seq = 0;

  before(async () => {
    ch = adminClickHouse();
    await registerMonitors(monitor);
    [consumer, tail, plain] = await Promise.all([
      runConsumer({ CONSUMER_GROUP_ID: group }),
      runQuery(tailEnv),
      runQuery({ ...tailEnv, TAIL_CHECKS_PER_MONITOR: '0' }),
    ]);
    apiKey = await newKey({ kind: 'api', name: 'tail reader', scopes: ['checks:read'] });
    await eventually('key loaded', async () => ((await get(plain, '')).status === 200 ? true : undefined));
  });

  after(async () => {
    await Promise.all([consumer?.stop(), tail?.stop(), plain?.stop()]);
    await ch?.close();
  });

  /** `n` checks from `startAt` (else after the last), each `stepSeconds` after the one before. */
  function checks(n: number, stepSeconds = 60, startAt?: number): Record<string, unknown>[] {
    const at0 = startAt ?? base + seq * 60_000;
    return Array.from({ length: n }, (_, i) => {
      const k = seq++;
      const down = k % 7 === 3;
      return {
        id: `${monitor}-${String(k).padStart(5, '0')}`,
        monitor_id: monitor,
        status: down ? 'down' : k % 11 === 5 ? 'degraded' : 'up',
        response_time: 80 + (k % 13) * 1.25,
        status_code: down ? 503 : 200,
        ...(down ? { error: 'unexpected_status' } : {}),
        // Every fifth check shares the second of the one before: ids break the tie.
        created_at: new Date(at0 + (i - (k % 5 === 0 && i > 0 ? 1 : 0)) * stepSeconds * 1000 + 250).toISOString(),
      };
    });
  }

  async function publish(cs: Record<string, unknown>[]): Promise<void> {
    // Spread over partitions, as a monitor's checks could be after a partition count change.
    await produce(
      testStack().checksTopic,
      cs.filter((_, i) => i % 2 === 0),
      0,
    );
    await produce(
      testStack().checksTopic,
      cs.filter((_, i) => i % 2 === 1),
    );
    published.push(...cs);
  }

  const stored = (): Promise<number> =>
    selectCount(ch, `SELECT uniqExact(id) AS n FROM ${testStack().database}.checks WHERE monitor_id = '${monitor}'`);

  const uniqueIds = (): number => new Set(published.map((c) => c.id)).size;

  function get(s: Running, query: string): Promise<Response> {
    return fetch(`${s.url}/api/monitors/${monitor}/checks${query}`, { headers: { authorization: `Bearer ${apiKey}` } });
  }

  async function tailHits(): Promise<number> {
    const text = await (await fetch(`${tail.url}/metrics`)).text();
    const m = /^query_check_tail_requests_total\{[^}]*result="hit"[^}]*\} (\d+)/m.exec(text);
    return m ? Number(m[1]) : 0;
  }

  /** Deep pages answered by the page cache (page-cache.ts), which the tail's reader keeps exact. */
  async function pageCacheHits(): Promise<number> {
    const text = await (await fetch(`${tail.url}/metrics`)).text();
    const m = /^query_page_cache_requests_total\{[^}]*result="hit"[^}]*\} (\d+)/m.exec(text);
    return m ? Number(m[1]) : 0;
  }

  /** Queries whose answers the tail holds, and some it does not; with the first page's cursor chain. */
  function queries(): string[] {
    const newest = Date.parse(
      String(published.reduce((a, c) => (String(c.created_at) > String(a.created_at) ? c : a)).created_at),
    );
    const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
    return [
      '',
      '?limit=1',
      '?limit=29',
      '?limit=30',
      '?limit=100',
      '?status=down',
      '?status=up,degraded&limit=5',
      `?from=${iso(newest - 20 * 60_000)}`,
      `?from=${iso(newest - 20 * 60_000)}&order=asc&limit=4`,
      `?from=${iso(newest - 60 * 60_000)}&to=${iso(newest - 10 * 60_000)}`,
      `?to=${iso(newest - 5 * 60_000)}&limit=3`,
      '?order=asc&limit=5',
      `?from=${iso(base - 86_400_000)}&order=asc`,
    ];
  }

  /** Every query and three pages of each through next_cursor: the same status, body, ETag and Link from both. */
  async function sameAnswers(): Promise<number> {
    let compared = 0;
    for (const q of queries()) {
      let path: string | undefined = q;
      for (let page = 0; page < 3 && path !== undefined; page++) {
        const a = await get(tail, path);
        const b = await get(plain, path);
        const ta = await a.text();
        const tb = await b.text();
        expect({
          q: path,
          status: a.status,
          body: ta,
          link: a.headers.get('link'),
          etag: a.headers.get('etag'),
        }).to.deep.equal({
          q: path,
          status: b.status,
          body: tb,
          link: b.headers.get('link'),
          etag: b.headers.get('etag'),
        });
        compared++;
        const next: string | null = (JSON.parse(ta) as { next_cursor: string | null }).next_cursor;
        path = next ? `${q}${q ? '&' : '?'}cursor=${next}` : undefined;
      }
    }
    return compared;
  }

  async function settled(): Promise<void> {
    const want = uniqueIds();
    await eventually(
      `${want} checks in ClickHouse`,
      async () => ((await stored()) === want ? true : undefined),
      60_000,
    );
  }

  it('answers first pages and small ranges as ClickHouse does, from memory, across new and late checks', async () => {
    await publish(checks(45));
    await settled();
    const hits = await tailHits();
    const pageHits = await pageCacheHits();
    // Pages are kept once the stream consumer has committed what the tail read (else they could miss a check).
    await eventually(
      'the tail holds no uncommitted check',
      async () =>
        /^query_check_tail_buffered\{[^}]*\} 0$/m.test(await (await fetch(`${tail.url}/metrics`)).text())
          ? true
          : undefined,
      30_000,
    );
    expect(await sameAnswers()).to.be.greaterThan(20);
    // The tail answered a good share of them (the rest went to ClickHouse); pages below it
    // were read ahead and kept.
    expect((await tailHits()) - hits).to.be.greaterThan(10);
    expect((await pageCacheHits()) - pageHits).to.be.greaterThan(0);
    // New checks, and late ones: older than the tail's oldest and in between (they must
    // show in kept deep pages at once).
    await publish(checks(12));
    await publish(checks(3, 60, base + 5 * 60_000 + 30_000));
    await publish(checks(2, 60, base + 44 * 60_000 + 10_000));
    await settled();
    expect(await sameAnswers()).to.be.greaterThan(20);
  });

  it('shows each check once when Kafka delivers it twice', async () => {
    const hits = await tailHits();
    const dupes = published.slice(-15);
    await publish(dupes);
    await publish(checks(3));
    await settled();
    const first = (await (await get(tail, '?limit=30')).json()) as { data: { id: string }[] };
    expect(new Set(first.data.map((c) => c.id)).size).to.equal(30);
    expect(await sameAnswers()).to.be.greaterThan(20);
    expect(await tailHits()).to.be.greaterThan(hits + 10);
  });

  it('serves a check from Kafka before ClickHouse has it, and fills after a restart with no gap and no duplicate', async () => {
    await consumer!.stop();
    consumer = undefined;
    const fresh = checks(4);
    await publish(fresh);
    const newestId = String(fresh[fresh.length - 1]!.id);
    const seen = await eventually('the tail shows the newest check', async () => {
      const j = (await (await get(tail, '?limit=5')).json()) as { data: { id: string }[] };
      return j.data[0]?.id === newestId ? j : undefined;
    });
    expect(seen.data.map((c) => c.id)).to.include(String(fresh[0]!.id));
    // ClickHouse does not have them: nothing writes while the consumer is stopped.
    expect(await stored()).to.equal(uniqueIds() - 4);
    expect(((await (await get(plain, '?limit=5')).json()) as { data: { id: string }[] }).data[0]?.id).to.not.equal(
      newestId,
    );

    // A restart while those checks are in Kafka only: the new tail starts at the group's
    // committed offsets and loads the monitor from ClickHouse plus what it read since.
    await tail.stop();
    tail = await runQuery(tailEnv);
    const hitsBefore = await tailHits();
    const afterRestart = await eventually('the restarted tail shows the newest check', async () => {
      const j = (await (await get(tail, '?limit=29')).json()) as { data: { id: string }[] };
      return j.data[0]?.id === newestId ? j : undefined;
    });
    expect(new Set(afterRestart.data.map((c) => c.id)).size).to.equal(29);
    expect(await tailHits()).to.be.greaterThan(hitsBefore);

    consumer = await runConsumer({ CONSUMER_GROUP_ID: group });
    await settled();
    expect(await sameAnswers()).to.be.greaterThan(20);
  });

  it('stays exact while the stream consumer group rebalances', async () => {
    const second = await runConsumer({ CONSUMER_GROUP_ID: group });
    try {
      for (let i = 0; i < 4; i++) await publish(checks(5));
      await consumer!.stop();
      consumer = undefined;
      await publish(checks(5));
      consumer = await runConsumer({ CONSUMER_GROUP_ID: group });
      await publish(checks(5));
      await settled();
      const hits = await tailHits();
      expect(await sameAnswers()).to.be.greaterThan(20);
      expect(await tailHits()).to.be.greaterThan(hits + 10);
    } finally {
      await second.stop();
    }
  });
});
