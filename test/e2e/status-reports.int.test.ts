import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type {
  AuditEntry,
  Incident,
  PublicReport,
  PublicStatusPage,
  StatusNoticeWebhook,
  StatusReportView,
} from '@telemetry/contract';
import { createValidators, STATUS_FOLLOW_LIMITS } from '@telemetry/contract';
import { createTenant, issueKey } from '@telemetry/store';
import {
  adminRegistry,
  collectTopic,
  eventually,
  runConsumer,
  runQuery,
  runRunner,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiClient, type ApiAnswer } from '../support/api.js';
import { TestTarget } from '../support/target.js';

/**
 * Status reports (docs/console.md, "Status reports"; docs/api.md, "Status reports") on the
 * real stack: the owner's routes, their validation and caps, the public page's reports and
 * maintenance, the history, drafts from a real incident, and the notices and deliveries
 * each publishing write makes in its own transaction.
 */
describe('status reports, their notices, the public page and its history (real Kafka, ClickHouse, PostgreSQL)', function () {
  this.timeout(120_000);
  let query: Running;
  let audit: Awaited<ReturnType<typeof collectTopic>>;
  const keys = { a: '', b: '', aLimited: '' };
  const tenants = { a: '', b: '' };
  const m = { shop: '', checkout: '', other: '', b: '' };
  const client = apiClient(
    () => query.url,
    () => keys.a,
  );
  const api = <T>(method: string, path: string, body?: unknown, key?: string | null) =>
    client<T>(method, path, body, { key });
  const problems = (r: ApiAnswer<unknown>): string[] => (r.body.details?.problems ?? []).map((p) => p.path);
  const inAnHour = Date.now() + 3_600_000;
  const iso = (ms: number) => new Date(ms).toISOString();
  const secondsIso = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;

  const monitor = async (key: string, name: string, extra: Record<string, unknown> = {}): Promise<string> => {
    const r = await api<{ id: string }>(
      'POST',
      '/api/monitors',
      { name, url: 'https://shop.example.com/health', paused: true, ...extra },
      key,
    );
    expect(r.status, r.text).to.equal(201);
    return r.body.data.id;
  };
  const page = async (monitorIds: string[], key = keys.a, title = 'Shop status'): Promise<string> => {
    const slug = uid('rpt');
    const r = await api('POST', '/api/status-pages', { slug, title, monitor_ids: monitorIds }, key);
    expect(r.status, r.text).to.equal(201);
    return slug;
  };
  const report = async (slug: string, body: Record<string, unknown>): Promise<StatusReportView> => {
    const r = await api<StatusReportView>('POST', `/api/status-pages/${slug}/reports`, body);
    expect(r.status, r.text).to.equal(201);
    return r.body.data;
  };
  const post = async (slug: string, id: string, body: Record<string, unknown>): Promise<StatusReportView> => {
    const r = await api<StatusReportView>('POST', `/api/status-pages/${slug}/reports/${id}/updates`, body);
    expect(r.status, r.text).to.equal(201);
    return r.body.data;
  };
  const validators = createValidators();
  /** The public page, checked against its published schema (PublicStatusPage). */
  const publicPage = async (slug: string): Promise<PublicStatusPage> => {
    const r = await api<PublicStatusPage>('GET', `/api/status/${slug}`, undefined, null);
    expect(r.status, r.text).to.equal(200);
    expect(validators.publicStatusPage(r.body.data), JSON.stringify(validators.publicStatusPage.errors)).to.equal(true);
    return r.body.data;
  };
  /** An active (or pending) email subscriber of the page, as the subscription routes would make it. */
  const subscriber = async (slug: string, monitorIds: string[], state = 'active'): Promise<string> => {
    const id = `sub_${randomBytes(10).toString('hex')}`;
    await adminRegistry().query(
      `INSERT INTO status_subscribers (subscriber_id, slug, tenant_id, kind, address_hash, email, monitor_ids, state)
       VALUES ($1, $2, $3, 'email', $4, $5, $6, $7)`,
      [id, slug, tenants.a, randomBytes(32).toString('hex'), `${id}@example.test`, monitorIds, state],
    );
    return id;
  };
  interface NoticeRow {
    notice_id: string;
    kind: string;
    update_id: string;
    title: string;
    body: string;
    payload: Pick<StatusNoticeWebhook, 'report' | 'update'>;
    tx: string;
    subscribers: string[];
    delivery_txs: string[];
  }
  /** A report's notices, oldest first, with their deliveries and the transactions that made them. */
  const notices = async (reportId: string): Promise<NoticeRow[]> =>
    (
      await adminRegistry().query<NoticeRow>(
        `SELECT n.notice_id, n.kind, n.update_id, n.title, n.body, n.payload, n.xmin::text AS tx,
           coalesce(array_agg(d.subscriber_id ORDER BY d.subscriber_id) FILTER (WHERE d.subscriber_id IS NOT NULL), '{}') AS subscribers,
           coalesce(array_agg(DISTINCT d.xmin::text) FILTER (WHERE d.subscriber_id IS NOT NULL), '{}') AS delivery_txs
         FROM status_notices n LEFT JOIN status_deliveries d USING (notice_id)
         WHERE n.report_id = $1 GROUP BY n.notice_id ORDER BY n.created_at, n.notice_id`,
        [reportId],
      )
    ).rows;
  /** The transaction that last wrote the report's row, and the one that made the update's. */
  const txOf = async (table: 'status_reports' | 'status_report_updates', column: string, id: string) =>
    (await adminRegistry().query<{ tx: string }>(`SELECT xmin::text AS tx FROM ${table} WHERE ${column} = $1`, [id]))
      .rows[0]?.tx;

  before(async () => {
    tenants.a = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    tenants.b = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const scopes = ['checks:read', 'monitors:read', 'monitors:write'];
    keys.a = (await issueKey(adminRegistry(), { tenantId: tenants.a, kind: 'api', name: 'a', scopes })).key;
    keys.b = (await issueKey(adminRegistry(), { tenantId: tenants.b, kind: 'api', name: 'b', scopes })).key;
    audit = await collectTopic(testStack().auditTopic);
    // The query service's own PostgreSQL role; public pages kept long: a report write must evict it.
    query = await runQuery({ DATABASE_URL: testStack().users.postgres!.query, STATUS_PAGE_CACHE_SECONDS: '600' });
    await eventually('keys loaded', async () =>
      (await api('GET', '/api/monitors')).status === 200 ? true : undefined,
    );
    await eventually('key b loaded', async () =>
      (await api('GET', '/api/monitors', undefined, keys.b)).status === 200 ? true : undefined,
    );
    m.shop = await monitor(keys.a, 'Shop', {
      maintenance_windows: [
        { from: iso(inAnHour), to: iso(inAnHour + 7_200_000), message: 'Database upgrade <b>v2</b>' },
        { from: iso(Date.now() - 3_600_000), to: iso(inAnHour) },
        // Beyond the days shown.
        { from: iso(Date.now() + 10 * 86_400_000), to: iso(Date.now() + 11 * 86_400_000), message: 'later' },
      ],
    });
    m.checkout = await monitor(keys.a, 'Checkout', {
      maintenance_windows: [
        { from: iso(Date.now() - 600_000), to: iso(Date.now() + 600_000), message: 'Network work' },
      ],
    });
    m.other = await monitor(keys.a, 'Not on the page');
    m.b = await monitor(keys.b, 'B');
    keys.aLimited = (
      await issueKey(adminRegistry(), {
        tenantId: tenants.a,
        kind: 'api',
        name: 'limited',
        scopes,
        monitorIds: [m.shop, m.checkout],
      })
    ).key;
    await eventually('limited key loaded', async () =>
      (await api('GET', '/api/monitors', undefined, keys.aLimited)).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    await Promise.all([query?.stop(), audit?.stop()]);
  });

  it('posts a draft, publishes it, updates, resolves and reopens it: each publishing write tells the subscribers it concerns, in its transaction', async () => {
    const slug = await page([m.shop, m.checkout]);
    const [all, shop, checkout] = [
      await subscriber(slug, []),
      await subscriber(slug, [m.shop]),
      await subscriber(slug, [m.checkout]),
    ];
    await subscriber(slug, [], 'pending');
    expect((await publicPage(slug)).reports).to.deep.equal([]); // rendered and kept (600 s) before the report

    const markup = '<script>alert(1)</script> **Checkout** & <b>payments</b>';
    const draft = await report(slug, {
      title: 'Payments <i>slow</i>',
      monitor_ids: [m.shop],
      message: markup,
      draft: true,
    });
    expect(draft).to.deep.include({
      slug,
      title: 'Payments <i>slow</i>',
      impact: 'major',
      state: 'investigating',
      draft: true,
      incident_id: null,
      resolved_at: null,
    });
    expect(draft.id).to.match(/^rpt_[a-z0-9]{20}$/);
    expect(draft.monitor_ids).to.deep.equal([m.shop]);
    expect(draft.updates).to.have.length(1);
    expect(draft.updates[0]).to.include({ state: 'investigating', message: markup });
    expect(await notices(draft.id), 'a draft tells nobody').to.deep.equal([]);
    expect((await publicPage(slug)).reports, 'a draft is not public').to.deep.equal([]);
    const got = await api<StatusReportView>('GET', `/api/status-pages/${slug}/reports/${draft.id}`);
    expect(got.body.data).to.deep.equal(draft);
    expect(got.text, 'markup is returned as typed (JSON-escaped only)').to.contain('<script>alert(1)</script>');

    // Published: report_opened, to everyone of [] and of Shop, not to Checkout's nor the pending one.
    const published = await api<StatusReportView>('PATCH', `/api/status-pages/${slug}/reports/${draft.id}`, {
      draft: false,
      impact: 'minor',
    });
    expect(published.status, published.text).to.equal(200);
    expect(published.body.data).to.include({ draft: false, impact: 'minor' });
    let told = await notices(draft.id);
    expect(told).to.have.length(1);
    expect(told[0]).to.include({ kind: 'report_opened', update_id: draft.updates[0]!.id });
    expect(told[0]!.subscribers).to.deep.equal([all, shop].sort());
    expect(told[0]!.title).to.equal('[Shop status] Payments <i>slow</i>: Investigating');
    expect(told[0]!.body).to.contain(markup).and.contain('Affected: Shop').and.contain('Status: Investigating');
    expect(told[0]!.payload.report).to.deep.include({ id: draft.id, impact: 'minor', state: 'investigating' });
    expect(told[0]!.payload.report!.monitors).to.deep.equal([{ id: m.shop, name: 'Shop' }]);
    expect(told[0]!.payload.update).to.deep.include({ id: draft.updates[0]!.id, message: markup });
    // One transaction: the report's change, the notice and its deliveries.
    expect(told[0]!.delivery_txs).to.deep.equal([told[0]!.tx]);
    expect(await txOf('status_reports', 'report_id', draft.id)).to.equal(told[0]!.tx);
    // Publishing again tells nobody again.
    await api('PATCH', `/api/status-pages/${slug}/reports/${draft.id}`, { draft: false });
    expect(await notices(draft.id)).to.have.length(1);
    // Shown at once on this replica (its copy was evicted), markup as typed.
    const shown = (await publicPage(slug)).reports;
    expect(shown.map((r) => r.id)).to.deep.equal([draft.id]);
    expect(shown[0]!.monitors).to.deep.equal([{ id: m.shop, name: 'Shop' }]);
    expect(shown[0]!.updates[0]!.message).to.equal(markup);
    expect(shown[0]).to.not.have.any.keys('draft', 'monitor_ids', 'slug', 'incident_id');

    // Updates: identified (told), resolved (off the page, into the history), then reopened.
    const identified = await post(slug, draft.id, { state: 'identified', message: 'A slow database' });
    expect(identified).to.include({ state: 'identified', resolved_at: null });
    expect(identified.updates.map((u) => u.state)).to.deep.equal(['identified', 'investigating']);
    told = await notices(draft.id);
    expect(told).to.have.length(2);
    expect(told[1]).to.include({ kind: 'report_updated', update_id: identified.updates[0]!.id });
    expect(told[1]!.title).to.equal('[Shop status] Payments <i>slow</i>: Identified');
    expect(told[1]!.body).to.contain('A slow database').and.contain(identified.updates[0]!.at);
    expect(told[1]!.subscribers).to.deep.equal([all, shop].sort());
    expect(await txOf('status_report_updates', 'update_id', identified.updates[0]!.id)).to.equal(told[1]!.tx);
    expect(told[1]!.delivery_txs).to.deep.equal([told[1]!.tx]);

    const resolvedAt = Date.now() - 60_000;
    const resolved = await post(slug, draft.id, { state: 'resolved', message: 'Fixed', at: iso(resolvedAt) });
    // The newest update by time is the resolution only if it is the newest: here it is older than "identified".
    expect(resolved.state).to.equal('identified');
    const resolvedNow = await post(slug, draft.id, { state: 'resolved', message: 'Fixed for good' });
    expect(resolvedNow.state).to.equal('resolved');
    expect(resolvedNow.resolved_at).to.equal(resolvedNow.updates[0]!.at);
    expect((await publicPage(slug)).reports).to.deep.equal([]);
    const history = await api<PublicReport[]>('GET', `/api/status/${slug}/history`, undefined, null);
    expect(history.body.data.map((r) => r.id)).to.deep.equal([draft.id]);
    expect(history.body.data[0]!.updates).to.have.length(4);

    const reopened = await post(slug, draft.id, { state: 'monitoring', message: 'Back again' });
    expect(reopened).to.include({ state: 'monitoring', resolved_at: null });
    expect((await publicPage(slug)).reports.map((r) => r.state)).to.deep.equal(['monitoring']);
    expect((await notices(draft.id)).map((n) => n.kind)).to.deep.equal([
      'report_opened',
      'report_updated',
      'report_updated',
      'report_updated',
      'report_updated',
    ]);

    // A report of the whole page reaches the subscriber of Checkout too.
    const whole = await report(slug, { title: 'Everything', message: 'All down', impact: 'critical' });
    const wholeTold = await notices(whole.id);
    expect(wholeTold.map((n) => n.kind)).to.deep.equal(['report_opened']);
    expect(wholeTold[0]!.subscribers).to.deep.equal([all, shop, checkout].sort());
    expect(wholeTold[0]!.body).to.contain('Affected: the whole page');
    expect(await txOf('status_reports', 'report_id', whole.id)).to.equal(wholeTold[0]!.tx);
    // Updates of a draft tell nobody.
    const quiet = await report(slug, { title: 'Quiet', message: 'Draft', draft: true });
    await post(slug, quiet.id, { state: 'identified', message: 'Still a draft' });
    expect(await notices(quiet.id)).to.deep.equal([]);

    // The owner's list: newest first, drafts included.
    const list = await api<StatusReportView[]>('GET', `/api/status-pages/${slug}/reports`);
    expect(list.body.data.map((r) => r.id)).to.deep.equal([quiet.id, whole.id, draft.id]);
    expect(list.body.next_cursor).to.equal(null);

    // Deleted: gone from the owner's routes and the page, its notices with it.
    expect((await api('DELETE', `/api/status-pages/${slug}/reports/${whole.id}`)).status).to.equal(200);
    expect((await api('GET', `/api/status-pages/${slug}/reports/${whole.id}`)).code).to.equal('REPORT_NOT_FOUND');
    expect((await api('DELETE', `/api/status-pages/${slug}/reports/${whole.id}`)).code).to.equal('REPORT_NOT_FOUND');
    expect(await notices(whole.id)).to.deep.equal([]);
    expect((await publicPage(slug)).reports.map((r) => r.id)).to.deep.equal([draft.id]);

    // Every write is in the audit log.
    const actions = await eventually('the audit entries', () => {
      const mine = (audit.values as AuditEntry[]).filter((e) => e.target.type === 'status_report');
      return mine.length >= 11 ? mine : undefined;
    });
    expect(actions.filter((e) => e.target.id === draft.id).map((e) => e.action)).to.deep.equal([
      'status_report.create',
      'status_report.update',
      'status_report.update',
      'status_report.post_update',
      'status_report.post_update',
      'status_report.post_update',
      'status_report.post_update',
    ]);
    expect(actions.filter((e) => e.target.id === whole.id).map((e) => e.action)).to.deep.equal([
      'status_report.create',
      'status_report.delete',
    ]);
  });

  it('refuses bad input with its path, other tenants, limited keys, and times ahead', async () => {
    const slug = await page([m.shop, m.checkout]);
    const base = `/api/status-pages/${slug}/reports`;
    const bad = await api('POST', base, { title: '', message: 'x'.repeat(5001), state: 'sleeping', impact: 'huge' });
    expect(bad.code).to.equal('VALIDATION_FAILED');
    expect(problems(bad)).to.include.members(['/title', '/message', '/state', '/impact']);
    const offPage = await api('POST', base, { title: 'T', message: 'M', monitor_ids: [m.shop, m.other, m.b] });
    expect(offPage.code).to.equal('VALIDATION_FAILED');
    expect(problems(offPage)).to.deep.equal(['/monitor_ids/1', '/monitor_ids/2']);
    const ahead = await api('POST', base, { title: 'T', message: 'M', at: iso(Date.now() + 10 * 60_000) });
    expect(ahead.status).to.equal(400);
    expect(problems(ahead)).to.deep.equal(['/at']);
    expect((await api('POST', base, { title: 'T', message: 'M', extra: 1 })).code).to.equal('VALIDATION_FAILED');
    expect((await api('GET', `${base}?limit=0`)).code).to.equal('INVALID_PARAMETER');

    const r = await report(slug, { title: 'T', message: 'M', at: iso(Date.now() + 60_000) });
    const path = `${base}/${r.id}`;
    expect(problems(await api('PATCH', path, { draft: true }))).to.deep.equal(['/draft']);
    expect(problems(await api('PATCH', path, { monitor_ids: [m.other] }))).to.deep.equal(['/monitor_ids/0']);
    expect(problems(await api('POST', `${path}/updates`, { state: 'done', message: ' ' }))).to.include.members([
      '/state',
      '/message',
    ]);
    const updateAhead = await api('POST', `${path}/updates`, {
      state: 'identified',
      message: 'M',
      at: iso(Date.now() + 3_600_000),
    });
    expect(problems(updateAhead)).to.deep.equal(['/at']);
    expect((await api('GET', `${base}/rpt_00000000000000000000`)).code).to.equal('REPORT_NOT_FOUND');
    expect((await api('GET', `${base}/nonsense`)).code).to.equal('REPORT_NOT_FOUND');
    expect((await api('GET', '/api/status-pages/no-such-page/reports')).code).to.equal('STATUS_PAGE_NOT_FOUND');

    // Another tenant: neither the page nor, on its own page, the report.
    expect((await api('GET', base, undefined, keys.b)).code).to.equal('STATUS_PAGE_NOT_FOUND');
    expect((await api('POST', `${path}/updates`, { state: 'resolved', message: 'x' }, keys.b)).code).to.equal(
      'STATUS_PAGE_NOT_FOUND',
    );
    const bSlug = await page([m.b], keys.b);
    expect((await api('GET', `/api/status-pages/${bSlug}/reports/${r.id}`, undefined, keys.b)).code).to.equal(
      'REPORT_NOT_FOUND',
    );
    expect((await api('DELETE', `/api/status-pages/${bSlug}/reports/${r.id}`, undefined, keys.b)).code).to.equal(
      'REPORT_NOT_FOUND',
    );
    // A key limited to the page's monitors reads, and writes nothing.
    expect((await api('GET', path, undefined, keys.aLimited)).status).to.equal(200);
    expect((await api('POST', base, { title: 'T', message: 'M' }, keys.aLimited)).code).to.equal('MONITOR_NOT_ALLOWED');
    expect((await api('DELETE', path, undefined, keys.aLimited)).code).to.equal('MONITOR_NOT_ALLOWED');
    expect((await api('GET', path)).body.data).to.deep.include({ id: r.id, title: 'T' });
  });

  it('caps open reports per page and updates per report (403 QUOTA_EXCEEDED)', async () => {
    const slug = await page([m.shop]);
    const max = STATUS_FOLLOW_LIMITS.maxOpenReportsPerPage;
    const made: StatusReportView[] = [];
    for (let i = 0; i < max; i++) made.push(await report(slug, { title: `R${i}`, message: 'M', draft: i % 2 === 0 }));
    const over = await api('POST', `/api/status-pages/${slug}/reports`, { title: 'One more', message: 'M' });
    expect(over.status).to.equal(403);
    expect(over.code).to.equal('QUOTA_EXCEEDED');
    // A resolved one is no open one: it may be posted, and resolving makes room.
    await report(slug, { title: 'Past', message: 'M', state: 'resolved' });
    await post(slug, made[0]!.id, { state: 'resolved', message: 'Done' });
    const room = await report(slug, { title: 'One more', message: 'M' });
    // Reopening one past the cap is refused, and changes nothing.
    const reopen = await api('POST', `/api/status-pages/${slug}/reports/${made[0]!.id}/updates`, {
      state: 'investigating',
      message: 'again',
    });
    expect(reopen.code).to.equal('QUOTA_EXCEEDED');
    expect(
      (await api<StatusReportView>('GET', `/api/status-pages/${slug}/reports/${made[0]!.id}`)).body.data,
    ).to.include({
      state: 'resolved',
    });

    // Updates per report: the report has 1; add up to the cap straight in the table, then one more is refused.
    const maxUpdates = STATUS_FOLLOW_LIMITS.maxUpdatesPerReport;
    await adminRegistry().query(
      `INSERT INTO status_report_updates (update_id, report_id, state, message, at)
       SELECT 'upd_' || substr(md5(random()::text || g::text), 1, 20), $1, 'identified', 'x', now() - interval '1 hour'
       FROM generate_series(1, $2) g`,
      [room.id, maxUpdates - 2],
    );
    await post(slug, room.id, { state: 'identified', message: 'the last one allowed' });
    const tooMany = await api('POST', `/api/status-pages/${slug}/reports/${room.id}/updates`, {
      state: 'identified',
      message: 'one too many',
    });
    expect(tooMany.status).to.equal(403);
    expect(tooMany.code).to.equal('QUOTA_EXCEEDED');
  });

  it('pages the history and the owner list, newest first; refuses bad cursors and limits', async () => {
    const slug = await page([m.shop]);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await report(slug, { title: `Old ${i}`, message: 'M', state: 'resolved' })).id);
    await report(slug, { title: 'Draft resolved', message: 'M', state: 'resolved', draft: true });
    await report(slug, { title: 'Open', message: 'M' });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const path: string = `/api/status/${slug}/history?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const r: ApiAnswer<PublicReport[]> = await api<PublicReport[]>('GET', path, undefined, null);
      expect(r.status, r.text).to.equal(200);
      expect(r.headers.get('cache-control')).to.match(/^public, max-age=\d+$/);
      expect(r.body.data.length).to.be.at.most(2);
      seen.push(...r.body.data.map((x) => x.id));
      cursor = r.body.next_cursor ?? null;
      pages++;
    } while (cursor);
    expect(pages).to.equal(3);
    expect(seen, 'resolved and published only, newest first').to.deep.equal([...ids].reverse());
    for (const q of [
      'limit=0',
      `limit=${STATUS_FOLLOW_LIMITS.maxHistoryPageSize + 1}`,
      'limit=x',
      'cursor=bm9wZQ',
      'page=2',
    ]) {
      const r = await api('GET', `/api/status/${slug}/history?${q}`, undefined, null);
      expect(r.status, q).to.equal(400);
      expect(r.code, q).to.equal('INVALID_PARAMETER');
    }
    expect((await api('GET', '/api/status/no-such-page/history', undefined, null)).code).to.equal(
      'STATUS_PAGE_NOT_FOUND',
    );
    const owner = await api<StatusReportView[]>('GET', `/api/status-pages/${slug}/reports?limit=6`);
    expect(owner.body.data.map((r) => r.title)).to.deep.equal([
      'Open',
      'Draft resolved',
      'Old 4',
      'Old 3',
      'Old 2',
      'Old 1',
    ]);
    const rest = await api<StatusReportView[]>(
      'GET',
      `/api/status-pages/${slug}/reports?limit=6&cursor=${owner.body.next_cursor}`,
    );
    expect(rest.body.data.map((r) => r.title)).to.deep.equal(['Old 0']);
    expect(rest.body.next_cursor).to.equal(null);
  });

  it("shows the page's maintenance in progress and coming up, soonest first, with its message", async () => {
    const slug = await page([m.shop, m.checkout]);
    const shown = (await publicPage(slug)).maintenance;
    expect(shown.map((w) => [w.monitor.name, w.in_progress, w.message])).to.deep.equal([
      ['Shop', true, null],
      ['Checkout', true, 'Network work'],
      ['Shop', false, 'Database upgrade <b>v2</b>'],
    ]);
    expect(shown[2]).to.deep.include({
      monitor: { id: m.shop, name: 'Shop' },
      starts_at: secondsIso(inAnHour),
      ends_at: secondsIso(inAnHour + 7_200_000),
    });
    // Only the page's monitors.
    const other = await page([m.checkout]);
    expect((await publicPage(other)).maintenance.map((w) => w.monitor.name)).to.deep.equal(['Checkout']);
  });

  describe('a draft from a real incident', function () {
    const target = new TestTarget();
    let consumer: Running;
    let runner: Running;
    let failing = '';

    before(async () => {
      await target.start();
      target.set('/down', 'error');
      [consumer, runner] = await Promise.all([runConsumer(), runRunner()]);
      failing = await monitor(keys.a, 'Payments API', { url: target.url('/down'), interval_seconds: 1, paused: false });
    });

    after(async () => {
      await Promise.all([runner?.stop(), consumer?.stop()]);
      await target.stop();
    });

    it('starts a draft from an incident of a monitor of the page; refuses others', async () => {
      const incident = await eventually(
        'an incident of the failing monitor',
        async () => (await api<Incident[]>('GET', `/api/monitors/${failing}/incidents`)).body.data?.[0],
        60_000,
      );
      const slug = await page([m.shop, failing]);
      const r = await api<StatusReportView>('POST', `/api/status-pages/${slug}/reports/from-incident`, {
        incident_id: incident.id,
      });
      expect(r.status, r.text).to.equal(201);
      expect(r.body.data).to.deep.include({
        title: 'Payments API is down',
        impact: 'major',
        state: 'investigating',
        draft: true,
        incident_id: incident.id,
        monitor_ids: [failing],
      });
      expect(r.body.data.updates[0]!.message).to.contain('Payments API').and.contain(incident.started_at);
      expect(await notices(r.body.data.id)).to.deep.equal([]);
      expect((await publicPage(slug)).reports).to.deep.equal([]);

      const notOnPage = await api('POST', `/api/status-pages/${await page([m.shop])}/reports/from-incident`, {
        incident_id: incident.id,
      });
      expect(notOnPage.code).to.equal('VALIDATION_FAILED');
      expect(problems(notOnPage)).to.deep.equal(['/incident_id']);
      const bSlug = await page([m.b], keys.b);
      const foreign = await api(
        'POST',
        `/api/status-pages/${bSlug}/reports/from-incident`,
        { incident_id: incident.id },
        keys.b,
      );
      expect(foreign.code).to.equal('INCIDENT_NOT_FOUND');
      expect(
        (await api('POST', `/api/status-pages/${slug}/reports/from-incident`, { incident_id: 'inc-unknown' })).code,
      ).to.equal('INCIDENT_NOT_FOUND');
      expect(problems(await api('POST', `/api/status-pages/${slug}/reports/from-incident`, {}))).to.deep.equal([
        '/incident_id',
      ]);
    });
  });
});
