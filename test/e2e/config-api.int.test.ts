import { expect } from 'chai';
import { CONFIG_LIMITS, type AuditEntry, type ConfigPlan } from '@telemetry/contract';
import { createTenant, issueKey } from '@telemetry/store';
import {
  adminRegistry,
  collectTopic,
  eventually,
  registerMonitorsIn,
  runQuery,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiClient, type ApiAnswer } from '../support/api.js';

/**
 * The configuration API (docs/as-code.md, "The API") on the real query service and
 * PostgreSQL: GET /api/config, POST /api/config (plan and apply), POST /api/config/adopt;
 * both scope families, parameters, the document's problems all in one answer, the audit.
 */
describe('configuration API: export, plan, apply, adopt (real PostgreSQL, Kafka)', function () {
  this.timeout(90_000);
  let query: Running;
  let audit: Awaited<ReturnType<typeof collectTopic>>;
  let tenant = '';
  const keys = { all: '', read: '', monitorsOnly: '', channelsOnly: '', limited: '' };
  const client = apiClient(
    () => query.url,
    () => keys.all,
  );
  const paths = (r: ApiAnswer<unknown>): string[] => (r.body.details?.problems ?? []).map((p) => p.path);
  const post = (query: string, body: unknown, key?: string) =>
    client<ConfigPlan>('POST', `/api/config${query}`, body, key === undefined ? {} : { key });

  before(async () => {
    tenant = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const issue = async (name: string, scopes: string[], monitorIds?: string[]) =>
      (await issueKey(adminRegistry(), { tenantId: tenant, kind: 'api', name, scopes, monitorIds })).key;
    const all = ['monitors:read', 'monitors:write', 'channels:read', 'channels:write'];
    keys.all = await issue('all', all);
    keys.read = await issue('read', ['monitors:read', 'channels:read']);
    keys.monitorsOnly = await issue('monitors', ['monitors:read', 'monitors:write']);
    keys.channelsOnly = await issue('channels', ['channels:read', 'channels:write']);
    keys.limited = await issue('limited', all, ['mon_only']);
    audit = await collectTopic(testStack().auditTopic);
    query = await runQuery({
      // The query service's own PostgreSQL role: the routes need no more than it is granted.
      DATABASE_URL: testStack().users.postgres!.query,
    });
    for (const key of Object.values(keys)) {
      await eventually('keys loaded', async () =>
        (await client('GET', '/api/audit', undefined, { key })).code !== 'INVALID_CREDENTIALS' ? true : undefined,
      );
    }
  });

  after(async () => {
    await query?.stop();
    await audit?.stop();
  });

  it('needs both scope families: monitors and channels, read to export, write to apply and adopt', async () => {
    expect((await client('GET', '/api/config', undefined, { key: keys.read })).status).to.equal(200);
    const channelsOnly = await client('GET', '/api/config', undefined, { key: keys.channelsOnly });
    expect(channelsOnly.status, channelsOnly.text).to.equal(403);
    expect(channelsOnly.code).to.equal('INSUFFICIENT_SCOPE');
    expect(channelsOnly.text).to.contain('monitors:read');
    for (const key of [keys.read, keys.channelsOnly]) {
      expect((await post('', { version: 1 }, key)).code).to.equal('INSUFFICIENT_SCOPE');
      expect((await client('POST', '/api/config/adopt', undefined, { key })).code).to.equal('INSUFFICIENT_SCOPE');
    }
    // A monitors scope carries its channels scope (keys made before the channels scopes: docs/access.md).
    expect((await client('GET', '/api/config', undefined, { key: keys.monitorsOnly })).status).to.equal(200);
    expect((await post('?dry_run=true', { version: 1 }, keys.monitorsOnly)).status).to.equal(200);
    // A key limited to some monitors reads, but changes nothing tenant-wide.
    expect((await client('GET', '/api/config', undefined, { key: keys.limited })).status).to.equal(200);
    const limited = await post('?dry_run=true', { version: 1 }, keys.limited);
    expect(limited.status).to.equal(403);
    expect(limited.code).to.equal('MONITOR_NOT_ALLOWED');
    expect((await client('POST', '/api/config/adopt', undefined, { key: keys.limited })).code).to.equal(
      'MONITOR_NOT_ALLOWED',
    );
    expect((await client('GET', '/api/config', undefined, { key: null })).code).to.equal('MISSING_CREDENTIALS');
  });

  it('refuses parameters that are not exactly true or false, given twice, or unknown', async () => {
    for (const q of ['?dry_run=yes', '?dry_run=1', '?prune=TRUE', '?prune=', '?dry_run=true&dry_run=false']) {
      const r = await post(q, { version: 1 });
      expect(r.status, q).to.equal(400);
      expect(r.code, q).to.equal('INVALID_PARAMETER');
    }
    const unknown = await post('?dryrun=true', { version: 1 });
    expect(unknown.code).to.equal('INVALID_PARAMETER');
    expect(unknown.body.details?.parameter).to.equal('dryrun');
    expect((await client('GET', '/api/config?prune=true')).code).to.equal('INVALID_PARAMETER');
    expect((await client('POST', '/api/config/adopt?dry_run=true')).code).to.equal('INVALID_PARAMETER');
    expect((await client('PUT', '/api/config', { version: 1 })).code).to.equal('METHOD_NOT_ALLOWED');
  });

  it('answers every problem of the document at once, and refuses bodies that are not a JSON document', async () => {
    const r = await post('?dry_run=true', {
      version: 2,
      extra: true,
      monitors: [{ name: 'no key' }, { key: 'Not A Key' }],
      channels: {},
    });
    expect(r.status, r.text).to.equal(400);
    expect(r.code).to.equal('VALIDATION_FAILED');
    expect(paths(r)).to.include.members(['/version', '/extra', '/monitors/0/key', '/monitors/1/key', '/channels']);

    // Past the shape: a key given twice and every item's own problems, in one answer.
    const page = (key: string, over: object = {}) => ({ key, slug: uid('p'), title: 'T', monitor_ids: ['m'], ...over });
    const items = await post('?dry_run=true', {
      version: 1,
      status_pages: [page('a', { monitor_ids: ['nowhere'] }), page('b', { title: '' }), page('a', { bogus: 1 })],
    });
    expect(items.status, items.text).to.equal(400);
    expect([...new Set(paths(items))]).to.have.members([
      '/status_pages/2/key',
      '/status_pages/0/monitor_ids/0',
      '/status_pages/1/title',
      '/status_pages/1/monitor_ids/0',
      '/status_pages/2/bogus',
      '/status_pages/2/monitor_ids/0',
    ]);

    const json = await client('POST', '/api/config', undefined, { raw: '{"version": 1,' });
    expect(json.code).to.equal('INVALID_JSON');
    const type = await client('POST', '/api/config', undefined, {
      raw: 'version: 1',
      headers: { 'content-type': 'application/yaml' },
    });
    expect(type.code).to.equal('UNSUPPORTED_MEDIA_TYPE');
    const big = await client('POST', '/api/config', undefined, {
      raw: JSON.stringify({ version: 1, pad: 'x'.repeat(CONFIG_LIMITS.maxBodyBytes) }),
    });
    expect(big.status).to.equal(413);
    expect(big.code).to.equal('PAYLOAD_TOO_LARGE');
    const tooMany = await post('?dry_run=true', {
      version: 1,
      monitors: Array.from({ length: CONFIG_LIMITS.maxObjects + 1 }, (_, i) => ({ key: `m${i}` })),
    });
    expect(tooMany.code).to.equal('VALIDATION_FAILED');
  });

  it('plans and applies an empty document as no change, audited once when applied', async () => {
    for (const q of ['', '?dry_run=true', '?dry_run=false&prune=true', '?prune=false']) {
      const r = await post(q, { version: 1 });
      expect(r.status, r.text).to.equal(200);
      expect(r.headers.get('cache-control')).to.equal('no-store');
      expect(r.body.data).to.deep.equal({
        applied: !q.includes('dry_run=true'),
        changes: [],
        summary: { create: 0, update: 0, delete: 0, unchanged: 0 },
      });
    }
    const entries = () =>
      (audit.values as AuditEntry[]).filter((e) => e.tenant_id === tenant && e.action === 'config.apply');
    const three = await eventually('config.apply audited', () => (entries().length >= 3 ? entries() : undefined));
    expect(three[0]).to.deep.include({ target: { type: 'config', id: tenant }, outcome: 'ok' });
    expect(three.map((e) => e.changes.prune?.after)).to.deep.equal([false, true, false]);
    expect(three[0]!.changes.create).to.deep.equal({ after: 0 });
  });

  it('adopts a status page and its monitor made through the API, exports them, applies the export as no change, and prunes the page', async () => {
    type Export = {
      document: { version: number; status_pages?: Record<string, unknown>[] };
      unmanaged: Record<string, number>;
    };
    const monitor = uid('cfgmon');
    await registerMonitorsIn(tenant, monitor);
    const slug = uid('cfg-page');
    const made = await client('POST', '/api/status-pages', { slug, title: 'Shop Status', monitor_ids: [monitor] });
    expect(made.status, made.text).to.equal(201);

    const before = await client<Export>('GET', '/api/config');
    expect(before.body.data.unmanaged.status_pages).to.equal(1);
    expect(before.body.data.document.status_pages).to.deep.equal([]);

    const adopted = await client<{ adopted: { kind: string; id: string; key: string }[] }>('POST', '/api/config/adopt');
    expect(adopted.status, adopted.text).to.equal(200);
    // Its monitor too (registered with its id as its name).
    expect(adopted.body.data.adopted).to.deep.include.members([
      { kind: 'monitor', id: monitor, key: monitor },
      { kind: 'status_page', id: slug, key: 'shop-status' },
    ]);
    expect((await client<{ key: string }>('GET', `/api/status-pages/${slug}`)).body.data.key).to.equal('shop-status');
    expect((await client<{ adopted: unknown[] }>('POST', '/api/config/adopt')).body.data.adopted).to.deep.equal([]);
    await eventually('config.adopt audited', () =>
      (audit.values as AuditEntry[]).find(
        (e) => e.tenant_id === tenant && e.action === 'config.adopt' && e.target.id === slug,
      ),
    );

    const after = await client<Export>('GET', '/api/config');
    expect(after.body.data.unmanaged).to.deep.equal({
      channels: 0,
      escalation_policies: 0,
      monitors: 0,
      status_pages: 0,
    });
    expect(after.body.data.document.status_pages).to.deep.equal([
      { key: 'shop-status', slug, title: 'Shop Status', monitor_ids: [monitor] },
    ]);

    // Its export applied changes nothing; a section left out of a pruning apply is left
    // alone; an empty section prunes it.
    const same = await post('?prune=true', after.body.data.document);
    expect(same.status, same.text).to.equal(200);
    expect(same.body.data.changes).to.deep.equal([]);
    expect(same.body.data.summary).to.deep.equal({ create: 0, update: 0, delete: 0, unchanged: 2 });
    const unmanagedSection = await post('?prune=true', { version: 1 });
    expect(unmanagedSection.body.data.summary.delete).to.equal(0);
    const plan = await post('?dry_run=true&prune=true', { version: 1, status_pages: [] });
    expect(plan.status, plan.text).to.equal(200);
    expect(plan.body.data).to.deep.equal({
      applied: false,
      changes: [{ kind: 'status_page', key: 'shop-status', action: 'delete', id: slug, fields: [] }],
      summary: { create: 0, update: 0, delete: 1, unchanged: 0 },
    });
    expect((await client('GET', `/api/status-pages/${slug}`)).status).to.equal(200);
    const pruned = await post('?prune=true', { version: 1, status_pages: [] });
    expect(pruned.body.data.applied).to.equal(true);
    expect(pruned.body.data.summary.delete).to.equal(1);
    expect((await client('GET', `/api/status-pages/${slug}`)).code).to.equal('STATUS_PAGE_NOT_FOUND');
  });

  it('applies five monitors, two channels and a page; then no change; one edit; export round trip; prune; all or nothing', async () => {
    type Doc = { version: 1; [section: string]: unknown };
    type Export = { document: Doc; unmanaged: Record<string, number> };
    const t = await createTenant(adminRegistry(), uid('tenant'));
    const key = (
      await issueKey(adminRegistry(), {
        tenantId: t.tenant_id,
        kind: 'api',
        name: 'round trip',
        scopes: ['monitors:read', 'monitors:write', 'channels:read', 'channels:write'],
      })
    ).key;
    const api = <T>(method: string, path: string, body?: unknown) => client<T>(method, path, body, { key });
    const apply = (q: string, body: unknown) => api<ConfigPlan>('POST', `/api/config${q}`, body);
    const exported = async () => (await api<Export>('GET', '/api/config')).body.data;
    await eventually('key loaded', async () => ((await api('GET', '/api/config')).status === 200 ? true : undefined));

    const slug = uid('cfg-shop');
    const monitor = (k: string, over: object = {}) => ({
      key: k,
      name: `Monitor ${k}`,
      url: `http://127.0.0.1:9/${k}`,
      interval_seconds: 60,
      ...over,
    });
    const doc: Doc = {
      version: 1,
      channels: [
        {
          key: 'ops-hook',
          type: 'webhook',
          name: 'Ops',
          config: { url: 'http://127.0.0.1:9/hook', secret: 'a-webhook-secret-of-enough-length' },
        },
        {
          key: 'dev-hook',
          type: 'webhook',
          name: 'Dev',
          config: { url: 'http://127.0.0.1:9/dev', secret: 'another-webhook-secret-long-enough' },
        },
      ],
      monitors: [
        monitor('api', { channels: ['ops-hook'], headers: { Authorization: 'Bearer s3cret-token' } }),
        monitor('web', { channels: ['ops-hook', 'dev-hook'] }),
        monitor('cart'),
        monitor('search'),
        monitor('admin'),
      ],
      status_pages: [{ key: 'shop', slug, title: 'Shop', monitor_ids: ['api', 'web'] }],
    };

    const first = await apply('', doc);
    expect(first.status, first.text).to.equal(200);
    expect(first.body.data.summary).to.deep.equal({ create: 8, update: 0, delete: 0, unchanged: 0 });
    expect(first.body.data.changes.map((c) => `${c.kind}:${c.key}`)).to.deep.equal([
      'channel:ops-hook',
      'channel:dev-hook',
      'monitor:api',
      'monitor:web',
      'monitor:cart',
      'monitor:search',
      'monitor:admin',
      'status_page:shop',
    ]);
    const ids = Object.fromEntries(first.body.data.changes.map((c) => [c.key, c.id]));
    const api1 = await api<{ key: string; channels: string[]; headers: Record<string, string> }>(
      'GET',
      `/api/monitors/${ids.api}`,
    );
    expect(api1.body.data).to.deep.include({ key: 'api', channels: [ids['ops-hook']] });
    expect(api1.text).to.not.contain('s3cret-token');
    const page = await api<{ monitor_ids: string[] }>('GET', `/api/status-pages/${slug}`);
    expect(page.body.data.monitor_ids).to.deep.equal([ids.api, ids.web]);

    const second = await apply('', doc);
    expect(second.body.data.changes).to.deep.equal([]);
    expect(second.body.data.summary).to.deep.equal({ create: 0, update: 0, delete: 0, unchanged: 8 });

    const monitors = doc.monitors as Record<string, unknown>[];
    const edited = { ...doc, monitors: [monitors[0], { ...monitors[1], interval_seconds: 120 }, ...monitors.slice(2)] };
    const plan = await apply('?dry_run=true', edited);
    expect(plan.body.data).to.deep.equal({
      applied: false,
      changes: [{ kind: 'monitor', key: 'web', action: 'update', id: ids.web, fields: ['interval_seconds'] }],
      summary: { create: 0, update: 1, delete: 0, unchanged: 7 },
    });
    expect(
      (await api<{ interval_seconds: number }>('GET', `/api/monitors/${ids.web}`)).body.data.interval_seconds,
    ).to.equal(60);

    // The export names no secret, and applied as it is (SecretPins) changes nothing.
    const out = await exported();
    expect(out.unmanaged).to.deep.equal({ channels: 0, escalation_policies: 0, monitors: 0, status_pages: 0 });
    const text = JSON.stringify(out);
    for (const secret of ['s3cret-token', 'a-webhook-secret-of-enough-length', 'another-webhook-secret']) {
      expect(text).to.not.contain(secret);
    }
    const apiItem = (out.document.monitors as { key: string; headers?: Record<string, unknown> }[]).find(
      (m) => m.key === 'api',
    )!;
    expect(apiItem.headers?.Authorization)
      .to.have.property('fingerprint')
      .that.matches(/^fp1\./);
    const again = await apply('?prune=true', out.document);
    expect(again.status, again.text).to.equal(200);
    expect(again.body.data.changes).to.deep.equal([]);
    expect(again.body.data.summary.unchanged).to.equal(8);

    // A pin of another value is refused at its path.
    const wrongPin = structuredClone(out.document) as unknown as { channels: { config: { secret: unknown } }[] };
    wrongPin.channels[0]!.config.secret = { fingerprint: 'fp1.k1.AAAAAAAAAAAAAAAAAAAAAA' };
    const pinRefused = await apply('?dry_run=true', wrongPin);
    expect(pinRefused.code).to.equal('VALIDATION_FAILED');
    expect(paths(pinRefused)).to.deep.equal(['/channels/0/config/secret']);

    // One invalid monitor among five: nothing changes.
    const before = await exported();
    const oneBad = {
      ...doc,
      monitors: [...monitors.slice(0, 4), monitor('admin', { interval_seconds: 'often' }), monitor('extra')],
    };
    const bad = await apply('', oneBad);
    expect(bad.status, bad.text).to.equal(400);
    expect(paths(bad)).to.deep.equal(['/monitors/4/interval_seconds']);
    expect(await exported()).to.deep.equal(before);

    // Prune after removing a monitor: only that one goes.
    const withoutCart = { ...doc, monitors: monitors.filter((m) => m.key !== 'cart') };
    const pruned = await apply('?prune=true', withoutCart);
    expect(pruned.body.data.changes).to.deep.equal([
      { kind: 'monitor', key: 'cart', action: 'delete', id: ids.cart, fields: [] },
    ]);
    expect((await api('GET', `/api/monitors/${ids.cart}`)).code).to.equal('MONITOR_NOT_FOUND');
    expect((await api('GET', `/api/monitors/${ids.search}`)).status).to.equal(200);

    // A channel an unmanaged monitor still uses cannot be pruned: the whole apply is refused.
    const hand = await api<{ id: string }>('POST', '/api/monitors', {
      name: 'By hand',
      url: 'http://127.0.0.1:9/hand',
      channels: [ids['dev-hook']],
    });
    expect(hand.status, hand.text).to.equal(201);
    const withoutDev = {
      ...withoutCart,
      channels: (doc.channels as { key: string }[]).filter((c) => c.key !== 'dev-hook'),
      monitors: [
        monitor('api', { channels: ['ops-hook'], headers: { Authorization: 'Bearer s3cret-token' } }),
        monitor('web'),
        monitor('search'),
        monitor('admin'),
        monitor('new-one'),
      ],
    };
    const inUse = await apply('?prune=true', withoutDev);
    expect(inUse.status, inUse.text).to.equal(400);
    expect(inUse.body.details?.problems).to.have.length(1);
    expect(inUse.body.details!.problems![0]!.path).to.equal('/channels');
    const message = inUse.body.details!.problems![0]!.message;
    expect(message).to.match(/^the channel dev-hook cannot be deleted: it is still used by /);
    expect(message).to.satisfy((m: string) => m.includes(hand.body.data.id) || m.includes('By hand'));
    // The dry run says so too, and neither wrote anything (the web monitor's channels, new-one).
    expect((await apply('?prune=true&dry_run=true', withoutDev)).body.details?.problems).to.deep.equal(
      inUse.body.details!.problems,
    );
    const after = await exported();
    expect((after.document.monitors as { key: string }[]).map((m) => m.key)).to.deep.equal([
      'admin',
      'api',
      'search',
      'web',
    ]);
    expect(after.unmanaged.monitors).to.equal(1);
  });

  it('exports the tenant as a document and adopts objects without a key', async () => {
    const got = await client<{ document: { version: number }; unmanaged: Record<string, number> }>(
      'GET',
      '/api/config',
      undefined,
      { key: keys.read },
    );
    expect(got.status, got.text).to.equal(200);
    expect(got.headers.get('cache-control')).to.equal('no-store');
    expect(got.body.data.document.version).to.equal(1);
    expect(got.body.data.unmanaged).to.be.an('object');
    const adopted = await client<{ adopted: unknown[] }>('POST', '/api/config/adopt');
    expect(adopted.status, adopted.text).to.equal(200);
    expect(adopted.body.data).to.deep.equal({ adopted: [] });
  });
});
