import { connect } from 'node:net';
import { expect } from 'chai';
import type { DomainView, StatusPage } from '@telemetry/contract';
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
import { apiClient, type ApiOptions } from '../support/api.js';
import { TestDnsServer } from '../support/dns-server.js';
import { hostRequest } from '../support/host-request.js';

const HOST = 'status.example.test';
/** OPERATOR_HOSTS of the services under test. */
const OPERATOR = 'ops.example.test';

/**
 * Custom domains (issue 43, item 5): a page answers on the tenant's host name once its TXT
 * record is served by the resolver (a DNS server on loopback: the only one asked), and
 * nothing else of the service answers there; the operator's names and another page's
 * verified name are refused; a deleted domain stops on every replica.
 */
describe('custom domains of status pages: TXT verification and the Host routing (loopback DNS)', function () {
  this.timeout(90_000);
  const dns = new TestDnsServer();
  let q1: Running;
  let q2: Running;
  const keys = { a: '', aLimited: '', b: '' };
  const slugs = { a: '', a2: '', b: '' };
  let audit: Awaited<ReturnType<typeof collectTopic>>;

  const client = apiClient(
    () => q1.url,
    () => keys.a,
  );
  const api = <T>(method: string, path: string, body?: unknown, options: ApiOptions = {}) =>
    client<T>(method, path, body, options);
  const domains = (slug: string) => `/api/status-pages/${slug}/domains`;

  before(async () => {
    await dns.start();
    audit = await collectTopic(testStack().auditTopic);
    const tenant = async (): Promise<string> => (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const [a, b] = [await tenant(), await tenant()];
    const scopes = ['monitors:read', 'monitors:write'];
    keys.a = (await issueKey(adminRegistry(), { tenantId: a, kind: 'api', name: 'a', scopes })).key;
    keys.b = (await issueKey(adminRegistry(), { tenantId: b, kind: 'api', name: 'b', scopes })).key;
    const env = {
      DOMAIN_RESOLVER: `127.0.0.1:${dns.port}`,
      DOMAIN_VERIFY_TIMEOUT_MS: '2000',
      OPERATOR_HOSTS: OPERATOR,
    };
    [q1, q2] = await Promise.all([runQuery(env), runQuery(env)]);
    await eventually('keys loaded', async () =>
      (await api('GET', '/api/monitors')).status === 200 &&
      (await api('GET', '/api/monitors', undefined, { key: keys.b })).status === 200
        ? true
        : undefined,
    );
    const page = async (key: string, name: string): Promise<string> => {
      const m = await api<{ id: string }>(
        'POST',
        '/api/monitors',
        { name, url: 'https://shop.example.com/health', paused: true },
        { key },
      );
      expect(m.status).to.equal(201);
      const slug = uid(name.toLowerCase());
      const monitorId = m.body.success ? m.body.data.id : '';
      const p = await api<StatusPage>(
        'POST',
        '/api/status-pages',
        { slug, title: name, monitor_ids: [monitorId] },
        { key },
      );
      expect(p.status).to.equal(201);
      return slug;
    };
    slugs.a = await page(keys.a, 'Shop');
    slugs.a2 = await page(keys.a, 'Blog');
    slugs.b = await page(keys.b, 'Other');
    const monitorsOfA = await api<{ id: string }[]>('GET', '/api/monitors');
    keys.aLimited = (
      await issueKey(adminRegistry(), {
        tenantId: a,
        kind: 'api',
        name: 'limited',
        scopes,
        monitorIds: monitorsOfA.body.success ? monitorsOfA.body.data.map((m) => m.id) : [],
      })
    ).key;
    await eventually('limited key loaded', async () =>
      (await api('GET', '/api/monitors', undefined, { key: keys.aLimited })).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    await Promise.all([q1?.stop(), q2?.stop()]);
    await audit?.stop();
    await dns.stop();
  });

  it('answers a custom Host with 404 until its TXT record is served and verified, then with its page only', async () => {
    expect((await hostRequest(q1.url, HOST, '/')).code).to.equal('NOT_FOUND');
    expect((await hostRequest(q1.url, HOST, `/api/status/${slugs.a}`)).status).to.equal(404);

    const added = await api<DomainView>('POST', domains(slugs.a), { hostname: 'Status.Example.TEST' });
    expect(added.status).to.equal(201);
    if (!added.body.success) throw new Error(added.text);
    const view = added.body.data;
    expect(view).to.include({ hostname: HOST, slug: slugs.a, txt_name: `_telemetry-verify.${HOST}`, verified: false });
    expect(view.txt_value).to.match(/^telemetry-verify=[a-z0-9]{32}$/);
    // Claimed again: the same claim and token.
    const again = await api<DomainView>('POST', domains(slugs.a), { hostname: HOST });
    expect(again.status).to.equal(200);
    expect(again.body.success && again.body.data.txt_value).to.equal(view.txt_value);
    const listed = await api<DomainView[]>('GET', domains(slugs.a));
    expect(listed.body.success && listed.body.data.map((d) => d.hostname)).to.deep.equal([HOST]);

    // No TXT record: refused, and the resolver on loopback was the one asked.
    const asked = dns.questions;
    const unproved = await api('POST', `${domains(slugs.a)}/${HOST}/verify`);
    expect(unproved.status).to.equal(400);
    expect(unproved.code).to.equal('DOMAIN_NOT_VERIFIED');
    expect(unproved.body.details).to.deep.include({ txt_name: view.txt_name, txt_value: view.txt_value });
    expect(dns.questions).to.be.greaterThan(asked);
    // A record that says something else: refused too.
    dns.records.set(view.txt_name, { TXT: ['telemetry-verify=0123456789abcdef0123456789abcdef'] });
    expect((await api('POST', `${domains(slugs.a)}/${HOST}/verify`)).code).to.equal('DOMAIN_NOT_VERIFIED');
    expect((await hostRequest(q1.url, HOST, '/')).status).to.equal(404);

    dns.records.set(view.txt_name, { TXT: [view.txt_value] });
    const verified = await api<DomainView>('POST', `${domains(slugs.a)}/${HOST}/verify`);
    expect(verified.status).to.equal(200);
    expect(verified.body.success && verified.body.data).to.include({ hostname: HOST, verified: true });
    expect(verified.body.success && verified.body.data.verified_at).to.be.a('string');

    // The page's HTML at /, as at /status/{slug} on the operator's host.
    const home = await hostRequest(q1.url, HOST, '/');
    expect(home.status, home.text).to.equal(200);
    expect(home.type).to.contain('text/html');
    // The same page, its feed links relative to the host it is read on.
    const onOperator = await (await fetch(`${q1.url}/status/${slugs.a}`)).text();
    expect(home.text).to.equal(onOperator.replaceAll(`/status/${slugs.a}/feed.`, '/feed.'));
    expect(home.text).to.contain('href="/feed.atom"');
    const found = await hostRequest(q1.url, `${HOST.toUpperCase()}:443`, '/api/status-domain');
    expect(found.json).to.deep.equal({ success: true, data: { slug: slugs.a } });
    const pageData = await hostRequest(q1.url, HOST, `/api/status/${slugs.a}`);
    expect(pageData.status).to.equal(200);
    expect((pageData.json?.data as { slug: string }).slug).to.equal(slugs.a);
    expect((await hostRequest(q1.url, HOST, '/console/status.js')).status).to.equal(200);
    expect((await hostRequest(q1.url, HOST, '/healthz')).status).to.equal(200);

    // Nothing else of the service answers there, a valid key or not.
    for (const path of [
      `/api/status/${slugs.a2}`,
      `/api/status/${slugs.b}`,
      `/status/${slugs.a2}`,
      '/api/monitors',
      '/api/status-pages',
      '/api/session',
      '/console/',
      '/console/main.js',
      '/metrics',
      '/openapi.json',
    ]) {
      const r = await hostRequest(q1.url, HOST, path, { key: keys.a });
      expect(r.status, path).to.equal(404);
      expect(r.code, path).to.equal('NOT_FOUND');
    }
    const write = await hostRequest(q1.url, HOST, `${domains(slugs.a)}/${HOST}`, { method: 'DELETE', key: keys.a });
    expect(write.status).to.equal(404);

    // The operator's own names: the whole app, no custom domain.
    expect((await hostRequest(q1.url, OPERATOR, '/api/monitors', { key: keys.a })).status).to.equal(200);
    expect((await hostRequest(q1.url, 'localhost', '/api/status-domain')).code).to.equal('NOT_FOUND');
    expect((await api('GET', '/api/status-domain')).status).to.equal(404);
    // No Host at all (HTTP/1.0): the health probes only.
    const bare = (path: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(Number(new URL(q1.url).port), '127.0.0.1', () =>
          socket.end(`GET ${path} HTTP/1.0\r\nAuthorization: Bearer ${keys.a}\r\n\r\n`),
        );
        let got = '';
        socket.on('data', (c: Buffer) => (got += c.toString('latin1')));
        socket.on('end', () => resolve(got));
        socket.on('error', reject);
      });
    expect(await bare('/api/monitors')).to.match(/^HTTP\/1\.[01] 404 /);
    expect(await bare('/healthz')).to.match(/^HTTP\/1\.[01] 200 /);
    // Any other host name: nothing.
    expect((await hostRequest(q1.url, 'other.example.test', '/')).code).to.equal('NOT_FOUND');
    expect((await hostRequest(q1.url, 'other.example.test', `/api/status/${slugs.a}`)).status).to.equal(404);
    // The other replica routes it too (the registry's change feed).
    await eventually('the second replica serves the domain', async () =>
      (await hostRequest(q2.url, HOST, '/')).status === 200 ? true : undefined,
    );
  });

  it("refuses the operator's host names, IP literals, a name another page verified, limited keys and other tenants", async () => {
    for (const hostname of [OPERATOR, `status.${OPERATOR}`, 'localhost', 'app.localhost', 'LocalHost.']) {
      const r = await api('POST', domains(slugs.a2), { hostname });
      expect(r.status, hostname).to.equal(400);
      expect(r.code, hostname).to.equal('DOMAIN_NOT_ALLOWED');
    }
    for (const hostname of ['127.0.0.1', '::1', '*.example.test', 'example', 'a'.repeat(64) + '.example.test']) {
      const r = await api('POST', domains(slugs.a2), { hostname });
      expect(r.code, hostname).to.equal('VALIDATION_FAILED');
      expect(r.body.details?.problems?.[0]?.path, hostname).to.equal('/hostname');
    }

    // Tenant B claims the verified name (any claim may be made) but cannot verify it, nor can A's other page.
    for (const [slug, key] of [
      [slugs.b, keys.b],
      [slugs.a2, keys.a],
    ] as const) {
      const claimed = await api<DomainView>('POST', domains(slug), { hostname: HOST }, { key });
      expect(claimed.status).to.equal(201);
      const taken = await api('POST', `${domains(slug)}/${HOST}/verify`, undefined, { key });
      expect(taken.status).to.equal(409);
      expect(taken.code).to.equal('DOMAIN_TAKEN');
    }

    // A key limited to monitors may read but not change; another tenant does not see the page.
    expect((await api('GET', domains(slugs.a), undefined, { key: keys.aLimited })).status).to.equal(200);
    const limited = await api('POST', domains(slugs.a), { hostname: 'www.example.test' }, { key: keys.aLimited });
    expect(limited.code).to.equal('MONITOR_NOT_ALLOWED');
    expect((await api('GET', domains(slugs.a), undefined, { key: keys.b })).code).to.equal('STATUS_PAGE_NOT_FOUND');
    expect((await api('DELETE', `${domains(slugs.a)}/${HOST}`, undefined, { key: keys.b })).status).to.equal(404);
    expect((await api('POST', `${domains(slugs.a)}/nothing.example.test/verify`)).code).to.equal('DOMAIN_NOT_FOUND');

    // At most maxDomainsPerPage (5) per page: slugs.a2 has one claim.
    for (let i = 0; i < 4; i++) {
      expect((await api('POST', domains(slugs.a2), { hostname: `s${i}.example.test` })).status).to.equal(201);
    }
    const sixth = await api('POST', domains(slugs.a2), { hostname: 's5.example.test' });
    expect(sixth.status).to.equal(403);
    expect(sixth.code).to.equal('QUOTA_EXCEEDED');
  });

  it('stops serving a deleted domain on every replica; then another page may verify it', async () => {
    expect((await hostRequest(q2.url, HOST, '/')).status).to.equal(200);
    const gone = await api('DELETE', `${domains(slugs.a)}/${HOST}`);
    expect(gone.status).to.equal(200);
    expect((await hostRequest(q1.url, HOST, '/')).code).to.equal('NOT_FOUND');
    const started = Date.now();
    await eventually(
      'the second replica forgets the domain',
      async () => ((await hostRequest(q2.url, HOST, '/')).status === 404 ? true : undefined),
      1000,
    );
    expect(Date.now() - started).to.be.lessThan(1000);
    expect((await api('DELETE', `${domains(slugs.a)}/${HOST}`)).code).to.equal('DOMAIN_NOT_FOUND');

    // Tenant B's claim: its own token, published, verified; the host serves B's page now.
    const b = await api<DomainView[]>('GET', domains(slugs.b), undefined, { key: keys.b });
    const claim = b.body.success ? b.body.data.find((d) => d.hostname === HOST) : undefined;
    expect(claim).to.not.equal(undefined);
    dns.records.set(claim!.txt_name, { TXT: [claim!.txt_value] });
    const verified = await api<DomainView>('POST', `${domains(slugs.b)}/${HOST}/verify`, undefined, { key: keys.b });
    expect(verified.status).to.equal(200);
    const found = await hostRequest(q1.url, HOST, '/api/status-domain');
    expect(found.json).to.deep.equal({ success: true, data: { slug: slugs.b } });
    expect((await hostRequest(q1.url, HOST, `/api/status/${slugs.a}`)).status).to.equal(404);

    // Deleting the page takes its domains with it, on every replica.
    expect((await api('DELETE', `/api/status-pages/${slugs.b}`, undefined, { key: keys.b })).status).to.equal(200);
    for (const q of [q1, q2]) {
      await eventually('the page is gone from its domain', async () =>
        (await hostRequest(q.url, HOST, '/')).status === 404 ? true : undefined,
      );
    }

    // Every committed change was audited, under the host name.
    await eventually('audit entries of tenant A', () => {
      const actions = (audit.values as { action: string; target: { type: string; id: string } }[])
        .filter((e) => e.target?.type === 'custom_domain' && e.target.id === HOST)
        .map((e) => e.action);
      return ['custom_domain.create', 'custom_domain.verify', 'custom_domain.delete'].every((a) => actions.includes(a))
        ? true
        : undefined;
    });
  });
});
