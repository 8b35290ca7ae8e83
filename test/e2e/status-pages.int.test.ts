import { expect } from 'chai';
import type { Envelope, PublicStatusPage, StatusPage } from '@telemetry/contract';
import { createTenant, issueKey } from '@telemetry/store';
import { adminClickHouse, eventually, runQuery, testStack, uid, type Running } from '../support/fixtures.js';

/** The status page API and the public route, on real ClickHouse (the console's own tests are in test/browser). */
describe('status pages and the events overview API (real ClickHouse)', function () {
  this.timeout(60_000);
  let query: Running;
  const keys = { a: '', aLimited: '', b: '', noEvents: '' };
  const monitors: { id: string; name: string }[] = [];

  async function api<T>(
    method: string,
    path: string,
    opts: { key?: string | null; body?: unknown } = {},
  ): Promise<{ status: number; body: Envelope<T>; text: string; headers: Headers }> {
    const r = await fetch(`${query.url}${path}`, {
      method,
      headers: {
        ...(opts.key === null ? {} : { authorization: `Bearer ${opts.key ?? keys.a}` }),
        ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    const text = await r.text();
    return { status: r.status, body: JSON.parse(text) as Envelope<T>, text, headers: r.headers };
  }

  before(async () => {
    const s = testStack();
    const ch = adminClickHouse();
    try {
      const tenant = async (): Promise<string> => (await createTenant(ch, s.database, uid('tenant'))).tenant_id;
      const [a, b] = [await tenant(), await tenant()];
      const all = ['checks:read', 'monitors:read', 'monitors:write', 'events:read'];
      keys.a = (await issueKey(ch, s.database, { tenantId: a, kind: 'api', name: 'a', scopes: all })).key;
      keys.b = (await issueKey(ch, s.database, { tenantId: b, kind: 'api', name: 'b', scopes: all })).key;
      keys.noEvents = (
        await issueKey(ch, s.database, { tenantId: a, kind: 'api', name: 'no events', scopes: ['monitors:read'] })
      ).key;
      query = await runQuery({ STATUS_PAGE_CACHE_SECONDS: '2' });
      await eventually('keys loaded', async () =>
        (await api('GET', '/api/monitors')).status === 200 ? true : undefined,
      );
      for (const name of ['Shop', 'Checkout']) {
        const r = await api<{ id: string }>('POST', '/api/monitors', {
          body: { name, url: 'https://shop.example.com/health', headers: { 'X-Token': 'secret-value' }, paused: true },
        });
        expect(r.status).to.equal(201);
        if (r.body.success) monitors.push({ id: r.body.data.id, name });
      }
      keys.aLimited = (
        await issueKey(ch, s.database, {
          tenantId: a,
          kind: 'api',
          name: 'limited',
          scopes: all,
          monitorIds: [monitors[0]!.id],
        })
      ).key;
      await eventually('limited key loaded', async () =>
        (await api('GET', '/api/status-pages', { key: keys.aLimited })).status === 200 ? true : undefined,
      );
    } finally {
      await ch.close();
    }
  });

  after(async () => {
    await query?.stop();
  });

  it('publishes, reads, changes and deletes a status page; validates its body and its monitors', async () => {
    const slug = uid('shop');
    const bad = await api('POST', '/api/status-pages', { body: { slug: 'Not A Slug', title: '', monitor_ids: [] } });
    expect(bad.status).to.equal(400);
    expect(bad.text).to.contain('VALIDATION_FAILED');
    const paths = (bad.body as { details: { problems: { path: string }[] } }).details.problems.map((p) => p.path);
    expect(paths).to.include.members(['/slug', '/title', '/monitor_ids']);

    const unknown = await api('POST', '/api/status-pages', {
      body: { slug, title: 'Shop status', monitor_ids: [monitors[0]!.id, 'mon_0000000000000000'] },
    });
    expect(unknown.status).to.equal(400);
    expect(unknown.text).to.contain('/monitor_ids/1');

    const created = await api<StatusPage>('POST', '/api/status-pages', {
      body: { slug, title: 'Shop status', monitor_ids: monitors.map((m) => m.id) },
    });
    expect(created.status).to.equal(201);
    expect(created.headers.get('location')).to.equal(`/api/status-pages/${slug}`);
    expect(created.body).to.deep.include({ success: true });
    if (!created.body.success) return;
    expect(created.body.data).to.include({ slug, title: 'Shop status', description: null });

    const foreignMonitor = await api('POST', '/api/status-pages', {
      key: keys.b,
      body: { slug, title: 'Mine', monitor_ids: ['mon_0000000000000000'] },
    });
    expect(foreignMonitor.status).to.equal(400); // A monitor of tenant A is no monitor of tenant B
    const again = await api('POST', '/api/status-pages', {
      body: { slug, title: 'Again', monitor_ids: [monitors[0]!.id] },
    });
    expect(again.status).to.equal(409);
    expect(again.text).to.contain('SLUG_TAKEN');

    // Another tenant does not see it; a key limited to some monitors sees only pages of those, and changes none.
    expect((await api('GET', `/api/status-pages/${slug}`, { key: keys.b })).status).to.equal(404);
    expect((await api<StatusPage[]>('GET', '/api/status-pages', { key: keys.b })).text).to.not.contain(slug);
    expect((await api('GET', `/api/status-pages/${slug}`, { key: keys.aLimited })).status).to.equal(404);
    const limitedWrite = await api('PATCH', `/api/status-pages/${slug}`, { key: keys.aLimited, body: { title: 'x' } });
    expect(limitedWrite.status).to.equal(403);

    const patched = await api<StatusPage>('PATCH', `/api/status-pages/${slug}`, {
      body: { description: 'Our shop', monitor_ids: [monitors[1]!.id, monitors[0]!.id] },
    });
    expect(patched.status).to.equal(200);
    if (patched.body.success) {
      expect(patched.body.data).to.include({ description: 'Our shop', title: 'Shop status' });
      expect(patched.body.data.monitor_ids).to.deep.equal([monitors[1]!.id, monitors[0]!.id]);
    }
    const listed = await api<StatusPage[]>('GET', '/api/status-pages');
    expect(listed.body.success && listed.body.data.map((p) => p.slug)).to.include(slug);

    expect((await api('DELETE', `/api/status-pages/${slug}`)).status).to.equal(200);
    expect((await api('GET', `/api/status-pages/${slug}`)).status).to.equal(404);
    expect((await api('GET', `/api/status/${slug}`, { key: null })).status).to.equal(404);
  });

  it('serves the public page without a key: names, statuses and 90 days only, cached and shared', async () => {
    const slug = uid('public');
    const created = await api('POST', '/api/status-pages', {
      body: { slug, title: 'Public', monitor_ids: monitors.map((m) => m.id) },
    });
    expect(created.status).to.equal(201);
    const r = await api<PublicStatusPage>('GET', `/api/status/${slug}`, { key: null });
    expect(r.status).to.equal(200);
    expect(r.headers.get('cache-control')).to.match(/^public, max-age=\d+$/);
    if (!r.body.success) throw new Error(r.text);
    expect(r.body.data.monitors.map((m) => m.name)).to.deep.equal(['Shop', 'Checkout']);
    expect(r.body.data.monitors[0]).to.include({ status: 'paused', uptime_percent: null });
    expect(r.body.data.monitors[0]!.days).to.have.length(90);
    expect(r.body.data.status).to.equal('up');
    for (const hidden of ['shop.example.com', 'X-Token', 'secret-value', monitors[0]!.id, 'tenant']) {
      expect(r.text).to.not.contain(hidden);
    }
    // Unknown and malformed slugs: 404, without a key either.
    expect((await api('GET', '/api/status/no-such-page-here', { key: null })).status).to.equal(404);
    expect((await api('GET', '/api/status/..%2F..', { key: null })).status).to.equal(404);
    // Renamed monitors show after the page's cache time (2 s here), not before.
    const renamed = await api('PATCH', `/api/monitors/${monitors[0]!.id}`, { body: { name: 'Shop front' } });
    expect(renamed.status).to.equal(200);
    await eventually(
      'the renamed monitor on the public page',
      async () =>
        (await api('GET', `/api/status/${slug}`, { key: null })).text.includes('Shop front') ? true : undefined,
      10_000,
    );
  });

  it('answers events per minute by source and category, and needs the events:read scope', async () => {
    const r = await api<{ from: string; to: string; minutes: unknown[] }>('GET', '/api/events/per-minute');
    expect(r.status).to.equal(200);
    if (r.body.success) {
      expect(Date.parse(r.body.data.to) - Date.parse(r.body.data.from)).to.equal(3600_000);
      expect(r.body.data.minutes).to.deep.equal([]); // a new tenant has no events
    }
    expect((await api('GET', '/api/events/per-minute', { key: keys.noEvents })).text).to.contain('INSUFFICIENT_SCOPE');
    const tooLong = await api('GET', '/api/events/per-minute?from=2026-01-01T00:00:00Z&to=2026-01-03T00:00:00Z');
    expect(tooLong.status).to.equal(400);
    expect(tooLong.text).to.contain('INVALID_PARAMETER');
  });
});
