import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { DEFAULT_TENANT, heartbeatUrl, typeDefaults, type Monitor, type StatusPage } from '@telemetry/contract';
import { createLogger, createPostgres, sqlIdentifier, type PgPool } from '@telemetry/platform';
import {
  ClickHouseKeySource,
  copyRegistryFromClickHouse,
  CopyError,
  databasesOf,
  heartbeatToken,
  LegacyMonitorStore,
  LegacyStatusPageStore,
  legacyCreateTenant,
  legacyIssueKey,
  legacyKeyRow,
  legacyListTenants,
  listTenants,
  loadKeyRecords,
  migrate,
  migrateRegistry,
  MonitorStore,
  placeholderMonitor,
  provisionFromEnv,
  StatusPageStore,
  tableIn,
  type CopyReport,
  type KeyRecord,
  type StoredMonitor,
  type StoredStatusPage,
} from '@telemetry/store';
import { RUN_HEARTBEAT_KEY, RUN_SECRETS_KEYS, runSecretBox } from '../../harness/processes.js';
import { provisionPostgres } from '../../tools/devstack/postgres.js';
import {
  adminClickHouse,
  eventually,
  runGateway,
  runQuery,
  scratchDatabase,
  serviceEnv,
  uid,
  type Envelope,
  type Running,
  type ScratchDatabase,
} from '../support/fixtures.js';
import { apiCall } from '../support/api.js';

const logger = createLogger({ service: 'test', level: 'silent' });
const monitorId = (): string => `mon_${randomBytes(8).toString('hex')}`;
const ALL_SCOPES = ['checks:read', 'monitors:read', 'monitors:write', 'events:read'];

/**
 * `npm run migrate` on an installation of the previous version: a ClickHouse registry
 * written with the previous version's code (legacy/) is copied into a fresh PostgreSQL
 * database, once, and the services serve from it as before: keys still valid (a revoked or
 * expired one still refused), monitors' secrets still open, heartbeat tokens from before
 * still accepted (the deleted monitor's refused), status pages there. Real ClickHouse,
 * PostgreSQL, Kafka; a gateway and a query service on the new registry.
 */
