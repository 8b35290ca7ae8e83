import { expect } from 'chai';
import { DEFAULT_TENANT } from '@telemetry/contract';
import { createLogger, runMigrations, sqlIdentifier, sqlString } from '@telemetry/platform';
import {
  ClickHouseKeySource,
  databasesOf,
  hashSecret,
  migrate,
  MIGRATIONS,
  LegacyMonitorStore,
  tableIn,
} from '@telemetry/store';
import { runSecretBox } from '../../harness/processes.js';
import { adminClickHouse, uid, selectCount, selectRows } from '../support/fixtures.js';

const logger = createLogger({ service: 'test', level: 'silent' });
const HEADER_SECRET = 'Bearer legacy-plain-secret-4711';

/**
 * Migration 4 (tenants) on a database filled by the previous version (migrations 1-3 and
 * rows in their shapes): every row is kept once, in the default tenant, the rollups stay
 * exact, nothing is left aside, and the monitors' plain secrets are sealed at the next
 * start of the query service (reseal).
 */
describe('migrations 4 (tenants) and 5 (databases), on a database of a previous version (real ClickHouse)', function () {
  this.timeout(120_000);
  let ch: ReturnType<typeof adminClickHouse>;
  before(() => {
    ch = adminClickHouse();
  });
  after(() => ch?.close());

  const rows = <T>(sql: string): Promise<T[]> => selectRows<T>(ch, sql);
  const count = (sql: string): Promise<number> => selectCount(ch, sql);
  /** Where a table lives after migration 5 (databases.ts). */
  const home = (database: string, t: string): string =>
    tableIn(database, t === 'monitors' ? 'registry' : t === 'access_keys' || t === 'tenants' ? 'keys' : 'data', t);
  async function dropAll(database: string): Promise<void> {
    const { data, registry, keys } = databasesOf(database);
    for (const d of [data, registry, keys]) {
      await ch.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(d)}` });
    }
  }

  /** A database at version 3 with events, checks, alerts, monitors and a key in their old shapes. */
  async function previousVersion(database: string): Promise<string> {
    await runMigrations(
      ch,
      database,
      MIGRATIONS.filter((m) => m.version <= 3),
      logger,
    );
    const db = sqlIdentifier(database);
    const t = Math.floor(Date.now() / 1000) - 3600;
    const insert = (table: string, values: object[]) =>
      ch.insert({ table: `${db}.${table}`, values, format: 'JSONEachRow' });
    await insert(
      'events',
      [
        '0f8e1c4a-1111-4b8e-8a00-000000000001',
        '0f8e1c4a-1111-4b8e-8a00-000000000002',
        '0f8e1c4a-1111-4b8e-8a00-000000000003',
      ].map((event_id, i) => ({
        event_id,
        key_id: 'k1',
        source: 'shop',
        category: 'view',
        payload: '{}',
        client_event_id: '',
        event_time: t + i,
        client_ts: null,
        sent_at: null,
        received_at: t + i,
        inserted_at: t + i,
      })),
    );
    await insert(
      'checks',
      [0, 1, 2].map((i) => ({
        monitor_id: 'mon_legacy',
        created_at: t + i * 60,
        id: `chk_${i}`,
        status: i === 1 ? 'down' : 'up',
        response_time: 10 + i,
        status_code: i === 1 ? 503 : 200,
        error: '',
        inserted_at: t + i * 60,
      })),
    );
    await insert(
      'alerts',
      ['monitor.down', 'monitor.up'].map((type, i) => ({
        id: `alr_${i}`,
        monitor_id: 'mon_legacy',
        incident_id: 'chk_1',
        type,
        created_at: t + 60 + i * 60,
        check_id: `chk_${i + 1}`,
        status: i === 0 ? 'down' : 'up',
        status_code: i === 0 ? 503 : 200,
        error: '',
        response_time: 11,
        inserted_at: t,
      })),
    );
    // The previous version kept the whole monitor, secrets included, in `spec`.
    const spec = (name: string) =>
      JSON.stringify({
        id: 'mon_legacy',
        name,
        url: 'http://127.0.0.1:9/',
        method: 'GET',
        interval_seconds: 60,
        timeout_ms: 10000,
        expected_status_codes: ['2xx'],
        keyword: null,
        degraded_threshold_ms: null,
        failure_threshold: 2,
        recovery_threshold: 1,
        follow_redirects: true,
        headers: { Authorization: HEADER_SECRET },
        body: null,
        paused: true,
        webhooks: [],
        webhook_secret: 'whsec_legacy',
        created_at: '2026-11-01T00:00:00Z',
        updated_at: '2026-11-01T00:00:00Z',
      });
    await insert(
      'monitors',
      [1, 2].map((version) => ({
        id: 'mon_legacy',
        version,
        deleted: 0,
        spec: spec(`legacy v${version}`),
        created_at: t,
        updated_at: t,
      })),
    );
    await insert('access_keys', [
      {
        key_id: '00112233445566ff',
        kind: 'api',
        name: 'legacy',
        secret_hash: hashSecret('0'.repeat(64)),
        scopes: ['checks:read'],
        monitor_ids: [],
        allowed_origins: [],
        allowed_sources: [],
        revoked: 0,
        created_at: t,
        version: 1,
      },
    ]);
    return db;
  }

  it('keeps every row once in the default tenant, rollups exact, and seals the plain secrets', async () => {
    const database = `mig_${uid()}`.replace(/-/g, '_');
    const db = await previousVersion(database);
    const tables = ['events', 'checks', 'alerts', 'monitors', 'access_keys'];
    const before = Object.fromEntries(
      await Promise.all(tables.map(async (t) => [t, await count(`SELECT count() AS n FROM ${db}.${t}`)] as const)),
    );
    expect(before).to.deep.equal({ events: 3, checks: 3, alerts: 2, monitors: 2, access_keys: 1 });

    expect(await migrate(ch, database, logger)).to.deep.equal([
      4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
    ]);

    for (const t of tables) {
      expect(await count(`SELECT count() AS n FROM ${home(database, t)}`), t).to.equal(before[t]);
      expect(
        await count(`SELECT count() AS n FROM ${home(database, t)} WHERE tenant_id != ${sqlString(DEFAULT_TENANT)}`),
        t,
      ).to.equal(0);
    }
    // Migration 15: rows stored before it read as what they were, our own protocol with no identity.
    expect(
      await rows(
        `SELECT protocol, anonymous_id, user_id, client_ip, user_agent, count() AS n FROM ${home(database, 'events')}
         GROUP BY protocol, anonymous_id, user_id, client_ip, user_agent`,
      ),
    ).to.deep.equal([{ protocol: 'telemetry', anonymous_id: '', user_id: '', client_ip: '', user_agent: '', n: '3' }]);
    // Rollups: the events and checks counted once each, in the default tenant.
    expect(
      await rows(
        `SELECT tenant_id, source, uniqExactMerge(events) AS n FROM ${db}.events_per_minute GROUP BY tenant_id, source`,
      ),
    ).to.deep.equal([{ tenant_id: DEFAULT_TENANT, source: 'shop', n: '3' }]);
    expect(
      await rows(`SELECT tenant_id, uniqExactMerge(checks) AS n FROM ${db}.checks_hourly GROUP BY tenant_id`),
    ).to.deep.equal([{ tenant_id: DEFAULT_TENANT, n: '3' }]);
    // Nothing set aside is left; the views feed the new tables.
    expect(
      await count(
        `SELECT count() AS n FROM system.tables WHERE database = ${sqlString(database)} AND name LIKE '%\\_\\_old'`,
      ),
    ).to.equal(0);
    const tenants = await rows<{ tenant_id: string }>(`SELECT tenant_id FROM ${home(database, 'tenants')}`);
    expect(tenants.map((r) => r.tenant_id)).to.deep.equal([DEFAULT_TENANT]);
    const keys = await new ClickHouseKeySource(ch, database).loadAll();
    expect(keys.map((k) => [k.key_id, k.tenant_id, k.expires_at])).to.deep.equal([
      ['00112233445566ff', DEFAULT_TENANT, null],
    ]);

    // The copied monitor reads as before, and its secrets are sealed by reseal().
    // The ClickHouse registry of the previous version (npm run migrate copies it to PostgreSQL).
    const store = new LegacyMonitorStore(ch, database, runSecretBox());
    const [m] = await store.list();
    expect(m).to.include({
      id: 'mon_legacy',
      tenant_id: DEFAULT_TENANT,
      name: 'legacy v2',
      webhook_secret: 'whsec_legacy',
    });
    expect(m!.headers).to.deep.equal({ Authorization: HEADER_SECRET });
    expect(await store.reseal()).to.deep.equal({ resealed: 1, merged: true });
    expect(await store.reseal(), 'nothing left to seal').to.deep.equal({ resealed: 0, merged: true });
    const raw = await (
      await ch.query({ query: `SELECT * FROM ${home(database, 'monitors')}`, format: 'TabSeparated' })
    ).text();
    expect(raw).to.not.include('legacy-plain-secret').and.not.include('whsec_legacy');
    const [sealed] = await store.list();
    expect(sealed).to.include({ name: 'legacy v2', webhook_secret: 'whsec_legacy' });
    expect(sealed!.headers).to.deep.equal({ Authorization: HEADER_SECRET });
    expect(sealed!.version).to.be.greaterThan(2);

    expect(await migrate(ch, database, logger), 'applied once').to.deep.equal([]);
    await dropAll(database);
  });

  it('resumes a migration that stopped after setting a table aside', async () => {
    const database = `mig_${uid()}`.replace(/-/g, '_');
    const db = await previousVersion(database);
    // As if the last run stopped right after its RENAME of `checks`.
    await ch.command({ query: `DROP TABLE ${db}.checks_hourly_mv` });
    await ch.command({ query: `RENAME TABLE ${db}.checks TO ${db}.checks__old` });
    expect(await migrate(ch, database, logger)).to.deep.equal([
      4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
    ]);
    expect(
      await count(`SELECT count() AS n FROM ${db}.checks WHERE tenant_id = ${sqlString(DEFAULT_TENANT)}`),
    ).to.equal(3);
    expect(
      await count(
        `SELECT count() AS n FROM system.tables WHERE database = ${sqlString(database)} AND name = 'checks__old'`,
      ),
    ).to.equal(0);
    await dropAll(database);
  });

  it('migration 5 moves the registry and the keys to their own databases, and resumes half-way', async () => {
    const database = `mig_${uid()}`.replace(/-/g, '_');
    const db = await previousVersion(database);
    await runMigrations(
      ch,
      database,
      MIGRATIONS.filter((m) => m.version <= 4),
      logger,
    );
    const moved = ['monitors', 'access_keys', 'tenants'];
    const before = await Promise.all(moved.map((t) => count(`SELECT count() AS n FROM ${db}.${t}`)));
    expect(before).to.deep.equal([2, 1, 1]);
    // As if the last run stopped after moving `monitors` only.
    const registry = sqlIdentifier(databasesOf(database).registry);
    await ch.command({ query: `CREATE DATABASE ${registry}` });
    await ch.command({ query: `RENAME TABLE ${db}.monitors TO ${registry}.monitors` });

    expect(await migrate(ch, database, logger)).to.deep.equal([
      5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
    ]);
    const after = await Promise.all(moved.map((t) => count(`SELECT count() AS n FROM ${home(database, t)}`)));
    expect(after).to.deep.equal(before);
    expect(
      await count(
        `SELECT count() AS n FROM system.tables WHERE database = ${sqlString(database)} AND name IN ('access_keys', 'tenants')`,
      ),
      'nothing left in the data database',
    ).to.equal(0);
    // Its `monitors` is migration 13's dimension table, never the registry's (no sealed secrets).
    expect(
      await count(
        `SELECT count() AS n FROM system.columns WHERE database = ${sqlString(database)} AND table = 'monitors' AND name IN ('sealed', 'spec')`,
      ),
    ).to.equal(0);
    const keys = await new ClickHouseKeySource(ch, database).loadAll();
    expect(keys.map((k) => k.key_id)).to.deep.equal(['00112233445566ff']);
    await dropAll(database);
  });
});
