import { expect } from 'chai';
import type { PublicStatusPage, StatusPage } from '@telemetry/contract';
import { createTenant, issueKey, registryWrite, StatusPageStore } from '@telemetry/store';
import { eventually, ownUser, runQuery, testStack, uid, type Running, adminRegistry } from '../support/fixtures.js';
import { apiClient } from '../support/api.js';
import { TcpGate } from '../support/tcp-gate.js';

/** The status page API and the public route, on real ClickHouse (the console's own tests are in test/browser). */
describe('status pages and the events overview API (real ClickHouse)', function () {
  this.timeout(60_000);
  let query: Running;
  const keys = { a: '', aLimited: '', b: '', noEvents: '' };
  const monitors: { id: string; name: string }[] = [];

  const client = apiClient(
    () => query.url,
    () => keys.a,
  );
  const api = <T>(method: string, path: string, opts: { key?: string | null; body?: unknown } = {}) =>
    client<T>(method, path, opts.body, { key: opts.key });

  before(async () => {
    const tenant = async (): Promise<string> => (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const [a, b] = [await tenant(), await tenant()];
    const all = ['checks:read', 'monitors:read', 'monitors:write', 'events:read'];
    keys.a = (await issueKey(adminRegistry(), { tenantId: a, kind: 'api', name: 'a', scopes: all })).key;
    keys.b = (await issueKey(adminRegistry(), { tenantId: b, kind: 'api', name: 'b', scopes: all })).key;
    keys.noEvents = (
      await issueKey(adminRegistry(), { tenantId: a, kind: 'api', name: 'no events', scopes: ['monitors:read'] })
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
      await issueKey(adminRegistry(), {
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

  it('gives a status page a configuration key: set, taken, changed, released, reused by another tenant', async () => {
    const [first, second] = [uid('keyed'), uid('keyed')];
    const key = uid('shop-page').toLowerCase();
    const bad = await api('POST', '/api/status-pages', {
      body: { slug: first, title: 'Keyed', monitor_ids: [monitors[0]!.id], key: 'Not A Key' },
    });
    expect(bad.status).to.equal(400);
    expect(bad.body.details?.problems?.map((p) => p.path)).to.deep.equal(['/key']);

    const created = await api<StatusPage>('POST', '/api/status-pages', {
      body: { slug: first, title: 'Keyed', monitor_ids: [monitors[0]!.id], key },
    });
    expect(created.status, created.text).to.equal(201);
    expect(created.body.data).to.include({ slug: first, key });
    expect((await api<StatusPage>('GET', `/api/status-pages/${first}`)).body.data.key).to.equal(key);
    // A page made without a key has none (null, not absent).
    const plain = await api<StatusPage>('POST', '/api/status-pages', {
      body: { slug: second, title: 'Plain', monitor_ids: [monitors[1]!.id] },
    });
    expect(plain.status, plain.text).to.equal(201);
    expect(plain.body.data.key).to.equal(null);
    const listed = await api<StatusPage[]>('GET', '/api/status-pages');
    expect(listed.body.data.find((p) => p.slug === second)).to.include({ key: null });

    // The key is taken within the tenant (and the slug error stays the slug's).
    const taken = await api('POST', '/api/status-pages', {
      body: { slug: uid('other'), title: 'Other', monitor_ids: [monitors[0]!.id], key },
    });
    expect(taken.status).to.equal(409);
    expect(taken.code).to.equal('KEY_TAKEN');
    const slugTaken = await api('POST', '/api/status-pages', {
      body: { slug: first, title: 'Other', monitor_ids: [monitors[0]!.id], key: uid('free').toLowerCase() },
    });
    expect(slugTaken.code).to.equal('SLUG_TAKEN');
    const patchTaken = await api('PATCH', `/api/status-pages/${second}`, { body: { key } });
    expect(patchTaken.status).to.equal(409);
    expect(patchTaken.code).to.equal('KEY_TAKEN');
    expect((await api<StatusPage>('GET', `/api/status-pages/${second}`)).body.data.key).to.equal(null);

    // Changed, then released: the other page may then take it; the other settings stay.
    const renamedKey = `${key}-2`;
    const changed = await api<StatusPage>('PATCH', `/api/status-pages/${first}`, { body: { key: renamedKey } });
    expect(changed.status, changed.text).to.equal(200);
    expect(changed.body.data).to.include({ key: renamedKey, title: 'Keyed' });
    const released = await api<StatusPage>('PATCH', `/api/status-pages/${first}`, { body: { key: null } });
    expect(released.status, released.text).to.equal(200);
    expect(released.body.data).to.include({ key: null, title: 'Keyed' });
    expect(released.body.data.monitor_ids).to.deep.equal([monitors[0]!.id]);
    const reused = await api<StatusPage>('PATCH', `/api/status-pages/${second}`, { body: { key: renamedKey } });
    expect(reused.status, reused.text).to.equal(200);
    expect(reused.body.data.key).to.equal(renamedKey);

    // Keys are per tenant: tenant B may use the same one.
    const bMonitor = await api<{ id: string }>('POST', '/api/monitors', {
      key: keys.b,
      body: { name: 'B shop', url: 'http://127.0.0.1:9/health', paused: true },
    });
    expect(bMonitor.status, bMonitor.text).to.equal(201);
    const inB = await api<StatusPage>('POST', '/api/status-pages', {
      key: keys.b,
      body: { slug: uid('b-keyed'), title: 'B', monitor_ids: [bMonitor.body.data.id], key: renamedKey },
    });
    expect(inB.status, inB.text).to.equal(201);
    expect(inB.body.data.key).to.equal(renamedKey);
  });

  it("writes pages inside a caller's registry transaction: keyed and unkeyed, KEY_TAKEN, all or nothing", async () => {
    const db = adminRegistry();
    const store = new StatusPageStore(db);
    const tenantId = (await createTenant(db, uid('tenant'))).tenant_id;
    const at = '2026-11-01T00:00:00Z';
    const page = (slug: string, key?: string) => ({
      slug,
      tenant_id: tenantId,
      title: `Title of ${slug}`,
      description: null,
      monitor_ids: ['mon_0000000000000001'],
      ...(key ? { key } : {}),
      created_at: at,
      updated_at: at,
    });
    const [kept, plain, gone] = [uid('kept'), uid('plain'), uid('gone')];
    await registryWrite(db, async (tx) => {
      await store.createIn(tx, page(kept, 'kept'));
      await store.createIn(tx, page(plain));
      await store.createIn(tx, page(gone, 'gone'));
      expect((await store.keyedIn(tx, tenantId)).map((p) => [p.slug, p.key])).to.have.deep.members([
        [kept, 'kept'],
        [gone, 'gone'],
      ]);
    });
    expect(await store.unkeyedIn(db, tenantId)).to.deep.equal([{ slug: plain, title: `Title of ${plain}` }]);

    // A key taken inside the transaction: KEY_TAKEN, and nothing of the transaction stays.
    let refused: unknown;
    await registryWrite(db, async (tx) => {
      const current = (await store.get(kept))!;
      expect(await store.updateIn(tx, { ...current, title: 'Changed' }, current.version)).to.include({ version: 2 });
      expect(await store.removeIn(tx, gone, tenantId, 1)).to.equal(true);
      await store.setKeyIn(tx, tenantId, plain, 'kept');
    }).catch((err: unknown) => {
      refused = err;
    });
    expect(refused).to.have.property('code', 'KEY_TAKEN');
    expect(await store.get(kept)).to.include({ title: `Title of ${kept}`, version: 1 });
    expect(await store.get(gone)).to.include({ key: 'gone' });

    // Then for real: adopt the plain page, change one, delete one.
    await registryWrite(db, async (tx) => {
      expect(await store.setKeyIn(tx, tenantId, plain, 'plain')).to.equal(true);
      expect(await store.setKeyIn(tx, tenantId, uid('nothing'), 'nothing')).to.equal(false);
      expect(await store.removeIn(tx, gone, tenantId, 1)).to.equal(true);
      const current = (await store.get(kept))!;
      expect(await store.updateIn(tx, { ...current, key: 'kept-2' }, current.version)).to.include({ key: 'kept-2' });
    });
    expect((await store.ofTenant(tenantId)).map((p) => [p.slug, p.key, p.version])).to.have.deep.members([
      [kept, 'kept-2', 2],
      [plain, 'plain', 2],
    ]);
    expect(await store.unkeyedIn(db, tenantId)).to.deep.equal([]);
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
    // Monitor ids are public (badges and per-monitor subscriptions name them); nothing else of a monitor is.
    expect(r.body.data.monitors.map((m) => m.id)).to.deep.equal(monitors.map((m) => m.id));
    for (const hidden of ['shop.example.com', 'X-Token', 'secret-value', 'tenant']) {
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

/** Public pages read by crowds without a key: one render at a time, stale over failed, evictions per page. */
describe('public status pages under anonymous load (real ClickHouse)', function () {
  this.timeout(90_000);
  /** A long page time: what is rendered stays, unless an edit evicts it. */
  let cached: Running;
  const keys = { a: '', b: '' };
  const monitorOf = { a: '', b: '' };

  const get = (s: Running, slug: string): Promise<Response> => fetch(`${s.url}/api/status/${slug}`);
  async function call<T>(s: Running, key: string, method: string, path: string, body?: unknown): Promise<T> {
    const r = await fetch(`${s.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text}`);
    return (JSON.parse(text) as { data: T }).data;
  }
  const createPage = async (s: Running, tenant: 'a' | 'b', title: string): Promise<string> => {
    const slug = uid(`load-${tenant}`);
    await call(s, keys[tenant], 'POST', '/api/status-pages', { slug, title, monitor_ids: [monitorOf[tenant]] });
    return slug;
  };
  /** status_page_renders_total{outcome} of one service. */
  async function renders(s: Running, outcome: 'ok' | 'failed'): Promise<number> {
    const text = await (await fetch(`${s.url}/metrics`)).text();
    const m = new RegExp(`^status_page_renders_total\\{outcome="${outcome}"[^}]*\\} (\\d+)$`, 'm').exec(text);
    return Number(m?.[1] ?? 0);
  }
  /** Waits until the service's change feed applied every registry change made so far. */
  async function feedCaughtUp(s: Running): Promise<void> {
    const { rows } = await adminRegistry().query<{ seq: string }>('SELECT max(seq) AS seq FROM registry_changes');
    const last = Number(rows[0]!.seq);
    await eventually(`the feed at change ${last}`, async () => {
      const text = await (await fetch(`${s.url}/metrics`)).text();
      const applied = [...text.matchAll(/^registry_feed_sequence\{[^}]*\} (\d+)$/gm)].map((m) => Number(m[1]));
      return applied.length > 0 && applied.every((n) => n >= last) ? true : undefined;
    });
  }
  const keysLoaded = (s: Running): Promise<true> =>
    eventually('keys loaded', async () =>
      (await fetch(`${s.url}/api/status-pages`, { headers: { authorization: `Bearer ${keys.b}` } })).status === 200
        ? true
        : undefined,
    );

  before(async () => {
    const scopes = ['monitors:read', 'monitors:write'];
    for (const t of ['a', 'b'] as const) {
      const tenantId = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
      keys[t] = (await issueKey(adminRegistry(), { tenantId, kind: 'api', name: t, scopes })).key;
    }
    cached = await runQuery({ STATUS_PAGE_CACHE_SECONDS: '600' });
    await keysLoaded(cached);
    for (const t of ['a', 'b'] as const) {
      monitorOf[t] = (
        await call<{ id: string }>(cached, keys[t], 'POST', '/api/monitors', {
          name: `Monitor ${t}`,
          url: 'https://shop.example.com/health',
          paused: true,
        })
      ).id;
    }
  });

  after(async () => {
    await cached?.stop();
  });

  it('renders a cold page once for 25 concurrent anonymous requests', async () => {
    const slug = await createPage(cached, 'a', 'Crowd');
    const before = await renders(cached, 'ok');
    const answers = await Promise.all(Array.from({ length: 25 }, () => get(cached, slug)));
    expect(answers.map((r) => r.status)).to.deep.equal(Array(25).fill(200));
    const bodies = await Promise.all(answers.map((r) => r.json() as Promise<{ data: { title: string } }>));
    expect(new Set(bodies.map((b) => b.data.title))).to.deep.equal(new Set(['Crowd']));
    expect((await renders(cached, 'ok')) - before).to.equal(1);
  });

  it('keeps a rendered page when a notice brings the settings it shows, and renders anew for other settings', async () => {
    const slug = await createPage(cached, 'a', 'Notice');
    await feedCaughtUp(cached);
    const before = await renders(cached, 'ok');
    expect((await get(cached, slug)).status).to.equal(200);
    // A write that changes nothing it shows (as the notice of this replica's own change,
    // which may come after a render): the page stays cached.
    await adminRegistry().query('UPDATE status_pages SET updated_at = updated_at WHERE slug = $1', [slug]);
    await feedCaughtUp(cached);
    expect((await get(cached, slug)).status).to.equal(200);
    expect((await renders(cached, 'ok')) - before, 'renders after a notice of the same settings').to.equal(1);
    // A change of its title elsewhere: rendered anew, with the new title.
    await adminRegistry().query(
      "UPDATE status_pages SET title = 'Notice renamed', version = version + 1 WHERE slug = $1",
      [slug],
    );
    await feedCaughtUp(cached);
    const renamed = (await (await get(cached, slug)).json()) as { data: { title: string } };
    expect(renamed.data.title).to.equal('Notice renamed');
    expect((await renders(cached, 'ok')) - before).to.equal(2);
  });

  it("evicts only the edited page: tenant A's edits leave tenant B's (and A's other) pages cached", async () => {
    const [a, a2, b] = [
      await createPage(cached, 'a', 'A'),
      await createPage(cached, 'a', 'A2'),
      await createPage(cached, 'b', 'B'),
    ];
    for (const slug of [a, a2, b]) expect((await get(cached, slug)).status).to.equal(200);
    const before = await renders(cached, 'ok');
    await call(cached, keys.a, 'PATCH', `/api/status-pages/${a}`, { title: 'A renamed' });
    await call(cached, keys.a, 'PATCH', `/api/monitors/${monitorOf.a}`, { name: 'Monitor a renamed' });
    for (const slug of [b, a2]) expect((await get(cached, slug)).status).to.equal(200);
    expect((await renders(cached, 'ok')) - before, 'renders for the pages not edited').to.equal(0);
    const edited = (await (await get(cached, a)).json()) as { data: { title: string } };
    expect(edited.data.title).to.equal('A renamed');
    expect((await renders(cached, 'ok')) - before).to.equal(1);
  });

  it('answers the last good page, marked stale, while ClickHouse cannot be read, and retries once per interval', async () => {
    const gate = TcpGate.for(testStack().clickhouseUrl);
    await gate.start();
    const gated = await runQuery({
      ...ownUser('query-service'),
      CLICKHOUSE_URL: gate.rewrite(testStack().clickhouseUrl),
      STATUS_PAGE_CACHE_SECONDS: '3',
    });
    try {
      await keysLoaded(gated);
      const [good, never] = [await createPage(gated, 'b', 'Good'), await createPage(gated, 'b', 'Never')];
      const first = await get(gated, good);
      expect(first.status).to.equal(200);
      expect(first.headers.get('x-status-page-stale')).to.equal(null);
      const fresh = (await first.json()) as { data: PublicStatusPage };
      expect(fresh.data.stale).to.equal(false);

      gate.shut();
      const failedBefore = await renders(gated, 'failed');
      // After the page's time (3 s), one request tries, fails and answers the last good page.
      const stale = await eventually('a stale answer', async () => {
        const r = await get(gated, good);
        return r.headers.get('x-status-page-stale') === '1' ? r : undefined;
      });
      expect(stale.status).to.equal(200);
      expect(stale.headers.get('warning')).to.equal('110 - "Response is Stale"');
      expect(stale.headers.get('cache-control')).to.match(/^public, max-age=[0-3]$/);
      const body = (await stale.json()) as { success: boolean; data: PublicStatusPage };
      expect(body).to.deep.equal({ success: true, data: { ...fresh.data, stale: true } });
      expect((await renders(gated, 'failed')) - failedBefore).to.equal(1);
      // Until the interval is over, no request tries again, however many come.
      const burst = await Promise.all(Array.from({ length: 20 }, () => get(gated, good)));
      expect(burst.map((r) => [r.status, r.headers.get('x-status-page-stale')])).to.deep.equal(
        Array(20).fill([200, '1']),
      );
      expect((await renders(gated, 'failed')) - failedBefore).to.equal(1);
      // A page never rendered answers the error, as before; and it too is tried once per interval.
      for (let i = 0; i < 3; i++) {
        const r = await get(gated, never);
        expect(r.status).to.equal(503);
        expect(await r.json()).to.deep.include({ success: false, code: 'STORE_UNAVAILABLE' });
      }
      expect((await renders(gated, 'failed')) - failedBefore).to.equal(2);

      gate.reopen();
      await eventually('a fresh page again', async () => {
        const r = await get(gated, good);
        return r.headers.get('x-status-page-stale') === null &&
          ((await r.json()) as { data: PublicStatusPage }).data.stale === false
          ? true
          : undefined;
      });
    } finally {
      gate.reopen();
      await gated.stop();
      await gate.stop();
    }
  });
});
