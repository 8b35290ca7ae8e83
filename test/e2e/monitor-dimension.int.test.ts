import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Monitor } from '@telemetry/contract';
import { createClickHouse, sqlIdentifier, sqlString } from '@telemetry/platform';
import { adminClickHouse, eventually, newKey, runQuery, testStack, type Running } from '../support/fixtures.js';
import { apiClient } from '../support/api.js';

interface DimensionRow {
  tenant_id: string;
  id: string;
  name: string;
  type: string;
  interval_seconds: number | string;
  paused: number | string;
  deleted: number | string;
}

/**
 * The `monitors` dimension table (docs/clickhouse.md, "Monitors"): the registry lives in
 * PostgreSQL, and every change reaches ClickHouse's table for analysts, with no secret in
 * it, readable by the analyst user.
 */
describe('monitors dimension table in ClickHouse (real PostgreSQL and ClickHouse)', function () {
  this.timeout(120_000);
  let query: Running;
  let key: string;
  const SECRET = `Bearer dim-secret-${randomUUID()}`;
  const URL_PASSWORD = `pw${randomUUID().replace(/-/g, '')}`;

  before(async () => {
    // The key first: the service loads it at start.
    key = await newKey({ kind: 'api', name: 'dimension', scopes: ['monitors:read', 'monitors:write'] });
    query = await runQuery();
  });

  after(async () => {
    await query?.stop();
  });

  const api = apiClient(
    () => query.url,
    () => key,
  );

  /** The table as the analyst user reads it: the newest row of the monitor. */
  async function analystRow(id: string): Promise<DimensionRow | undefined> {
    const s = testStack();
    const analyst = createClickHouse({
      url: s.clickhouseUrl,
      username: s.users.analyst.user,
      password: s.users.analyst.password,
      database: s.database,
    });
    try {
      const rs = await analyst.query({
        query: `SELECT tenant_id, id, name, type, interval_seconds, paused, deleted
          FROM ${sqlIdentifier(s.database)}.monitors FINAL WHERE id = ${sqlString(id)}`,
        format: 'JSONEachRow',
      });
      return (await rs.json<DimensionRow>())[0];
    } finally {
      await analyst.close();
    }
  }

  it('follows a monitor made, renamed, paused and deleted through the API, with no secret in it', async () => {
    const created = await api<Monitor>('POST', '/api/monitors', {
      name: 'checkout api',
      url: `https://shop:${URL_PASSWORD}@127.0.0.1:9/health`,
      headers: { authorization: SECRET },
      interval_seconds: 60,
      paused: true,
    });
    expect(created.status).to.equal(201);
    const id = created.body.data.id;
    const first = await eventually('the new monitor in the dimension table', async () => {
      const r = await analystRow(id);
      return r?.name === 'checkout api' ? r : undefined;
    });
    expect(first).to.include({ type: 'http', deleted: 0, paused: 1 });
    expect(Number(first.interval_seconds)).to.equal(60);

    expect((await api('PATCH', `/api/monitors/${id}`, { name: 'checkout API v2', paused: false })).status).to.equal(
      200,
    );
    await eventually('the rename', async () => {
      const r = await analystRow(id);
      return r?.name === 'checkout API v2' && Number(r.paused) === 0 ? r : undefined;
    });

    // No column of any row holds the header value or the URL's password.
    const ch = adminClickHouse();
    try {
      const rs = await ch.query({
        query: `SELECT * FROM ${sqlIdentifier(testStack().database)}.monitors WHERE id = ${sqlString(id)}`,
        format: 'JSONEachRow',
      });
      const text = JSON.stringify(await rs.json());
      expect(text).to.include('checkout');
      expect(text).not.to.include(SECRET);
      expect(text).not.to.include(URL_PASSWORD);
    } finally {
      await ch.close();
    }

    expect((await api('DELETE', `/api/monitors/${id}`)).status).to.equal(200);
    const gone = await eventually('the deletion', async () => {
      const r = await analystRow(id);
      return r && Number(r.deleted) === 1 ? r : undefined;
    });
    // Its checks keep a name to join with.
    expect(gone.name).to.equal('checkout API v2');
  });
});
