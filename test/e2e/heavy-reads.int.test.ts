import { request, type IncomingMessage } from 'node:http';
import { DEFAULT_TENANT } from '@telemetry/contract';
import { sqlNumber, sqlString, type ClickHouseClient } from '@telemetry/platform';
import { revokeKey } from '@telemetry/store';
import { expect } from 'chai';
import {
  adminClickHouse,
  eventually,
  newKey,
  registerMonitors,
  runQuery,
  testStack,
  uid,
  type Running,
  adminRegistry,
} from '../support/fixtures.js';

/** A revocation is refused within this (LISTEN/NOTIFY at once; serviceEnv's catch-up every 1 s). */
const REVOKED_WITHIN_MS = 2_000;
const EXPORTS = 10;
const ROWS = 400_000;
const DAY = 86_400;

/** An export whose client reads its headers and first bytes, then stops reading. */
function stalledExport(url: string, key: string): Promise<{ res: IncomingMessage; finish: () => Promise<boolean> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${key}` } }, (res) => {
      // Reads the rest; true when the body arrived whole.
      const finish = (): Promise<boolean> =>
        new Promise((done) => {
          res.on('error', () => done(false));
          res.on('close', () => done(res.complete));
          res.resume();
        });
      res.once('data', () => {
        res.pause();
        resolve({ res, finish });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Waits until the service knows `key` (keys arrive by the registry's change feed). */
async function keyLoaded(base: string, monitor: string, key: string): Promise<void> {
  await eventually('key loaded', async () => {
    const r = await fetch(`${base}/api/monitors/${monitor}/checks?limit=1`, {
      headers: { authorization: `Bearer ${key}` },
    });
    await r.arrayBuffer();
    return r.status === 200 ? true : undefined;
  });
}

describe('heavy reads cannot starve the query service (real ClickHouse)', () => {
  let query: Running;
  let ch: ClickHouseClient;
  const monitor = uid('heavy');
  const now = Math.floor(Date.now() / 1000);
  const range = `from=${new Date((now - 30 * DAY) * 1000).toISOString()}&to=${new Date(now * 1000).toISOString()}`;

  before(async () => {
    ch = adminClickHouse();
    const db = testStack().database;
    await registerMonitors(monitor);
    // Enough history that an export is far larger than every socket buffer on its way.
    await ch.command({
      query: `INSERT INTO ${db}.checks (tenant_id, monitor_id, created_at, id, status, response_time, status_code)
        SELECT ${sqlString(DEFAULT_TENANT)}, ${sqlString(monitor)},
          toDateTime(${sqlNumber(now - 30 * DAY)} + intDiv(number * ${sqlNumber(30 * DAY)}, ${sqlNumber(ROWS)})),
          concat('c', toString(number)), 'up', 100, 200
        FROM system.numbers LIMIT ${sqlNumber(ROWS)}`,
    });
    query = await runQuery({
      EXPORT_MAX_CONCURRENT: String(EXPORTS),
      EXPORT_MAX_PER_KEY: String(EXPORTS + 1),
      EXPORT_STALL_TIMEOUT_MS: '15000',
    });
  });
  after(async () => {
    await query?.stop();
    await ch?.close();
  });

  it('ten stalled exports by one key leave /readyz green, the list answering and revocations on time', async () => {
    const heavy = await newKey({ kind: 'api', name: 'heavy exporter', scopes: ['checks:read'] });
    const other = await newKey({ kind: 'api', name: 'to be revoked', scopes: ['checks:read'] });
    const list = (key: string): Promise<Response> =>
      fetch(`${query.url}/api/monitors/${monitor}/checks?limit=1`, { headers: { authorization: `Bearer ${key}` } });
    await eventually('keys loaded', async () =>
      (await list(heavy)).status === 200 && (await list(other)).status === 200 ? true : undefined,
    );
    const exportUrl = `${query.url}/api/monitors/${monitor}/checks/export?${range}`;
    const stalled = await Promise.all(Array.from({ length: EXPORTS }, () => stalledExport(exportUrl, heavy)));
    try {
      expect(stalled.map((s) => s.res.statusCode)).to.deep.equal(Array(EXPORTS).fill(200));
      // One more, by the same key, finds every export slot taken: 429 with Retry-After.
      const refused = await fetch(exportUrl, { headers: { authorization: `Bearer ${heavy}` } });
      const body = (await refused.json()) as { code: string; details: { limit: string } };
      expect([refused.status, body.code, body.details.limit]).to.deep.equal([
        429,
        'RATE_LIMITED',
        'EXPORT_MAX_CONCURRENT',
      ]);
      expect(Number(refused.headers.get('retry-after'))).to.be.greaterThan(0);
      // Readiness answers from its own pool, as does the list.
      for (let i = 0; i < 5; i++) {
        expect((await fetch(`${query.url}/readyz`)).status).to.equal(200);
        expect((await list(other)).status).to.equal(200);
      }
      // The change feed has its own connection too: a revocation takes effect at once.
      expect(await revokeKey(adminRegistry(), other.split('_')[1]!)).to.equal(true);
      const revokedAt = Date.now();
      await eventually(
        'revocation seen',
        async () => ((await list(other)).status === 401 ? true : undefined),
        REVOKED_WITHIN_MS,
      );
      expect(Date.now() - revokedAt).to.be.below(REVOKED_WITHIN_MS);
      expect((await fetch(`${query.url}/readyz`)).status).to.equal(200);
      // Every stalled export is still open: nothing above waited for one to end.
      expect(stalled.every((s) => !s.res.complete)).to.equal(true);
    } finally {
      for (const s of stalled) s.res.destroy();
    }
  });

  it('cuts off a client that stops reading, and frees its slot', async () => {
    const q = await runQuery({ EXPORT_MAX_CONCURRENT: '1', EXPORT_STALL_TIMEOUT_MS: '1000' });
    try {
      const key = await newKey({ kind: 'api', name: 'slow reader', scopes: ['checks:read'] });
      const url = `${q.url}/api/monitors/${monitor}/checks/export?${range}`;
      await keyLoaded(q.url, monitor, key);
      const first = await stalledExport(url, key);
      expect(first.res.statusCode).to.equal(200);
      const busy = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
      expect(busy.status).to.equal(429);
      await busy.arrayBuffer();
      const next = await eventually('the slot freed', async () => {
        const r = await fetch(`${url.replace(/from=[^&]+/, `from=${new Date((now - DAY) * 1000).toISOString()}`)}`, {
          headers: { authorization: `Bearer ${key}` },
        });
        return r.status === 200 ? r : (await r.arrayBuffer(), undefined);
      });
      const lines = (await next.text()).trim().split('\n');
      expect(lines.length).to.be.within(ROWS / 30 - 2, ROWS / 30 + 2);
      // The service gave up on the stalled reader: what it had sent ends unfinished.
      expect(await first.finish()).to.equal(false);
    } finally {
      await q.stop();
    }
  });

  it('refuses a range longer than EXPORT_MAX_RANGE_DAYS', async () => {
    const key = await newKey({ kind: 'api', name: 'long range', scopes: ['checks:read'] });
    await keyLoaded(query.url, monitor, key);
    const r = await fetch(
      `${query.url}/api/monitors/${monitor}/checks/export?from=2020-01-01T00:00:00Z&to=2020-03-01T00:00:00Z`,
      { headers: { authorization: `Bearer ${key}` } },
    );
    const body = (await r.json()) as { code: string; details: { parameter: string } };
    expect([r.status, body.code, body.details.parameter]).to.deep.equal([400, 'INVALID_PARAMETER', 'from']);
  });
});
