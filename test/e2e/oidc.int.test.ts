import { generateKeyPairSync, sign } from 'node:crypto';
import { expect } from 'chai';
import type { AuditEntry } from '@telemetry/contract';
import { createKafka, createLogger, parseSealingKeys, type PgPool } from '@telemetry/platform';
import {
  addMembership,
  createInvitation,
  createSession,
  createTenant,
  ensurePerson,
  hashPassword,
  InvitationLinks,
} from '@telemetry/store';
import { RUN_SECRETS_KEYS } from '../../harness/processes.js';
import { freePort } from '../../tools/devstack/ports.js';
import {
  adminRegistry,
  collectTopic,
  eventually,
  runQuery,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import {
  CookieJar,
  get,
  mintIdToken,
  oidcSignIn,
  oidcSignInFlow,
  startOidcProvider,
  walkProvider,
  type OidcAccount,
  type OidcClientSpec,
  type TestOidcProvider,
} from '../support/oidc-provider.js';

/**
 * Single sign-on (docs/access.md, "Single sign-on") against a real OpenID provider
 * (oidc-provider on loopback) and the real registry: sign-in by verified email, the
 * identity kept by (issuer, sub), the unverified email refused, the email-domain rule,
 * NOT_A_MEMBER, return_to, a provider down at start, and the bad input of issue 42
 * (state, browser binding, nonce, issuer, audience), each refused with OIDC_FAILED and
 * no session.
 */
describe('single sign-on (OpenID Connect; real oidc-provider, PostgreSQL)', function () {
  this.timeout(90_000);
  let query: Running;
  let op: TestOidcProvider;
  let other: TestOidcProvider;
  let publicUrl = '';
  const accounts = new Map<string, OidcAccount>();
  const main: OidcClientSpec = { clientId: 'console', clientSecret: 'a-client-secret-for-tests', redirectUris: [] };
  const otherApp: OidcClientSpec = {
    clientId: 'other-app',
    clientSecret: 'another-secret-for-tests',
    redirectUris: [],
  };
  const tenants = { member: '', auto: '' };
  const domain = `${uid('auto')}.example`;
  const people = { member: '', unverified: '' };
  let db: PgPool;
  const auditTopic = uid('audit');
  let audit: Awaited<ReturnType<typeof collectTopic>>;
  /** The audit entries published so far with this action and tenant. */
  const audited = (action: string, tenantId: string): AuditEntry[] =>
    (audit.values as AuditEntry[]).filter((e) => e.action === action && e.tenant_id === tenantId);

  const sessionsOf = async (personId: string): Promise<number> =>
    Number(
      (await db.query<{ n: string }>('SELECT count(*) AS n FROM sessions WHERE person_id = $1', [personId])).rows[0]!.n,
    );
  const monitorsWith = (cookie: string) => fetch(`${query.url}/api/monitors`, { headers: { cookie } });
  const envelope = async (res: Response) => (await res.json()) as { success: boolean; code?: string };

  before(async () => {
    db = adminRegistry();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    main.redirectUris = [`${publicUrl}/auth/oidc/callback`];
    otherApp.redirectUris = main.redirectUris;
    op = await startOidcProvider({ clients: [main, otherApp], accounts });
    other = await startOidcProvider({ clients: [main], accounts });
    tenants.member = (await createTenant(db, uid('tenant'))).tenant_id;
    tenants.auto = (await createTenant(db, uid('tenant'))).tenant_id;
    await db.query(
      `INSERT INTO tenant_settings (tenant_id, auto_admit_domains, auto_admit_role) VALUES ($1, $2, 'editor')`,
      [tenants.auto, [domain]],
    );
    for (const [k, email] of [
      ['member', `${uid('m')}@corp.example`],
      ['unverified', `${uid('u')}@corp.example`],
    ] as const) {
      const { person } = await ensurePerson(db, { email, name: k });
      people[k] = person.id;
      await addMembership(db, { tenantId: tenants.member, personId: person.id, role: 'editor', createdBy: 'test' });
      accounts.set(`sub-${k}`, { email, email_verified: k === 'member', name: k });
    }
    // A topic of this file's own for the audit entries it checks.
    const admin = createKafka({
      brokers: testStack().kafkaBrokers.split(','),
      clientId: 'oidc-test',
      logger: createLogger({ service: 'test', level: 'silent' }),
    }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: auditTopic, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    audit = await collectTopic(auditTopic);
    query = await runQuery({
      AUDIT_TOPIC: auditTopic,
      PORT: String(port),
      PUBLIC_URL: publicUrl,
      OIDC_ISSUER: op.issuer,
      OIDC_CLIENT_ID: main.clientId,
      OIDC_CLIENT_SECRET: main.clientSecret,
      OIDC_DISPLAY_NAME: 'Test provider',
      DATABASE_URL: testStack().users.postgres!.query,
    });
  });

  after(async () => {
    await audit?.stop();
    await query?.stop();
    await op?.stop();
    await other?.stop();
  });

  afterEach(() => {
    op.tamperToken = undefined;
  });

  it('GET /api/sso says SSO is on and names it', async () => {
    const res = await fetch(`${query.url}/api/sso`);
    expect(await res.json()).to.deep.equal({ success: true, data: { enabled: true, name: 'Test provider' } });
  });

  it('signs in a member by verified email, links the identity, and opens a session', async () => {
    const r = await oidcSignInFlow(query.url, 'sub-member');
    expect(r.callback.status).to.equal(302);
    expect(r.callback.headers.get('location')).to.equal('/console/#/');
    expect(r.sessionCookie).to.match(/session=/);
    expect((await monitorsWith(r.sessionCookie)).status).to.equal(200);
    const ids = await db.query('SELECT issuer, person_id FROM oidc_identities WHERE subject = $1', ['sub-member']);
    expect(ids.rows).to.deep.equal([{ issuer: op.issuer, person_id: people.member }]);
    // The browser-binding cookie is cleared.
    expect(r.jar.cookies.has('oidc_flow')).to.equal(false);
    const signIn = await eventually('session.sign_in audited', () =>
      audited('session.sign_in', tenants.member).find((e) => e.actor.id === people.member),
    );
    expect(signIn).to.deep.include({ outcome: 'ok', target: { type: 'person', id: people.member } });
    expect(signIn.changes).to.deep.equal({ method: { after: 'oidc' } });
  });

  it('finds the person by (issuer, sub) after the email changed at the provider', async () => {
    const before = accounts.get('sub-member')!;
    accounts.set('sub-member', { ...before, email: `${uid('renamed')}@elsewhere.example` });
    try {
      const n = await sessionsOf(people.member);
      const cookie = await oidcSignIn(query.url, 'sub-member');
      expect((await monitorsWith(cookie)).status).to.equal(200);
      expect(await sessionsOf(people.member)).to.equal(n + 1);
      const made = await db.query('SELECT 1 FROM people WHERE email = $1', [accounts.get('sub-member')!.email]);
      expect(made.rowCount).to.equal(0);
    } finally {
      accounts.set('sub-member', before);
    }
  });

  it('linking a new identity to a person with a password clears it (and TOTP, and their sessions): nothing proves who set it', async () => {
    // Say an inviter accepted the invitation themself with a password of their choosing.
    const email = `${uid('ceo')}@corp.example`;
    const password = 'a password the inviter chose 1';
    const { person } = await ensurePerson(db, { email, passwordHash: await hashPassword(password) });
    await addMembership(db, { tenantId: tenants.member, personId: person.id, role: 'viewer', createdBy: 'test' });
    await createSession(db, {
      personId: person.id,
      tenantId: tenants.member,
      method: 'password',
      ip: '127.0.0.1',
      userAgent: 'test',
      maxSeconds: 3600,
    });
    const signInWith = (pw: string) =>
      fetch(`${query.url}/api/session/password`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: pw }),
      });
    expect((await signInWith(password)).status, 'the password works before').to.equal(200);
    expect(await sessionsOf(person.id)).to.equal(2);

    accounts.set('sub-ceo', { email, email_verified: true, name: 'CEO' });
    const r = await oidcSignInFlow(query.url, 'sub-ceo');
    expect(r.callback.status).to.equal(302);
    expect((await monitorsWith(r.sessionCookie)).status, 'the SSO session works').to.equal(200);
    expect(await sessionsOf(person.id), 'only the SSO session is left').to.equal(1);
    const after = await db.query('SELECT password_hash, totp_enabled FROM people WHERE person_id = $1', [person.id]);
    expect(after.rows).to.deep.equal([{ password_hash: null, totp_enabled: false }]);
    const old = await signInWith(password);
    expect(old.status).to.equal(401);
    expect((await envelope(old)).code).to.equal('SIGN_IN_FAILED');
    const cleared = await eventually('person.password_cleared audited', () =>
      audited('person.password_cleared', tenants.member).find((e) => e.target.id === person.id),
    );
    expect(cleared.changes).to.deep.equal({ sessions_ended: { after: 2 }, method: { after: 'oidc' } });

    // Signing in again by the identity now linked clears nothing more (nor the session).
    const again = await oidcSignInFlow(query.url, 'sub-ceo');
    expect((await monitorsWith(again.sessionCookie)).status).to.equal(200);
    expect((await monitorsWith(r.sessionCookie)).status).to.equal(200);
  });

  it('does not link an unverified email: NOT_A_MEMBER, no identity, no session', async () => {
    const r = await oidcSignInFlow(query.url, 'sub-unverified', { accept: 'application/json' });
    expect(r.callback.status).to.equal(403);
    expect((await envelope(r.callback)).code).to.equal('NOT_A_MEMBER');
    expect(r.sessionCookie).to.equal('');
    expect(await sessionsOf(people.unverified)).to.equal(0);
    const ids = await db.query('SELECT 1 FROM oidc_identities WHERE subject = $1', ['sub-unverified']);
    expect(ids.rowCount).to.equal(0);
  });

  it("trusts an email Entra ID's way (xms_edov: true, no email_verified)", async () => {
    const email = `${uid('e')}@${domain}`;
    accounts.set('sub-entra', { email, xms_edov: true, name: 'E' });
    const r = await oidcSignInFlow(query.url, 'sub-entra');
    expect(r.callback.status).to.equal(302);
    expect((await monitorsWith(r.sessionCookie)).status).to.equal(200);
  });

  it('admits a verified email of a ruled domain as the configured role', async () => {
    const email = `${uid('d')}@${domain}`;
    accounts.set('sub-domain', { email, email_verified: true, name: 'D' });
    const r = await oidcSignInFlow(query.url, 'sub-domain');
    expect(r.callback.status).to.equal(302);
    expect((await monitorsWith(r.sessionCookie)).status).to.equal(200);
    const m = await db.query(
      `SELECT m.tenant_id, m.role, m.created_by FROM memberships m JOIN people p USING (person_id) WHERE p.email = $1`,
      [email],
    );
    expect(m.rows).to.deep.equal([{ tenant_id: tenants.auto, role: 'editor', created_by: 'auto_admit' }]);
    const admitted = await eventually('member.auto_admit audited', () =>
      audited('member.auto_admit', tenants.auto).find((e) => e.actor.email === email),
    );
    expect(admitted.changes).to.deep.equal({ role: { after: 'editor' }, domain: { after: domain } });
  });

  it('refuses a person without membership: NOT_A_MEMBER (JSON, or back to the sign-in page for a browser)', async () => {
    accounts.set('sub-nobody', { email: `${uid('n')}@nowhere.example`, email_verified: true });
    const json = await oidcSignInFlow(query.url, 'sub-nobody', { accept: 'application/json' });
    expect(json.callback.status).to.equal(403);
    expect((await envelope(json.callback)).code).to.equal('NOT_A_MEMBER');
    expect(json.sessionCookie).to.equal('');
    const left = await db.query('SELECT 1 FROM people WHERE email = $1', [accounts.get('sub-nobody')!.email]);
    expect(left.rowCount, 'a stranger leaves no person behind').to.equal(0);
    const html = await oidcSignInFlow(query.url, 'sub-nobody', { accept: 'text/html,application/xhtml+xml' });
    expect(html.callback.status).to.equal(302);
    expect(html.callback.headers.get('location')).to.equal('/console/#/sign-in?error=NOT_A_MEMBER');
    expect(html.sessionCookie).to.equal('');
  });

  it('accepts an invitation through SSO (new person, the invited role, return_to kept)', async () => {
    const tenantId = (await createTenant(db, uid('tenant'))).tenant_id;
    const links = new InvitationLinks(parseSealingKeys(RUN_SECRETS_KEYS), publicUrl);
    const invite = async (email: string) =>
      links.token(await createInvitation(db, { tenantId, email, role: 'viewer', invitedBy: 'test', ttlSeconds: 600 }));
    const email = `${uid('inv')}@invited.example`;
    accounts.set('sub-invited', { email, email_verified: true, name: 'Invited' });
    const token = await invite(email);
    const start = `?invitation=${encodeURIComponent(token)}&return_to=${encodeURIComponent('/console/#/monitors')}`;
    const r = await oidcSignInFlow(query.url, 'sub-invited', { startQuery: start });
    expect(r.callback.status).to.equal(302);
    expect(r.callback.headers.get('location')).to.equal('/console/#/monitors');
    expect((await monitorsWith(r.sessionCookie)).status).to.equal(200);
    const m = await db.query(
      `SELECT m.role, i.accepted_at IS NOT NULL AS accepted FROM memberships m JOIN people p USING (person_id)
       JOIN invitations i ON i.tenant_id = m.tenant_id AND i.email = p.email WHERE m.tenant_id = $1 AND p.email = $2`,
      [tenantId, email],
    );
    expect(m.rows).to.deep.equal([{ role: 'viewer', accepted: true }]);
    // Used once; forged; for another email: INVITATION_INVALID, no session.
    const again = await oidcSignInFlow(query.url, 'sub-invited', { startQuery: `?invitation=${token}` });
    expect(again.callback.status).to.equal(400);
    expect((await envelope(again.callback)).code).to.equal('INVITATION_INVALID');
    const forged = await oidcSignInFlow(query.url, 'sub-invited', {
      startQuery: `?invitation=${token.slice(0, -2)}xx`,
    });
    expect((await envelope(forged.callback)).code).to.equal('INVITATION_INVALID');
    const other = await oidcSignInFlow(query.url, 'sub-member', {
      startQuery: `?invitation=${await invite(`${uid('someone')}@invited.example`)}`,
    });
    expect((await envelope(other.callback)).code).to.equal('INVITATION_INVALID');
    for (const f of [again, forged, other]) expect(f.sessionCookie).to.equal('');
    await eventually('invitation.accept audited', () =>
      audited('invitation.accept', tenantId).find((e) => e.actor.email === email),
    );
    // The refusals of genuine links concern the tenant: audited there as failed sign-ins (the forged one is not).
    const failed = await eventually('failed sign-ins audited', () => {
      const f = audited('session.sign_in', tenantId).filter((e) => e.outcome === 'failed');
      return f.length >= 2 ? f : undefined;
    });
    expect(failed.map((e) => e.changes.code)).to.deep.equal([
      { after: 'INVITATION_INVALID' },
      { after: 'INVITATION_INVALID' },
    ]);
  });

  it('an invitation link from elsewhere goes to its preview first and accepts nothing', async () => {
    const tenantId = (await createTenant(db, uid('tenant'))).tenant_id;
    const links = new InvitationLinks(parseSealingKeys(RUN_SECRETS_KEYS), publicUrl);
    const invitation = await createInvitation(db, {
      tenantId,
      email: accounts.get('sub-member')!.email!,
      role: 'admin',
      invitedBy: 'test',
      ttlSeconds: 600,
    });
    const token = links.token(invitation);
    const startUrl = `${query.url}/auth/oidc/start?invitation=${encodeURIComponent(token)}`;
    const start = (headers: Record<string, string>) => fetch(startUrl, { redirect: 'manual', headers });
    // A link in a mail, typed or pasted, from another site or a sibling origin: to the preview.
    const elsewhere: Record<string, string>[] = [
      {},
      { 'sec-fetch-site': 'none' },
      { 'sec-fetch-site': 'cross-site', referer: `${publicUrl}/console/` },
      { 'sec-fetch-site': 'same-site' },
      { referer: 'http://127.0.0.1:1/mail' },
    ];
    for (const headers of elsewhere) {
      const r = await start(headers);
      expect([r.status, r.headers.get('location')], JSON.stringify(headers)).to.deep.equal([
        302,
        `/console/#/invite/${encodeURIComponent(token)}`,
      ]);
      expect(r.headers.get('set-cookie'), 'no flow started').to.equal(null);
    }
    // A browser that sends no Sec-Fetch-Site, from our own page: to the provider.
    const ours = await start({ referer: `${publicUrl}/console/` });
    expect(ours.status).to.equal(302);
    expect(ours.headers.get('location')!.startsWith(op.issuer)).to.equal(true);
    const pending = await db.query('SELECT accepted_at FROM invitations WHERE invitation_id = $1', [invitation.id]);
    expect(pending.rows).to.deep.equal([{ accepted_at: null }]);
    const joined = await db.query('SELECT 1 FROM memberships WHERE tenant_id = $1', [tenantId]);
    expect(joined.rowCount, 'nobody joined').to.equal(0);
  });

  it('returns to a /console/ path of this origin only (no open redirect)', async () => {
    const to = async (returnTo: string) =>
      (
        await oidcSignInFlow(query.url, 'sub-member', { startQuery: `?return_to=${encodeURIComponent(returnTo)}` })
      ).callback.headers.get('location');
    expect(await to('/console/#/monitors/mon_1')).to.equal('/console/#/monitors/mon_1');
    for (const bad of [
      'https://evil.example/console/',
      '//evil.example/console/',
      '/console/\\\\evil.example',
      '/\\evil.example/console/',
      '/api/monitors',
      'javascript:alert(1)',
    ])
      expect(await to(bad), bad).to.equal('/console/#/');
  });

  /** Starts a flow, walks the provider as `login`, and answers the callback URL, the jar and the flow's nonce. */
  async function begin(login: string): Promise<{ callbackUrl: string; jar: CookieJar; nonce: string }> {
    const jar = new CookieJar();
    const start = await get(`${query.url}/auth/oidc/start`, jar);
    expect(start.status).to.equal(302);
    const location = start.headers.get('location')!;
    const auth = new URL(location);
    expect(auth.searchParams.get('code_challenge_method')).to.equal('S256');
    expect(auth.searchParams.get('redirect_uri')).to.equal(`${publicUrl}/auth/oidc/callback`);
    return { callbackUrl: await walkProvider(location, login), jar, nonce: auth.searchParams.get('nonce')! };
  }

  /** Why the last refused exchange was refused (logged, never answered). */
  const lastRefusal = (): string => query.logs.lines.filter((l) => l.includes('OIDC sign-in refused')).at(-1) ?? '';

  async function expectRefused(res: Response, why?: RegExp): Promise<void> {
    if (why) expect(lastRefusal()).to.match(why);
    expect(res.status).to.equal(400);
    expect((await envelope(res)).code).to.equal('OIDC_FAILED');
    expect(res.headers.getSetCookie().some((c) => /session=[^;]/.test(c))).to.equal(false);
  }

  it('bad input: a wrong state, and a replayed one, are refused (OIDC_FAILED, no session)', async () => {
    const n = await sessionsOf(people.member);
    const f = await begin('sub-member');
    const wrong = new URL(f.callbackUrl);
    wrong.searchParams.set('state', 'not-the-state');
    await expectRefused(await get(wrong.href, f.jar));
    const first = await get(f.callbackUrl, f.jar);
    expect(first.status).to.equal(302);
    await expectRefused(await get(f.callbackUrl, f.jar));
    expect(await sessionsOf(people.member)).to.equal(n + 1);
  });

  it('bad input: a callback without the browser cookie that started it is refused', async () => {
    const n = await sessionsOf(people.member);
    const f = await begin('sub-member');
    await expectRefused(await fetch(f.callbackUrl, { redirect: 'manual' }));
    // The flow is spent: its own browser cannot use it afterwards either.
    await expectRefused(await get(f.callbackUrl, f.jar));
    expect(await sessionsOf(people.member)).to.equal(n);
  });

  it('bad input: a code with the ID token of another flow (wrong nonce) is refused', async () => {
    const n = await sessionsOf(people.member);
    const swapped = await mintIdToken(op, main, 'sub-member', 'the-nonce-of-another-flow');
    const f = await begin('sub-member');
    op.tamperToken = (body) => ({ ...body, id_token: swapped });
    await expectRefused(await get(f.callbackUrl, f.jar), /"claim":"nonce"/);
    expect(await sessionsOf(people.member)).to.equal(n);
  });

  it("bad input: another flow's code injected into this flow's callback is refused (PKCE)", async () => {
    const n = await sessionsOf(people.member);
    const mine = await begin('sub-member');
    const theirs = await begin('sub-member');
    const injected = new URL(mine.callbackUrl);
    injected.searchParams.set('code', new URL(theirs.callbackUrl).searchParams.get('code')!);
    await expectRefused(await get(injected.href, mine.jar), /invalid_grant|PKCE|code_verifier/i);
    expect(await sessionsOf(people.member)).to.equal(n);
  });

  it('bad input: an ID token from another issuer, for another audience, or signed by another key is refused', async () => {
    const n = await sessionsOf(people.member);
    for (const [provider, client, claim] of [
      [other, main, 'iss'],
      [op, otherApp, 'aud'],
    ] as const) {
      const f = await begin('sub-member');
      // Right nonce and subject: only the issuer (and its keys), or the audience, is wrong.
      const swapped = await mintIdToken(provider, client, 'sub-member', f.nonce);
      op.tamperToken = (body) => ({ ...body, id_token: swapped });
      await expectRefused(await get(f.callbackUrl, f.jar), new RegExp(`"claim":"${claim}"`));
      op.tamperToken = undefined;
    }
    // Every claim right (issuer, audience, nonce), the key id too, but signed by another key.
    const f = await begin('sub-member');
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    op.tamperToken = (body) => {
      const [header, payload] = String(body.id_token).split('.');
      const signature = sign('sha256', Buffer.from(`${header}.${payload}`), privateKey).toString('base64url');
      return { ...body, id_token: `${header}.${payload}.${signature}` };
    };
    await expectRefused(await get(f.callbackUrl, f.jar), /signature/i);
    expect(await sessionsOf(people.member)).to.equal(n);
  });

  it('starts while the provider is down, answers SSO_UNAVAILABLE, and discovers it once it is up', async () => {
    const opPort = await freePort();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const late = await runQuery({
      AUDIT_TOPIC: auditTopic,
      PORT: String(port),
      PUBLIC_URL: url,
      OIDC_ISSUER: `http://127.0.0.1:${opPort}`,
      OIDC_CLIENT_ID: main.clientId,
      OIDC_CLIENT_SECRET: main.clientSecret,
    });
    let up: TestOidcProvider | undefined;
    try {
      const down = await fetch(`${late.url}/auth/oidc/start`, { redirect: 'manual' });
      expect(down.status).to.equal(503);
      expect((await envelope(down)).code).to.equal('SSO_UNAVAILABLE');
      const page = await fetch(`${late.url}/auth/oidc/start`, { redirect: 'manual', headers: { accept: 'text/html' } });
      expect(page.headers.get('location')).to.equal('/console/#/sign-in?error=SSO_UNAVAILABLE');
      up = await startOidcProvider({
        clients: [{ ...main, redirectUris: [`${url}/auth/oidc/callback`] }],
        accounts,
        port: opPort,
      });
      const r = await oidcSignInFlow(late.url, 'sub-member');
      expect(r.callback.status).to.equal(302);
      expect((await fetch(`${late.url}/api/monitors`, { headers: { cookie: r.sessionCookie } })).status).to.equal(200);
    } finally {
      await late.stop();
      await up?.stop();
    }
  });
});
