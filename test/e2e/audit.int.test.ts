import { expect } from 'chai';
import type { AuditEntry, ChannelObject, KeyView, Monitor } from '@telemetry/contract';
import { addMembership, createSession, createTenant, ensurePerson, issueKey } from '@telemetry/store';
import {
  adminClickHouse,
  adminRegistry,
  eventually,
  produce,
  runConsumer,
  runQuery,
  selectCount,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiClient, type ApiAnswer } from '../support/api.js';

/**
 * The audit log end to end (docs/access.md, "Audit log" and "API keys"): the query service
 * publishes an entry after each committed write (and each refusal), the stream consumer
 * writes it to <db>_audit.audit_log, GET /api/audit reads it back, filtered and paged,
 * confined to the caller's tenant; people-owned keys (/api/keys) are made, listed and
 * revoked, and audited too.
 */
describe('audit log and API keys (real Kafka, ClickHouse, PostgreSQL)', function () {
  this.timeout(120_000);
  let query: Running;
  let consumer: Running;
  const tenants = { a: '', b: '' };
  const keys = { a: '', aId: '', b: '', checksOnly: '', checksOnlyId: '' };
  const api = apiClient(
    () => query.url,
    () => keys.a,
  );
  const HEADER_SECRET = 'header-secret-value-42';
  const HOOK_TOKEN = 'hook-token-value-42';
  let monitorId = '';

  /** The entries of `path` (GET /api/audit?...) once `found` holds for them. */
  const auditWhen = (
    what: string,
    query: string,
    found: (entries: AuditEntry[]) => boolean,
    key = keys.a,
  ): Promise<AuditEntry[]> =>
    eventually(what, async () => {
      const r = await api<AuditEntry[]>('GET', `/api/audit${query}`, undefined, { key });
      expect(r.status, r.text).to.equal(200);
      return found(r.body.data) ? r.body.data : undefined;
    });

  before(async () => {
    tenants.a = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    tenants.b = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const all = ['monitors:read', 'monitors:write', 'checks:read', 'audit:read', 'keys:read', 'keys:write'];
    const a = await issueKey(adminRegistry(), { tenantId: tenants.a, kind: 'api', name: 'a', scopes: all });
    keys.a = a.key;
    keys.aId = a.record.key_id;
    keys.b = (await issueKey(adminRegistry(), { tenantId: tenants.b, kind: 'api', name: 'b', scopes: all })).key;
    const c = await issueKey(adminRegistry(), {
      tenantId: tenants.a,
      kind: 'api',
      name: 'checks only',
      scopes: ['checks:read'],
    });
    keys.checksOnly = c.key;
    keys.checksOnlyId = c.record.key_id;
    consumer = await runConsumer();
    query = await runQuery();
  });
  after(async () => {
    await query?.stop();
    await consumer?.stop();
  });

  it('records a monitor change by an API key with the fields changed, before and after, secrets masked', async () => {
    const created = await api<Monitor>('POST', '/api/monitors', {
      name: 'Audited monitor',
      url: 'http://127.0.0.1:9/health',
      headers: { 'X-Api-Key': HEADER_SECRET },
      webhook_secret: 'a-webhook-secret-of-enough-length-42',
      interval_seconds: 60,
    });
    expect(created.status, created.text).to.equal(201);
    monitorId = created.body.data.id;
    const patched = await api<Monitor>('PATCH', `/api/monitors/${monitorId}`, {
      name: 'Audited monitor, renamed',
      headers: { 'X-Api-Key': `${HEADER_SECRET}-new` },
    });
    expect(patched.status, patched.text).to.equal(200);

    const [update] = await auditWhen(
      'the monitor update in the audit log',
      `?action=monitor.update&target_id=${monitorId}`,
      (e) => e.length === 1,
    );
    expect(update!.tenant_id).to.equal(tenants.a);
    expect(update!.actor).to.deep.equal({ type: 'api_key', id: keys.aId, email: '' });
    expect(update!.target).to.deep.equal({ type: 'monitor', id: monitorId });
    expect(update!.outcome).to.equal('ok');
    expect(update!.changes.name).to.deep.equal({ before: 'Audited monitor', after: 'Audited monitor, renamed' });
    // The header changed; the audit log shows it as the API does: masked.
    expect(update!.changes.headers).to.deep.equal({ before: { 'X-Api-Key': '****' }, after: { 'X-Api-Key': '****' } });
    expect(update!.changes).to.not.have.any.keys('updated_at', 'version', 'status');
    expect(update!.ip).to.match(/127\.0\.0\.1/);
    expect(update!.request_id).to.not.equal('');

    const [create] = await auditWhen(
      'the monitor creation',
      `?action=monitor.create&target_id=${monitorId}`,
      (e) => e.length === 1,
    );
    expect(create!.changes.name).to.deep.equal({ after: 'Audited monitor' });
    const text = JSON.stringify([create, update]);
    expect(text).to.not.include(HEADER_SECRET);
    expect(text).to.not.include('a-webhook-secret-of-enough-length-42');
  });

  it('masks a channel’s webhook URL and secret in its entries', async () => {
    const made = await api<ChannelObject>('POST', '/api/channels', {
      type: 'webhook',
      name: 'audited hook',
      config: { url: `http://127.0.0.1:9/hook?token=${HOOK_TOKEN}`, secret: 'a-channel-secret-of-enough-length' },
    });
    expect(made.status, made.text).to.equal(201);
    const [entry] = await auditWhen(
      'the channel creation',
      `?action=channel.create&target_id=${made.body.data.id}`,
      (e) => e.length === 1,
    );
    expect(entry!.changes.name).to.deep.equal({ after: 'audited hook' });
    expect(entry!.changes.config?.after).to.be.an('object');
    const text = JSON.stringify(entry);
    expect(text).to.not.include(HOOK_TOKEN);
    expect(text).to.not.include('a-channel-secret-of-enough-length');
  });

  it("records a status page's configuration key as a changed field: set, changed, released", async () => {
    const monitor = await api<Monitor>('POST', '/api/monitors', {
      name: 'Paged monitor',
      url: 'http://127.0.0.1:9/health',
      paused: true,
    });
    expect(monitor.status, monitor.text).to.equal(201);
    const slug = uid('audited-page');
    const made = await api('POST', '/api/status-pages', {
      slug,
      title: 'Audited page',
      monitor_ids: [monitor.body.data.id],
      key: 'audited-page',
    });
    expect(made.status, made.text).to.equal(201);
    for (const key of ['audited-page-2', null]) {
      const r = await api('PATCH', `/api/status-pages/${slug}`, { key });
      expect(r.status, r.text).to.equal(200);
    }
    const [create] = await auditWhen(
      'the page creation',
      `?action=status_page.create&target_id=${slug}`,
      (e) => e.length === 1,
    );
    expect(create!.changes.key).to.deep.equal({ after: 'audited-page' });
    const updates = await auditWhen(
      'both key changes',
      `?action=status_page.update&target_id=${slug}`,
      (e) => e.length === 2,
    );
    // Only the key changed (in whichever order two entries of one instant are listed).
    expect(updates.map((e) => e.changes)).to.have.deep.members([
      { key: { before: 'audited-page-2', after: null } },
      { key: { before: 'audited-page', after: 'audited-page-2' } },
    ]);
  });

  it("records a monitor's configuration key as a changed field: set, changed, released", async () => {
    const made = await api<Monitor>('POST', '/api/monitors', {
      name: 'Keyed monitor',
      url: 'http://127.0.0.1:9/health',
      paused: true,
      key: uid('audited-monitor'),
    });
    expect(made.status, made.text).to.equal(201);
    const { id, key } = made.body.data;
    const next = uid('audited-monitor');
    for (const k of [next, null]) {
      const r = await api('PATCH', `/api/monitors/${id}`, { key: k });
      expect(r.status, r.text).to.equal(200);
    }
    const [create] = await auditWhen(
      'the monitor creation',
      `?action=monitor.create&target_id=${id}`,
      (e) => e.length === 1,
    );
    expect(create!.changes.key).to.deep.equal({ after: key });
    const updates = await auditWhen(
      'both key changes',
      `?action=monitor.update&target_id=${id}`,
      (e) => e.length === 2,
    );
    // Only the key changed (in whichever order two entries of one instant are listed).
    expect(updates.map((e) => e.changes)).to.have.deep.members([
      { key: { before: next, after: null } },
      { key: { before: key, after: next } },
    ]);
  });

  it('records a refusal (a key without the scope) as access.denied, outcome denied', async () => {
    const r = await api('PATCH', `/api/monitors/${monitorId}`, { name: 'not allowed' }, { key: keys.checksOnly });
    expect(r.status).to.equal(403);
    expect(r.code).to.equal('INSUFFICIENT_SCOPE');
    const [denied] = await auditWhen(
      'the refusal',
      `?outcome=denied&actor=${keys.checksOnlyId}`,
      (e) => e.length === 1,
    );
    expect(denied!.action).to.equal('access.denied');
    expect(denied!.target).to.deep.equal({ type: 'route', id: 'PATCH /api/monitors/:id' });
    expect(denied!.changes.code).to.deep.equal({ after: 'INSUFFICIENT_SCOPE' });
  });

  it('filters by action (exact and prefix), target, actor, outcome and time, and pages newest first without duplicates', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await api('PATCH', `/api/monitors/${monitorId}`, { interval_seconds: 120 + i });
      expect(r.status, r.text).to.equal(200);
    }
    const all = await auditWhen(
      'five monitor entries',
      `?action=monitor.&target_id=${monitorId}`,
      (e) => e.length === 5,
    );
    expect(all.map((e) => e.action)).to.deep.equal([
      'monitor.update',
      'monitor.update',
      'monitor.update',
      'monitor.update',
      'monitor.create',
    ]);
    const times = all.map((e) => Date.parse(e.at));
    expect([...times].sort((x, y) => y - x)).to.deep.equal(times);

    // Two pages of two and a last of one: every entry once, in the same order.
    const seen: AuditEntry[] = [];
    let cursor: string | null | undefined;
    let pages = 0;
    do {
      const r: ApiAnswer<AuditEntry[]> = await api<AuditEntry[]>(
        'GET',
        `/api/audit?action=monitor.&target_id=${monitorId}&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(r.status, r.text).to.equal(200);
      expect(r.body.data.length).to.be.at.most(2);
      seen.push(...r.body.data);
      cursor = r.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).to.equal(3);
    expect(seen.map((e) => e.id)).to.deep.equal(all.map((e) => e.id));

    const only = (q: string) => api<AuditEntry[]>('GET', `/api/audit?${q}`).then((r) => r.body.data);
    expect((await only(`action=monitor.create&target_id=${monitorId}`)).map((e) => e.action)).to.deep.equal([
      'monitor.create',
    ]);
    expect(await only(`action=monitor.updat&target_id=${monitorId}`)).to.deep.equal([]);
    expect((await only(`target_type=monitor&actor=${keys.aId}&outcome=ok`)).length).to.be.at.least(5);
    expect(await only(`actor=${keys.checksOnlyId}&outcome=ok`)).to.deep.equal([]);
    const newest = Date.parse(all[0]!.at);
    const from = new Date(newest - 1000).toISOString();
    expect((await only(`target_id=${monitorId}&from=${from}`)).map((e) => e.id)).to.include(all[0]!.id);
    expect(await only(`target_id=${monitorId}&to=2020-01-01T00:00:00Z`)).to.deep.equal([]);
    // A quote is a value like any other (escaped), not SQL.
    expect(await only(`actor=x'OR'1'='1`)).to.deep.equal([]);
  });

  it('shows one entry for the copies a redelivery made (LIMIT 1 BY id)', async () => {
    const [entry] = await api<AuditEntry[]>('GET', `/api/audit?action=monitor.create&target_id=${monitorId}`).then(
      (r) => r.body.data,
    );
    // No merge may fold the two copies before the count sees them (a race under load).
    const table = `\`${testStack().database}_audit\`.audit_log`;
    await adminClickHouse().command({ query: `SYSTEM STOP MERGES ${table}` });
    try {
      await produce(testStack().auditTopic, [entry!]);
      await eventually('the copy in audit_log', async () =>
        (await selectCount(adminClickHouse(), `SELECT count() AS n FROM ${table} WHERE id = '${entry!.id}'`)) === 2
          ? true
          : undefined,
      );
    } finally {
      await adminClickHouse().command({ query: `SYSTEM START MERGES ${table}` });
    }
    const again = await api<AuditEntry[]>('GET', `/api/audit?target_id=${monitorId}&action=monitor.create`);
    expect(again.body.data.map((e) => e.id)).to.deep.equal([entry!.id]);
  });

  it("never shows another tenant's entries", async () => {
    const made = await api<Monitor>(
      'POST',
      '/api/monitors',
      { name: 'B monitor', url: 'http://127.0.0.1:9/', interval_seconds: 60 },
      { key: keys.b },
    );
    expect(made.status, made.text).to.equal(201);
    const b = await auditWhen('B’s own entry', '', (e) => e.length === 1, keys.b);
    expect(b[0]!.tenant_id).to.equal(tenants.b);
    expect(b[0]!.target.id).to.equal(made.body.data.id);
    // A's key asks for B's monitor by id: nothing.
    expect((await api<AuditEntry[]>('GET', `/api/audit?target_id=${made.body.data.id}`)).body.data).to.deep.equal([]);
    const mine = await api<AuditEntry[]>('GET', '/api/audit?limit=500');
    expect(mine.body.data.length).to.be.greaterThan(0);
    expect(mine.body.data.every((e) => e.tenant_id === tenants.a)).to.equal(true);
  });

  it('refuses bad parameters with INVALID_PARAMETER and the parameter', async () => {
    for (const q of [
      'action=Monitor',
      'outcome=maybe',
      'from=yesterday',
      'limit=501',
      'cursor=abc',
      'tenant_id=x',
      'actor=a%20b',
    ]) {
      const r = await api('GET', `/api/audit?${q}`);
      expect(r.status, q).to.equal(400);
      expect(r.code, q).to.equal('INVALID_PARAMETER');
    }
    const noScope = await api('GET', '/api/audit', undefined, { key: keys.checksOnly });
    expect(noScope.status).to.equal(403);
  });

  it('makes a key (shown once; it works), lists it with who made it, revokes it within a second', async () => {
    const made = await api<KeyView & { key: string }>('POST', '/api/keys', {
      kind: 'api',
      name: 'made by a key',
      scopes: ['monitors:read'],
    });
    expect(made.status, made.text).to.equal(201);
    const key = made.body.data.key;
    expect(key).to.match(/^ak_[0-9a-f]{16}_[0-9a-f]{64}$/);
    expect(made.body.data.created_by).to.equal(`key:${keys.aId}`);
    expect(made.body.data.scopes).to.deep.equal(['monitors:read']);
    const id = made.body.data.id;
    // Every replica learns of a new key from the registry's change feed, within a second.
    await eventually(
      'the new key accepted',
      async () => ((await api('GET', '/api/monitors', undefined, { key })).status === 200 ? true : undefined),
      1000,
    );

    const listed = await api<KeyView[]>('GET', '/api/keys');
    expect(listed.status).to.equal(200);
    const row = listed.body.data.find((k) => k.id === id)!;
    expect(row).to.include({ name: 'made by a key', created_by: `key:${keys.aId}`, revoked: false, kind: 'api' });
    expect(listed.text).to.not.include(key.split('_')[2]!);
    expect(listed.text).to.not.include('secret_hash');
    // This tenant's keys, the operator's included (created_by operator), and no other tenant's.
    expect(listed.body.data.find((k) => k.id === keys.checksOnlyId)?.created_by).to.equal('operator');
    const ofB = await api<KeyView[]>('GET', '/api/keys', undefined, { key: keys.b });
    expect(ofB.body.data.map((k) => k.id)).to.not.include(id);
    // B cannot revoke A's key.
    expect((await api('DELETE', `/api/keys/${id}`, undefined, { key: keys.b })).code).to.equal('KEY_NOT_FOUND');

    const revoked = await api('DELETE', `/api/keys/${id}`);
    expect(revoked.status, revoked.text).to.equal(200);
    const started = Date.now();
    await eventually(
      'the revoked key refused',
      async () => ((await api('GET', '/api/monitors', undefined, { key })).status === 401 ? true : undefined),
      1000,
    );
    expect(Date.now() - started).to.be.below(1000);
    expect((await api<KeyView[]>('GET', '/api/keys')).body.data.find((k) => k.id === id)!.revoked).to.equal(true);
    expect((await api('DELETE', '/api/keys/0123456789abcdef')).code).to.equal('KEY_NOT_FOUND');

    const trail = await auditWhen('key.create and key.revoke', `?action=key.&target_id=${id}`, (e) => e.length === 2);
    expect(trail.map((e) => e.action)).to.deep.equal(['key.revoke', 'key.create']);
    expect(trail[0]!.changes.revoked).to.deep.equal({ before: false, after: true });
    expect(JSON.stringify(trail)).to.not.include(key.split('_')[2]!);
  });

  it('refuses to give a key a scope its maker lacks (INSUFFICIENT_SCOPE)', async () => {
    const r = await api('POST', '/api/keys', { kind: 'api', name: 'escalated', scopes: ['members:write'] });
    expect(r.status).to.equal(403);
    expect(r.code).to.equal('INSUFFICIENT_SCOPE');
    const bad = await api('POST', '/api/keys', { kind: 'telemetry', name: 't', scopes: ['checks:read'] });
    expect(bad.code).to.equal('VALIDATION_FAILED');
  });

  it('records who made a key in a session: the person’s id (with the CSRF token)', async () => {
    const { person } = await ensurePerson(adminRegistry(), { email: `${uid('admin')}@example.com`, name: 'Ada' });
    await addMembership(adminRegistry(), {
      tenantId: tenants.a,
      personId: person.id,
      role: 'admin',
      createdBy: 'test',
    });
    const s = await createSession(adminRegistry(), {
      personId: person.id,
      tenantId: tenants.a,
      method: 'password',
      ip: '127.0.0.1',
      userAgent: 'test',
      maxSeconds: 3600,
    });
    const headers = { cookie: `telemetry_session=${s.token}`, 'x-csrf-token': s.csrfToken };
    const made = await api<KeyView & { key: string }>(
      'POST',
      '/api/keys',
      { kind: 'telemetry', name: 'shop', allowed_origins: ['https://shop.example'] },
      { key: null, headers },
    );
    expect(made.status, made.text).to.equal(201);
    expect(made.body.data.created_by).to.equal(person.id);
    expect(made.body.data.key).to.match(/^tk_/);
    const [entry] = await auditWhen(
      'key.create by a person',
      `?action=key.create&actor=${person.email}`,
      (e) => e.length === 1,
    );
    expect(entry!.actor).to.deep.equal({ type: 'person', id: person.id, email: person.email });
  });
});
