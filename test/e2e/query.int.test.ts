import { DEFAULT_TENANT } from '@telemetry/contract';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { expect } from 'chai';
import type { ClickHouseClient } from '@telemetry/platform';
import { LOCAL_LAYOUT, summarySql } from '@telemetry/store';
import {
  adminClickHouse,
  eventually,
  newKey,
  registerMonitors,
  runQuery,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiCall } from '../support/api.js';

interface Check {
  id: string;
  monitor_id: string;
  status: string;
  response_time: number;
  status_code: number;
  created_at: string;
}
interface ListBody {
  success: boolean;
  data: Check[];
  next_cursor: string | null;
  code?: string;
  details?: { parameter?: string };
}

const BASE = Date.UTC(2026, 0, 1) / 1000;
/** Exports cover at most EXPORT_MAX_RANGE_DAYS (31) and end now by default: name the range. */
const JAN = 'from=2026-01-01T00:00:00Z&to=2026-01-31T00:00:00Z';
const row = (monitor: string, i: number, status = 'up', rt = 100 + i) => ({
  tenant_id: DEFAULT_TENANT,
  monitor_id: monitor,
  created_at: BASE + i * 60,
  id: `c${String(i).padStart(6, '0')}`,
  status,
  response_time: rt,
  status_code: status === 'up' ? 200 : 503,
});

