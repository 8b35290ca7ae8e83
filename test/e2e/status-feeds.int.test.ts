import { expect } from 'chai';
import { parseFeed } from '@rowanmanning/feed-parser';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { createTenant, insertNotice, issueKey, newStatusId } from '@telemetry/store';
import {
  adminClickHouse,
  adminRegistry,
  eventually,
  ownUser,
  runQuery,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { TcpGate } from '../support/tcp-gate.js';

/** A badge's label and text, from its <title> ("label: message"), once the SVG is known to be well-formed. */
function badgeText(svg: string): string {
  expect(XMLValidator.validate(svg), 'a well-formed SVG').to.equal(true);
  const doc = new XMLParser({ ignoreAttributes: false }).parse(svg) as { svg: { title: string; '@_xmlns': string } };
  expect(doc.svg['@_xmlns']).to.equal('http://www.w3.org/2000/svg');
  return doc.svg.title;
}

/** RSS and Atom feeds and SVG badges of public status pages (issue 43, items 3 and 4), on real PostgreSQL and ClickHouse. */
describe('status page feeds and badges (real PostgreSQL and ClickHouse)', function () {
  this.timeout(90_000);
  let query: Running;
  const tenants = { a: '', b: '' };
  const keys = { a: '', b: '' };
  const monitors = { paused: '', checked: '', offPage: '', foreign: '' };
  let slug = '';
  let foreignSlug = '';
  /** One PUBLIC_URL for every replica: the feeds' links name it, and a restarted replica renders the same bytes. */
  const publicUrl = 'https://status.example.test';
  const env = { STATUS_PAGE_CACHE_SECONDS: '1', PUBLIC_URL: publicUrl };

  const get = (path: string, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${query.url}${path}`, { headers });
  async function call<T>(key: string, method: string, path: string, body?: unknown): Promise<T> {
    const r = await fetch(`${query.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text}`);
    return (JSON.parse(text) as { data: T }).data;
  }
  const monitor = async (t: 'a' | 'b', name: string, paused: boolean): Promise<string> =>
    (await call<{ id: string }>(keys[t], 'POST', '/api/monitors', { name, url: 'https://shop.example.com/', paused }))
      .id;
  /** A notice made as the report and subscriber routes make them: insertNotice, in a transaction of the owner. */
  async function notice(kind: 'report_opened' | 'maintenance_started', title: string, body: string, reportId?: string) {
    const client = await adminRegistry().connect();
    try {
      await client.query('BEGIN');
      const made = await insertNotice(client, {
        slug,
        tenantId: tenants.a,
        kind,
        reportId,
        monitorIds: [],
        title,
        body,
        payload: {},
      });
      await client.query('COMMIT');
      return made!.noticeId;
    } finally {
      client.release();
    }
  }

  before(async () => {
    for (const t of ['a', 'b'] as const) {
      tenants[t] = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
      keys[t] = (
        await issueKey(adminRegistry(), {
          tenantId: tenants[t],
          kind: 'api',
          name: t,
          scopes: ['monitors:read', 'monitors:write'],
        })
      ).key;
    }
    query = await runQuery(env);
    await eventually('keys loaded', async () =>
      (await fetch(`${query.url}/api/monitors`, { headers: { authorization: `Bearer ${keys.b}` } })).status === 200
        ? true
        : undefined,
    );
    monitors.paused = await monitor('a', 'Paused', true);
    monitors.checked = await monitor('a', 'Checked', false);
    monitors.offPage = await monitor('a', 'Not on the page', true);
    monitors.foreign = await monitor('b', 'Foreign', true);
    slug = uid('feeds');
    foreignSlug = uid('feeds-b');
    await call(keys.a, 'POST', '/api/status-pages', {
      slug,
      title: 'Shop & <Co>',
      monitor_ids: [monitors.paused, monitors.checked],
    });
    await call(keys.b, 'POST', '/api/status-pages', { slug: foreignSlug, title: 'B', monitor_ids: [monitors.foreign] });
    // Checks of `checked`: in the last 24 h 3 up and 1 down (75 %), 3 days ago 4 up (7 d: 7 of
    // 8), 20 days ago 2 up (30 d: 9 of 10); every one answered in 120 ms.
    const now = Math.floor(Date.now() / 1000);
    const at = (secondsAgo: number, i: number, status: string) => ({
      tenant_id: tenants.a,
      monitor_id: monitors.checked,
      created_at: now - secondsAgo,
      id: `c${secondsAgo}-${i}`,
      status,
      response_time: 120,
      status_code: status === 'up' ? 200 : 503,
      error: '',
    });
    const rows = [
      ...['up', 'up', 'up', 'down'].map((s, i) => at(7200, i, s)),
      ...[0, 1, 2, 3].map((i) => at(3 * 86_400, i, 'up')),
      ...[0, 1].map((i) => at(20 * 86_400, i, 'up')),
    ];
    const ch = adminClickHouse();
    try {
      await ch.insert({ table: `${testStack().database}.checks`, values: rows, format: 'JSONEachRow' });
    } finally {
      await ch.close();
    }
    await eventually('the page in the directory', async () =>
      (await get(`/api/status/${slug}`)).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    await query?.stop();
  });

  describe('feeds', () => {
    const ids: string[] = [];
    let reportId = '';

    before(async () => {
      reportId = newStatusId('rpt');
      await adminRegistry().query(
        `INSERT INTO status_reports (report_id, slug, tenant_id, title, impact, state) VALUES ($1, $2, $3, 'Checkout down', 'major', 'investigating')`,
        [reportId, slug, tenants.a],
      );
      ids.push(await notice('report_opened', 'Checkout down', 'We are looking into it.', reportId));
      ids.push(await notice('maintenance_started', 'Maintenance of Shop', 'Until 10:00 UTC.'));
      ids.push(
        await notice(
          'report_opened',
          '<script>alert(1)</script> & more',
          'Body with <b>markup</b> & "quotes"',
          reportId,
        ),
      );
    });

    /** Both feeds once they list every notice made so far. */
    async function feeds(): Promise<{ rss: Response; atom: Response; rssText: string; atomText: string }> {
      return eventually('feeds with every notice', async () => {
        const [rss, atom] = [await get(`/status/${slug}/feed.rss`), await get(`/status/${slug}/feed.atom`)];
        const [rssText, atomText] = [await rss.text(), await atom.text()];
        return ids.every((id) => rssText.includes(id) && atomText.includes(id))
          ? { rss, atom, rssText, atomText }
          : undefined;
      });
    }

    it('serves RSS 2.0 and Atom 1.0 that a feed parser reads without errors: newest first, text as typed', async () => {
      const { rss, atom, rssText, atomText } = await feeds();
      expect(rss.status).to.equal(200);
      expect(atom.status).to.equal(200);
      expect(rss.headers.get('content-type')).to.equal('application/rss+xml; charset=utf-8');
      expect(atom.headers.get('content-type')).to.equal('application/atom+xml; charset=utf-8');
      for (const r of [rss, atom]) expect(r.headers.get('cache-control')).to.match(/^public, max-age=[01]$/);
      for (const text of [rssText, atomText]) {
        expect(XMLValidator.validate(text)).to.equal(true);
        // Markup people typed is never markup of the feed, nor HTML for its readers.
        expect(text).to.not.match(/<script|<b>/i);
      }
      expect(rssText).to.match(/^<\?xml[^>]*\?>\s*<rss version="2.0"/);
      expect(atomText).to.contain('<feed xmlns="http://www.w3.org/2005/Atom">');

      const base = `${publicUrl}/status/${slug}`;
      const expected = [
        {
          id: `urn:telemetry:notice:${ids[2]}`,
          title: '<script>alert(1)</script> & more',
          description: 'Body with <b>markup</b> & "quotes"',
          url: `${base}/history#${reportId}`,
        },
        {
          id: `urn:telemetry:notice:${ids[1]}`,
          title: 'Maintenance of Shop',
          description: 'Until 10:00 UTC.',
          url: base,
        },
        {
          id: `urn:telemetry:notice:${ids[0]}`,
          title: 'Checkout down',
          description: 'We are looking into it.',
          url: `${base}/history#${reportId}`,
        },
      ];
      for (const [format, text] of [
        ['rss', rssText],
        ['atom', atomText],
      ] as const) {
        const feed = parseFeed(text);
        expect(feed.meta.type, format).to.equal(format);
        expect(feed.title).to.equal('Shop & <Co>');
        expect(feed.url).to.equal(base);
        const items = feed.items.map((i) => ({ id: i.id, title: i.title, description: i.description, url: i.url }));
        expect(items, format).to.deep.equal(expected);
        // The feed's time is its newest entry's.
        expect(feed.updated?.getTime(), format).to.equal(feed.items[0]!.published?.getTime());
        // RSS dates are in whole seconds: the order itself is the deep equality above.
        expect(feed.items[0]!.published!.getTime()).to.be.at.least(feed.items[2]!.published!.getTime());
      }
    });

    it('keeps entry ids and the ETag across reads and a restart of the replica; answers 304 to If-None-Match', async () => {
      const first = await feeds();
      const again = await feeds();
      const entryIds = (text: string) => parseFeed(text).items.map((i) => i.id);
      expect(entryIds(again.rssText)).to.deep.equal(entryIds(first.rssText));
      expect(entryIds(again.atomText)).to.deep.equal(entryIds(first.atomText));
      const etag = first.atom.headers.get('etag')!;
      expect(etag).to.match(/^"[\w-]+"$/);
      const notModified = await get(`/status/${slug}/feed.atom`, { 'if-none-match': etag });
      expect(notModified.status).to.equal(304);
      expect(await notModified.text()).to.equal('');
      expect((await get(`/status/${slug}/feed.rss`, { 'if-none-match': etag })).status).to.equal(200);

      await query.stop();
      query = await runQuery(env);
      const restarted = await feeds();
      expect(entryIds(restarted.atomText)).to.deep.equal(entryIds(first.atomText));
      expect(entryIds(restarted.rssText)).to.deep.equal(entryIds(first.rssText));
      expect(restarted.atom.headers.get('etag')).to.equal(etag);
    });

    it('lists a new notice on top after the cache time, and no notice of another page', async () => {
      const foreign = newStatusId('ntc');
      await adminRegistry().query(
        `INSERT INTO status_notices (notice_id, slug, tenant_id, kind, title, body, payload) VALUES ($1, $2, $3, 'maintenance_started', 'B', 'B', '{}')`,
        [foreign, foreignSlug, tenants.b],
      );
      ids.push(await notice('maintenance_started', 'Newest', 'Newest body'));
      const { atomText } = await feeds();
      expect(parseFeed(atomText).items[0]!.id).to.equal(`urn:telemetry:notice:${ids[3]}`);
      expect(atomText).to.not.contain(foreign);
    });

    it('answers 404 with the envelope for an unknown or malformed slug, and refuses query parameters', async () => {
      for (const path of [
        '/status/no-such-page-here/feed.rss',
        '/status/no-such-page-here/feed.atom',
        '/status/NOT_A_SLUG/feed.rss',
      ]) {
        const r = await get(path);
        expect(r.status, path).to.equal(404);
        expect(await r.json()).to.deep.include({ success: false, code: 'STATUS_PAGE_NOT_FOUND' });
      }
      const unknown = await get(`/status/${slug}/feed.rss?x=1`);
      expect(unknown.status).to.equal(400);
      expect(await unknown.json()).to.deep.include({ code: 'INVALID_PARAMETER' });
      const post = await fetch(`${query.url}/status/${slug}/feed.atom`, { method: 'POST' });
      expect(post.status).to.equal(405);
    });
  });

  describe('badges', () => {
    const badge = (monitorId: string, file: string, s = slug) => get(`/status/${s}/badges/${monitorId}/${file}`);

    it('renders the status of a paused and of a checked monitor as valid SVG, cacheable, with ETag and 304', async () => {
      const paused = await badge(monitors.paused, 'status.svg');
      expect(paused.status).to.equal(200);
      expect(paused.headers.get('content-type')).to.match(/^image\/svg\+xml/);
      expect(paused.headers.get('cache-control')).to.match(/^public, max-age=[01]$/);
      const svg = await paused.text();
      expect(badgeText(svg)).to.equal('status: paused');
      expect(svg).to.contain('#939393'); // lightgrey
      const etag = paused.headers.get('etag')!;
      expect(etag).to.match(/^"[\w-]+"$/);
      const again = await get(`/status/${slug}/badges/${monitors.paused}/status.svg`, { 'if-none-match': etag });
      expect(again.status).to.equal(304);

      const checked = await badge(monitors.checked, 'status.svg');
      const checkedSvg = await checked.text();
      expect(badgeText(checkedSvg)).to.equal('status: up');
      expect(checkedSvg).to.contain('#4b0'); // brightgreen
    });

    it('renders uptime over 24h, 7d and 30d (the default) and the median response time', async () => {
      const text = async (file: string) => {
        const r = await badge(monitors.checked, file);
        expect(r.status, file).to.equal(200);
        return badgeText(await r.text());
      };
      expect(await text('uptime.svg?window=24h')).to.equal('uptime 24h: 75%');
      expect(await text('uptime.svg?window=7d')).to.equal('uptime 7d: 87.5%');
      expect(await text('uptime.svg?window=30d')).to.equal('uptime 30d: 90%');
      expect(await text('uptime.svg')).to.equal('uptime 30d: 90%');
      expect(await text('response-time.svg')).to.equal('response time 24h: 120 ms');
      // A monitor never checked: no data, not 0 %.
      const none = await badge(monitors.paused, 'uptime.svg?window=7d');
      expect(badgeText(await none.text())).to.equal('uptime 7d: no data');
    });

    it('refuses another window (400), and a monitor not on the page or of another tenant (404, the envelope)', async () => {
      for (const q of ['?window=1y', '?window=', '?window=24h&window=7d', '?style=flat']) {
        const r = await badge(monitors.checked, `uptime.svg${q}`);
        expect(r.status, q).to.equal(400);
        expect(await r.json()).to.deep.include({ success: false, code: 'INVALID_PARAMETER' });
      }
      for (const [s, id] of [
        [slug, monitors.offPage],
        [slug, monitors.foreign],
        [foreignSlug, monitors.checked],
        [slug, 'no-such-monitor'],
      ] as const) {
        for (const file of ['status.svg', 'uptime.svg', 'response-time.svg']) {
          const r = await badge(id, file, s);
          expect(r.status, `${s} ${id} ${file}`).to.equal(404);
          expect(r.headers.get('content-type')).to.match(/^application\/json/);
          expect(await r.json()).to.deep.include({ success: false, code: 'MONITOR_NOT_FOUND' });
        }
      }
      const noPage = await badge(monitors.checked, 'status.svg', 'no-such-page-here');
      expect(noPage.status).to.equal(404);
      expect(await noPage.json()).to.deep.include({ code: 'STATUS_PAGE_NOT_FOUND' });
    });

    it('answers the last good badge, then "unknown", while ClickHouse cannot be read: never an error', async () => {
      const gate = TcpGate.for(testStack().clickhouseUrl);
      await gate.start();
      const gated = await runQuery({
        ...ownUser('query-service'),
        CLICKHOUSE_URL: gate.rewrite(testStack().clickhouseUrl),
        STATUS_PAGE_CACHE_SECONDS: '1',
      });
      const at = (file: string) => fetch(`${gated.url}/status/${slug}/badges/${monitors.checked}/${file}`);
      try {
        const good = await eventually('the page on the gated replica', async () => {
          const r = await at('uptime.svg?window=24h');
          return r.status === 200 ? r.text() : undefined;
        });
        expect(badgeText(good)).to.equal('uptime 24h: 75%');
        gate.shut();
        const stale = await eventually('a stale badge', async () => {
          const r = await at('uptime.svg?window=24h');
          return r.headers.get('x-status-page-stale') === '1' ? r : undefined;
        });
        expect(stale.status).to.equal(200);
        expect(await stale.text()).to.equal(good);
        const never = await at('uptime.svg?window=7d');
        expect(never.status).to.equal(200);
        expect(never.headers.get('content-type')).to.match(/^image\/svg\+xml/);
        expect(badgeText(await never.text())).to.equal('uptime 7d: unknown');
      } finally {
        gate.reopen();
        await gated.stop();
        await gate.stop();
      }
    });
  });
});
