import { request as httpRequest } from 'node:http';
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { Algorithm, hash } from '@node-rs/argon2';
import type { AuditEntry, SessionView } from '@telemetry/contract';
import { createLogger, createPostgres, ensureTopics } from '@telemetry/platform';
import {
  addMembership,
  createTenant,
  ensurePerson,
  hashPassword,
  needsRehash,
  personByEmail,
  pruneSignInRecords,
  SIGN_IN_THROTTLE,
  sessionHash,
  totpCode,
} from '@telemetry/store';
import {
  adminRegistry,
  collectTopic,
  eventually,
  runQuery,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import type { Envelope } from '../support/api.js';
import { runMailpit } from '../support/mailpit.js';

/**
 * Password sign-in and sessions (docs/access.md, "Signing in", "Sessions"; docs/api.md) on
 * the real PostgreSQL, Kafka (the audit topic) and Mailpit: the cookie's attributes, CSRF,
 * idle and absolute expiry, sign-out, throttling, TOTP and reset by email.
 */

interface Answer<T> {
  status: number;
  body: Envelope<T>;
  headers: Record<string, string | string[] | undefined>;
  ms: number;
}

const PASSWORD = 'correct horse battery staple 42';
const PUBLIC_URL = 'http://127.0.0.1:8082';

describe('sessions: password sign-in, CSRF, expiry, throttling, TOTP, reset (real PostgreSQL, Kafka, Mailpit)', function () {
  this.timeout(120_000);
  let query: Running;
  let audit: { values: unknown[]; stop(): Promise<void> };
  let port = 0;
  const tenants = { a: '', b: '' };

  /** One request from `localAddress` (127.0.0.1 unless said), with the session cookie and CSRF token when given. */
  const call = <T = unknown>(
    method: string,
    path: string,
    o: { body?: unknown; cookie?: string; csrf?: string; headers?: Record<string, string>; from?: string } = {},
  ): Promise<Answer<T>> =>
    new Promise((resolve, reject) => {
      const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
      const started = performance.now();
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method,
          path,
          localAddress: o.from ?? '127.0.0.1',
          headers: {
            ...(payload === undefined
              ? {}
              : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
            ...(o.cookie ? { cookie: o.cookie } : {}),
            ...(o.csrf ? { 'x-csrf-token': o.csrf } : {}),
            ...o.headers,
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: (text ? JSON.parse(text) : { success: false, code: `no body (${res.statusCode})` }) as Envelope<T>,
              headers: res.headers,
              ms: performance.now() - started,
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(payload);
    });

  /** A person with PASSWORD (or `passwordHash`), a member of `tenantIds` in that order. */
  const person = async (tenantIds: string[], passwordHash?: string): Promise<{ id: string; email: string }> => {
    const email = `${uid('p')}@example.com`;
    const { person: p } = await ensurePerson(adminRegistry(), {
      email,
      name: 'Pat',
      passwordHash: passwordHash ?? (await hashPassword(PASSWORD)),
    });
    for (const tenantId of tenantIds) {
      await addMembership(adminRegistry(), { tenantId, personId: p.id, role: 'editor', createdBy: 'test' });
    }
    return { id: p.id, email };
  };

  interface Signed {
    cookie: string;
    token: string;
    view: SessionView;
    setCookie: string;
  }
  const signIn = async (email: string, extra: Record<string, string> = {}, from?: string): Promise<Signed> => {
    const r = await call<SessionView>('POST', '/api/session/password', {
      body: { email, password: PASSWORD, ...extra },
      from,
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    const setCookie = (r.headers['set-cookie'] ?? [])[0]!;
    const cookie = setCookie.split(';')[0]!;
    return { cookie, token: cookie.slice(cookie.indexOf('=') + 1), view: r.body.data, setCookie };
  };
  const withSession = (s: Signed) => ({ cookie: s.cookie, csrf: s.view.csrf_token });
  const auditOf = (action: string, personId: string): AuditEntry[] =>
    (audit.values as AuditEntry[]).filter((e) => e.action === action && e.target.id === personId);

  before(async () => {
    const s = testStack();
    const auditTopic = `${s.alertsTopic}.audit-${uid('t')}`;
    const kafka = new Kafka({
      brokers: s.kafkaBrokers.split(','),
      clientId: 'sessions-test',
      logLevel: logLevel.NOTHING,
    });
    await ensureTopics(kafka, [{ topic: auditTopic, numPartitions: 1 }]);
    audit = await collectTopic(auditTopic);
    // The older membership (a) is where a sign-in lands unless it names another.
    tenants.a = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    tenants.b = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    query = await runQuery({
      AUDIT_TOPIC: auditTopic,
      PUBLIC_URL,
      // The query service's own PostgreSQL role: the routes need no more than it is granted.
      DATABASE_URL: s.users.postgres!.query,
    });
    port = Number(new URL(query.url).port);
  });

  after(async () => {
    await query?.stop();
    await audit?.stop();
  });

  it('signs in: the cookie is HttpOnly, SameSite=Lax, Path=/, not Secure on loopback; GET /api/session answers the session', async () => {
    const p = await person([tenants.a, tenants.b]);
    const s = await signIn(p.email.toUpperCase());
    expect(s.setCookie).to.match(/^telemetry_session=[A-Za-z0-9_-]{43};/);
    const attributes = s.setCookie.split(';').map((a) => a.trim().toLowerCase());
    expect(attributes).to.include.members(['httponly', 'samesite=lax', 'path=/']);
    expect(attributes).to.not.include('secure');
    expect(s.view).to.deep.include({ role: 'editor', tenant: { id: tenants.a, name: s.view.tenant.name } });
    expect(s.view.person).to.deep.equal({ id: p.id, email: p.email, name: 'Pat' });
    expect(s.view.tenants.map((t) => t.id)).to.deep.equal([tenants.a, tenants.b]);
    expect(s.view.scopes).to.include('monitors:write');

    const got = await call<SessionView>('GET', '/api/session', { cookie: s.cookie });
    expect(got.status).to.equal(200);
    expect(got.body.data.csrf_token).to.equal(s.view.csrf_token);
    expect(got.headers['cache-control']).to.equal('no-store');
    expect((await call('GET', '/api/session')).body.code).to.equal('MISSING_CREDENTIALS');
    expect((await call('GET', '/api/session', { cookie: 'telemetry_session=nonsense' })).body.code).to.equal(
      'SESSION_EXPIRED',
    );

    // Signing in again from the same browser ends the session its cookie held.
    const again = await call<SessionView>('POST', '/api/session/password', {
      cookie: s.cookie,
      body: { email: p.email, password: PASSWORD },
    });
    expect(again.status).to.equal(200);
    expect((await call('GET', '/api/session', { cookie: s.cookie })).body.code).to.equal('SESSION_EXPIRED');

    // tenant_id picks the tenant when they are a member there, else the oldest membership.
    expect((await signIn(p.email, { tenant_id: tenants.b })).view.tenant.id).to.equal(tenants.b);
    expect((await signIn(p.email, { tenant_id: 'ten_elsewhere' })).view.tenant.id).to.equal(tenants.a);
    await eventually('sign-in audited', () => (auditOf('session.sign_in', p.id).length >= 4 ? true : undefined));
    const entry = auditOf('session.sign_in', p.id)[0]!;
    expect(entry).to.deep.include({ tenant_id: tenants.a, outcome: 'ok' });
    expect(entry.actor).to.deep.equal({ type: 'person', id: p.id, email: p.email });
  });

  it('refuses an unknown email and a wrong password alike, audits the failure in each tenant, and 403 NOT_A_MEMBER for nobody’s member', async () => {
    const p = await person([tenants.a, tenants.b]);
    const wrong = await call('POST', '/api/session/password', { body: { email: p.email, password: 'not it at all' } });
    const unknown = await call('POST', '/api/session/password', {
      body: { email: `${uid('nobody')}@example.com`, password: 'not it at all' },
    });
    expect(wrong.status).to.equal(401);
    expect(unknown.status).to.equal(401);
    expect(unknown.body).to.deep.equal(wrong.body);
    expect(wrong.body.code).to.equal('SIGN_IN_FAILED');
    // The unknown account costs a hash too (not a quick "no such email").
    expect(unknown.ms).to.be.greaterThan(wrong.ms / 4);
    await eventually('failure audited in both tenants', () =>
      auditOf('session.sign_in', p.id).length >= 2 ? true : undefined,
    );
    const failures = auditOf('session.sign_in', p.id);
    expect(failures.map((e) => e.tenant_id).sort()).to.deep.equal([tenants.a, tenants.b].sort());
    expect(failures.every((e) => e.outcome === 'failed' && e.actor.email === p.email)).to.equal(true);

    const loner = await person([]);
    const r = await call('POST', '/api/session/password', { body: { email: loner.email, password: PASSWORD } });
    expect(r.status).to.equal(403);
    expect(r.body.code).to.equal('NOT_A_MEMBER');
    expect(
      (await call('POST', '/api/session/password', { body: { email: p.email } })).body.details?.problems,
    ).to.deep.equal([{ path: '/password', message: 'is required' }]);
  });

  it('refuses a cookie-authenticated write without the CSRF token or from another origin, and takes it from PUBLIC_URL’s', async () => {
    const p = await person([tenants.a, tenants.b]);
    const s = await signIn(p.email);
    const body = { tenant_id: tenants.b };
    const bare = await call('POST', '/api/session/tenant', { cookie: s.cookie, body });
    expect(bare.status).to.equal(403);
    expect(bare.body.code).to.equal('CSRF_FAILED');
    const sibling = await call('POST', '/api/session/tenant', {
      ...withSession(s),
      body,
      headers: { origin: `http://127.0.0.1:${port === 65535 ? port - 1 : port + 1}` },
    });
    expect(sibling.status).to.equal(403);
    expect(sibling.body.code).to.equal('CSRF_FAILED');
    // A route of authorize() refuses the same way.
    const channel = await call('POST', '/api/channels', { cookie: s.cookie, body: {} });
    expect(channel.body.code).to.equal('CSRF_FAILED');
    expect((await call<SessionView>('GET', '/api/session', { cookie: s.cookie })).body.data.tenant.id).to.equal(
      tenants.a,
    );

    // Ours is PUBLIC_URL's origin, not the address the request arrived on (behind a TLS proxy
    // that is plain http): the listening address itself is another origin.
    const arrivedOn = await call('POST', '/api/session/tenant', {
      ...withSession(s),
      body,
      headers: { origin: `http://127.0.0.1:${port}` },
    });
    expect(arrivedOn.body.code).to.equal('CSRF_FAILED');
    const ours = await call<SessionView>('POST', '/api/session/tenant', {
      ...withSession(s),
      body,
      headers: { origin: new URL(PUBLIC_URL).origin },
    });
    expect(ours.status, JSON.stringify(ours.body)).to.equal(200);
    expect(ours.body.data.tenant.id).to.equal(tenants.b);
    expect((await call<SessionView>('GET', '/api/session', { cookie: s.cookie })).body.data.tenant.id).to.equal(
      tenants.b,
    );
    const other = await createTenant(adminRegistry(), uid('tenant'));
    const notMember = await call('POST', '/api/session/tenant', {
      ...withSession(s),
      body: { tenant_id: other.tenant_id },
    });
    expect(notMember.body.code).to.equal('NOT_A_MEMBER');
  });

  it('ends a session idle past SESSION_IDLE_SECONDS, and any session past its absolute expiry', async () => {
    const p = await person([tenants.a]);
    const idle = await signIn(p.email);
    const aged = (interval: string, column: 'last_seen_at' | 'expires_at', token: string) =>
      adminRegistry().query(`UPDATE sessions SET ${column} = now() - interval '${interval}' WHERE session_hash = $1`, [
        sessionHash(token),
      ]);
    // The default idle time is 12 h: a minute short of it, the session lives (and is touched).
    await aged('11 hours 59 minutes', 'last_seen_at', idle.token);
    expect((await call('GET', '/api/session', { cookie: idle.cookie })).status).to.equal(200);
    const { rows } = await adminRegistry().query<{ age: number }>(
      'SELECT extract(epoch FROM now() - last_seen_at)::float8 AS age FROM sessions WHERE session_hash = $1',
      [sessionHash(idle.token)],
    );
    expect(rows[0]!.age).to.be.lessThan(60);
    await aged('12 hours 1 minute', 'last_seen_at', idle.token);
    expect((await call('GET', '/api/session', { cookie: idle.cookie })).body.code).to.equal('SESSION_EXPIRED');

    const old = await signIn(p.email);
    expect((await call('GET', '/api/session', { cookie: old.cookie })).status).to.equal(200);
    await aged('1 second', 'expires_at', old.token);
    expect((await call('GET', '/api/session', { cookie: old.cookie })).body.code).to.equal('SESSION_EXPIRED');
  });

  it('signs out (the cookie cleared), and signs out everywhere (every other session ends)', async () => {
    const p = await person([tenants.a]);
    const s = await signIn(p.email);
    expect((await call('DELETE', '/api/session', { cookie: s.cookie })).body.code).to.equal('CSRF_FAILED');
    const out = await call('DELETE', '/api/session', withSession(s));
    expect(out.status).to.equal(200);
    expect(String(out.headers['set-cookie'])).to.match(/^telemetry_session=; .*Expires=Thu, 01 Jan 1970/);
    expect((await call('GET', '/api/session', { cookie: s.cookie })).body.code).to.equal('SESSION_EXPIRED');

    const one = await signIn(p.email);
    const two = await signIn(p.email);
    const all = await call<{ ended: number }>('POST', '/api/session/sign-out-everywhere', withSession(one));
    expect(all.status).to.equal(200);
    expect(all.body.data).to.deep.equal({ ended: 2 });
    expect((await call('GET', '/api/session', { cookie: two.cookie })).body.code).to.equal('SESSION_EXPIRED');
    expect((await call('GET', '/api/session', { cookie: one.cookie })).body.code).to.equal('SESSION_EXPIRED');
    await eventually('sign-outs audited', () =>
      auditOf('session.sign_out', p.id).length === 1 && auditOf('session.sign_out_everywhere', p.id).length === 1
        ? true
        : undefined,
    );
  });

  it('throttles repeated failures with a growing Retry-After without checking the password, and lets the owner in from another address', async () => {
    // A hash with weaker parameters than PASSWORD_HASH: a checked right password re-hashes it.
    const weak = await hash(PASSWORD, { algorithm: Algorithm.Argon2id, memoryCost: 8192, timeCost: 1, parallelism: 1 });
    const p = await person([tenants.a], weak);
    const storedHash = async () => (await personByEmail(adminRegistry(), p.email))!.password_hash!;
    const attempt = (password: string, from?: string) =>
      call('POST', '/api/session/password', { body: { email: p.email, password }, from });

    for (let i = 0; i < 4; i++) expect((await attempt('wrong password')).body.code).to.equal('SIGN_IN_FAILED');
    const first = await attempt('wrong password');
    expect(first.status).to.equal(429);
    expect(first.body.code).to.equal('SIGN_IN_THROTTLED');
    expect(first.headers['retry-after']).to.equal('1');
    // The right password while the delay runs is refused, unchecked (the weak hash is not replaced).
    expect((await attempt(PASSWORD)).status).to.equal(429);
    expect(await storedHash()).to.equal(weak);

    // Once the delay ends, the next failure doubles it.
    const after = await eventually('the first delay ends', async () => {
      const r = await attempt('wrong password');
      return r.status === 429 ? undefined : r;
    });
    expect(after.body.code).to.equal('SIGN_IN_FAILED');
    const second = await attempt(PASSWORD);
    expect(second.status).to.equal(429);
    expect(Number(second.headers['retry-after'])).to.equal(2);
    expect(await storedHash()).to.equal(weak);

    // The owner, from another address, is not held by this address's delay.
    const owner = await signIn(p.email, {}, '127.0.0.2');
    expect(owner.view.person.id).to.equal(p.id);
    expect((await attempt(PASSWORD)).status).to.equal(429);

    const back = await eventually('the second delay ends', async () => {
      const r = await attempt(PASSWORD);
      return r.status === 429 ? undefined : r;
    });
    expect(back.status).to.equal(200);
    expect(await storedHash()).to.not.equal(weak);
    expect(needsRehash(await storedHash())).to.equal(false);
  });

  it('counts parallel guesses before checking them: one address gets its pair’s free failures and one more', async () => {
    const p = await person([tenants.a]);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        call('POST', '/api/session/password', {
          body: { email: p.email, password: 'wrong password' },
          from: '127.0.0.5',
        }),
      ),
    );
    const codes = answers.map((a) => a.body.code);
    const failed = codes.filter((c) => c === 'SIGN_IN_FAILED').length;
    expect(failed, codes.join()).to.be.within(1, SIGN_IN_THROTTLE.pair.free + 1);
    expect(codes.filter((c) => c === 'SIGN_IN_THROTTLED').length, codes.join()).to.equal(10 - failed);
  });

  it('does not hold the owner at a known address while failures from elsewhere block the account', async () => {
    const p = await person([tenants.a]);
    await signIn(p.email, {}, '127.0.0.2');
    // One wrong password from each of enough other addresses to block the account bucket.
    for (let i = 0; i <= SIGN_IN_THROTTLE.account.free; i++) {
      const r = await call('POST', '/api/session/password', {
        body: { email: p.email, password: 'wrong password' },
        from: `127.0.0.${3 + i}`,
      });
      expect(r.body.code).to.equal('SIGN_IN_FAILED');
    }
    // An address it never signed in from is held by the account bucket (its cap: 30 s) ...
    const unknown = await call('POST', '/api/session/password', {
      body: { email: p.email, password: PASSWORD },
      from: '127.0.0.9',
    });
    expect(unknown.body.code).to.equal('SIGN_IN_THROTTLED');
    expect(Number(unknown.headers['retry-after'])).to.be.within(1, SIGN_IN_THROTTLE.account.capSeconds);
    // ... the owner, from where they signed in before, is not.
    const owner = await signIn(p.email, {}, '127.0.0.2');
    expect(owner.view.person.id).to.equal(p.id);
  });

  it('asks for a TOTP code once it is on, and takes each code once', async () => {
    // Clear of a step's end: the codes below are computed from one step of the server's clock.
    await eventually('not at the end of a 30 s step', () => (Date.now() % 30_000 < 24_000 ? true : undefined), 10_000);
    const at = Date.now();
    const p = await person([tenants.a]);
    const s = await signIn(p.email);
    const started = await call<{ secret: string; otpauth_url: string }>('POST', '/api/me/totp', withSession(s));
    expect(started.status).to.equal(200);
    const { secret, otpauth_url } = started.body.data;
    expect(otpauth_url).to.match(/^otpauth:\/\/totp\/.*secret=[A-Z2-7]+/);
    // Pending: sign-in needs no code yet.
    await signIn(p.email);

    const enable = (code: string, current_password = PASSWORD) =>
      call('POST', '/api/me/totp/enable', { ...withSession(s), body: { code, current_password } });
    // A stolen session cannot enrol its own authenticator: the password is asked for too.
    const noPassword = await call('POST', '/api/me/totp/enable', {
      ...withSession(s),
      body: { code: totpCode(secret, at) },
    });
    expect(noPassword.body.details?.problems?.[0]?.path).to.equal('/current_password');
    const wrongPassword = await enable(totpCode(secret, at), 'not my password');
    expect(wrongPassword.status).to.equal(400);
    expect(wrongPassword.body.details?.problems?.[0]?.path).to.equal('/current_password');
    const bad = await enable(totpCode(secret, at + 300_000));
    expect(bad.status).to.equal(400);
    expect(bad.body.details?.problems?.[0]?.path).to.equal('/code');
    // Wrong codes and passwords count as sign-in failures: the pair's free ones are spent, then held.
    for (let i = 2; i < SIGN_IN_THROTTLE.pair.free; i++) {
      expect((await enable(totpCode(secret, at + 300_000))).body.details?.problems?.[0]?.path).to.equal('/code');
    }
    expect((await enable(totpCode(secret, at + 300_000))).status).to.equal(400);
    const held = await enable(totpCode(secret, at - 30_000));
    expect(held.body.code).to.equal('SIGN_IN_THROTTLED');
    const enabled = await eventually('the delay ends', async () => {
      const r = await enable(totpCode(secret, at - 30_000));
      return r.status === 429 ? undefined : r;
    });
    expect(enabled.status, JSON.stringify(enabled.body)).to.equal(200);

    const noCode = await call('POST', '/api/session/password', { body: { email: p.email, password: PASSWORD } });
    expect(noCode.status).to.equal(401);
    expect(noCode.body.code).to.equal('TOTP_REQUIRED');
    await signIn(p.email, { totp: totpCode(secret, at) });
    // The same code (its step taken) does not sign in again, nor does an older one.
    const replay = await call('POST', '/api/session/password', {
      body: { email: p.email, password: PASSWORD, totp: totpCode(secret, at) },
    });
    expect(replay.body.code).to.equal('SIGN_IN_FAILED');

    const off = await call('DELETE', '/api/me/totp', {
      ...withSession(s),
      body: { code: totpCode(secret, at + 30_000), current_password: 'not my password' },
    });
    expect(off.body.details?.problems?.[0]?.path).to.equal('/current_password');
    const offRight = await call('DELETE', '/api/me/totp', {
      ...withSession(s),
      body: { code: totpCode(secret, at + 30_000), current_password: PASSWORD },
    });
    expect(offRight.status, JSON.stringify(offRight.body)).to.equal(200);
    await signIn(p.email);
    await eventually('TOTP changes audited', () =>
      auditOf('person.totp_enable', p.id).length === 1 && auditOf('person.totp_disable', p.id).length === 1
        ? true
        : undefined,
    );
  });

  it('mails a reset link that works once, ends every session, and answers 202 for an unknown email too', async () => {
    const p = await person([tenants.a, tenants.b]);
    const old = await signIn(p.email);
    const nobody = await call('POST', '/api/password-resets', { body: { email: `${uid('nobody')}@example.com` } });
    expect(nobody.status).to.equal(202);
    const asked = await call('POST', '/api/password-resets', { body: { email: p.email } });
    expect(asked.status).to.equal(202);
    expect(asked.body).to.deep.equal(nobody.body);

    const [mail] = await runMailpit().waitFor(`to:${p.email}`);
    const link = /http:\/\/127\.0\.0\.1:8082\/console\/#\/reset\/([A-Za-z0-9_-]{43})/.exec(mail!.Text);
    expect(link, mail!.Text).to.not.equal(null);
    const token = link![1]!;
    const { rows } = await adminRegistry().query<{ token_hash: string }>(
      'SELECT token_hash FROM password_resets WHERE person_id = $1',
      [p.id],
    );
    expect(rows.map((r) => r.token_hash)).to.deep.equal([sessionHash(token)]);

    const confirm = (password: string) => call('POST', '/api/password-resets/confirm', { body: { token, password } });
    const weak = await confirm('password1234');
    expect(weak.body.code).to.equal('WEAK_PASSWORD');
    // Two-step sign-in on: the reset proves the email, not the authenticator, so it goes off.
    await adminRegistry().query(`UPDATE people SET totp_enabled = true, totp_sealed = 'sealed' WHERE person_id = $1`, [
      p.id,
    ]);
    const fresh = 'a new and long enough passphrase';
    expect((await confirm(fresh)).status).to.equal(200);
    expect((await confirm(`${fresh}!`)).body.code).to.equal('RESET_LINK_INVALID');
    expect((await call('GET', '/api/session', { cookie: old.cookie })).body.code).to.equal('SESSION_EXPIRED');
    const signedIn = await call('POST', '/api/session/password', { body: { email: p.email, password: fresh } });
    expect(signedIn.status).to.equal(200);
    await eventually('reset and TOTP off audited in both tenants', () =>
      auditOf('person.password_reset', p.id).length === 2 && auditOf('person.totp_disable', p.id).length === 2
        ? true
        : undefined,
    );
  });

  it('changes the password with the current one, keeping this session and ending the others', async () => {
    const p = await person([tenants.a]);
    const s = await signIn(p.email);
    const other = await signIn(p.email);
    const fresh = 'another long enough passphrase';
    const change = (current_password: string, password: string) =>
      call('PUT', '/api/me/password', { ...withSession(s), body: { current_password, password } });
    expect((await change('not the current one', fresh)).body.details?.problems?.[0]?.path).to.equal(
      '/current_password',
    );
    expect((await change(PASSWORD, 'short')).body.code).to.equal('WEAK_PASSWORD');
    expect((await change(PASSWORD, fresh)).status).to.equal(200);
    expect((await call('GET', '/api/session', { cookie: s.cookie })).status).to.equal(200);
    expect((await call('GET', '/api/session', { cookie: other.cookie })).body.code).to.equal('SESSION_EXPIRED');
    const r = await call('POST', '/api/session/password', { body: { email: p.email, password: fresh } });
    expect(r.status).to.equal(200);
  });

  it('prunes quiet throttle buckets, old reset links and expired sessions, and keeps the rest', async () => {
    const db = adminRegistry();
    const p = await person([tenants.a]);
    const live = await signIn(p.email);
    const ended = await signIn(p.email);
    await db.query(`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE session_hash = $1`, [
      sessionHash(ended.token),
    ]);
    const quiet = `account:${uid('quiet')}@example.com`;
    const recent = `account:${uid('recent')}@example.com`;
    const known = `known:${uid('known')}@example.com|127.0.0.1`;
    await db.query(
      `INSERT INTO sign_in_failures (bucket, failures, last_failure_at, blocked_until) VALUES
         ($1, 7, now() - interval '25 hours', now() - interval '25 hours'), ($2, 7, now(), now() + interval '1 minute'),
         ($3, 0, now() - interval '25 hours', now() + interval '29 days')`,
      [quiet, recent, known],
    );
    await db.query(
      `INSERT INTO password_resets (token_hash, person_id, expires_at) VALUES ($1, $3, now() - interval '2 days'),
         ($2, $3, now() + interval '1 hour')`,
      [sessionHash(uid('old')), sessionHash(uid('new')), p.id],
    );
    // As the query service's own role (least privilege), as its hourly job runs it.
    const asQuery = createPostgres(
      { databaseUrl: testStack().users.postgres!.query, databasePoolMax: 1, databaseTimeoutMs: 10_000 },
      createLogger({ service: 'test', level: 'warn' }),
      'sessions-test',
    );
    try {
      expect(await pruneSignInRecords(asQuery)).to.be.at.least(3);
    } finally {
      await asQuery.end();
    }
    const left = async (table: string, column: string, values: string[]) =>
      (await db.query(`SELECT 1 FROM ${table} WHERE ${column} = ANY($1)`, [values])).rowCount;
    expect(await left('sign_in_failures', 'bucket', [quiet, recent, known])).to.equal(2);
    expect(await left('password_resets', 'person_id', [p.id])).to.equal(1);
    expect(await left('sessions', 'session_hash', [sessionHash(live.token), sessionHash(ended.token)])).to.equal(1);
    expect((await call('GET', '/api/session', { cookie: live.cookie })).status).to.equal(200);
  });
});