describe('query service (real ClickHouse)', () => {
  let query: Running;
  let ch: ClickHouseClient;
  let apiKey: string;
  const db = (): string => testStack().database;

  const get = (path: string, key = apiKey) => apiCall<Check[]>(query.url, key, 'GET', path);

  async function insert(rows: object[]): Promise<void> {
    await ch.insert({ table: `${db()}.checks`, values: rows, format: 'JSONEachRow' });
  }

  before(async () => {
    // These tests write rows straight into ClickHouse, past Kafka, to test ClickHouse's
    // answers: no hot tail here (it learns new checks from Kafka; check-tail.int.test.ts).
    query = await runQuery({ TAIL_CHECKS_PER_MONITOR: '0' });
    ch = adminClickHouse();
    apiKey = await newKey({ kind: 'api', name: 'query tests', scopes: ['checks:read'] });
    await registerMonitors('x', 'm1');
    await eventually('key loaded', async () =>
      (await get('/api/monitors/x/checks')).status === 200 ? true : undefined,
    );
  });
  after(async () => {
    await query?.stop();
    await ch?.close();
  });

  it('applies limit, order, from/to and status, and answers an unknown monitor with 404', async () => {
    const m = uid('params');
    await registerMonitors(m);
    await insert(
      Array.from({ length: 10 }, (_, i) => row(m, i, i % 3 === 0 ? 'down' : i % 3 === 1 ? 'degraded' : 'up')),
    );
    const all = await get(`/api/monitors/${m}/checks`);
    expect(all.body.data.map((c) => c.id)).to.deep.equal(Array.from({ length: 10 }, (_, i) => `c00000${9 - i}`));
    expect((await get(`/api/monitors/${m}/checks?limit=3`)).body.data.map((c) => c.id)).to.deep.equal([
      'c000009',
      'c000008',
      'c000007',
    ]);
    expect((await get(`/api/monitors/${m}/checks?order=asc&limit=2`)).body.data.map((c) => c.id)).to.deep.equal([
      'c000000',
      'c000001',
    ]);
    const from = new Date((BASE + 2 * 60) * 1000).toISOString();
    const to = new Date((BASE + 5 * 60) * 1000).toISOString();
    expect(
      (await get(`/api/monitors/${m}/checks?from=${from}&to=${to}&order=asc`)).body.data.map((c) => c.id),
    ).to.deep.equal(['c000002', 'c000003', 'c000004']);
    const downs = (await get(`/api/monitors/${m}/checks?status=down`)).body.data;
    expect(downs.map((c) => c.id)).to.deep.equal(['c000009', 'c000006', 'c000003', 'c000000']);
    const two = (await get(`/api/monitors/${m}/checks?status=down&status=degraded`)).body.data;
    expect(two.every((c) => c.status !== 'up')).to.equal(true);
    expect(two).to.have.length(7);
    expect((await get(`/api/monitors/${m}/checks?status=down,degraded`)).body.data).to.have.length(7);
    const none = await get(`/api/monitors/${m}/checks?from=${from}&to=${from}`);
    expect([none.status, none.body.data]).to.deep.equal([200, []]);
    const unknown = await get(`/api/monitors/${uid('none')}/checks`);
    expect([unknown.status, unknown.body.code]).to.deep.equal([404, 'MONITOR_NOT_FOUND']);
    expect(all.body.data[0]).to.deep.equal({
      id: 'c000009',
      monitor_id: m,
      status: 'down',
      response_time: 109,
      status_code: 503,
      error: null,
      location: null,
      tls_days_left: null,
      detail: null,
      timings: null,
      screenshot: null,
      created_at: '2026-01-01T00:09:00Z',
    });
  });

  it('answers 400 INVALID_PARAMETER naming each bad parameter', async () => {
    const cases: [string, string][] = [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1&limit=2', 'limit'],
      ['order=sideways', 'order'],
      ['from=yesterday', 'from'],
      ['from=2026-01-01T00:00:00', 'from'],
      ['to=2026-13-45T00:00:00Z', 'to'],
      ['from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', 'to'],
      ['status=sleeping', 'status'],
      ['status=', 'status'],
      ['status=up,,down', 'status'],
      ['status=up,zzz', 'status'],
      ['cursor=not-a-cursor', 'cursor'],
      ['cursor=' + Buffer.from('["x","y"]').toString('base64url'), 'cursor'],
      ['limt=10', 'limt'],
    ];
    for (const [qs, param] of cases) {
      const r = await get(`/api/monitors/m1/checks?${qs}`);
      expect([r.status, r.body.code, r.body.details?.parameter], qs).to.deep.equal([400, 'INVALID_PARAMETER', param]);
    }
  });

  it('refuses injection attempts in the path and every parameter with 400, never 5xx', async () => {
    const attempts = [
      "x'",
      "x' OR 1=1 --",
      "x'; DROP TABLE checks; --",
      'x\\',
      '%00',
      '../../etc',
      'x/**/',
      'x"',
      'a'.repeat(129),
      'é',
      '%27%20OR%20%271%27%3D%271',
    ];
    for (const a of attempts) {
      const id = encodeURIComponent(a);
      for (const path of [
        `/api/monitors/${id}/checks`,
        `/api/monitors/${id}/checks/summary`,
        `/api/monitors/${id}/checks/export`,
      ]) {
        const r = await fetch(`${query.url}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });
        expect(r.status, `${path}`).to.be.oneOf([400, 404]);
        expect(((await r.json()) as ListBody).success).to.equal(false);
      }
      for (const p of ['limit', 'order', 'from', 'to', 'status', 'cursor']) {
        const r = await get(`/api/monitors/m1/checks?${p}=${encodeURIComponent(a)}`);
        expect([r.status, r.body.code], `${p}=${a}`).to.deep.equal([400, 'INVALID_PARAMETER']);
      }
    }
    const rs = await ch.query({
      query: `SELECT count() AS n FROM system.tables WHERE database = '${db()}' AND name = 'checks'`,
      format: 'JSONEachRow',
    });
    expect((await rs.json<{ n: string }>())[0]!.n).to.equal('1');
  });

  it('pages through a range with cursors while new checks arrive: no gap, no repeat, duplicates hidden', async () => {
    const m = uid('paging');
    await registerMonitors(m);
    const original = Array.from({ length: 230 }, (_, i) => row(m, i));
    await insert(original);
    await insert(original.filter((_, i) => i % 7 === 0)); // duplicate deliveries
    for (const order of ['desc', 'asc'] as const) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      let added = 0;
      do {
        const r = await get(`/api/monitors/${m}/checks?limit=40&order=${order}${cursor ? `&cursor=${cursor}` : ''}`);
        expect(r.status).to.equal(200);
        seen.push(...r.body.data.map((c) => c.id));
        cursor = r.body.next_cursor ?? null;
        if (cursor) expect(r.headers.get('link')).to.contain(`cursor=${cursor}`).and.contain('rel="next"');
        // New checks arrive while we page: newer than everything so far.
        await insert([row(m, 1000 + (order === 'asc' ? 100 : 0) + added++)]);
        pages++;
      } while (cursor && pages < 50);
      expect(new Set(seen).size, 'no repeats').to.equal(seen.length);
      for (const c of original) expect(seen, `${order} misses ${c.id}`).to.include(c.id);
      if (order === 'desc') expect(seen).to.have.length(230 + 0);
    }
  });

  it('answers a read again with 304 while nothing changed and a new ETag once a check arrives; a closed range may be kept a day', async () => {
    const m = uid('cache');
    await registerMonitors(m);
    await insert([row(m, 0), row(m, 1)]);
    const read = (path: string, etag?: string) =>
      fetch(`${query.url}${path}`, {
        headers: { authorization: `Bearer ${apiKey}`, ...(etag ? { 'if-none-match': etag } : {}) },
      });
    const yesterday = `${new Date(Date.now() - 86_400_000).toISOString().slice(0, 19)}Z`;
    for (const path of [`/api/monitors/${m}/checks`, `/api/monitors/${m}/checks/summary?from=${yesterday}`]) {
      const first = await read(path);
      expect(first.status, path).to.equal(200);
      const etag = first.headers.get('etag')!;
      expect(etag, path).to.match(/^"[A-Za-z0-9_-]+"$/);
      // Open at the end (up to now): cached, but revalidated every time.
      expect(first.headers.get('cache-control'), path).to.equal('private, no-cache');
      expect(first.headers.get('vary'), path).to.include('Authorization');
      const again = await read(path, etag);
      expect(again.status, path).to.equal(304);
      expect(await again.text(), path).to.equal('');
      expect((await read(path, `W/${etag}, "other"`)).status, path).to.equal(304);
      expect((await read(path, '"other"')).status, path).to.equal(200);
    }
    const before = (await read(`/api/monitors/${m}/checks`)).headers.get('etag')!;
    await insert([row(m, 2)]);
    const changed = await read(`/api/monitors/${m}/checks`, before);
    expect(changed.status).to.equal(200);
    expect(changed.headers.get('etag')).to.not.equal(before);
    expect(((await changed.json()) as ListBody).data).to.have.length(3);
    // A range that ended long ago does not change: a day.
    for (const path of [
      `/api/monitors/${m}/checks?${JAN}`,
      `/api/monitors/${m}/checks/summary?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z`,
    ]) {
      const closed = await read(path);
      expect(closed.status, path).to.equal(200);
      expect(closed.headers.get('cache-control'), path).to.equal('private, max-age=86400');
    }
  });

  it("answers the summary of a closed range again from memory, and an open one's completed days from memory and its open part from ClickHouse", async () => {
    const m = uid('closed');
    await registerMonitors(m);
    const day = Date.UTC(2026, 1, 3) / 1000;
    const at = (i: number) => ({ ...row(m, i), created_at: day + i * 600, id: `k${i}` });
    await insert([at(0), at(1)]);
    const closedPath = `/api/monitors/${m}/checks/summary?from=2026-02-03T00:00:00Z&to=2026-02-04T00:00:00Z`;
    const openPath = `/api/monitors/${m}/checks/summary?from=2026-02-03T00:00:00Z&interval=day`;
    const total = async (path: string) => {
      const r = await fetch(`${query.url}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(r.status, path).to.equal(200);
      return ((await r.json()) as { data: { total: { checks: number } } }).data.total.checks;
    };
    expect(await total(closedPath)).to.equal(2);
    expect(await total(openPath)).to.equal(2);
    // A row written into the closed range afterwards (which the pipeline would not do: the
    // range ended long ago) shows that the closed summary was kept, and the open summary's
    // completed day too (issue 48: summary-buckets.ts); a check of today is read at once.
    await insert([at(2)]);
    expect(await total(closedPath)).to.equal(2);
    expect(await total(openPath)).to.equal(2);
    await insert([{ ...row(m, 3), created_at: Math.floor(Date.now() / 1000), id: 'k3' }]);
    expect(await total(openPath)).to.equal(3);
  });

  it('gives SLA figures over the range from the incidents, each counted for its part inside it', async () => {
    const m = uid('sla');
    await registerMonitors(m);
    const h = Date.UTC(2026, 3, 1, 10) / 1000;
    const alert = (incident: string, type: 'monitor.down' | 'monitor.up', t: number) => ({
      tenant_id: DEFAULT_TENANT,
      id: `${incident}-${type}`,
      monitor_id: m,
      incident_id: incident,
      type,
      created_at: t,
      check_id: `c-${incident}-${type}`,
      status: type === 'monitor.down' ? 'down' : 'up',
      status_code: type === 'monitor.down' ? 503 : 200,
      error: '',
      response_time: 10,
      inserted_at: t,
    });
    await ch.insert({
      table: `${db()}.alerts`,
      format: 'JSONEachRow',
      values: [
        alert('before', 'monitor.down', h - 1000), // resolved before the range: not counted
        alert('before', 'monitor.up', h - 500),
        alert('across', 'monitor.down', h - 300), // 60 s inside the range
        alert('across', 'monitor.up', h + 60),
        alert('inside', 'monitor.down', h + 100), // 600 s
        alert('inside', 'monitor.up', h + 700),
        alert('open', 'monitor.down', h + 3600), // still open: until the end of the range, 3600 s
        alert('after', 'monitor.down', h + 7200), // after the range
      ],
    });
    const range = `from=${new Date(h * 1000).toISOString()}&to=${new Date((h + 7200) * 1000).toISOString()}`;
    const r = await get(`/api/monitors/${m}/checks/summary?${range}`);
    expect(r.status).to.equal(200);
    const sla = (r.body as unknown as { data: { sla: Record<string, number | null> } }).data.sla;
    expect(sla).to.deep.equal({
      availability_percent: 40.833, // 100 x (1 - 4260 / 7200)
      downtime_seconds: 4260,
      incidents: 3,
      longest_incident_seconds: 3600,
      mean_incident_seconds: 1420,
    });
    // No incident: the whole range available.
    const quiet = await get(`/api/monitors/x/checks/summary?${range}`);
    expect((quiet.body as unknown as { data: { sla: unknown } }).data.sla).to.deep.equal({
      availability_percent: 100,
      downtime_seconds: 0,
      incidents: 0,
      longest_incident_seconds: null,
      mean_incident_seconds: null,
    });
  });

  it('summarises counts, uptime and response-time quantiles per interval and in total from the rollups', async () => {
    const m = uid('summary');
    await registerMonitors(m);
    const h = Date.UTC(2026, 2, 1, 10) / 1000;
    const checks = [
      { t: h + 60, status: 'up', rt: 100 },
      { t: h + 120, status: 'up', rt: 200 },
      { t: h + 180, status: 'down', rt: 3000 },
      { t: h + 3600 + 60, status: 'degraded', rt: 900 },
    ].map((c, i) => ({
      tenant_id: DEFAULT_TENANT,
      monitor_id: m,
      created_at: c.t,
      id: `s${i}`,
      status: c.status,
      response_time: c.rt,
      status_code: c.status === 'down' ? 0 : 200,
    }));
    await insert(checks);
    await insert([checks[0]!]); // a duplicate must not count
    const r = await fetch(
      `${query.url}/api/monitors/${m}/checks/summary?from=2026-03-01T10:00:00Z&to=2026-03-01T12:00:00Z&interval=hour`,
      { headers: { authorization: `Bearer ${apiKey}` } },
    );
    expect(r.status).to.equal(200);
    const { data } = (await r.json()) as {
      data: { total: Record<string, unknown>; intervals: Record<string, unknown>[]; from: string; to: string };
    };
    expect(data.from).to.equal('2026-03-01T10:00:00Z');
    expect(data.total).to.include({ checks: 4, up: 2, down: 1, degraded: 1, uptime_percent: 75 });
    expect(data.intervals).to.have.length(2);
    expect(data.intervals[0]).to.include({ start: '2026-03-01T10:00:00Z', checks: 3, up: 2, down: 1, degraded: 0 });
    expect(data.intervals[0]!.uptime_percent).to.be.closeTo(66.667, 0.001);
    expect(data.intervals[1]).to.deep.include({
      start: '2026-03-01T11:00:00Z',
      checks: 1,
      uptime_percent: 100,
      response_time: { p50: 900, p95: 900, p99: 900 },
    });
    const rt = data.total.response_time as { p50: number; p99: number };
    expect(rt.p50).to.be.within(100, 900);
    expect(rt.p99).to.be.within(900, 3000);
    const day = await fetch(
      `${query.url}/api/monitors/${m}/checks/summary?from=2026-03-01&to=2026-03-02&interval=day`,
      { headers: { authorization: `Bearer ${apiKey}` } },
    );
    const dayData = ((await day.json()) as { data: { intervals: { start: string; checks: number }[] } }).data;
    expect(dayData.intervals).to.deep.equal([{ ...dayData.intervals[0], start: '2026-03-01T00:00:00Z', checks: 4 }]);
    for (const qs of ['interval=week', 'from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z', 'limit=5']) {
      const bad = await fetch(`${query.url}/api/monitors/${m}/checks/summary?${qs}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      expect([bad.status, ((await bad.json()) as ListBody).code], qs).to.deep.equal([400, 'INVALID_PARAMETER']);
    }
  });

  it("gives ClickHouse's answer for a range whose completed days it kept (issue 48): counts and each day's quantiles alike, the total's within the t-digest's error", async () => {
    const m = uid('kept');
    await registerMonitors(m);
    // Three past days of a check every 2 minutes (720 a day: enough for t-digest to
    // compress) and checks of today, all inside an open 30-day range.
    const now = Math.floor(Date.now() / 1000);
    const today = Math.floor(now / 86_400) * 86_400;
    const first = today - 3 * 86_400;
    const rows = [];
    for (let t = first, i = 0; t < today; t += 120, i++) {
      const status = i % 29 === 0 ? 'down' : i % 13 === 0 ? 'degraded' : 'up';
      rows.push({ ...row(m, i, status, ((i * 7919) % 1000) / 7 + (t - first) / 86_400), created_at: t, id: `k${i}` });
    }
    rows.push({ ...row(m, 9_000_001), created_at: Math.max(today, now - 5), id: 'today1' });
    await insert(rows);
    const path = `/api/monitors/${m}/checks/summary?interval=day&from=${new Date((today - 29 * 86_400) * 1000).toISOString().slice(0, 10)}`;
    type Stats = {
      start?: string;
      checks: number;
      up: number;
      down: number;
      degraded: number;
      response_time: Record<string, number>;
    };
    const summary = async () => {
      const r = await fetch(`${query.url}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(r.status).to.equal(200);
      return ((await r.json()) as { data: { total: Stats; intervals: Stats[] } }).data;
    };
    const cold = await summary();
    // Today's part is asked again; a new check of today shows, the kept days stay as they were.
    await insert([{ ...row(m, 9_000_002), created_at: Math.max(today, now - 4), id: 'today2' }]);
    const warm = await summary();
    expect(warm.intervals.slice(0, 3)).to.deep.equal(cold.intervals.slice(0, 3));
    expect(warm.intervals[3]!.checks).to.equal(2);

    // ClickHouse's own answer: summarySql, as the service sent it before (WITH TOTALS).
    const sql = summarySql(db(), LOCAL_LAYOUT, {
      tenantId: DEFAULT_TENANT,
      monitorId: m,
      interval: 'day',
      from: today - 29 * 86_400,
      to: today + 86_400,
    });
    const counts = await (
      await ch.query({ query: sql.counts, format: 'JSONEachRow' })
    ).json<{ t: number; status: string; n: string }>();
    const quantiles = (await (await ch.query({ query: sql.quantiles, format: 'JSON' })).json()) as {
      data: { t: number; q: number[] }[];
      totals: { q: number[] };
    };
    expect(warm.intervals.map((i) => i.start)).to.deep.equal(
      quantiles.data.map((r) => new Date(r.t * 1000).toISOString().replace('.000', '')),
    );
    for (const [k, interval] of warm.intervals.entries()) {
      const t = quantiles.data[k]!.t;
      for (const status of ['up', 'down', 'degraded'] as const) {
        const n = counts.find((c) => c.t === t && c.status === status);
        expect(interval[status], `${interval.start} ${status}`).to.equal(Number(n?.n ?? 0));
      }
      const [p50, p95, p99] = quantiles.data[k]!.q as [number, number, number];
      if (t + 86_400 <= now - 3600) {
        // A completed day: ClickHouse's figures, kept.
        expect(interval.response_time).to.deep.equal({ p50, p95, p99 });
      } else {
        // A day still open: its hours' t-digests merged.
        expect(interval.response_time.p50).to.be.closeTo(p50, p50 * 0.01);
        expect(interval.response_time.p99).to.be.closeTo(p99, p99 * 0.01);
      }
    }
    expect(warm.total.checks).to.equal(counts.reduce((a, c) => a + Number(c.n), 0));
    const [p50, p95, p99] = quantiles.totals.q as [number, number, number];
    expect(warm.total.response_time.p50).to.be.closeTo(p50, p50 * 0.01);
    expect(warm.total.response_time.p95).to.be.closeTo(p95, p95 * 0.01);
    expect(warm.total.response_time.p99).to.be.closeTo(p99, p99 * 0.01);
    // The completed days were kept: a row written into one afterwards (which the pipeline
    // would not do) is not seen until SUMMARY_BUCKET_MAX_AGE_SECONDS.
    await insert([{ ...row(m, 9_000_003), created_at: first + 30, id: 'late' }]);
    expect((await summary()).intervals[0]!.checks).to.equal(warm.intervals[0]!.checks);
  });

  it('exports a range larger than a page as NDJSON and CSV, oldest first, each check once', async () => {
    const m = uid('export');
    await registerMonitors(m);
    const rows = Array.from({ length: 2500 }, (_, i) => row(m, i, i % 10 === 0 ? 'down' : 'up'));
    await insert(rows);
    await insert(rows.slice(0, 100)); // duplicates
    const nd = await fetch(`${query.url}/api/monitors/${m}/checks/export?${JAN}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(nd.status).to.equal(200);
    expect(nd.headers.get('content-type')).to.equal('application/x-ndjson');
    const lines = (await nd.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Check);
    expect(lines).to.have.length(2500);
    expect(lines[0]).to.deep.equal({
      id: 'c000000',
      monitor_id: m,
      status: 'down',
      response_time: 100,
      status_code: 503,
      error: null,
      location: null,
      tls_days_left: null,
      detail: null,
      timings: null,
      screenshot: null,
      created_at: '2026-01-01T00:00:00Z',
    });
    expect(lines.map((c) => c.id)).to.deep.equal(rows.map((r) => r.id));
    const csv = await fetch(`${query.url}/api/monitors/${m}/checks/export?format=csv&status=down&${JAN}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(csv.headers.get('content-type')).to.contain('text/csv');
    const csvLines = (await csv.text()).trim().split('\n');
    expect(csvLines[0]).to.equal(
      'id,monitor_id,status,response_time,status_code,error,created_at,location,tls_days_left',
    );
    expect(csvLines).to.have.length(251);
    expect(csvLines[1]).to.equal(`c000000,${m},down,100,503,,2026-01-01T00:00:00Z,,`);
    const badFormat = await get(`/api/monitors/${m}/checks/export?format=xml`);
    expect([badFormat.status, badFormat.body.code]).to.deep.equal([400, 'INVALID_PARAMETER']);
  });
});

/** A TCP proxy to ClickHouse that can turn into a black hole (a hung ClickHouse). */
class Blackhole {
  private server: Server | undefined;
  private sockets = new Set<Socket>();
  hung = false;
  port = 0;

  async start(target: URL): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(Number(target.port), target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.on('data', (d) => !this.hung && upstream.write(d));
      upstream.on('data', (d) => !this.hung && client.write(d));
      client.on('end', () => upstream.end());
      upstream.on('end', () => client.end());
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.port = (this.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server?.close(() => r()));
  }
}

describe('query service with a hung ClickHouse', () => {
  it('answers 503 STORE_UNAVAILABLE within the query timeout instead of hanging', async function () {
    this.timeout(60_000);
    const s = testStack();
    const hole = new Blackhole();
    await hole.start(new URL(s.clickhouseUrl));
    // No hot tail: it would answer this first page from memory, which is not what is tested here.
    const svc = await runQuery({
      CLICKHOUSE_URL: `http://127.0.0.1:${hole.port}`,
      QUERY_TIMEOUT_MS: '1000',
      TAIL_CHECKS_PER_MONITOR: '0',
    });
    try {
      const key = await newKey({ kind: 'api', name: 'hung', scopes: ['checks:read'] });
      await eventually('key loaded', async () =>
        (await fetch(`${svc.url}/api/monitors/x/checks`, { headers: { authorization: `Bearer ${key}` } })).status ===
        200
          ? true
          : undefined,
      );
      hole.hung = true;
      const started = Date.now();
      const r = await fetch(`${svc.url}/api/monitors/x/checks`, { headers: { authorization: `Bearer ${key}` } });
      const elapsed = Date.now() - started;
      expect(r.status).to.equal(503);
      expect(((await r.json()) as ListBody).code).to.equal('STORE_UNAVAILABLE');
      expect(r.headers.get('retry-after')).to.equal('1');
      expect(elapsed).to.be.lessThan(5000);
    } finally {
      hole.hung = false;
      await svc.stop();
      await hole.stop();
    }
  });
});
