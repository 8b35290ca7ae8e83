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

  it('adopts a status page made through its API, exports it, refuses the export where it cannot name a monitor, and prunes it', async () => {
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
    expect(adopted.body.data.adopted).to.deep.include({ kind: 'status_page', id: slug, key: 'shop-status' });
    expect((await client<{ key: string }>('GET', `/api/status-pages/${slug}`)).body.data.key).to.equal('shop-status');
    expect((await client<{ adopted: unknown[] }>('POST', '/api/config/adopt')).body.data.adopted).to.deep.equal([]);
    await eventually('config.adopt audited', () =>
      (audit.values as AuditEntry[]).find(
        (e) => e.tenant_id === tenant && e.action === 'config.adopt' && e.target.id === slug,
      ),
    );

    const after = await client<Export>('GET', '/api/config');
    expect(after.body.data.unmanaged.status_pages).to.equal(0);
    // Its monitor has no key, so the document cannot name it.
    expect(after.body.data.document.status_pages).to.deep.equal([
      { key: 'shop-status', slug, title: 'Shop Status', monitor_ids: [] },
    ]);

    // The export's page, with the monitor it cannot name missing, is refused at that field; the
    // section left out of a pruning apply leaves it alone; an empty section prunes it.
    const refused = await post('?dry_run=true', after.body.data.document);
    expect(refused.code).to.equal('VALIDATION_FAILED');
    expect(paths(refused)).to.deep.equal(['/status_pages/0/monitor_ids']);
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
