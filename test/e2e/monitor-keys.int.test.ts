import { expect } from 'chai';
import type { Request, Response } from 'express';
import { createValidators, type ConfigItem, type Monitor } from '@telemetry/contract';
import { AppError, EgressPolicy, type Logger } from '@telemetry/platform';
import { createTenant, MonitorStore, registryWrite, type KeyedMonitor, type MonitorChange } from '@telemetry/store';
import type { Auditor, AuditRecord } from '../../services/query-service/src/access/audit.js';
import type { ApplyContext, PlanContext } from '../../services/query-service/src/config-as-code/kind.js';
import { monitorConfigKind, type DesiredMonitor } from '../../services/query-service/src/config-as-code/monitors.js';
import type { MonitorDirectory } from '../../services/query-service/src/monitor-directory.js';
import { runSecretBox } from '../../harness/processes.js';
import { apiClient } from '../support/api.js';
import { adminRegistry, eventually, newKey, runQuery, uid, type Running } from '../support/fixtures.js';

describe('monitor configuration keys (real query service and PostgreSQL)', function () {
  this.timeout(60_000);
  let query: Running;
  let key: string;
  let otherKey: string;
  const api = apiClient(
    () => query.url,
    () => key,
  );
  const made: string[] = [];

  /** A paused monitor (nothing checks it), made through the API. */
  async function create(body: Record<string, unknown>, as = key): Promise<Monitor> {
    const r = await api<Monitor>(
      'POST',
      '/api/monitors',
      { name: 'keyed', url: 'http://127.0.0.1:9/', paused: true, ...body },
      { key: as },
    );
    expect(r.status, JSON.stringify(r.body)).to.equal(201);
    if (as === key) made.push(r.body.data.id);
    return r.body.data;
  }

  before(async () => {
    query = await runQuery();
    const scopes = ['monitors:read', 'monitors:write'] as const;
    key = await newKey({ kind: 'api', name: 'monitor keys', scopes: [...scopes] });
    const other = await createTenant(adminRegistry(), uid('keys'));
    otherKey = await newKey({ kind: 'api', name: 'other tenant', scopes: [...scopes], tenantId: other.tenant_id });
    await eventually('keys loaded', async () =>
      (await api('GET', '/api/monitors', undefined, { key: otherKey })).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    for (const id of made) await api('DELETE', `/api/monitors/${id}`);
    await query?.stop();
  });

  it('takes a key on create and PATCH, answers it, releases it with null, and refuses a taken one (409 KEY_TAKEN)', async () => {
    const k = uid('api');
    const k2 = uid('api');
    const a = await create({ key: k });
    expect(a.key).to.equal(k);
    expect((await api<Monitor>('GET', `/api/monitors/${a.id}`)).body.data.key).to.equal(k);
    const listed = (await api<Monitor[]>('GET', '/api/monitors?limit=1000')).body.data;
    expect(listed.find((m) => m.id === a.id)?.key).to.equal(k);
    // Without one: null.
    const plain = await create({});
    expect(plain.key).to.equal(null);

    const before = (await api<Monitor[]>('GET', '/api/monitors?limit=1000')).body.data.length;
    const taken = await api('POST', '/api/monitors', {
      name: 'twin',
      url: 'http://127.0.0.1:9/',
      paused: true,
      key: k,
    });
    expect(taken.status).to.equal(409);
    expect(taken.code).to.equal('KEY_TAKEN');
    expect(taken.body.error).to.include(k);
    expect((await api<Monitor[]>('GET', '/api/monitors?limit=1000')).body.data).to.have.length(before);

    const bad = await api('POST', '/api/monitors', { name: 'bad', url: 'http://127.0.0.1:9/', key: 'Not A Key' });
    expect(bad.status).to.equal(400);
    expect(bad.code).to.equal('VALIDATION_FAILED');
    expect(bad.body.details?.problems).to.deep.equal([
      { path: '/key', message: 'must match pattern "^[a-z0-9][a-z0-9._-]{0,62}$"' },
    ]);

    // Another key: the old one is free again.
    const changed = await api<Monitor>('PATCH', `/api/monitors/${a.id}`, { key: k2 });
    expect(changed.status, JSON.stringify(changed.body)).to.equal(200);
    expect(changed.body.data.key).to.equal(k2);
    const b = await create({ key: k });

    // A taken key on PATCH: nothing changes (not even the other fields of the request).
    const etag = (await api('GET', `/api/monitors/${b.id}`)).headers.get('etag');
    const clash = await api('PATCH', `/api/monitors/${b.id}`, { key: k2, name: 'renamed' });
    expect(clash.status).to.equal(409);
    expect(clash.code).to.equal('KEY_TAKEN');
    const still = await api<Monitor>('GET', `/api/monitors/${b.id}`);
    expect(still.body.data).to.include({ key: k, name: 'keyed' });
    expect(still.headers.get('etag')).to.equal(etag);

    // Released with null; a PATCH of other fields keeps the key.
    const released = await api<Monitor>('PATCH', `/api/monitors/${a.id}`, { key: null });
    expect(released.body.data.key).to.equal(null);
    expect((await api<Monitor>('GET', `/api/monitors/${a.id}`)).body.data.key).to.equal(null);
    const renamed = await api<Monitor>('PATCH', `/api/monitors/${b.id}`, { name: 'renamed' });
    expect(renamed.body.data).to.include({ key: k, name: 'renamed' });
    expect((await api<Monitor>('PATCH', `/api/monitors/${plain.id}`, { key: k2 })).body.data.key).to.equal(k2);

    // Keys are per tenant.
    const theirs = await create({ key: k }, otherKey);
    expect(theirs.key).to.equal(k);
    expect((await api('DELETE', `/api/monitors/${theirs.id}`, undefined, { key: otherKey })).status).to.equal(200);
  });

  describe('the monitors kind in one registry transaction (what POST /api/config runs)', () => {
    const changes: MonitorChange[] = [];
    const audited: AuditRecord[] = [];
    const remembered = new Map<string, string>();
    const quota = { n: 1000 };
    let tenantId: string;
    // Made when the stack is up (the global setup runs after the files load).
    const kindOf = () =>
      monitorConfigKind({
        validators: createValidators(),
        policy: new EgressPolicy({ allow: ['127.0.0.1/32'] }),
        minIntervalSeconds: 1,
        heartbeatKey: 'heartbeat-key-for-tests-0123456789',
        store: new MonitorStore(adminRegistry(), runSecretBox(), true),
        directory: {
          remember: (id: string, tenant: string) => remembered.set(id, tenant),
          forget: (id: string) => remembered.delete(id),
        } as unknown as MonitorDirectory,
        notifier: {
          notify: (c: MonitorChange) => {
            changes.push(c);
            return Promise.resolve();
          },
        },
        quotaOf: () => quota.n,
        audit: {
          record: (_req: Request, _res: Response, r: AuditRecord) => {
            audited.push(r);
            return Promise.resolve();
          },
          denied: () => Promise.resolve(),
        } satisfies Auditor,
        logger: { warn: () => undefined } as unknown as Logger,
      });
    let kind: ReturnType<typeof kindOf>;
    const apply: ApplyContext = { tenantId: '', req: { id: 'test' } as unknown as Request, res: {} as Response };
    const plan = (): PlanContext => ({ tenantId, idOf: () => undefined, newId: () => `mon_${uid('').slice(1)}000000` });

    function prepared(item: ConfigItem, current?: KeyedMonitor): DesiredMonitor {
      const p = kind.prepare(item, current, plan());
      if ('problems' in p) throw new Error(JSON.stringify(p.problems));
      return p.desired;
    }

    before(async () => {
      // A tenant of its own: load() and unkeyed() see only this test's monitors.
      kind = kindOf();
      tenantId = (await createTenant(adminRegistry(), uid('kind'))).tenant_id;
      apply.tenantId = tenantId;
    });

    it('creates, adopts, updates and deletes in the caller transaction, and rolls all back on a refusal', async () => {
      const db = adminRegistry();
      const k = uid('site');
      const after = await registryWrite(db, (tx) =>
        kind.create(tx, prepared({ key: k, name: 'site', url: 'http://127.0.0.1:9/', paused: true }), apply),
      );
      await after();
      let loaded = await registryWrite(db, (tx) => kind.load(tx, tenantId));
      expect(loaded.map((m) => m.key)).to.deep.equal([k]);
      const site = loaded[0]!;
      expect(remembered.get(site.id)).to.equal(tenantId);
      expect(changes.at(-1)).to.deep.equal({ id: site.id, version: 1, deleted: false });
      expect(audited.at(-1)).to.deep.include({ action: 'monitor.create', target: { type: 'monitor', id: site.id } });
      expect(audited.at(-1)?.changes?.key).to.deep.equal({ after: k });

      // Unchanged when described again; an edit is exactly that field.
      expect(
        kind.changes(site, prepared({ key: k, name: 'site', url: 'http://127.0.0.1:9/', paused: true }, site)),
      ).to.deep.equal([]);
      const edited = prepared(
        { key: k, name: 'site', url: 'http://127.0.0.1:9/', paused: true, interval_seconds: 120 },
        site,
      );
      expect(kind.changes(site, edited)).to.deep.equal(['interval_seconds']);
      await (
        await registryWrite(db, (tx) => kind.update(tx, site, edited, apply))
      )();
      loaded = await registryWrite(db, (tx) => kind.load(tx, tenantId));
      expect(loaded[0]).to.include({ id: site.id, key: k, interval_seconds: 120, version: 2 });
      expect(loaded[0]!.webhook_secret).to.equal(site.webhook_secret);
      expect(audited.at(-1)?.changes).to.deep.equal({ interval_seconds: { before: 60, after: 120 } });

      // One made without a key is not loaded until adopted.
      const store = new MonitorStore(db, runSecretBox(), true);
      const loose = await store.create(
        { ...prepared({ key: 'x', name: 'loose', url: 'http://127.0.0.1:9/', paused: true }).monitor, key: null },
        1000,
      );
      expect(await registryWrite(db, (tx) => kind.unkeyed(tx, tenantId))).to.deep.equal([
        { id: loose.id, name: 'loose' },
      ]);
      const adopted = uid('loose');
      expect(await registryWrite(db, (tx) => kind.setKey(tx, tenantId, loose.id, adopted))).to.equal(true);
      expect(await registryWrite(db, (tx) => kind.unkeyed(tx, tenantId))).to.deep.equal([]);
      expect((await store.get(loose.id, tenantId))?.key).to.equal(adopted);
      // A key the tenant gave another monitor.
      const clash = await registryWrite(db, (tx) => kind.setKey(tx, tenantId, loose.id, k)).catch((e: unknown) => e);
      expect(clash).to.be.instanceOf(AppError);
      expect((clash as AppError).code).to.equal('KEY_TAKEN');

      // All or nothing: a create refused later in the same transaction takes the earlier one with it.
      const fresh = uid('fresh');
      const refused = await registryWrite(db, async (tx) => {
        await kind.create(tx, prepared({ key: fresh, name: 'fresh', url: 'http://127.0.0.1:9/', paused: true }), apply);
        await kind.create(tx, prepared({ key: k, name: 'twin', url: 'http://127.0.0.1:9/', paused: true }), apply);
      }).catch((e: unknown) => e);
      expect((refused as AppError).code).to.equal('KEY_TAKEN');
      // The quota is counted in the transaction: the tenant has 2, may have 2.
      quota.n = 2;
      const over = await registryWrite(db, (tx) =>
        kind.create(tx, prepared({ key: fresh, name: 'fresh', url: 'http://127.0.0.1:9/', paused: true }), apply),
      ).catch((e: unknown) => e);
      expect((over as AppError).code).to.equal('QUOTA_EXCEEDED');
      loaded = await registryWrite(db, (tx) => kind.load(tx, tenantId));
      expect(loaded.map((m) => m.key).sort()).to.deep.equal([adopted, k].sort());

      for (const m of loaded) {
        const result = await registryWrite(db, (tx) => kind.remove(tx, m, apply));
        if (Array.isArray(result)) throw new Error(JSON.stringify(result));
        await result();
      }
      expect(await registryWrite(db, (tx) => kind.load(tx, tenantId))).to.deep.equal([]);
      expect(remembered.has(site.id)).to.equal(false);
      expect(changes.at(-1)).to.include({ deleted: true });
      expect(audited.at(-1)?.action).to.equal('monitor.delete');
    });
  });
});
