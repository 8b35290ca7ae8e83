import { expect } from 'chai';
import { CONFIG_LIMITS, type AuditEntry, type ConfigPlan } from '@telemetry/contract';
import { createTenant, issueKey } from '@telemetry/store';
import {
  adminRegistry,
  collectTopic,
  eventually,
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
