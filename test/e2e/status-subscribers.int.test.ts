import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { signature } from '@telemetry/alerting';
import { parseSealingKeys } from '@telemetry/platform';
import { createTenant, issueKey, SubscriberStore, SubscriptionLinks } from '@telemetry/store';
import type { SubscriberView } from '@telemetry/contract';
import { RUN_SECRETS_KEYS, runSecretBox } from '../../harness/processes.js';
import {
  adminRegistry,
  apiRequest,
  collectTopic,
  eventually,
  runQuery,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiClient } from '../support/api.js';
import { runMailpit, type MailMessageRead } from '../support/mailpit.js';
import { freePort } from '../../tools/devstack/ports.js';

/** One request a webhook receiver got. */
interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/**
 * A loopback webhook subscriber: `/good…` answers the challenge as text, `/json` as JSON,
 * `/wrong` with another body, `/error` with 500, `/slow` not at all (until closed).
 */
async function receiver(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ path: req.url ?? '', headers: req.headers, body });
      const challenge = (JSON.parse(body) as { challenge: string }).challenge;
      const path = req.url ?? '';
      if (path.startsWith('/slow')) return; // never answered: the verification times out
      if (path.startsWith('/good')) res.writeHead(200, { 'content-type': 'text/plain' }).end(challenge);
      else if (path.startsWith('/json'))
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ challenge }));
      else if (path.startsWith('/error')) res.writeHead(500).end(challenge);
      else res.writeHead(200).end('not the challenge');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('status page subscribers: email (Mailpit), webhooks (loopback), links, limits and the cap', function () {
  this.timeout(90_000);
  let query: Running;
  let hook: Awaited<ReturnType<typeof receiver>>;
  let key = '';
  const monitors: string[] = [];
  const pages = { a: uid('subs'), b: uid('other') };
  const links = new SubscriptionLinks(parseSealingKeys(RUN_SECRETS_KEYS), 'http://unused.invalid');
  const owner = apiClient(
    () => query.url,
    () => key,
  );
  const pub = (path: string, body?: unknown, headers?: Record<string, string>, raw?: string) =>
    apiRequest<Record<string, unknown>>(query.url, 'POST', path, body, { headers, raw });
  const subscribe = (slug: string, body: unknown) => pub(`/api/status/${slug}/subscribers`, body);
  const rowsOf = async (slug: string) =>
    (
      await adminRegistry().query<{ kind: string; state: string; webhook_sealed: string | null }>(
        'SELECT kind, state, webhook_sealed FROM status_subscribers WHERE slug = $1',
        [slug],
      )
    ).rows;
  const mailTo = async (email: string, count = 1): Promise<MailMessageRead> => {
    const mails = await runMailpit().waitFor(`to:${email}`, count);
    return mails[mails.length - 1]!;
  };
  const header = (m: MailMessageRead, name: string): string => (m.headers[name]?.[0] ?? '').replace(/\s+/g, '');
  /** A token with one character of its signature changed (not the last: its low bits are padding). */
  const forge = (token: string): string => `${token.slice(0, -5)}${token.at(-5) === 'x' ? 'y' : 'x'}${token.slice(-4)}`;
  const fragmentToken = (text: string, kind: 'confirm' | 'unsubscribe'): string =>
    new RegExp(`/status/[a-z0-9-]+/subscription#${kind}=([A-Za-z0-9._~-]+)`).exec(text)![1]!;

  before(async () => {
    const tenant = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    key = (
      await issueKey(adminRegistry(), {
        tenantId: tenant,
        kind: 'api',
        name: 'owner',
        scopes: ['monitors:read', 'monitors:write'],
      })
    ).key;
    hook = await receiver();
    query = await runQuery({
      SUBSCRIBE_PER_ADDRESS_PER_HOUR: '100000',
      SUBSCRIBE_PER_PAGE_PER_HOUR: '1000000',
      WEBHOOK_VERIFY_TIMEOUT_MS: '1000',
    });
    await eventually('key loaded', async () =>
      (await owner('GET', '/api/monitors')).status === 200 ? true : undefined,
    );
    for (const name of ['API', 'Web']) {
      const r = await owner<{ id: string }>('POST', '/api/monitors', {
        name,
        url: 'https://shop.example.com/health',
        paused: true,
      });
      expect(r.status).to.equal(201);
      monitors.push(r.body.data.id);
    }
    for (const [slug, ids] of [
      [pages.a, monitors],
      [pages.b, [monitors[0]!]],
    ] as const) {
      const r = await owner('POST', '/api/status-pages', { slug, title: `Status of ${slug}`, monitor_ids: ids });
      expect(r.status).to.equal(201);
    }
  });

  after(async () => {
    await query?.stop();
    await hook?.close();
  });

  it('subscribes by email: the same 202 for new, pending and active; a mail with both links and headers; confirm once', async () => {
    const email = `${uid('reader')}@example.com`;
    const first = await subscribe(pages.a, { email, monitor_ids: [monitors[1]] });
    expect(first.status).to.equal(202);
    expect(first.body).to.deep.equal({ success: true, data: { state: 'confirmation_sent' } });
    const mail = await mailTo(email);
    expect(mail.Subject).to.equal(`Confirm your subscription to Status of ${pages.a}`);
    expect(mail.Text).to.contain(`${query.url}/status/${pages.a}/subscription#confirm=`);
    expect(mail.Text).to.contain(`${query.url}/status/${pages.a}/subscription#unsubscribe=`);
    expect(header(mail, 'List-Unsubscribe-Post')).to.equal('List-Unsubscribe=One-Click');
    expect(header(mail, 'List-Unsubscribe')).to.match(
      new RegExp(`^<${query.url.replace(/\./g, '\\.')}/api/status/${pages.a}/unsubscribe\\?token=[A-Za-z0-9._~-]+>$`),
    );

    // Pending: the same answer, and the mail again (same subscriber); the row is still one.
    const again = await subscribe(pages.a, { email: email.toUpperCase(), monitor_ids: [monitors[1]] });
    expect(again.text).to.equal(first.text);
    const second = await mailTo(email, 2);
    expect((await rowsOf(pages.a)).filter((r) => r.kind === 'email')).to.have.length(1);

    const token = fragmentToken(second.Text, 'confirm');
    // A token of this page on another page's route, and a forged one: refused alike.
    for (const [slug, t] of [
      [pages.b, token],
      [pages.a, forge(token)],
    ] as const) {
      const r = await pub(`/api/status/${slug}/subscribers/confirm`, { token: t });
      expect(r.status).to.equal(400);
      expect(r.code).to.equal('SUBSCRIPTION_LINK_INVALID');
    }
    const confirmed = await pub(`/api/status/${pages.a}/subscribers/confirm`, { token });
    expect(confirmed.status).to.equal(200);
    expect(confirmed.body.data).to.deep.equal({ kind: 'email', monitor_ids: [monitors[1]] });
    const used = await pub(`/api/status/${pages.a}/subscribers/confirm`, { token });
    expect(used.code).to.equal('SUBSCRIPTION_LINK_INVALID');

    // Active: the same answer again, and nothing new is made.
    const active = await subscribe(pages.a, { email });
    expect(active.status).to.equal(202);
    expect(active.text).to.equal(first.text);
    expect(query.logs.lines.some((l) => l.includes('"outcome":"active"'))).to.equal(true);
    const list = await owner<SubscriberView[]>('GET', `/api/status-pages/${pages.a}/subscribers`);
    const mine = list.body.data.find((s) => s.address === email.toLowerCase())!;
    expect(mine).to.include({ kind: 'email', state: 'active' });
    expect(mine.monitor_ids).to.deep.equal([monitors[1]]);
    expect(mine.confirmed_at).to.be.a('string');
  });

  it('mails one address at most 3 confirmations an hour, all pages together, with the same 202 every time', async () => {
    const victim = `${uid('victim')}@example.com`;
    const answers = new Set<string>();
    for (const slug of [pages.a, pages.a, pages.b, pages.a, pages.b])
      answers.add((await subscribe(slug, { email: victim })).text);
    expect([...answers]).to.deep.equal([JSON.stringify({ success: true, data: { state: 'confirmation_sent' } })]);
    await mailTo(victim, 3);
    // A later mail to someone else has gone out: the victim's count stays 3.
    const other = `${uid('other')}@example.com`;
    await subscribe(pages.a, { email: other });
    await mailTo(other);
    expect(await runMailpit().waitFor(`to:${victim}`, 3)).to.have.length(3);
    // The pages' subscriber lists stay as the other tests expect them.
    await adminRegistry().query('DELETE FROM status_subscribers WHERE email = ANY($1::text[])', [[victim, other]]);
    // And the address's requests of this test count against no later test's limits.
    await adminRegistry().query('DELETE FROM rate_buckets');
  });

  it('answers the same 202 when the confirmation mail cannot be sent, and logs it without the address', async () => {
    // A mail server nobody listens on (loopback): the row is made, the mail fails after the answer.
    const mailless = await runQuery({ SMTP_URL: `smtp://127.0.0.1:${await freePort()}` });
    try {
      const email = `${uid('unmailed')}@example.com`;
      const r = await eventually('pages loaded', async () => {
        const a = await apiRequest(mailless.url, 'POST', `/api/status/${pages.a}/subscribers`, { email });
        return a.status === 503 ? undefined : a;
      });
      expect(r.status).to.equal(202);
      expect(r.body).to.deep.equal({ success: true, data: { state: 'confirmation_sent' } });
      const line = await eventually('the failure logged', () =>
        mailless.logs.lines.find((l) => l.includes('subscription confirmation mail not sent')),
      );
      expect(line).to.match(/"subscriber_id":"sub_[a-z0-9]{20}"/);
      expect(mailless.logs.lines.join('\n')).not.to.contain(email);
      const { rows } = await adminRegistry().query(`SELECT state FROM status_subscribers WHERE email = $1`, [email]);
      expect(rows).to.deep.equal([{ state: 'pending' }]);
    } finally {
      await mailless.stop();
    }
  });

  it('refuses bad input: an invalid email, monitors not on the page, an unknown page', async () => {
    const bad = await subscribe(pages.a, { email: 'not an email' });
    expect(bad.status).to.equal(400);
    expect(bad.code).to.equal('VALIDATION_FAILED');
    expect(bad.body.details!.problems!.map((p) => p.path)).to.include('/email');
    const other = await subscribe(pages.b, { email: `${uid('r')}@example.com`, monitor_ids: [monitors[1]] });
    expect(other.status).to.equal(400);
    expect(other.body.details!.problems![0]!.path).to.equal('/monitor_ids/0');
    const unknown = await subscribe('no-such-page-here', { email: `${uid('r')}@example.com` });
    expect(unknown.status).to.equal(404);
    expect(unknown.code).to.equal('STATUS_PAGE_NOT_FOUND');
  });

  it('refuses expired confirmation links and forgets unconfirmed subscribers after the TTL', async () => {
    const email = `${uid('late')}@example.com`;
    await subscribe(pages.a, { email });
    const mail = await mailTo(email);
    const id = /^(sub_[a-z0-9]{20})\./.exec(fragmentToken(mail.Text, 'confirm'))![1]!;
    // Genuinely signed, but expired.
    const expired = links.token('confirm', id, pages.a, Date.now() - 1000);
    const r = await pub(`/api/status/${pages.a}/subscribers/confirm`, { token: expired });
    expect(r.code).to.equal('SUBSCRIPTION_LINK_INVALID');
    // A link still signed as valid, but the pending row is older than the TTL: forgotten.
    await adminRegistry().query(
      `UPDATE status_subscribers SET created_at = now() - interval '3 days' WHERE subscriber_id = $1`,
      [id],
    );
    const late = links.token('confirm', id, pages.a, Date.now() + 3_600_000);
    expect((await pub(`/api/status/${pages.a}/subscribers/confirm`, { token: late })).code).to.equal(
      'SUBSCRIPTION_LINK_INVALID',
    );
    // Subscribing (anyone, any address) forgets the page's expired pending rows.
    await subscribe(pages.a, { email: `${uid('next')}@example.com` });
    const { rows } = await adminRegistry().query('SELECT 1 FROM status_subscribers WHERE subscriber_id = $1', [id]);
    expect(rows).to.have.length(0);
  });

  it('unsubscribes in one click (RFC 8058 form body) and by JSON token; again is the same answer', async () => {
    const email = `${uid('leaver')}@example.com`;
    await subscribe(pages.a, { email });
    const mail = await mailTo(email);
    await pub(`/api/status/${pages.a}/subscribers/confirm`, { token: fragmentToken(mail.Text, 'confirm') });
    const oneClick = header(mail, 'List-Unsubscribe').slice(1, -1);
    expect(oneClick.startsWith(query.url)).to.equal(true);
    // A GET (a mail scanner following the header's URL) changes nothing.
    const scanned = await fetch(oneClick);
    expect(scanned.status).to.equal(405);
    const before = await owner<SubscriberView[]>('GET', `/api/status-pages/${pages.a}/subscribers`);
    expect(before.body.data.map((s) => s.address)).to.include(email);
    const r = await apiRequest(query.url, 'POST', oneClick.slice(query.url.length), undefined, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      raw: 'List-Unsubscribe=One-Click',
    });
    expect(r.status).to.equal(200);
    expect(r.body.data).to.deep.equal({ state: 'unsubscribed' });
    const list = await owner<SubscriberView[]>('GET', `/api/status-pages/${pages.a}/subscribers`);
    expect(list.body.data.map((s) => s.address)).not.to.include(email);
    // The body's link, by JSON: gone already, the same answer.
    const token = fragmentToken(mail.Text, 'unsubscribe');
    const json = await pub(`/api/status/${pages.a}/unsubscribe`, { token });
    expect(json.status).to.equal(200);
    expect(json.body.data).to.deep.equal({ state: 'unsubscribed' });
    for (const [slug, t] of [
      [pages.a, forge(token)],
      [pages.b, token],
    ] as const) {
      const forged = await pub(`/api/status/${slug}/unsubscribe`, { token: t });
      expect(forged.status).to.equal(400);
      expect(forged.code).to.equal('SUBSCRIPTION_LINK_INVALID');
    }
  });

  it('refuses a webhook at a denied IP literal before sending anything', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data', 'http://10.0.0.1:8080/hook']) {
      const r = await subscribe(pages.a, { webhook: url });
      expect(r.status).to.equal(400);
      expect(r.code).to.equal('TARGET_NOT_ALLOWED');
    }
  });

  it('stores a webhook only when it answers the challenge; signs the request with the secret it answers once', async () => {
    for (const [path, reason] of [
      ['/wrong', 'challenge'],
      ['/error', 'status'],
      ['/slow', 'no_answer'],
    ] as const) {
      const r = await subscribe(pages.a, { webhook: `${hook.url}${path}` });
      expect(r.status, path).to.equal(400);
      expect(r.code).to.equal('WEBHOOK_VERIFICATION_FAILED');
      expect((r.body.details as { reason: string }).reason).to.equal(reason);
    }
    expect((await rowsOf(pages.a)).filter((r) => r.kind === 'webhook')).to.have.length(0);

    const url = `${hook.url}/good/hook?token=receiver-private-token`;
    const r = await subscribe(pages.a, { webhook: url, monitor_ids: [monitors[0]] });
    expect(r.status).to.equal(201);
    const data = r.body.data as { id: string; kind: string; monitor_ids: string[]; secret: string };
    expect(data).to.include({ kind: 'webhook' });
    expect(data.monitor_ids).to.deep.equal([monitors[0]]);
    expect(data.secret).to.match(/^whsec_[A-Za-z0-9_-]{32}$/);
    const got = hook.received.find((x) => x.path === '/good/hook?token=receiver-private-token')!;
    const [, t] = /^t=(\d+),v1=[0-9a-f]{64}$/.exec(String(got.headers['x-telemetry-signature']))!;
    expect(got.headers['x-telemetry-signature']).to.equal(signature(data.secret, got.body, Number(t)));
    const body = JSON.parse(got.body) as { type: string; page: { slug: string; url: string } };
    expect(body.type).to.equal('subscription.verify');
    expect(body.page).to.include({ slug: pages.a, url: `${query.url}/status/${pages.a}` });

    // JSON {challenge} answers too.
    expect((await subscribe(pages.a, { webhook: `${hook.url}/json` })).status).to.equal(201);

    // The owner sees the origin only; the row holds the URL and secret sealed.
    const list = await owner<SubscriberView[]>('GET', `/api/status-pages/${pages.a}/subscribers`);
    const shown = list.body.data.find((s) => s.id === data.id)!;
    expect(shown).to.include({ kind: 'webhook', address: hook.url, state: 'active' });
    expect(list.text).not.to.contain('receiver-private-token');
    expect(list.text).not.to.contain(data.secret);
    const sealed = (await rowsOf(pages.a)).map((row) => row.webhook_sealed ?? '').join(' ');
    expect(sealed).not.to.contain('receiver-private-token');
    expect(sealed).not.to.contain(data.secret);
    // Secrets and addresses are never logged.
    const logs = query.logs.lines.join('\n');
    expect(logs).not.to.contain(data.secret);
    expect(logs).not.to.contain('receiver-private-token');
    expect(logs).not.to.contain('@example.com');
  });

  it("lets the owner list with a cursor and delete (audited), and refuses another tenant's page", async () => {
    for (let i = 0; i < 3; i++) await subscribe(pages.b, { email: `${uid('page')}@example.com` });
    const first = await owner<SubscriberView[]>('GET', `/api/status-pages/${pages.b}/subscribers?limit=2`);
    expect(first.body.data).to.have.length(2);
    const rest = await owner<SubscriberView[]>(
      'GET',
      `/api/status-pages/${pages.b}/subscribers?limit=2&cursor=${first.body.next_cursor!}`,
    );
    expect(rest.body.data).to.have.length(1);
    expect(rest.body.next_cursor).to.equal(null);
    const id = rest.body.data[0]!.id;
    const del = await owner('DELETE', `/api/status-pages/${pages.b}/subscribers/${id}`);
    expect(del.status).to.equal(200);
    const gone = await owner('DELETE', `/api/status-pages/${pages.b}/subscribers/${id}`);
    expect(gone.code).to.equal('SUBSCRIBER_NOT_FOUND');
    const audit = await collectTopic(testStack().auditTopic);
    try {
      const entry = await eventually('the deletion audited', () =>
        (audit.values as { action: string; target: { id: string } }[]).find(
          (e) => e.action === 'status_subscriber.delete' && e.target.id === id,
        ),
      );
      expect(JSON.stringify(entry)).to.contain(rest.body.data[0]!.address);
    } finally {
      await audit.stop();
    }
    const otherTenant = await createTenant(adminRegistry(), uid('tenant'));
    const stranger = (
      await issueKey(adminRegistry(), {
        tenantId: otherTenant.tenant_id,
        kind: 'api',
        name: 'stranger',
        scopes: ['monitors:read', 'monitors:write'],
      })
    ).key;
    await eventually('stranger key loaded', async () =>
      (await owner('GET', '/api/monitors', undefined, { key: stranger })).status === 200 ? true : undefined,
    );
    const theirs = await owner('GET', `/api/status-pages/${pages.b}/subscribers`, undefined, { key: stranger });
    expect(theirs.code).to.equal('STATUS_PAGE_NOT_FOUND');
  });

  it('caps the subscribers of a page (under concurrency) and answers 403 QUOTA_EXCEEDED', async () => {
    // The store with a cap of 3: five at once, three made.
    const store = new SubscriberStore(adminRegistry(), runSecretBox(), { confirmTtlSeconds: 3600, maxPerPage: 3 });
    const slug = uid('capped');
    expect(
      (await owner('POST', '/api/status-pages', { slug, title: 'Capped', monitor_ids: [monitors[0]] })).status,
    ).to.equal(201);
    const tenantId = (
      await adminRegistry().query<{ tenant_id: string }>('SELECT tenant_id FROM status_pages WHERE slug = $1', [slug])
    ).rows[0]!.tenant_id;
    const tries = await Promise.allSettled(
      [0, 1, 2, 3, 4].map((i) =>
        store.subscribeEmail({ slug, tenantId, email: `cap${i}@example.com`, monitorIds: [] }),
      ),
    );
    expect(tries.filter((t) => t.status === 'fulfilled')).to.have.length(3);
    for (const t of tries.filter((x) => x.status === 'rejected'))
      expect(t.reason).to.include({ code: 'QUOTA_EXCEEDED' });
    // The route, with the real cap: a page filled to it refuses the next.
    await adminRegistry().query(
      `INSERT INTO status_subscribers (subscriber_id, slug, tenant_id, kind, address_hash, email, state)
       SELECT 'sub_' || lpad(to_hex(g), 20, '0'), $1, $2, 'email', encode(sha256(g::text::bytea), 'hex'), 'x' || g || '@example.org', 'active'
       FROM generate_series(1, 10000) AS g`,
      [pages.b, tenantId],
    );
    const full = await subscribe(pages.b, { email: `${uid('one-more')}@example.com` });
    expect(full.status).to.equal(403);
    expect(full.code).to.equal('QUOTA_EXCEEDED');
    // A webhook on the full page: refused before its challenge is sent.
    const hookFull = await subscribe(pages.b, { webhook: `${hook.url}/good/full-page` });
    expect(hookFull.code).to.equal('QUOTA_EXCEEDED');
    expect(hook.received.map((x) => x.path)).not.to.include('/good/full-page');
    await adminRegistry().query(`DELETE FROM status_subscribers WHERE slug = $1 AND email LIKE '%@example.org'`, [
      pages.b,
    ]);
  });

  it('rate-limits subscriptions per address and per page, and link requests per address (429 + Retry-After)', async () => {
    await adminRegistry().query('DELETE FROM rate_buckets');
    const limited = await runQuery({
      SUBSCRIBE_PER_ADDRESS_PER_HOUR: '5',
      SUBSCRIBE_PER_PAGE_PER_HOUR: '2',
      SUBSCRIPTION_LINKS_PER_ADDRESS_PER_HOUR: '2',
    });
    try {
      const post = (path: string, body: unknown) => apiRequest<unknown>(limited.url, 'POST', path, body);
      await eventually('pages loaded', async () =>
        (await post(`/api/status/${pages.a}/subscribers`, { email: 'bad' })).status === 400 ? true : undefined,
      );
      await adminRegistry().query('DELETE FROM rate_buckets');
      // Refused bodies count for the address, not the page: they cannot close a page.
      for (let i = 0; i < 2; i++)
        expect((await post(`/api/status/${pages.a}/subscribers`, { email: 'bad' })).status).to.equal(400);
      for (let i = 0; i < 2; i++) {
        const ok = await post(`/api/status/${pages.a}/subscribers`, { email: `${uid('r')}@example.com` });
        expect(ok.status, `valid request ${i + 1} of the page's 2`).to.equal(202);
      }
      const perPage = await post(`/api/status/${pages.a}/subscribers`, { email: `${uid('r')}@example.com` });
      expect(perPage.status).to.equal(429);
      expect(perPage.code).to.equal('RATE_LIMITED');
      expect(perPage.body.details!.limit).to.equal('perPage');
      expect(Number(perPage.headers.get('retry-after'))).to.be.within(1, 3600);
      // The address has made 5; the 6th is over its own limit, whatever the page.
      const perAddress = await post(`/api/status/${pages.b}/subscribers`, { email: `${uid('r')}@example.com` });
      expect(perAddress.status).to.equal(429);
      expect(perAddress.body.details!.limit).to.equal('perAddress');
      expect(Number(perAddress.headers.get('retry-after'))).to.be.within(1, 3600);
      for (let i = 0; i < 2; i++)
        expect((await post(`/api/status/${pages.a}/unsubscribe`, { token: 'forged' })).status).to.equal(400);
      const links429 = await post(`/api/status/${pages.a}/unsubscribe`, { token: 'forged' });
      expect(links429.status).to.equal(429);
      expect(links429.body.details!.limit).to.equal('linksPerAddress');
    } finally {
      await limited.stop();
    }
  });
});
