import { randomUUID } from 'node:crypto';
import { request as httpRequest, createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseFeed } from '@rowanmanning/feed-parser';
import { expect } from 'chai';
import { XMLValidator } from 'fast-xml-parser';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { DomainView, Monitor, StatusReportView, SubscriberView } from '@telemetry/contract';
import { signature } from '@telemetry/alerting';
import { freePort } from '../../tools/devstack/ports.js';
import { apiClient } from '../support/api.js';
import {
  buildConsole,
  expectAccessible,
  launchChromium,
  PageErrors,
  photograph,
  showPageIfFailed,
  signInWithPassword,
} from '../support/browser.js';
import { TestDnsServer } from '../support/dns-server.js';
import {
  adminClickHouse,
  adminRegistry,
  eventually,
  newKey,
  runQuery,
  runRunner,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { addPerson, insertDownAlert, tenantWithOwner } from '../support/tenants.js';
import { runMailpit, type MailMessageRead, type MailpitClient } from '../support/mailpit.js';

/** A call the loopback webhook receiver got: its headers and body as sent. */
interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * Issue 43's "Done when", in a real Chromium against the query service and a check runner
 * (its status-notice deliverer) on the run's PostgreSQL and ClickHouse, Mailpit, a loopback
 * webhook receiver and the loopback DNS server: a visitor subscribes by email on the public
 * page and confirms through the mailed link; a webhook that answers its challenge subscribes
 * through the API; the owner, signed in to the console, posts a report and two updates: each
 * arrives once by email and once by the webhook (signed), shows in the RSS and Atom feeds
 * (parsed, ids stable) and on the page; unsubscribing (the mail's link, and the one-click
 * header) stops the mail of the next update. A badge is valid SVG with the monitor's uptime,
 * and `Host: status.example.test` gets the page once its TXT record is served, 404 before.
 */
describe('status pages people follow: subscribe, confirm, report, updates by mail, webhook and feeds, unsubscribe, badge, custom domain (Chromium, Mailpit)', function () {
  this.timeout(240_000);
  let mailpit: MailpitClient;
  const dns = new TestDnsServer();
  const pageErrors = new PageErrors();
  const received: Received[] = [];
  const challenges: Received[] = [];
  const contexts: BrowserContext[] = [];
  const password = `correct horse ${uid('pw')}`;
  const ownerEmail = `owner-${uid('p')}@corp.example`;
  const visitor = `visitor-${uid('v')}@example.net`;
  const oneClick = `reader-${uid('r')}@example.net`;
  const slug = uid('shop').toLowerCase();
  const host = `status-${uid('d').toLowerCase()}.example.test`;
  // Markup typed into a report is text: the page, the mails and the feeds show it as typed.
  const title = `<b>Checkout</b> is failing ${uid('t')}`;
  const messages = [
    'Payments fail for some customers. We are looking into it.',
    'The card processor times out: identified.',
    'A fix is out; we are watching the error rate.',
  ];
  const lastMessage = 'Resolved: payments work again.';
  let query: Running;
  let runner: Running;
  let receiver: Server;
  let browser: Browser;
  let page: Page | undefined;
  let owner: Page;
  let key = '';
  let tenantId = '';
  let monitor: Monitor;
  let reportId = '';
  let webhookSecret = '';
  let hookUrl = '';

  const api = apiClient(
    () => query.url,
    () => key,
  );
  const owned = (rest = ''): string => `/api/status-pages/${slug}${rest}`;

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    page = await context.newPage();
    pageErrors.watch(page);
    return page;
  }

  /** At 360 and 1280 px wide, nothing of the page is wider than the window (no sideways scrolling). */
  async function fitsNarrowAndWide(p: Page, what: string): Promise<void> {
    for (const width of [360, 1280]) {
      await p.setViewportSize({ width, height: 900 });
      const [scroll, client] = await p.evaluate<[number, number]>(
        '[document.documentElement.scrollWidth, document.documentElement.clientWidth]',
      );
      expect(scroll, `${what} at ${width} px`).to.be.at.most(client);
    }
  }

  /** GET `path` of the query service with `Host: host` (fetch cannot set Host). */
  function withHost(path: string, name: string): Promise<{ status: number; type: string; body: string }> {
    const url = new URL(query.url);
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        { host: url.hostname, port: url.port, path, headers: { host: `${name}:${url.port}` } },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }),
          );
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  /** The page's notices as stored (the mails' subjects are their titles), oldest first. */
  async function notices(): Promise<{ notice_id: string; kind: string; title: string }[]> {
    const { rows } = await adminRegistry().query<{ notice_id: string; kind: string; title: string }>(
      'SELECT notice_id, kind, title FROM status_notices WHERE slug = $1 ORDER BY created_at, notice_id',
      [slug],
    );
    return rows;
  }

  /** Waits until no delivery of the page's notices is pending (each delivered, none failed). */
  async function deliveriesSettled(count: number): Promise<void> {
    await eventually(
      `${count} notices delivered`,
      async () => {
        const { rows } = await adminRegistry().query<{ state: string; n: string }>(
          `SELECT d.state, count(*) AS n FROM status_deliveries d JOIN status_notices n USING (notice_id)
            WHERE n.slug = $1 GROUP BY d.state`,
          [slug],
        );
        const by = Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
        expect(by.failed ?? 0, 'failed deliveries').to.equal(0);
        return (by.pending ?? 0) === 0 && (await notices()).length === count ? true : undefined;
      },
      60_000,
    );
  }

  /** Every mail to `to` (confirmation and notices), oldest first. */
  async function mailsTo(to: string): Promise<MailMessageRead[]> {
    const list = await mailpit.search(`to:${to}`);
    const read = await Promise.all(list.map((m) => mailpit.read(m.ID)));
    return read.sort((a, b) => a.Date.localeCompare(b.Date));
  }

  /** How many mails to `to` have each subject. */
  async function subjectsTo(to: string): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const m of await mailpit.search(`to:${to}`)) out[m.Subject] = (out[m.Subject] ?? 0) + 1;
    return out;
  }

  /** The link of `kind` (confirm or unsubscribe) in the newest mail to `to` whose text has one. */
  async function mailedLink(to: string, kind: 'confirm' | 'unsubscribe'): Promise<string> {
    const re = new RegExp(`https?://\\S+/status/${slug}/subscription#${kind}=[A-Za-z0-9._~-]+`);
    return eventually(`a ${kind} link mailed to ${to}`, async () => {
      const mails = await mailsTo(to);
      for (const m of mails.reverse()) {
        const link = re.exec(m.Text)?.[0];
        if (link) return link;
      }
      return undefined;
    });
  }

  before(async () => {
    mailpit = runMailpit();
    await buildConsole();
    await dns.start();
    receiver = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        const parsed = JSON.parse(body) as { type?: string; challenge?: string };
        if (parsed.type === 'subscription.verify') {
          challenges.push({ headers: req.headers, body });
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ challenge: parsed.challenge }));
        } else {
          received.push({ headers: req.headers, body });
          res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
        }
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/status-hook`;

    tenantId = await tenantWithOwner('follow', ownerEmail, password);
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    query = await runQuery({
      PORT: String(port),
      PUBLIC_URL: publicUrl,
      DOMAIN_RESOLVER: `127.0.0.1:${dns.port}`,
      // Every subscription of this test comes from 127.0.0.1.
      SUBSCRIBE_PER_ADDRESS_PER_HOUR: '100',
    });
    runner = await runRunner({ RUNNER_ID: uid('runner'), PUBLIC_URL: publicUrl, STATUS_DELIVERY_INTERVAL_MS: '200' });
    key = await newKey({ tenantId, kind: 'api', name: 'follow test', scopes: ['monitors:read', 'monitors:write'] });
    const at = (h: number): string => new Date(Date.now() + h * 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    monitor = await eventually('key loaded', async () => {
      const r = await api<Monitor>('POST', '/api/monitors', {
        name: `Checkout ${uid('m')}`,
        type: 'http',
        url: 'http://127.0.0.1:9/',
        paused: true,
        // Past the runners' notice horizon (24 h), within the page's 7 days: shown, nobody told.
        maintenance_windows: [{ from: at(30), to: at(32), message: 'Database upgrade: checkout may be slow.' }],
      });
      return r.status === 201 ? r.body.data : undefined;
    });
    const created = await api('POST', '/api/status-pages', { slug, title: 'Shop status', monitor_ids: [monitor.id] });
    expect(created.status, created.text).to.equal(201);
    // Its checks of the last hours, past Kafka: three up, one down (75 % uptime).
    const ch = adminClickHouse();
    try {
      const now = Math.floor(Date.now() / 1000) - 3600;
      await ch.insert({
        table: `${testStack().database}.checks`,
        format: 'JSONEachRow',
        values: ['up', 'up', 'down', 'up'].map((status, i) => ({
          tenant_id: tenantId,
          monitor_id: monitor.id,
          created_at: now + i * 60,
          id: `${uid('chk')}`,
          status,
          response_time: 120,
          status_code: status === 'up' ? 200 : 503,
        })),
      });
    } finally {
      await ch.close();
    }
    browser = await launchChromium([`--host-resolver-rules=MAP ${host} 127.0.0.1`]);
  });

  afterEach(async function () {
    await showPageIfFailed(this.currentTest, page);
  });

  after(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await Promise.all([query?.stop(), runner?.stop(), dns.stop()]);
    await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  });

  it('a visitor subscribes by email on the public page and confirms through the mailed link (opening it changes nothing)', async () => {
    const p = await newPage();
    await p.goto(`${query.url}/status/${slug}`);
    await p.getByRole('heading', { name: 'Shop status' }).waitFor();
    await p.locator('#maintenance', { hasText: 'Database upgrade' }).waitFor();
    // Feed readers find the feeds in the HTML as served.
    const html = await (await fetch(`${query.url}/status/${slug}`)).text();
    expect(html).to.contain(`<link rel="alternate" type="application/rss+xml"`);
    expect(html).to.contain(`href="/status/${slug}/feed.atom"`);
    await p.getByLabel('Email address').fill(visitor);
    await p.getByRole('button', { name: 'Subscribe by email' }).click();
    await p.locator('#subscribe-email-status', { hasText: 'Check your email to confirm' }).waitFor();
    await expectAccessible(p, 'public page after subscribing');

    const link = await mailedLink(visitor, 'confirm');
    expect(link.startsWith(`${query.url}/status/${slug}/subscription#confirm=`)).to.equal(true);
    await p.goto(link);
    await p.getByRole('button', { name: 'Confirm my subscription' }).waitFor();
    const pending = (await api<SubscriberView[]>('GET', owned('/subscribers'))).body.data;
    expect(pending.map((s) => [s.address, s.state])).to.deep.equal([[visitor, 'pending']]);
    await expectAccessible(p, 'subscription page');
    await fitsNarrowAndWide(p, 'subscription page');
    await photograph(p, 'status-subscription');
    await p.getByRole('button', { name: 'Confirm my subscription' }).click();
    await p.locator('#subscription-result', { hasText: 'You are subscribed' }).waitFor();
    const active = (await api<SubscriberView[]>('GET', owned('/subscribers'))).body.data;
    expect(active.map((s) => [s.address, s.state])).to.deep.equal([[visitor, 'active']]);
  });

  it('a second reader subscribes and confirms through the API; a webhook that answers its challenge subscribes too', async () => {
    const sub = await api('POST', `/api/status/${slug}/subscribers`, { email: oneClick }, { key: null });
    expect([sub.status, sub.body.data]).to.deep.equal([202, { state: 'confirmation_sent' }]);
    const token = /#confirm=([A-Za-z0-9._~-]+)/.exec(await mailedLink(oneClick, 'confirm'))![1]!;
    const confirmed = await api(`POST`, `/api/status/${slug}/subscribers/confirm`, { token }, { key: null });
    expect(confirmed.status, confirmed.text).to.equal(200);

    const hook = await api<{ id: string; kind: string; secret: string }>(
      'POST',
      `/api/status/${slug}/subscribers`,
      { webhook: hookUrl },
      { key: null },
    );
    expect(hook.status, hook.text).to.equal(201);
    expect(hook.body.data.kind).to.equal('webhook');
    expect(hook.body.data.secret).to.match(/^whsec_/);
    webhookSecret = hook.body.data.secret;
    expect(challenges).to.have.length(1);
    const list = (await api<SubscriberView[]>('GET', owned('/subscribers'))).body.data;
    // The owner sees the webhook's origin, never its path.
    expect(list.find((s) => s.kind === 'webhook')!.address).to.equal(new URL(hookUrl).origin);
  });

  it('the owner posts a report and two updates in the console; the public page shows them as text', async () => {
    owner = await newPage();
    await signInWithPassword(owner, query.url, ownerEmail, password);
    await owner.getByRole('link', { name: 'Status pages' }).click();
    await owner.getByRole('link', { name: 'Shop status' }).click();
    await owner.locator('form#report-form').waitFor();
    await owner.getByLabel('Title (required)').fill(title);
    await owner.getByLabel('Impact').selectOption('major');
    await owner.locator(`input[name="report-monitor"][value="${monitor.id}"]`).check();
    await owner.getByLabel('Message (required)').fill(messages[0]!);
    await owner.getByRole('button', { name: 'Publish report' }).click();
    const card = owner.locator('article.report').first();
    await card.locator('h4', { hasText: title }).waitFor();
    reportId = (await card.getAttribute('data-report'))!;
    const report = owner.locator(`article.report[data-report="${reportId}"]`);
    for (const [i, state] of (['identified', 'monitoring'] as const).entries()) {
      await report.getByLabel('New state').selectOption(state);
      await report.getByLabel('Update message').fill(messages[i + 1]!);
      await report.getByRole('button', { name: 'Post update' }).click();
      await report
        .locator('ol.updates > li')
        .nth(i + 1)
        .waitFor();
    }
    expect(await report.locator('ol.updates > li').count()).to.equal(3);
    await expectAccessible(owner, 'reports editor');
    await fitsNarrowAndWide(owner, 'reports editor');
    await photograph(owner, 'status-reports-editor');
    const stored = (await api<StatusReportView>('GET', owned(`/reports/${reportId}`))).body.data;
    expect(stored).to.deep.include({ title, state: 'monitoring', draft: false, monitor_ids: [monitor.id] });
    expect(stored.updates.map((u) => u.message)).to.deep.equal([...messages].reverse());

    const p = await newPage();
    await p.goto(`${query.url}/status/${slug}`);
    const shown = p.locator(`#reports article[data-report="${reportId}"]`);
    await shown.waitFor();
    expect(await shown.locator('h3').innerText()).to.equal(title);
    expect(await shown.locator('b').count(), 'markup in a title is not HTML').to.equal(0);
    expect(await shown.locator('ol.updates > li .message').allInnerTexts()).to.deep.equal([...messages].reverse());
    await p.locator('#maintenance li', { hasText: 'Database upgrade: checkout may be slow.' }).waitFor();
    await expectAccessible(p, 'public page with a report and maintenance');
    await fitsNarrowAndWide(p, 'public page with a report and maintenance');
    await photograph(p, 'status-follow-page');
  });

  it('shows a viewer of the tenant the page’s reports, subscribers and domains with every write disabled, and why', async () => {
    const viewerEmail = `viewer-${uid('p')}@corp.example`;
    await addPerson(tenantId, viewerEmail, password, 'viewer');
    const p = await newPage();
    await signInWithPassword(p, query.url, viewerEmail, password);
    await p.goto(`${query.url}/console/#/status-pages/${slug}`);
    await p.locator(`article.report[data-report="${reportId}"]`).waitFor();
    await p.locator('#subscribers-table').waitFor();
    const why = 'Your role (viewer) cannot change monitors';
    await p.locator('.role-note[data-role-note="monitors:write"]', { hasText: why }).waitFor();
    for (const control of [
      '#publish-report',
      '#save-draft',
      '#f-title',
      `article.report[data-report="${reportId}"] button.delete-report`,
      `article.report[data-report="${reportId}"] .update-form button`,
      '#subscribers-table button.subscriber-remove',
      '#domain-form button',
    ]) {
      const el = p.locator(control).first();
      expect(await el.isDisabled(), control).to.equal(true);
      expect(await el.getAttribute('data-needs-scope'), control).to.equal('monitors:write');
    }
    expect(await p.locator('#publish-report').getAttribute('title')).to.equal(why);
    await expectAccessible(p, 'a page’s console view, as a viewer');
  });

  it('each notice arrives once by email to each reader and once by the signed webhook', async () => {
    await deliveriesSettled(3);
    const sent = await notices();
    expect(sent.map((n) => n.kind)).to.deep.equal(['report_opened', 'report_updated', 'report_updated']);
    for (const to of [visitor, oneClick]) {
      const subjects = await subjectsTo(to);
      // The subject is the notice's title on one line (services/check-runner/src/status-delivery.ts).
      for (const n of sent) {
        const subject = n.title.replace(/\s+/g, ' ').slice(0, 200);
        expect(subjects[subject], `${to}: "${subject}"`).to.equal(1);
      }
      const texts = (await mailsTo(to)).map((m) => m.Text);
      for (const m of messages)
        expect(
          texts.filter((t) => t.includes(m)),
          `${to}: ${m}`,
        ).to.have.length(1);
    }
    const events = received.map((r) => String(r.headers['x-telemetry-event']));
    expect([...events].sort()).to.deep.equal(sent.map((n) => n.notice_id).sort());
    for (const r of received) {
      const t = Number(/t=(\d+)/.exec(String(r.headers['x-telemetry-signature']))?.[1]);
      expect(r.headers['x-telemetry-signature']).to.equal(signature(webhookSecret, r.body, t));
      const body = JSON.parse(r.body) as { type: string; report?: { title: string } };
      expect(body.report?.title).to.equal(title);
    }
  });

  it('the RSS and Atom feeds parse without errors, hold every notice, and keep their entry ids across reads', async () => {
    for (const kind of ['rss', 'atom'] as const) {
      const read = async (): Promise<{ id: string | null; text: string }[]> => {
        const r = await fetch(`${query.url}/status/${slug}/feed.${kind}`);
        expect(r.status).to.equal(200);
        expect(r.headers.get('content-type')).to.contain(
          kind === 'rss' ? 'application/rss+xml' : 'application/atom+xml',
        );
        const xml = await r.text();
        expect(XMLValidator.validate(xml), `${kind}: well-formed XML`).to.equal(true);
        const feed = parseFeed(xml);
        return feed.items.map((i) => ({
          id: i.id,
          text: `${i.title ?? ''}\n${i.description ?? ''}\n${i.content ?? ''}`,
        }));
      };
      const first = await read();
      const second = await read();
      expect(first).to.have.length(3);
      expect(first.every((e) => typeof e.id === 'string' && e.id.length > 0)).to.equal(true);
      expect(second.map((e) => e.id)).to.deep.equal(first.map((e) => e.id));
      for (const m of messages)
        expect(
          first.filter((e) => e.text.includes(m)),
          `${kind}: ${m}`,
        ).to.have.length(1);
    }
  });

  it('unsubscribing through the mail’s link and the one-click header stops the mail of the next update', async () => {
    const p = await newPage();
    await p.goto(await mailedLink(visitor, 'unsubscribe'));
    await p.getByRole('button', { name: 'Unsubscribe' }).click();
    await p.locator('#subscription-result', { hasText: 'You are unsubscribed' }).waitFor();

    const newest = (await mailsTo(oneClick)).at(-1)!;
    const header = (newest.headers['List-Unsubscribe'] ?? [])[0] ?? '';
    expect(newest.headers['List-Unsubscribe-Post']).to.deep.equal(['List-Unsubscribe=One-Click']);
    const url = /^<([^>]+)>$/.exec(header)?.[1];
    expect(url, header).to.match(new RegExp(`^${query.url}/api/status/${slug}/unsubscribe\\?token=`));
    // RFC 8058: a POST of List-Unsubscribe=One-Click, form-encoded, as mail clients send it.
    const r = await fetch(url!, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(r.status).to.equal(200);
    const left = (await api<SubscriberView[]>('GET', owned('/subscribers'))).body.data;
    expect(left.map((s) => s.kind)).to.deep.equal(['webhook']);

    const before = { visitor: (await mailsTo(visitor)).length, oneClick: (await mailsTo(oneClick)).length };
    page = owner;
    await owner.reload();
    const report = owner.locator(`article.report[data-report="${reportId}"]`);
    await report.getByLabel('New state').selectOption('resolved');
    await report.getByLabel('Update message').fill(lastMessage);
    await report.getByRole('button', { name: 'Post update' }).click();
    await report.locator('ol.updates > li').nth(3).waitFor();
    await deliveriesSettled(4);
    // The webhook was told (the deliverer ran), the mailboxes were not.
    await eventually('the fourth webhook call', () => (received.length === 4 ? true : undefined));
    expect((await mailsTo(visitor)).length).to.equal(before.visitor);
    expect((await mailsTo(oneClick)).length).to.equal(before.oneClick);
  });

  it('lists the resolved report on the history page', async () => {
    const p = await newPage();
    await p.goto(`${query.url}/status/${slug}`);
    await p.locator('#history-link').click();
    const past = p.locator(`#history article[data-report="${reportId}"]`);
    await past.waitFor();
    expect(await past.locator('ol.updates > li').count()).to.equal(4);
    expect(await past.innerText()).to.contain(lastMessage);
    await expectAccessible(p, 'history page');
    await fitsNarrowAndWide(p, 'history page');
    await photograph(p, 'status-history');
  });

  it('starts a draft from an open incident of the page’s monitor in the console, kept from the page, and deletes it', async () => {
    // An open incident as the runner leaves it: its down alert in ClickHouse.
    const incidentId = randomUUID();
    const at = Math.floor(Date.now() / 1000) - 120;
    const ch = adminClickHouse();
    try {
      await insertDownAlert(ch, { tenantId, monitorId: monitor.id, incidentId, alertId: randomUUID(), at });
    } finally {
      await ch.close();
    }
    page = owner;
    await owner.reload();
    const incident = owner.locator(`#from-incident li[data-incident="${incidentId}"]`);
    await incident.waitFor();
    await incident.getByRole('button', { name: `Start a report on ${monitor.name}` }).click();
    const draft = owner.locator('article.report.draft', { hasText: `${monitor.name} is down` });
    await draft.waitFor();
    const draftId = (await draft.getAttribute('data-report'))!;
    const stored = (await api<StatusReportView>('GET', owned(`/reports/${draftId}`))).body.data;
    expect(stored).to.deep.include({ draft: true, incident_id: incidentId, monitor_ids: [monitor.id] });
    const shown = (await api<{ reports: { id: string }[] }>('GET', `/api/status/${slug}`, undefined, { key: null }))
      .body.data;
    expect(shown.reports.map((r) => r.id)).to.not.include(draftId);
    owner.once('dialog', (d) => void d.accept());
    await draft.getByRole('button', { name: `Delete ${monitor.name} is down` }).click();
    await draft.waitFor({ state: 'detached' });
    expect((await api('GET', owned(`/reports/${draftId}`))).code).to.equal('REPORT_NOT_FOUND');
  });

  it('serves an uptime badge as valid SVG with the monitor’s uptime, and shows it in the console', async () => {
    const r = await fetch(`${query.url}/status/${slug}/badges/${monitor.id}/uptime.svg?window=24h`);
    expect(r.status).to.equal(200);
    expect(r.headers.get('content-type')).to.contain('image/svg+xml');
    const svg = await r.text();
    expect(XMLValidator.validate(svg)).to.equal(true);
    expect(svg).to.match(/<svg[\s>]/);
    expect(svg).to.match(/75(\.0+)?%/);
    page = owner;
    await owner.reload();
    const img = owner.locator(`#badges [data-monitor="${monitor.id}"] img`).nth(1);
    await img.waitFor();
    await eventually('the badge drawn', async () =>
      (await img.evaluate((i) => {
        const drawn = i as unknown as { complete: boolean; naturalWidth: number };
        return drawn.complete && drawn.naturalWidth > 0;
      }))
        ? true
        : undefined,
    );
    const markdown = await owner.locator(`#badge-md-${monitor.id}`).inputValue();
    expect(markdown).to.contain(`/status/${slug}/badges/${monitor.id}/uptime.svg`);
  });

  it('subscribes a webhook from the page’s form (its secret shown once) and says what is wrong with an invalid email', async () => {
    const p = await newPage();
    await p.goto(`${query.url}/status/${slug}`);
    await p.getByLabel('Webhook URL').fill(`${hookUrl}?from=page`);
    await p.getByRole('button', { name: 'Subscribe the webhook' }).click();
    const secret = p.locator('#subscribe-webhook-secret');
    await secret.waitFor();
    expect(await secret.inputValue()).to.match(/^whsec_/);
    expect(challenges).to.have.length(2);
    const t = Number(/t=(\d+)/.exec(String(challenges[1]!.headers['x-telemetry-signature']))?.[1]);
    expect(challenges[1]!.headers['x-telemetry-signature']).to.equal(
      signature(await secret.inputValue(), challenges[1]!.body, t),
    );
    await pageErrors.provoking(async () => {
      await p.getByLabel('Email address').fill('not an address');
      await p.getByRole('button', { name: 'Subscribe by email' }).click();
      await p.locator('#subscribe-email-status', { hasText: 'Enter an email address' }).waitFor();
    });
    expect(await p.getByLabel('Email address').getAttribute('aria-invalid')).to.equal('true');
    await expectAccessible(p, 'public page with a webhook secret and an invalid email');
  });

  it('answers Host: the custom domain with the page once its TXT record is served, and 404 before', async () => {
    page = owner;
    await owner.getByLabel('Host name').fill(host);
    await owner.getByRole('button', { name: 'Add domain' }).click();
    const row = owner.locator(`#domains-table tr[data-domain="${host}"]`);
    await row.waitFor();
    const txt = await row.locator('.txt-value').innerText();
    const domain = (await api<DomainView[]>('GET', owned('/domains'))).body.data[0]!;
    expect(domain).to.deep.include({ hostname: host, txt_name: `_telemetry-verify.${host}`, txt_value: txt });

    expect((await withHost('/', host)).status).to.equal(404);
    await pageErrors.provoking(async () => {
      await row.getByRole('button', { name: `Verify ${host}` }).click();
      await owner.locator('#domain-status', { hasText: 'DOMAIN_NOT_VERIFIED' }).waitFor();
    });
    expect((await withHost('/', host)).status).to.equal(404);

    dns.records.set(domain.txt_name, { TXT: [txt] });
    await row.getByRole('button', { name: `Verify ${host}` }).click();
    await row.filter({ hasText: 'yes' }).waitFor();
    await eventually('the domain answers', async () => ((await withHost('/', host)).status === 200 ? true : undefined));
    const home = await withHost('/', host);
    expect(home.type).to.contain('text/html');
    // Its feeds as feed readers find them: on the domain's own paths.
    expect(home.body).to.contain('type="application/atom+xml" title="Status updates (Atom)" href="/feed.atom"');
    const api2 = await withHost('/api/status-domain', host);
    expect(JSON.parse(api2.body)).to.deep.include({ success: true, data: { slug } });
    expect((await withHost('/api/monitors', host)).status).to.equal(404);

    // In a browser, the custom domain shows the page (its script asks /api/status-domain for the slug).
    const p = await newPage();
    await p.goto(`http://${host}:${new URL(query.url).port}/`);
    await p.getByRole('heading', { name: 'Shop status' }).waitFor();
    expect(await p.locator('#feed-rss').getAttribute('href')).to.equal('/feed.rss');
    expect(pageErrors.errors).to.deep.equal([]);
  });
});
