import { expect } from 'chai';
import type { AuditEntry, InvitationView, MemberView, Role, SessionView } from '@telemetry/contract';
import { createLogger, createKafka, parseSealingKeys } from '@telemetry/platform';
import {
  addMembership,
  changeRole,
  createInvitation,
  createSession,
  createTenant,
  ensurePerson,
  hashPassword,
  InvitationLinks,
  issueKey,
  listMembers,
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
import { apiRequest, type ApiAnswer } from '../support/api.js';
import { mailedInvitationLink, runMailpit } from '../support/mailpit.js';

/**
 * Members, invitations and settings (docs/access.md, "Members") on the real stack: the
 * query service with its own PostgreSQL role, Kafka (the audit topic), and the run's
 * Mailpit for the invitation mail.
 */
describe('members, invitations and settings (real PostgreSQL, Kafka, ClickHouse, Mailpit)', function () {
  this.timeout(90_000);
  let query: Running;
  let audit: { values: unknown[]; stop(): Promise<void> };
  const auditTopic = uid('audit').replace('-', '.');
  const links = new InvitationLinks(parseSealingKeys(RUN_SECRETS_KEYS), 'http://127.0.0.1');

  /** A signed-in person: the cookie and CSRF token of their session. */
  interface Member {
    id: string;
    email: string;
    cookie: string;
    csrf: string;
  }

  /** Makes a person, a member of `tenantId` with `role`, signed in there. */
  async function member(tenantId: string, role: Role): Promise<Member> {
    const email = `${uid(role)}@example.test`;
    const { person } = await ensurePerson(adminRegistry(), {
      email,
      passwordHash: await hashPassword('a long enough password 1'),
    });
    await addMembership(adminRegistry(), { tenantId, personId: person.id, role, createdBy: 'test' });
    const s = await createSession(adminRegistry(), {
      personId: person.id,
      tenantId,
      method: 'password',
      ip: '127.0.0.1',
      userAgent: 'test',
      maxSeconds: 3600,
    });
    return { id: person.id, email, cookie: `telemetry_session=${s.token}`, csrf: s.csrfToken };
  }

  const call = <T>(method: string, path: string, body?: unknown, as?: Member): Promise<ApiAnswer<T>> =>
    apiRequest<T>(query.url, method, path, body, {
      headers: as ? { cookie: as.cookie, 'x-csrf-token': as.csrf } : {},
    });

  const auditOf = (action: string, targetId: string) =>
    eventually(`audit ${action} ${targetId}`, () =>
      (audit.values as AuditEntry[]).find((e) => e.action === action && e.target.id === targetId),
    );

  let tenant = '';
  const tenantName = uid('tenant');
  let owner: Member;
  let admin: Member;
  let viewer: Member;

  before(async () => {
    const kafka = createKafka({
      brokers: testStack().kafkaBrokers.split(','),
      clientId: 'members-test',
      logger: createLogger({ service: 'test', level: 'silent' }),
    });
    const admins = kafka.admin();
    await admins.connect();
    await admins.createTopics({ topics: [{ topic: auditTopic, numPartitions: 1 }], waitForLeaders: true });
    await admins.disconnect();
    audit = await collectTopic(auditTopic);
    tenant = (await createTenant(adminRegistry(), tenantName)).tenant_id;
    [owner, admin, viewer] = await Promise.all([
      member(tenant, 'owner'),
      member(tenant, 'admin'),
      member(tenant, 'viewer'),
    ]);
    query = await runQuery({
      AUDIT_TOPIC: auditTopic,
      PUBLIC_URL: 'http://127.0.0.1',
      // The query service's own PostgreSQL role: the routes need no more than it is granted.
      DATABASE_URL: testStack().users.postgres!.query,
    });
  });

  after(async () => {
    await query?.stop();
    await audit?.stop();
  });

  it('invite: the mail arrives with the link; preview; accept with a password; the new session works', async () => {
    const email = `${uid('colleague')}@example.test`;
    const made = await call<InvitationView & { link?: string; mail_sent: boolean }>(
      'POST',
      '/api/invitations',
      { email, role: 'viewer' },
      owner,
    );
    expect(made.status, made.text).to.equal(201);
    expect(made.body.data).to.deep.include({ email, role: 'viewer', invited_by: owner.id, mail_sent: true });
    // Mailed: the link (the proof of controlling the email) goes to the mailbox alone.
    expect(made.body.data).to.not.have.property('link');
    const link = await mailedInvitationLink(email);
    expect(link).to.match(/^http:\/\/127\.0\.0\.1\/console\/#\/invite\/inv_[a-z0-9]{20}\.[\w-]{43}$/);
    const [mail] = await runMailpit().waitFor(`to:${email}`);
    expect(mail!.Text).to.contain(link);
    expect(mail!.HTML).to.contain(link);
    const token = link.split('/invite/')[1]!;
    await auditOf('member.invite', made.body.data.id);

    const pending = await call<InvitationView[]>('GET', '/api/invitations', undefined, viewer);
    expect(pending.body.data.map((i) => i.id)).to.include(made.body.data.id);

    const preview = await call<Record<string, unknown>>('GET', `/api/invitations/preview?token=${token}`);
    expect(preview.status, preview.text).to.equal(200);
    expect(preview.body.data).to.deep.include({ email, role: 'viewer', has_account: false, sso: false });
    expect(preview.body.data.tenant).to.deep.equal({ id: tenant, name: tenantName });

    const weak = await call('POST', '/api/invitations/accept', { token, password: 'short' });
    expect(weak.code).to.equal('WEAK_PASSWORD');
    const accepted = await call<SessionView>('POST', '/api/invitations/accept', {
      token,
      name: 'Colleague',
      password: 'a long enough password 2',
    });
    expect(accepted.status, accepted.text).to.equal(200);
    expect(accepted.body.data).to.deep.include({ role: 'viewer' });
    expect(accepted.body.data.tenant.id).to.equal(tenant);
    const cookie = accepted.headers.get('set-cookie')!.split(';')[0]!;
    expect(cookie).to.match(/^telemetry_session=/);
    const colleague: Member = {
      id: accepted.body.data.person.id,
      email,
      cookie,
      csrf: accepted.body.data.csrf_token,
    };
    const members = await call<MemberView[]>('GET', '/api/members', undefined, colleague);
    expect(members.status, members.text).to.equal(200);
    expect(members.body.data.find((m) => m.email === email)).to.deep.include({
      role: 'viewer',
      name: 'Colleague',
      password: true,
      totp: false,
    });
    const entry = await auditOf('invitation.accept', made.body.data.id);
    expect(entry.actor).to.deep.equal({ type: 'person', id: colleague.id, email });
    expect(entry.tenant_id).to.equal(tenant);
    // Replayed: used once already.
    const again = await call('POST', '/api/invitations/accept', { token, password: 'a long enough password 2' });
    expect(again.code).to.equal('INVITATION_INVALID');
    expect((await auditOf('invitation.refused', made.body.data.id)).outcome).to.equal('denied');
  });

  it('a mail that cannot be sent: the answer carries the link once (mail_sent false), to hand over', async () => {
    // Nothing listens on this loopback port: the mail server refuses the connection.
    const unmailed = await runQuery({
      AUDIT_TOPIC: auditTopic,
      PUBLIC_URL: 'http://127.0.0.1',
      DATABASE_URL: testStack().users.postgres!.query,
      SMTP_URL: `smtp://127.0.0.1:${await freePort()}`,
    });
    try {
      const email = `${uid('unmailed')}@example.test`;
      const made = await apiRequest<InvitationView & { link?: string; mail_sent: boolean }>(
        unmailed.url,
        'POST',
        '/api/invitations',
        { email, role: 'viewer' },
        { headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrf } },
      );
      expect(made.status, made.text).to.equal(201);
      expect(made.body.data).to.deep.include({ email, mail_sent: false });
      expect(made.body.data.link).to.match(/^http:\/\/127\.0\.0\.1\/console\/#\/invite\/inv_[a-z0-9]{20}\.[\w-]{43}$/);
      const token = made.body.data.link!.split('/invite/')[1]!;
      const preview = await call('GET', `/api/invitations/preview?token=${token}`);
      expect(preview.status, preview.text).to.equal(200);
    } finally {
      await unmailed.stop();
    }
  });

  it('accept as an existing person: signed in (CSRF checked, the email must match) or with their password', async () => {
    const elsewhere = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const [signedIn, other] = await Promise.all([member(elsewhere, 'viewer'), member(elsewhere, 'viewer')]);
    const invite = async (email: string): Promise<string> => {
      const made = await call('POST', '/api/invitations', { email, role: 'editor' }, owner);
      expect(made.status, made.text).to.equal(201);
      return (await mailedInvitationLink(email)).split('/invite/')[1]!;
    };
    // Someone else's session: another email than the invited one.
    const forSignedIn = await invite(signedIn.email);
    const wrong = await call('POST', '/api/invitations/accept', { token: forSignedIn }, other);
    expect(wrong.code).to.equal('INVITATION_INVALID');
    const noCsrf = await apiRequest(
      query.url,
      'POST',
      '/api/invitations/accept',
      { token: forSignedIn },
      {
        headers: { cookie: signedIn.cookie },
      },
    );
    expect(noCsrf.code).to.equal('CSRF_FAILED');
    // Refused as the signed-in person: audited as denied, as every refusal (docs/access.md).
    const denied = await eventually('the CSRF refusal audited', () =>
      (audit.values as AuditEntry[]).find(
        (e) => e.action === 'access.denied' && e.actor.id === signedIn.id && e.changes.code?.after === 'CSRF_FAILED',
      ),
    );
    expect(denied).to.deep.include({ tenant_id: elsewhere, outcome: 'denied' });
    expect(denied.target).to.deep.equal({ type: 'route', id: 'POST /api/invitations/accept' });
    const joined = await call<SessionView>('POST', '/api/invitations/accept', { token: forSignedIn }, signedIn);
    expect(joined.status, joined.text).to.equal(200);
    expect(joined.body.data).to.deep.include({ role: 'editor' });
    expect(joined.body.data.tenants.map((t) => t.id).sort()).to.deep.equal([elsewhere, tenant].sort());
    // The session it came with gave way to the new one.
    expect((await call('GET', '/api/members', undefined, signedIn)).code).to.equal('SESSION_EXPIRED');

    // Without a session: their own password, not a new one.
    const forOther = await invite(other.email);
    const bad = await call('POST', '/api/invitations/accept', { token: forOther, password: 'not their password 1' });
    expect(bad.code).to.equal('SIGN_IN_FAILED');
    const preview = await call<{ has_account: boolean }>('GET', `/api/invitations/preview?token=${forOther}`);
    expect(preview.body.data.has_account).to.equal(true);
    const ok = await call<SessionView>('POST', '/api/invitations/accept', {
      token: forOther,
      password: 'a long enough password 1',
    });
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.body.data.person.id).to.equal(other.id);
  });

  it("accepting as an existing person guesses their password under sign-in's throttle", async () => {
    const elsewhere = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const someone = await member(elsewhere, 'viewer');
    const made = await call('POST', '/api/invitations', { email: someone.email, role: 'viewer' }, owner);
    expect(made.status, made.text).to.equal(201);
    const token = (await mailedInvitationLink(someone.email)).split('/invite/')[1]!;
    // The pair of account and address lets 3 failures through; the 4th starts the delay.
    const codes: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await call('POST', '/api/invitations/accept', { token, password: `a wrong guess number ${i}` });
      codes.push(r.code ?? String(r.status));
    }
    expect(codes.slice(0, 4)).to.deep.equal(['SIGN_IN_FAILED', 'SIGN_IN_FAILED', 'SIGN_IN_FAILED', 'SIGN_IN_FAILED']);
    expect(codes[4]).to.equal('SIGN_IN_THROTTLED');
    // Even the right password waits (it is not checked), and the invitation is still pending.
    const right = await call('POST', '/api/invitations/accept', { token, password: 'a long enough password 1' });
    expect(right.code).to.equal('SIGN_IN_THROTTLED');
    expect(right.headers.get('retry-after')).to.match(/^[1-9]\d*$/);
    const preview = await call('GET', `/api/invitations/preview?token=${token}`);
    expect(preview.status, preview.text).to.equal(200);
  });

  it('forged, expired and revoked links are refused with INVITATION_INVALID; genuine ones are audited', async () => {
    const email = `${uid('x')}@example.test`;
    const made = await call<InvitationView>('POST', '/api/invitations', { email, role: 'editor' }, admin);
    expect(made.status, made.text).to.equal(201);
    const token = (await mailedInvitationLink(email)).split('/invite/')[1]!;
    const [id, sig] = token.split('.') as [string, string];
    const flipped = `${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`;
    const otherKey = new InvitationLinks(parseSealingKeys(`k1:${Buffer.alloc(32, 7).toString('base64')}`), '');
    const forged = [
      `${id}.${flipped}`,
      `${id}.${sig.slice(0, 22)}${'A'.repeat(21)}`,
      otherKey.token({ id, tenantId: tenant, email, role: 'owner', expiresAtMs: Date.now() + 3_600_000 }),
      'inv_00000000000000000000.' + sig,
      'nonsense',
    ];
    for (const t of forged) {
      const preview = await call('GET', `/api/invitations/preview?token=${encodeURIComponent(t)}`);
      expect(preview.code, t).to.equal('INVITATION_INVALID');
      const accept = await call('POST', '/api/invitations/accept', { token: t, password: 'a long enough password 3' });
      expect(accept.code, t).to.equal('INVITATION_INVALID');
    }

    // Expired: made already past its expiry, signed with the run's ring.
    const old = await createInvitation(adminRegistry(), {
      tenantId: tenant,
      email: `${uid('late')}@example.test`,
      role: 'viewer',
      invitedBy: owner.id,
      ttlSeconds: -60,
    });
    const expired = await call('POST', '/api/invitations/accept', {
      token: links.token(old),
      password: 'a long enough password 4',
    });
    expect(expired.code).to.equal('INVITATION_INVALID');
    expect((await auditOf('invitation.refused', old.id)).changes.reason).to.deep.equal({ after: 'expired' });

    // Revoked.
    const revoked = await call('DELETE', `/api/invitations/${id}`, undefined, admin);
    expect(revoked.status, revoked.text).to.equal(200);
    await auditOf('invitation.revoke', id);
    expect((await call('DELETE', `/api/invitations/${id}`, undefined, admin)).code).to.equal('INVITATION_NOT_FOUND');
    const late = await call('POST', '/api/invitations/accept', { token, password: 'a long enough password 3' });
    expect(late.code).to.equal('INVITATION_INVALID');
    expect((await auditOf('invitation.refused', id)).changes.reason).to.deep.equal({ after: 'revoked' });
    const list = await call<InvitationView[]>('GET', '/api/invitations', undefined, admin);
    expect(list.body.data.map((i) => i.id))
      .to.not.include(id)
      .and.to.not.include(old.id);
  });

  it('bad bodies: VALIDATION_FAILED naming the field; a member again: ALREADY_MEMBER', async () => {
    const bad = await call('POST', '/api/invitations', { email: 'not an email', role: 'chief' }, owner);
    expect(bad.code).to.equal('VALIDATION_FAILED');
    const paths = (bad.body.details as { problems: { path: string }[] }).problems.map((p) => p.path);
    expect(paths).to.include.members(['/email', '/role']);
    const extra = await call('PATCH', `/api/members/${viewer.id}`, { role: 'editor', x: 1 }, owner);
    expect((extra.body.details as { problems: { path: string }[] }).problems[0]!.path).to.equal('/x');
    expect((await call('POST', '/api/invitations', { email: viewer.email, role: 'viewer' }, owner)).code).to.equal(
      'ALREADY_MEMBER',
    );
    expect((await call('PATCH', '/api/members/per_00000000000000000000', { role: 'editor' }, owner)).code).to.equal(
      'MEMBER_NOT_FOUND',
    );
  });

  it('a viewer may not invite (403 INSUFFICIENT_SCOPE); an admin may not make or invite an owner (403 ROLE_NOT_ALLOWED)', async () => {
    const v = await call('POST', '/api/invitations', { email: 'v@example.test', role: 'viewer' }, viewer);
    expect([v.status, v.code]).to.deep.equal([403, 'INSUFFICIENT_SCOPE']);
    const promote = await call('PATCH', `/api/members/${viewer.id}`, { role: 'owner' }, admin);
    expect([promote.status, promote.code]).to.deep.equal([403, 'ROLE_NOT_ALLOWED']);
    const invite = await call('POST', '/api/invitations', { email: 'o@example.test', role: 'owner' }, admin);
    expect(invite.code).to.equal('ROLE_NOT_ALLOWED');
    expect((await call('DELETE', `/api/members/${owner.id}`, undefined, admin)).code).to.equal('ROLE_NOT_ALLOWED');
    // Each refusal is in the audit log, as the admin's.
    const refusals = await eventually('three refusals audited', () => {
      const found = (audit.values as AuditEntry[]).filter(
        (e) => e.action === 'access.denied' && e.actor.id === admin.id && e.changes.code?.after === 'ROLE_NOT_ALLOWED',
      );
      return found.length >= 3 ? found : undefined;
    });
    expect(refusals.map((e) => e.target.id).sort()).to.deep.equal([
      'DELETE /api/members/:person_id',
      'PATCH /api/members/:person_id',
      'POST /api/invitations',
    ]);
    expect(refusals.every((e) => e.outcome === 'denied' && e.tenant_id === tenant)).to.equal(true);
    // An admin changes a viewer's role: audited with before and after.
    const change = await call<MemberView>('PATCH', `/api/members/${viewer.id}`, { role: 'editor' }, admin);
    expect(change.body.data.role).to.equal('editor');
    expect((await auditOf('member.role_change', viewer.id)).changes).to.deep.equal({
      role: { before: 'viewer', after: 'editor' },
    });
    expect((await call('PATCH', `/api/members/${viewer.id}`, { role: 'viewer' }, admin)).status).to.equal(200);
  });

  it('a key limited to some monitors changes no members, invitations or settings (403 MONITOR_NOT_ALLOWED)', async () => {
    const limited = await issueKey(adminRegistry(), {
      tenantId: tenant,
      kind: 'api',
      name: uid('limited'),
      scopes: ['members:read', 'members:write', 'settings:read', 'settings:write'],
      monitorIds: ['mon_only'],
    });
    const as = (method: string, path: string, body?: unknown) =>
      apiRequest(query.url, method, path, body, { headers: { authorization: `Bearer ${limited.key}` } });
    // It reads them (once the service has loaded the key).
    await eventually('the limited key loaded', async () =>
      (await as('GET', '/api/members')).status === 200 ? true : undefined,
    );
    const pending = await call<InvitationView>(
      'POST',
      '/api/invitations',
      { email: `${uid('x')}@example.test`, role: 'viewer' },
      owner,
    );
    expect(pending.status, pending.text).to.equal(201);
    const writes: [string, string, unknown][] = [
      ['PATCH', `/api/members/${viewer.id}`, { role: 'admin' }],
      ['DELETE', `/api/members/${viewer.id}`, undefined],
      ['POST', '/api/invitations', { email: `${uid('y')}@example.test`, role: 'owner' }],
      ['DELETE', `/api/invitations/${pending.body.data.id}`, undefined],
      ['PATCH', '/api/settings', { name: 'renamed by a limited key' }],
    ];
    for (const [method, path, body] of writes) {
      const r = await as(method, path, body);
      expect([r.status, r.code], `${method} ${path}`).to.deep.equal([403, 'MONITOR_NOT_ALLOWED']);
    }
    // Nothing changed.
    const members = await listMembers(adminRegistry(), tenant);
    expect(members.find((m) => m.id === viewer.id)?.role).to.equal('viewer');
    const invitations = await call<InvitationView[]>('GET', '/api/invitations', undefined, owner);
    expect(invitations.body.data.map((i) => i.id)).to.include(pending.body.data.id);
    const settings = await call<{ name: string }>('GET', '/api/settings', undefined, owner);
    expect(settings.body.data.name).to.not.equal('renamed by a limited key');
  });

  it('the last owner can neither leave nor be demoted; of two concurrent demotions exactly one wins', async () => {
    const t = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const [a, b] = await Promise.all([member(t, 'owner'), member(t, 'owner')]);
    const both = await Promise.all([
      call('PATCH', `/api/members/${b.id}`, { role: 'admin' }, a),
      call('PATCH', `/api/members/${a.id}`, { role: 'admin' }, b),
    ]);
    // The loser is refused by the lock (409 LAST_OWNER), or, when its request was read after
    // the winner's commit, as the admin it has become (403 ROLE_NOT_ALLOWED).
    expect(
      both.filter((r) => r.status === 200),
      JSON.stringify(both.map((r) => r.code)),
    ).to.have.length(1);
    expect(['LAST_OWNER', 'ROLE_NOT_ALLOWED']).to.include(both.find((r) => r.status !== 200)!.code);
    const last = both[0].status === 200 ? a : b;
    expect((await call('DELETE', `/api/members/${last.id}`, undefined, last)).code).to.equal('LAST_OWNER');
    expect((await call('PATCH', `/api/members/${last.id}`, { role: 'editor' }, last)).code).to.equal('LAST_OWNER');
    const owners = (await call<MemberView[]>('GET', '/api/members', undefined, last)).body.data.filter(
      (m) => m.role === 'owner',
    );
    expect(owners.map((m) => m.id)).to.deep.equal([last.id]);

    // The same race in the store, both as owners (no session read between): the lock alone decides, every time.
    for (let i = 0; i < 5; i++) {
      const u = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
      const [x, y] = await Promise.all([member(u, 'owner'), member(u, 'owner')]);
      const race = await Promise.allSettled([
        changeRole(adminRegistry(), {
          tenantId: u,
          personId: y.id,
          role: 'admin',
          actor: { role: 'owner', personId: x.id },
        }),
        changeRole(adminRegistry(), {
          tenantId: u,
          personId: x.id,
          role: 'admin',
          actor: { role: 'owner', personId: y.id },
        }),
      ]);
      expect(race.filter((r) => r.status === 'fulfilled')).to.have.length(1);
      const lost = race.find((r) => r.status === 'rejected')!;
      expect((lost.reason as { code?: string }).code).to.equal('LAST_OWNER');
      expect((await listMembers(adminRegistry(), u)).filter((m) => m.role === 'owner')).to.have.length(1);
    }
  });

  it("a removed member's next request answers 401 SESSION_EXPIRED; a member may leave", async () => {
    const gone = await member(tenant, 'editor');
    expect((await call('GET', '/api/members', undefined, gone)).status).to.equal(200);
    const removed = await call('DELETE', `/api/members/${gone.id}`, undefined, admin);
    expect(removed.status, removed.text).to.equal(200);
    expect((await auditOf('member.remove', gone.id)).actor.id).to.equal(admin.id);
    const next = await call('GET', '/api/members', undefined, gone);
    expect([next.status, next.code]).to.deep.equal([401, 'SESSION_EXPIRED']);

    const leaver = await member(tenant, 'viewer');
    const other = await call('DELETE', `/api/members/${admin.id}`, undefined, leaver);
    expect(other.code).to.equal('INSUFFICIENT_SCOPE');
    const left = await call('DELETE', `/api/members/${leaver.id}`, undefined, leaver);
    expect(left.status, left.text).to.equal(200);
    expect((await call('GET', '/api/members', undefined, leaver)).code).to.equal('SESSION_EXPIRED');
  });

  it('settings: read, rename the tenant and set the domain rule (audited); bad domains named by path', async () => {
    const before = await call<{ name: string }>('GET', '/api/settings', undefined, admin);
    expect(before.body.data).to.deep.include({ auto_admit_domains: [], auto_admit_role: 'viewer' });
    const name = uid('Renamed');
    const changed = await call(
      'PATCH',
      '/api/settings',
      { name, auto_admit_domains: ['Example.test'.toLowerCase()], auto_admit_role: 'editor' },
      admin,
    );
    expect(changed.status, changed.text).to.equal(200);
    expect(changed.body.data).to.deep.equal({ name, auto_admit_domains: ['example.test'], auto_admit_role: 'editor' });
    expect((await auditOf('settings.update', tenant)).changes.name).to.deep.equal({
      before: before.body.data.name,
      after: name,
    });
    const bad = await call('PATCH', '/api/settings', { auto_admit_domains: ['ok.test', 'not a domain'] }, admin);
    expect((bad.body.details as { problems: { path: string }[] }).problems[0]!.path).to.equal('/auto_admit_domains/1');
    expect((await call('PATCH', '/api/settings', { auto_admit_role: 'owner' }, admin)).code).to.equal(
      'VALIDATION_FAILED',
    );
    expect((await call('GET', '/api/settings', undefined, viewer)).code).to.equal('INSUFFICIENT_SCOPE');
    // Without the CSRF token a cookie changes nothing.
    const noCsrf = await apiRequest(
      query.url,
      'PATCH',
      '/api/settings',
      { name: 'x' },
      { headers: { cookie: admin.cookie } },
    );
    expect(noCsrf.code).to.equal('CSRF_FAILED');
  });
});
