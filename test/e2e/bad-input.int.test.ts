import { request } from 'node:http';
import { expect } from 'chai';
import { writeSection } from '../../harness/report.js';
import { buildOpenApi, DEFAULT_TENANT, SCOPES } from '@telemetry/contract';
import { createDeletion, createTenant, revokeKey } from '@telemetry/store';
import {
  adminRegistry,
  eventually,
  newKey,
  registerMonitors,
  registerMonitorsIn,
  RELIABILITY_TITLE,
  runGateway,
  runQuery,
  type Running,
} from '../support/fixtures.js';
import { apiCall, type ApiAnswer } from '../support/api.js';
import { TestDnsServer } from '../support/dns-server.js';
import {
  challengeReceiver,
  corpus,
  CORPUS_MONITORS,
  documentedCodes,
  FOLLOW,
  followFixtures,
  followRows,
  followTokens,
  FOREIGN,
  FOREIGN_TENANT,
  KEY_NAMES,
  MARK,
  peopleFixtures,
  trap,
  type Case,
  type KeyName,
} from './bad-input/index.js';

interface Answer {
  status: number;
  code?: string;
  success?: boolean;
  /** A VALIDATION_FAILED's fields (details.problems[].path). */
  paths: string[];
}

/** A name fit for a Markdown table: pipes and control characters escaped. */
function printable(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    out += ch === '|' ? '\\|' : c < 0x20 ? `\\x${c.toString(16).padStart(2, '0')}` : ch;
  }
  return out;
}

/** Raw HTTP (not fetch): header abuse and odd paths must reach the server as written. */
function send(base: string, c: Omit<Case, 'name' | 'service' | 'expect'>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: c.method,
        // what a browser would escape (spaces, non-ASCII); everything else goes as written
        path: c.path.replace(/[^\x21-\x7e]/g, (ch) => encodeURIComponent(ch)),
        headers: {
          ...(c.body !== undefined ? { 'content-length': String(Buffer.byteLength(c.body)) } : {}),
          ...c.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let json: { code?: string; success?: boolean; details?: { problems?: { path?: unknown }[] } } = {};
          try {
            json = JSON.parse(text) as typeof json;
          } catch {
            json = { code: res.headers['x-error-code'] as string | undefined };
          }
          const paths = (json?.details?.problems ?? []).map((p) => String(p.path));
          resolve({ status: res.statusCode ?? 0, code: json?.code, success: json?.success, paths });
        });
      },
    );
    req.on('error', reject);
    if (c.body !== undefined) req.write(c.body);
    req.end();
  });
}

interface Registry {
  /** Every monitor the list shows. */
  listed: { id: string; name: string; url: string }[];
  /** The monitors the corpus aims at, in full (updated_at included). */
  shown: Record<string, unknown>;
}

/**
 * A corpus of hostile requests against every route, each with the status and code we
 * promise (the cases, route by route: test/e2e/bad-input/). The answers are written to
 * RELIABILITY.md (section bad-input).
 */