describe('npm run migrate: the ClickHouse registry copied into PostgreSQL (real ClickHouse and PostgreSQL)', function () {
  this.timeout(180_000);
  let ch: ReturnType<typeof adminClickHouse>;
  const box = runSecretBox();
  const database = `mig_${uid()}`.replace(/-/g, '_');
  const scratch: ScratchDatabase[] = [];
  const keys = { api: '', telemetry: '', revoked: '', expired: '', defaultTenant: '' };
  const tenants: string[] = [];
  const ids = {
    web: monitorId(),
    heartbeat: monitorId(),
    gone: monitorId(),
    plain: monitorId(),
    others: [] as string[],
  };
  const slugs = { shop: uid('shop'), status: uid('status') };
  const SECRETS = {
    header: 'Bearer legacy-header-secret-4711',
    url: 'https://bob:url-password-88@api.example.com/health?token=url-token-99',
    webhook: 'https://hooks.slack.example.test/services/T0/B0/webhook-path-secret',
    plainHeader: 'Bearer plain-before-sealing-123',
    plainWebhook: 'https://hooks.example.com/plain/webhook-plain-secret',
  };
  /** Monitors and status pages of the ClickHouse registry: 6 current monitors, 2 pages. */
  const CURRENT_MONITORS = 6;

  before(async () => {
    ch = adminClickHouse();
    await migrate(ch, database, logger);
    const t1 = await legacyCreateTenant(ch, database, 'Acme');
    const t2 = await legacyCreateTenant(ch, database, 'Globex');
    tenants.push(t1.tenant_id, t2.tenant_id);
    const issue = async (spec: Parameters<typeof legacyIssueKey>[2]): Promise<{ key: string; record: KeyRecord }> =>
      legacyIssueKey(ch, database, spec);
    keys.api = (await issue({ tenantId: t1.tenant_id, kind: 'api', name: 'all', scopes: ALL_SCOPES })).key;
    keys.telemetry = (await issue({ tenantId: t1.tenant_id, kind: 'telemetry', name: 'shop' })).key;
    const revoked = await issue({ tenantId: t1.tenant_id, kind: 'api', name: 'revoked', scopes: ALL_SCOPES });
    keys.revoked = revoked.key;
    // The previous version revoked a key by writing its row again with revoked = 1.
    await ch.insert({
      table: tableIn(database, 'keys', 'access_keys'),
      values: [{ ...legacyKeyRow(revoked.record), revoked: 1, version: revoked.record.version + 1 }],
      format: 'JSONEachRow',
    });
    keys.expired = (
      await issue({ tenantId: t2.tenant_id, kind: 'api', name: 'expired', scopes: ALL_SCOPES, expiresInSeconds: -60 })
    ).key;
    keys.defaultTenant = (
      await issue({
        tenantId: DEFAULT_TENANT,
        kind: 'api',
        name: 'expiring',
        scopes: ALL_SCOPES,
        expiresInSeconds: 86_400,
      })
    ).key;

    const legacy = new LegacyMonitorStore(ch, database, box);
    const heartbeat = (id: string): Omit<StoredMonitor, 'version'> => ({
      ...placeholderMonitor(id, 'nightly backup', t1.tenant_id),
      ...typeDefaults('heartbeat'),
      url: heartbeatUrl(id),
      paused: false,
    });
    ids.others = [monitorId(), monitorId(), monitorId()];
    await legacy.saveMany([
      {
        ...placeholderMonitor(ids.web, 'api with secrets', t1.tenant_id),
        url: SECRETS.url,
        headers: { Authorization: SECRETS.header, Accept: 'application/json' },
        webhooks: [SECRETS.webhook],
        webhook_secret: 'whsec_legacy_web',
      },
      heartbeat(ids.heartbeat),
      heartbeat(ids.gone),
      ...ids.others.map((id, i) => placeholderMonitor(id, `globex ${i}`, t2.tenant_id)),
    ]);
    // Edited once (a newer row), and one deleted: the newest row of an id is the monitor.
    const { version: _v, ...first } = (await legacy.get(ids.others[0]!))!;
    await legacy.saveMany([{ ...first, name: 'globex 0 renamed' }]);
    await legacy.saveMany([heartbeat(ids.gone)], true);
    // A row from before sealing (ClickHouse migration 4): secrets in `spec`, `sealed` empty,
    // no tenant in `spec` (the default tenant's).
    const { tenant_id: _t, ...plain } = {
      ...placeholderMonitor(ids.plain, 'plain legacy'),
      headers: { Authorization: SECRETS.plainHeader },
      webhooks: [SECRETS.plainWebhook],
      webhook_secret: 'whsec_plain',
    };
    await ch.insert({
      table: tableIn(database, 'registry', 'monitors'),
      values: [
        {
          tenant_id: DEFAULT_TENANT,
          id: ids.plain,
          version: 1,
          deleted: 0,
          spec: JSON.stringify(plain),
          sealed: '',
          created_at: Math.floor(Date.now() / 1000),
          updated_at: Math.floor(Date.now() / 1000),
        },
      ],
      format: 'JSONEachRow',
    });

    const pages = new LegacyStatusPageStore(ch, database);
    const page = (slug: string, tenantId: string, monitorIds: string[]): Omit<StoredStatusPage, 'version'> => ({
      slug,
      tenant_id: tenantId,
      title: `Status of ${slug}`,
      description: 'copied from ClickHouse',
      monitor_ids: monitorIds,
      key: null,
      created_at: '2026-11-01T10:00:00Z',
      updated_at: '2026-11-02T10:00:00Z',
    });
    await pages.save(page(slugs.shop, t1.tenant_id, [ids.web, ids.heartbeat]));
    await pages.save(page(slugs.status, t2.tenant_id, ids.others));
    const goneSlug = uid('gone');
    await pages.save(page(goneSlug, t2.tenant_id, []));
    await pages.save(page(goneSlug, t2.tenant_id, []), true);
  });

  after(async () => {
    for (const s of scratch) await s.drop();
    const { data, registry, keys: keysDb } = databasesOf(database);
    for (const d of [data, registry, keysDb]) {
      await ch.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(d)}` });
    }
    await ch?.close();
  });

  async function freshRegistry(): Promise<{ s: ScratchDatabase; pool: PgPool }> {
    const s = await scratchDatabase('migrated');
    scratch.push(s);
    const pool = createPostgres(
      { databaseUrl: s.ownerUrl, databasePoolMax: 2, databaseTimeoutMs: 10_000 },
      logger,
      'test',
    );
    return { s, pool };
  }

  const byId = <T extends { id: string }>(rows: T[]): T[] => [...rows].sort((a, b) => a.id.localeCompare(b.id));
  const withoutVersion = (k: KeyRecord): Omit<KeyRecord, 'version'> => {
    const { version: _v, ...rest } = k;
    return rest;
  };

  /** PostgreSQL holds exactly what the ClickHouse registry held (current rows, secrets open). */
  async function expectSameRegistry(pool: PgPool): Promise<void> {
    const chTenants = await legacyListTenants(ch, database);
    const pgTenants = await listTenants(pool);
    expect(pgTenants.map((t) => t.tenant_id).sort()).to.deep.equal(chTenants.map((t) => t.tenant_id).sort());
    // The default tenant is PostgreSQL's own (its migration 2); the others arrive as they were.
    const notDefault = <T extends { tenant_id: string }>(rows: T[]): T[] =>
      rows.filter((t) => t.tenant_id !== DEFAULT_TENANT);
    expect(notDefault(pgTenants)).to.deep.equal(notDefault(chTenants));

    const chKeys = (await new ClickHouseKeySource(ch, database).loadAll()).map(withoutVersion);
    const pgKeys = (await loadKeyRecords(pool)).map(withoutVersion);
    const byKey = (a: { key_id: string }, b: { key_id: string }): number => a.key_id.localeCompare(b.key_id);
    // Keys of the old registry were made before people: nobody is named as their maker; they keep
    // addresses truncated (the default, registry migration 8).
    expect(pgKeys.sort(byKey)).to.deep.equal(
      chKeys.map((k) => ({ ...k, created_by: '', ip_storage: 'truncated' })).sort(byKey),
    );
    expect(pgKeys.filter((k) => k.revoked === 1)).to.have.length(1);

    const chMonitors = await new LegacyMonitorStore(ch, database, box).list();
    expect(chMonitors).to.have.length(CURRENT_MONITORS);
    const pgMonitors = await new MonitorStore(pool, box, true).list();
    expect(byId(pgMonitors)).to.deep.equal(
      byId(chMonitors.map((m) => (m.type === 'heartbeat' ? { ...m, heartbeat_nonce: '' } : m))),
    );
    // Every copy is sealed, the rows from before sealing too: no secret in the table.
    const { rows } = await pool.query<{ spec: string; sealed: string }>('SELECT spec, sealed FROM monitors');
    for (const r of rows) expect(r.sealed).to.match(/^v1\.run\./);
    const stored = JSON.stringify(rows);
    for (const secret of ['legacy-header-secret', 'url-password', 'url-token-99', 'webhook-path-secret']) {
      expect(stored).to.not.include(secret);
    }
    expect(stored).to.not.include('plain-before-sealing').and.not.include('webhook-plain-secret');

    const chPages = await new LegacyStatusPageStore(ch, database).all();
    expect(chPages).to.have.length(2);
    expect(await new StatusPageStore(pool).all()).to.deep.equal(chPages);
  }

  const FIRST_RUN: CopyReport = {
    tenants: { copied: 2, existing: 1 },
    access_keys: { copied: 5, existing: 0 },
    monitors: { copied: CURRENT_MONITORS, existing: 0 },
    status_pages: { copied: 2, existing: 0 },
  };

  it('copies every tenant, key, monitor and status page once; the services accept what the old registry held', async () => {
    const { s, pool } = await freshRegistry();
    const env = {
      ...serviceEnv(),
      LOG_LEVEL: 'silent',
      CLICKHOUSE_DATABASE: database,
      DATABASE_URL: s.ownerUrl,
      SECRETS_KEYS: RUN_SECRETS_KEYS,
    };
    let gateway: Running | undefined;
    let query: Running | undefined;
    try {
      const first = await provisionFromEnv(env, logger);
      expect(first).to.deep.equal({ clickhouse: [], registry: [1, 2, 3, 4, 5, 6, 7, 8, 9], copied: FIRST_RUN });
      await expectSameRegistry(pool);

      // Once: a second run copies nothing and changes nothing.
      const second = await provisionFromEnv(env, logger);
      expect(second).to.deep.equal({
        clickhouse: [],
        registry: [],
        copied: {
          tenants: { copied: 0, existing: 3 },
          access_keys: { copied: 0, existing: 5 },
          monitors: { copied: 0, existing: CURRENT_MONITORS },
          status_pages: { copied: 0, existing: 2 },
        },
      });
      await expectSameRegistry(pool);

      // The services, each as its own role on the new registry.
      const urls = await provisionPostgres(s.adminUrl, s.database, logger);
      [gateway, query] = await Promise.all([
        runGateway({ DATABASE_URL: urls.ingest }),
        runQuery({ DATABASE_URL: urls.query }),
      ]);
      const api = <T>(key: string, path: string) => apiCall<T>(query!.url, key, 'GET', path);
      const list = await eventually('the registry loaded', async () => {
        const r = await api<Monitor[]>(keys.api, '/api/monitors');
        return r.status === 200 ? r.body.data : undefined;
      });
      expect(list.map((m) => m.id).sort()).to.deep.equal([ids.web, ids.heartbeat].sort());

      // Secrets: masked through the API, open to the store, as before the copy.
      const web = (await api<Monitor>(keys.api, `/api/monitors/${ids.web}`)).body.data;
      expect(web.headers).to.deep.equal({ Authorization: '****', Accept: '****' });
      expect(web.url).to.equal('https://api.example.com/health?token=****');
      expect(web.webhooks).to.deep.equal(['https://hooks.slack.example.test']);
      expect(web).to.not.have.property('webhook_secret');
      const open = (await new MonitorStore(pool, box).get(ids.web))!;
      expect(open).to.include({ url: SECRETS.url, webhook_secret: 'whsec_legacy_web' });
      expect(open.headers).to.deep.equal({ Authorization: SECRETS.header, Accept: 'application/json' });
      expect(open.webhooks).to.deep.equal([SECRETS.webhook]);
      const plain = await api<Monitor>(keys.defaultTenant, `/api/monitors/${ids.plain}`);
      expect([plain.status, plain.body.data.headers, plain.body.data.webhooks]).to.deep.equal([
        200,
        { Authorization: '****' },
        ['https://hooks.example.com'],
      ]);
      const plainOpen = (await new MonitorStore(pool, box).get(ids.plain))!;
      expect(plainOpen.headers).to.deep.equal({ Authorization: SECRETS.plainHeader });
      expect([plainOpen.webhooks, plainOpen.webhook_secret]).to.deep.equal([[SECRETS.plainWebhook], 'whsec_plain']);

      // Keys: a revoked one is still refused, an expired one too; the other tenant's sees its own.
      expect((await api(keys.revoked, '/api/monitors')).body.code).to.equal('INVALID_CREDENTIALS');
      expect((await api(keys.expired, '/api/monitors')).body.code).to.equal('KEY_EXPIRED');
      const defaults = await api<Monitor[]>(keys.defaultTenant, '/api/monitors');
      expect(defaults.body.data.map((m) => m.id)).to.deep.equal([ids.plain]);

      // Status pages: the tenant's through the API, anyone's on the public route.
      const page = await api<StatusPage>(keys.api, `/api/status-pages/${slugs.shop}`);
      expect([page.status, page.body.data.title, page.body.data.monitor_ids]).to.deep.equal([
        200,
        `Status of ${slugs.shop}`,
        [ids.web, ids.heartbeat],
      ]);
      const pub = await fetch(`${query.url}/api/status/${slugs.status}`);
      expect(pub.status).to.equal(200);

      // Heartbeats: the token from before (nonce '') is shown and accepted; the deleted monitor's is not.
      const oldToken = heartbeatToken(RUN_HEARTBEAT_KEY, tenants[0]!, ids.heartbeat, '');
      const hb = (await api<Monitor>(keys.api, `/api/monitors/${ids.heartbeat}`)).body.data;
      expect(hb.heartbeat_token).to.equal(oldToken);
      const beat = (token: string): Promise<Response> =>
        fetch(`${gateway!.url}/api/heartbeats/${token}`, { method: 'POST' });
      const accepted = await eventually('the gateway loaded the tokens', async () => {
        const r = await beat(oldToken);
        return r.status === 200 ? r : undefined;
      });
      expect(await accepted.json()).to.deep.equal({ success: true, data: null });
      const gone = await beat(heartbeatToken(RUN_HEARTBEAT_KEY, tenants[0]!, ids.gone, ''));
      expect([gone.status, ((await gone.json()) as Envelope<null>).code]).to.deep.equal([404, 'HEARTBEAT_NOT_FOUND']);

      // The telemetry key from before sends events through the new gateway.
      const sent = await fetch(`${gateway.url}/api/telemetry/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-key': keys.telemetry },
        body: JSON.stringify({ events: [{ source: 'shop', category: 'page_view', payload: {} }] }),
      });
      expect(sent.status).to.equal(200);
    } finally {
      await Promise.all([gateway?.stop(), query?.stop()]);
      await pool.end();
    }
  });

  it('a run stopped half-way resumes: the next run copies the rest, each row once, and never a deleted one again', async () => {
    const { pool } = await freshRegistry();
    try {
      await migrateRegistry(pool, logger);
      const stop = new Error('stopped after two monitors');
      const seen: string[] = [];
      const stopped = await copyRegistryFromClickHouse(ch, database, pool, {
        box,
        batchSize: 1,
        afterBatch: (table, counts) => {
          seen.push(`${table} ${counts.copied}+${counts.existing}`);
          if (table === 'monitors' && counts.copied === 2) throw stop;
        },
      }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(stopped).to.equal(stop);
      // Batches of one in id order, each committed before the next.
      // (the default tenant is PostgreSQL's already, wherever its id sorts)
      expect(seen.filter((l) => l.startsWith('tenants')))
        .to.have.length(3)
        .and.include('tenants 2+1');
      expect(seen.filter((l) => !l.startsWith('tenants'))).to.deep.equal([
        'access_keys 1+0',
        'access_keys 2+0',
        'access_keys 3+0',
        'access_keys 4+0',
        'access_keys 5+0',
        'monitors 1+0',
        'monitors 2+0',
      ]);
      const count = async (table: string): Promise<number> =>
        Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);
      expect([
        await count('tenants'),
        await count('access_keys'),
        await count('monitors'),
        await count('status_pages'),
      ]).to.deep.equal([3, 5, 2, 0]);

      const resumed = await copyRegistryFromClickHouse(ch, database, pool, { box });
      expect(resumed).to.deep.equal({
        tenants: { copied: 0, existing: 3 },
        access_keys: { copied: 0, existing: 5 },
        monitors: { copied: CURRENT_MONITORS - 2, existing: 2 },
        status_pages: { copied: 2, existing: 0 },
      });
      await expectSameRegistry(pool);

      // A monitor and a status page deleted in PostgreSQL after the copy stay deleted: a
      // later run (every release's provisioning) skips what an earlier run copied.
      const store = new MonitorStore(pool, box);
      const deleted = (await store.get(ids.heartbeat))!;
      expect(await store.remove(deleted.id, deleted.tenant_id, deleted.version)).to.equal(true);
      const page = (await new StatusPageStore(pool).get(slugs.shop))!;
      expect(await new StatusPageStore(pool).remove(page.slug, page.tenant_id, page.version)).to.equal(true);
      expect(await copyRegistryFromClickHouse(ch, database, pool, { box })).to.deep.equal({
        tenants: { copied: 0, existing: 3 },
        access_keys: { copied: 0, existing: 5 },
        monitors: { copied: 0, existing: CURRENT_MONITORS },
        status_pages: { copied: 0, existing: 2 },
      });
      expect(await store.get(ids.heartbeat)).to.equal(undefined);
      expect(await new StatusPageStore(pool).get(slugs.shop)).to.equal(undefined);

      // Without the key ring the monitors cannot be copied, and the run says why.
      const refused = await copyRegistryFromClickHouse(ch, database, pool).then(
        () => undefined,
        (err: unknown) => err as Error,
      );
      expect(refused?.message).to.include(`ClickHouse holds ${CURRENT_MONITORS} monitors`).and.include('SECRETS_KEYS');
    } finally {
      await pool.end();
    }
  });

  it('a row PostgreSQL refuses stops the run with its table and ids, and what came before stays copied', async () => {
    const { pool } = await freshRegistry();
    try {
      await migrateRegistry(pool, logger);
      // A key of a tenant that ClickHouse's tenants table does not hold (this file's last test: the
      // database goes after it).
      await legacyIssueKey(ch, database, { tenantId: 'ten_nosuchtenant', kind: 'telemetry', name: 'orphan' });
      const err = await copyRegistryFromClickHouse(ch, database, pool, { box }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(CopyError);
      expect([(err as CopyError).table, (err as Error).message]).to.satisfy(
        ([table, message]: [string, string]) => table === 'access_keys' && message.includes('names a tenant'),
      );
      // The batch was one transaction: none of its keys; the tenants before it are copied.
      expect((await listTenants(pool)).length).to.equal(3);
      expect(await loadKeyRecords(pool)).to.deep.equal([]);
    } finally {
      await pool.end();
    }
  });
});
