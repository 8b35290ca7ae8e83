import { expect } from 'chai';
import { createLogger, engineOf, type ClickHouseClient } from '@telemetry/platform';
import { applyRetention } from '@telemetry/store';
import { adminClickHouse, testStack, uid } from '../support/fixtures.js';

/** Rollups (materialized views) and retention, on the real server. */
describe('rollups and retention (real ClickHouse)', () => {
  let ch: ClickHouseClient;
  const db = (): string => testStack().database;
  const logger = createLogger({ service: 'test', level: 'silent' });
  // The dev server; TTL retention on current ClickHouse is tested in engines.int.test.ts.
  const legacy = engineOf('18.16.1');

  before(() => {
    ch = adminClickHouse();
  });
  after(async () => {
    await ch.close();
  });

  it('keeps checks_hourly up to date: distinct checks by status and response-time quantiles', async () => {
    const m = uid('roll');
    const rows = [
      { monitor_id: m, created_at: '2026-11-22 10:01:00', id: 'a', status: 'up', response_time: 100, status_code: 200 },
      { monitor_id: m, created_at: '2026-11-22 10:02:00', id: 'b', status: 'up', response_time: 300, status_code: 200 },
      {
        monitor_id: m,
        created_at: '2026-11-22 10:03:00',
        id: 'c',
        status: 'down',
        response_time: 5000,
        status_code: 503,
      },
      { monitor_id: m, created_at: '2026-11-22 11:00:00', id: 'd', status: 'up', response_time: 200, status_code: 200 },
    ];
    await ch.insert({ table: `${db()}.checks`, values: rows, format: 'JSONEachRow' });
    await ch.insert({ table: `${db()}.checks`, values: [rows[0]], format: 'JSONEachRow' }); // a duplicate delivery
    const rs = await ch.query({
      query: `SELECT toString(hour) AS hour, status, uniqExactMerge(checks) AS n, quantilesTDigestMerge(0.5, 0.95, 0.99)(response_time) AS q
              FROM ${db()}.checks_hourly WHERE monitor_id = '${m}' GROUP BY hour, status ORDER BY hour, status`,
      format: 'JSONEachRow',
    });
    const got = await rs.json<{ hour: string; status: string; n: string; q: number[] }>();
    expect(got.map((r) => [r.hour, r.status, Number(r.n)])).to.deep.equal([
      ['2026-11-22 10:00:00', 'down', 1],
      ['2026-11-22 10:00:00', 'up', 2],
      ['2026-11-22 11:00:00', 'up', 1],
    ]);
    expect(got[0]!.q).to.deep.equal([5000, 5000, 5000]);
  });

  it('keeps events_per_minute up to date, counting each event id once', async () => {
    const source = uid('epm');
    const row = (id: string, t: string) => ({
      event_id: id,
      key_id: 'k',
      source,
      category: 'view',
      payload: '{}',
      client_event_id: '',
      event_time: t,
      received_at: t,
      id_time: t,
    });
    const a = '00000000-0000-4000-8000-00000000000a';
    const b = '00000000-0000-4000-8000-00000000000b';
    await ch.insert({
      table: `${db()}.events`,
      values: [row(a, '2026-11-22 10:00:05'), row(b, '2026-11-22 10:00:59')],
      format: 'JSONEachRow',
    });
    await ch.insert({ table: `${db()}.events`, values: [row(a, '2026-11-22 10:00:05')], format: 'JSONEachRow' });
    const rs = await ch.query({
      query: `SELECT toString(minute) AS minute, uniqExactMerge(events) AS n FROM ${db()}.events_per_minute WHERE source = '${source}' GROUP BY minute`,
      format: 'JSONEachRow',
    });
    expect(await rs.json()).to.deep.equal([{ minute: '2026-11-22 10:00:00', n: '2' }]);
  });

  it('drops only partitions whose rows are all older than the retention', async () => {
    const m = uid('ret');
    const old = {
      monitor_id: m,
      created_at: '2019-03-10 00:00:00',
      id: 'old',
      status: 'up',
      response_time: 1,
      status_code: 200,
    };
    const recent = { ...old, id: 'recent', created_at: new Date().toISOString().slice(0, 19).replace('T', ' ') };
    await ch.insert({ table: `${db()}.checks`, values: [old, recent], format: 'JSONEachRow' });
    const dropped = await applyRetention(
      ch,
      db(),
      [
        { table: 'checks', days: 365, column: 'created_at' },
        { table: 'events', days: 0, column: 'id_time' },
      ],
      logger,
      legacy,
    );
    expect(dropped).to.deep.include({ table: 'checks', partition: '201903' });
    expect(dropped.every((d) => d.table === 'checks')).to.equal(true);
    const rs = await ch.query({
      query: `SELECT id FROM ${db()}.checks WHERE monitor_id = '${m}' ORDER BY id`,
      format: 'JSONEachRow',
    });
    expect(await rs.json()).to.deep.equal([{ id: 'recent' }]);
    const again = await applyRetention(
      ch,
      db(),
      [{ table: 'checks', days: 365, column: 'created_at' }],
      logger,
      legacy,
    );
    expect(again).to.deep.equal([]);
  });
});