describe('bad-input corpus (every route, real Kafka and ClickHouse)', () => {
  let gateway: Running;
  let query: Running;
  /** The query service with single sign-on configured, for the callback's refusals. */
  let sso: Running;
  /** The query service of status pages people follow (bad-input/status-follow.ts). */
  let follow: Running;
  /** The follow cases' loopback servers: the challenge receiver, the trap, the resolver. */
  const receiver = challengeReceiver();
  const trapped = trap();
  const dns = new TestDnsServer();
  /** The follow cases' reports, subscribers and domains as the corpus found them. */
  let followBefore: unknown;
  let access: string;
  let revoked: string;
  let api: string;
  let noScope: string;
  let otherTenant: string;
  let monitors: string;
  let restricted: string;
  let expiredApi: string;
  let expiredAccess: string;
  let viewer: string;
  let people: string;
  let keyMaker: string;
  /** The people, sessions and invitations of the people cases (bad-input/people.ts). */
  let fixtures: Record<string, string>;
  /** The registry as the corpus found it. */
  let registryBefore: Registry;
  /** The tenant's members, invitations, keys and settings as the corpus found them. */
  let peopleBefore: unknown;
  const results: { name: string; expected: string; got: string }[] = [];

  before(async () => {
    // NOTE: the issuer is a loopback port nothing listens on; the cases are refused before
    // discovery (which is lazy) would reach it.
    await Promise.all([receiver.start(), trapped.start(), dns.start()]);
    dns.records.set(`_telemetry-verify.${FOLLOW.domains.taken}`, { TXT: [`telemetry-verify=${FOLLOW.takenToken}`] });
    [gateway, query, sso, follow] = await Promise.all([
      runGateway(),
      runQuery(),
      runQuery({ OIDC_ISSUER: 'http://127.0.0.1:9', OIDC_CLIENT_ID: 'corpus', OIDC_CLIENT_SECRET: 'corpus-secret' }),
      // NOTE: egress allows the receiver's port only: every other loopback notation is denied.
      runQuery({
        EGRESS_ALLOW: `127.0.0.1:${receiver.port}`,
        WEBHOOK_VERIFY_TIMEOUT_MS: '500',
        SUBSCRIBE_PER_ADDRESS_PER_HOUR: '100000',
        SUBSCRIBE_PER_PAGE_PER_HOUR: '1000000',
        SUBSCRIPTION_LINKS_PER_ADDRESS_PER_HOUR: '100000',
        OPERATOR_HOSTS: FOLLOW.operator,
        DOMAIN_RESOLVER: `127.0.0.1:${dns.port}`,
        DOMAIN_VERIFY_TIMEOUT_MS: '1000',
        STATUS_PAGE_CACHE_SECONDS: '1',
      }),
    ]);
    await registerMonitors(...CORPUS_MONITORS);
    // A monitor of another tenant: every key of the corpus (default tenant) gets 404.
    await createTenant(adminRegistry(), 'corpus foreign', FOREIGN_TENANT);
    await registerMonitorsIn(FOREIGN_TENANT, FOREIGN);
    await followFixtures(adminRegistry());
    expiredApi = await newKey({ kind: 'api', name: 'corpus expired', scopes: ['checks:read'], expiresInSeconds: 1 });
    expiredAccess = await newKey({ kind: 'telemetry', name: 'corpus expired', expiresInSeconds: 1 });
    access = await newKey({ kind: 'telemetry', name: 'corpus' });
    revoked = await newKey({ kind: 'telemetry', name: 'corpus revoked' });
    api = await newKey({ kind: 'api', name: 'corpus api', scopes: ['checks:read'] });
    noScope = await newKey({ kind: 'api', name: 'corpus no scope', scopes: ['monitors:write'] });
    otherTenant = await newKey({
      kind: 'api',
      name: 'corpus tenant',
      scopes: ['checks:read'],
      monitorIds: ['tenant-a-monitor'],
    });
    monitors = await newKey({ kind: 'api', name: 'corpus monitors', scopes: ['monitors:read', 'monitors:write'] });
    restricted = await newKey({
      kind: 'api',
      name: 'corpus monitors restricted',
      scopes: ['monitors:write'],
      monitorIds: ['tenant-a-monitor'],
    });
    viewer = await newKey({ kind: 'api', name: 'corpus viewer', scopes: ['monitors:read'] });
    people = await newKey({ kind: 'api', name: 'corpus people', scopes: [...SCOPES] });
    keyMaker = await newKey({ kind: 'api', name: 'corpus key maker', scopes: ['keys:read', 'keys:write'] });
    const foreignKey = await newKey({ tenantId: FOREIGN_TENANT, kind: 'api', name: 'corpus foreign' });
    const foreignDeletion = await createDeletion(adminRegistry(), {
      tenantId: FOREIGN_TENANT,
      requestedBy: 'corpus',
      userIds: ['corpus-foreign-user'],
      anonymousIds: [],
    });
    fixtures = {
      ...(await peopleFixtures(adminRegistry())),
      foreignKeyId: foreignKey.split('_')[1]!,
      foreignDeletionId: foreignDeletion.id,
    };
    await revokeKey(adminRegistry(), revoked.split('_')[1]!);
    await eventually('keys loaded and the revocation seen', async () => {
      const a = await send(gateway.url, {
        method: 'POST',
        path: '/api/telemetry/events',
        headers: { 'content-type': 'application/json', 'x-access-key': access },
        body: '{"events":[{"source":"s","category":"c","payload":{}}]}',
      });
      const b = await send(query.url, {
        method: 'GET',
        path: '/api/monitors/tenant-a-monitor/checks',
        headers: { authorization: `Bearer ${otherTenant}` },
      });
      const r = await send(gateway.url, {
        method: 'POST',
        path: '/api/telemetry/events',
        headers: { 'content-type': 'application/json', 'x-access-key': revoked },
        body: '{"events":[{"source":"s","category":"c","payload":{}}]}',
      });
      const m = await send(query.url, {
        method: 'GET',
        path: '/api/monitors/m1',
        headers: { authorization: `Bearer ${monitors}` },
      });
      const w = await send(query.url, {
        method: 'PATCH',
        path: '/api/monitors/tenant-a-monitor',
        headers: { authorization: `Bearer ${restricted}`, 'content-type': 'application/json' },
        body: '{}',
      });
      const p = await send(query.url, {
        method: 'GET',
        path: '/api/members',
        headers: { authorization: `Bearer ${people}` },
      });
      return a.status === 200 &&
        b.status === 200 &&
        r.status === 401 &&
        m.status === 200 &&
        w.status === 400 &&
        p.status === 200
        ? true
        : undefined;
    });
    await eventually('the follow service sees the pages and the verified domain', async () => {
      const page = await send(follow.url, { method: 'GET', path: `/api/status/${FOLLOW.page}` });
      // NOTE: raw HTTP: fetch does not send a Host header of ours.
      const domain = await send(follow.url, {
        method: 'GET',
        path: '/api/status-domain',
        headers: { host: FOLLOW.domains.verified },
      });
      return page.status === 200 && domain.status === 200 ? true : undefined;
    });
    registryBefore = await registry();
    peopleBefore = await peopleNow();
    followBefore = await followRows(adminRegistry());
  });

  /** Every monitor (all pages), and the ones the corpus aims at in full. */
  async function registry(): Promise<Registry> {
    const listed: Registry['listed'] = [];
    let cursor: string | null = null;
    do {
      const page: ApiAnswer<Registry['listed']> = await apiCall<Registry['listed']>(
        query.url,
        monitors,
        'GET',
        `/api/monitors?limit=1000${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).to.equal(200);
      listed.push(...page.body.data.map(({ id, name, url }) => ({ id, name, url })));
      cursor = page.body.next_cursor ?? null;
    } while (cursor);
    const shown: Record<string, unknown> = {};
    for (const id of CORPUS_MONITORS) {
      const r = await apiCall(query.url, monitors, 'GET', `/api/monitors/${id}`);
      expect(r.status, id).to.equal(200);
      shown[id] = r.body.data;
    }
    return { listed, shown };
  }

  /** The tenant's members, pending invitations, keys and settings, as the every-scope key reads them. */
  async function peopleNow(): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    for (const path of ['/api/members', '/api/invitations', '/api/keys', '/api/settings']) {
      const r = await apiCall(query.url, people, 'GET', path);
      expect(r.status, path).to.equal(200);
      out[path] = r.body.data;
    }
    return out;
  }

  after(async () => {
    await Promise.all([gateway?.stop(), query?.stop(), sso?.stop(), follow?.stop()]);
    await Promise.all([receiver.stop(), trapped.stop(), dns.stop()]);
    const rows = results.map((r) => `| ${printable(r.name)} | ${r.expected} | ${r.got} |`).join('\n');
    const section = `## Bad-input corpus\n\nWritten by \`test/e2e/bad-input.int.test.ts\` (part of \`npm test\`) on ${new Date().toISOString().slice(0, 10)}: ${results.length} hostile requests, each answered as expected${results.some((r) => r.expected !== r.got) ? ' EXCEPT the rows where the columns differ' : ''}; none got a 5xx.\n\n| request | expected | answered |\n|---|---|---|\n${rows}`;
    writeSection('RELIABILITY.md', 'bad-input', section, RELIABILITY_TITLE);
  });

  it('answers every hostile request with its documented status and code, and never a 5xx', async () => {
    const keys: Record<KeyName, string> = {
      access,
      revoked,
      api,
      noScope,
      otherTenant,
      monitors,
      restricted,
      expiredApi,
      expiredAccess,
      viewer,
      people,
      keyMaker,
      foreignKeyId: fixtures.foreignKeyId!,
      foreignDeletionId: fixtures.foreignDeletionId!,
      viewerId: fixtures.viewerId!,
      viewerSession: fixtures.viewerSession!,
      viewerCsrf: fixtures.viewerCsrf!,
      ownerId: fixtures.ownerId!,
      ownerSession: fixtures.ownerSession!,
      ownerCsrf: fixtures.ownerCsrf!,
    };
    // Expired keys answer KEY_EXPIRED once their second has passed.
    await eventually('the expired keys expired', async () => {
      const r = await fetch(`${query.url}/api/monitors/m1/checks`, {
        headers: { authorization: `Bearer ${expiredApi}` },
      });
      return r.status === 401 && ((await r.json()) as { code: string }).code === 'KEY_EXPIRED' ? true : undefined;
    });
    const placeholder = new RegExp(`@(${KEY_NAMES.join('|')})\\b`, 'g');
    const fill = (s: string): string => s.replace(placeholder, (_, name: KeyName) => keys[name]);
    const cases = corpus({ receiverPort: receiver.port, trapPort: trapped.port });
    expect(cases.length).to.be.greaterThan(100);
    // Every case runs, so one run lists every wrong answer (here and in RELIABILITY.md).
    const wrong: string[] = [];
    for (const c of cases) {
      const real = {
        ...c,
        path: fill(c.path),
        // an empty header value means: do not send that header
        headers: Object.fromEntries(
          Object.entries(c.headers ?? {})
            .filter(([, v]) => v !== '')
            .map(([k, v]) => [k, fill(v)]),
        ),
      };
      const a = await send({ gateway, query, sso, follow }[c.service].url, real);
      const expected = `${c.expect.status}${c.expect.code ? ` ${c.expect.code}` : ''}`;
      const got = `${a.status}${c.expect.code ? ` ${a.code}` : ''}`;
      results.push({ name: c.name, expected, got });
      if (a.status >= 500) wrong.push(`${c.name}: a ${a.status} (${a.code})`);
      else if (got !== expected) wrong.push(`${c.name}: expected ${expected}, got ${got}`);
      else if (c.expect.path !== undefined && !a.paths.includes(c.expect.path)) {
        wrong.push(`${c.name}: expected the field ${c.expect.path}, got ${a.paths.join(', ') || 'none'}`);
      } else if (a.status >= 400 && !c.path.includes('pixel.gif') && a.success !== false) {
        wrong.push(`${c.name}: success is not false`);
      }
      // The follow routes answer only codes their OpenAPI operation lists (405, other hosts and
      // paths the document does not name aside).
      if (c.service === 'follow' && a.code !== undefined && a.status !== 405 && c.headers?.host === undefined) {
        const codes = documentedCodes(c.method, c.path.split('?')[0]!);
        if (codes !== undefined && !codes.has(a.code))
          wrong.push(`${c.name}: ${a.code} is not a code the OpenAPI document lists for it`);
      }
    }
    expect(wrong, wrong.join('\n')).to.deep.equal([]);
  });

  it('creates, changes and deletes no monitor on any bad request', async () => {
    const now = await registry();
    const leaked = now.listed.filter((m) => m.name.includes(MARK) || m.url.includes(MARK));
    expect(leaked, 'monitors created by bad requests').to.deep.equal([]);
    expect(now.listed.map((m) => m.id).sort()).to.deep.equal(registryBefore.listed.map((m) => m.id).sort());
    expect(now.shown, 'm1 and the tenant monitors as the corpus found them').to.deep.equal(registryBefore.shown);
  });

  it('changes no member, invitation, key or setting on any bad request', async () => {
    expect(await peopleNow()).to.deep.equal(peopleBefore);
  });

  it('records no deletion and suppresses no id on any bad request (the other tenant keeps its one)', async () => {
    const count = async (sql: string, tenant = DEFAULT_TENANT): Promise<number> =>
      Number((await adminRegistry().query<{ n: string }>(sql, [tenant])).rows[0]!.n);
    expect(await count('SELECT count(*) AS n FROM deletions WHERE tenant_id = $1')).to.equal(0);
    expect(await count('SELECT count(*) AS n FROM suppressions WHERE tenant_id = $1')).to.equal(0);
    // The corpus's own foreign tenant (other test files of the run make deletions of their own tenants).
    expect(await count('SELECT count(*) AS n FROM deletions WHERE tenant_id = $1', FOREIGN_TENANT)).to.equal(1);
  });

  it('changes no report, subscriber or custom domain on any bad request, and sends nothing to a denied address', async () => {
    expect(await followRows(adminRegistry())).to.deep.equal(followBefore);
    expect(trapped.hits, 'requests that reached a denied notation of loopback').to.deep.equal([]);
    // The receiver got signed verification requests only (and never the redirect's target).
    expect(receiver.hits.length).to.be.greaterThan(0);
    for (const h of receiver.hits) {
      expect(h.path).not.to.equal('/echo');
      expect(h.headers['x-telemetry-signature'], h.path).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);
      const b = JSON.parse(h.body) as { type: string; challenge: string; page: { slug: string } };
      expect([b.type, b.page.slug, typeof b.challenge], h.path).to.deep.equal([
        'subscription.verify',
        FOLLOW.page,
        'string',
      ]);
    }
  });

  it('has every route of status pages people follow that the OpenAPI document names, and 405 for every other method', async () => {
    const paths = Object.entries(buildOpenApi('query').paths as Record<string, Record<string, unknown>>).filter(([p]) =>
      /\/(reports|subscribers|domains|history|unsubscribe|feed\.(rss|atom)|badges)\b|^\/api\/status-domain$/.test(p),
    );
    expect(paths.length).to.be.greaterThan(15);
    const wrong: string[] = [];
    for (const [template, ops] of paths) {
      // Without a key (an owner route answers 401 before anything), with no body: nothing changes.
      const path = template
        .replace('{slug}', FOLLOW.page)
        .replace('{monitor_id}', 'm1')
        .replace('{hostname}', 'status.corpus-missing.example')
        .replace('{id}', template.includes('/reports/') ? 'rpt_00000000000000000000' : 'sub_00000000000000000000');
      for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
        const a = await send(follow.url, {
          method: method.toUpperCase(),
          path,
          // the custom domain's own route answers only there
          headers: template === '/api/status-domain' ? { host: FOLLOW.domains.verified } : {},
        });
        const documented = method in ops;
        // A documented method is a route; any other is 405 (nothing the document does not name).
        if (documented ? a.status === 405 || (a.status === 404 && a.code === 'NOT_FOUND') : a.status !== 405) {
          wrong.push(
            `${method.toUpperCase()} ${template} (${documented ? 'documented' : 'not documented'}): ${a.status} ${a.code}`,
          );
        }
      }
    }
    expect(wrong).to.deep.equal([]);
  });

  it('answers a subscribed, pending or differently cased address byte for byte as a new one (no enumeration)', async () => {
    const S = FOLLOW.subscribers;
    const emails = [
      `corpus-new-${Date.now()}@example.com`,
      S.active.email,
      S.pending.email,
      S.active.email.toUpperCase(),
      S.other.email,
    ];
    const answers = [];
    for (const email of emails) {
      const r = await fetch(`${follow.url}/api/status/${FOLLOW.page}/subscribers`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email }),
      });
      const headers = [...r.headers.entries()].filter(([k]) => !['date', 'x-request-id'].includes(k));
      answers.push({ status: r.status, headers, body: await r.text() });
    }
    expect(answers[0]!.status).to.equal(202);
    expect(JSON.parse(answers[0]!.body)).to.deep.equal({ success: true, data: { state: 'confirmation_sent' } });
    for (const [i, a] of answers.entries()) expect(a, emails[i]).to.deep.equal(answers[0]);
    // One row per address: the active one still active, the pending one not doubled.
    const { rows } = await adminRegistry().query<{ email: string; state: string }>(
      `SELECT email, state FROM status_subscribers WHERE slug = $1 AND email = ANY($2) ORDER BY email`,
      [FOLLOW.page, [S.active.email, S.pending.email]],
    );
    expect(rows).to.deep.equal([
      { email: S.active.email, state: 'active' },
      { email: S.pending.email, state: 'pending' },
    ]);
  });

  it('keeps markup in report texts as typed: verbatim in the JSON answers, escaped in the feeds', async () => {
    const markup = `]]><script>alert("corpus")</script> & <b>bold</b> <!-- c --> ${MARK}`;
    const made = await apiCall<{ id: string; title: string; updates: { message: string }[] }>(
      follow.url,
      monitors,
      'POST',
      `/api/status-pages/${FOLLOW.page}/reports`,
      { title: markup, message: markup, monitor_ids: ['m1'] },
    );
    expect(made.status, made.text).to.equal(201);
    expect([made.body.data.title, made.body.data.updates[0]!.message]).to.deep.equal([markup, markup]);
    const shown = await eventually('the page shows the report', async () => {
      const r = await fetch(`${follow.url}/api/status/${FOLLOW.page}`);
      const page = (await r.json()) as {
        data: { reports: { id: string; title: string; updates: { message: string }[] }[] };
      };
      return page.data.reports.find((x) => x.id === made.body.data.id) ? { r, page } : undefined;
    });
    expect(shown.r.headers.get('content-type')).to.match(/^application\/json/);
    const publicReport = shown.page.data.reports.find((x) => x.id === made.body.data.id)!;
    expect([publicReport.title, publicReport.updates[0]!.message]).to.deep.equal([markup, markup]);
    for (const [feed, type] of [
      ['feed.rss', 'application/rss+xml'],
      ['feed.atom', 'application/atom+xml'],
    ] as const) {
      const xml = await eventually(`the ${feed} lists the report`, async () => {
        const r = await fetch(`${follow.url}/status/${FOLLOW.page}/${feed}`);
        expect(r.headers.get('content-type'), feed).to.match(new RegExp(`^${type.replace('+', '\\+')}`));
        const text = await r.text();
        return text.includes('alert(') ? text : undefined;
      });
      // As an XML parser reads it: CDATA taken as it is, entities decoded once. No markup of
      // the report's may be an element of the feed, and the entries' text (HTML to a feed
      // reader) holds it escaped: shown as typed, never run.
      const escape = (t: string): string => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
      const wellFormed = xml.replace(/<!\[CDATA\[([\s\S]*?)\]\]>/g, (_m, t: string) => escape(t));
      expect(wellFormed, feed).not.to.match(/<script|<b>|<!-- c/);
      const read = wellFormed
        .replace(/<[^>]*>/g, ' ')
        .replace(/&(lt|gt|quot|apos|#x?[0-9a-f]+);/gi, (m, e: string) =>
          e === 'lt'
            ? '<'
            : e === 'gt'
              ? '>'
              : e === 'quot'
                ? '"'
                : e === 'apos'
                  ? "'"
                  : m.startsWith('&#x') || m.startsWith('&#X')
                    ? String.fromCodePoint(parseInt(e.slice(2), 16))
                    : String.fromCodePoint(parseInt(e.slice(1), 10)),
        )
        .replace(/&amp;/g, '&');
      expect(read, feed).not.to.match(/<script|<b>/);
      expect(read, feed).to.contain('&lt;script&gt;alert(');
    }
  });

  it('never writes a key, a session or a CSRF token to a log line, even one sent in the query string', () => {
    const logs = [...gateway.logs.lines, ...query.logs.lines, ...follow.logs.lines].join('\n');
    expect(logs.length).to.be.greaterThan(1000);
    for (const k of [access, revoked, api, noScope, otherTenant, monitors, restricted, viewer, people, keyMaker])
      expect(logs).not.to.contain(k.split('_')[2]!);
    for (const t of ['viewerSession', 'viewerCsrf', 'ownerSession', 'ownerCsrf'])
      expect(logs).not.to.contain(fixtures[t]);
    // The subscription links' tokens the corpus sent (in bodies and query strings).
    for (const t of Object.values(followTokens())) expect(logs).not.to.contain(t.slice(t.lastIndexOf('.') + 1));
  });
});
