/**
 * Bad-input cases: the people routes (docs/access.md): members, invitations (forged,
 * expired, revoked and replayed links), sessions and their CSRF checks, password sign-in
 * and resets, single sign-on, the tenant's keys, the audit log and the tenant's settings.
 *
 * The runner makes the people, sessions and invitations these cases name (peopleFixtures)
 * and fills their placeholders: `@viewerSession`/`@viewerCsrf` (a viewer's session cookie
 * and its CSRF token), `@ownerSession`/`@ownerCsrf` (the tenant's only owner), `@viewerId`
 * and `@ownerId` (their person ids), `@foreignKeyId` (a key of another tenant).
 */
import { DEFAULT_TENANT, SCOPES, type Role } from '@telemetry/contract';
import { parseSealingKeys, type PgQueryable } from '@telemetry/platform';
import {
  addMembership,
  createSession,
  ensurePerson,
  hashPassword,
  InvitationLinks,
  type SignedInvitation,
} from '@telemetry/store';
import { RUN_SECRETS_KEYS } from '../../../harness/processes.js';
import { FOREIGN_TENANT, MARK, mon, type Case } from './case.js';

/** The people the runner makes in the default tenant: a viewer and its only owner. */
export const CORPUS_PEOPLE = {
  viewer: { email: 'corpus-viewer@example.com', password: 'corpus viewer passphrase 7f3a', role: 'viewer' },
  owner: { email: 'corpus-owner@example.com', password: 'corpus owner passphrase 2c9e', role: 'owner' },
} as const satisfies Record<string, { email: string; password: string; role: Role }>;

const HOUR = 3_600_000;
/** Signed to the second, as the store keeps it. */
const second = (ms: number): number => Math.floor(ms / 1000) * 1000;
const invitation = (id: string, email: string, expiresAtMs: number): SignedInvitation => ({
  id,
  tenantId: DEFAULT_TENANT,
  email,
  role: 'viewer',
  expiresAtMs: second(expiresAtMs),
});

/**
 * The invitations the runner stores (their rows, as these links were signed for them): one
 * pending for a new person, one expired, one revoked, one accepted (a replayed link).
 */
export const CORPUS_INVITATIONS = {
  pending: invitation('inv_corpuspending0000000', `${MARK}-new@example.com`, Date.now() + 24 * HOUR),
  expired: invitation('inv_corpusexpired0000000', `${MARK}-late@example.com`, Date.now() - 24 * HOUR),
  revoked: invitation('inv_corpusrevoked0000000', `${MARK}-revoked@example.com`, Date.now() + 24 * HOUR),
  accepted: invitation('inv_corpusaccepted000000', CORPUS_PEOPLE.viewer.email, Date.now() + 24 * HOUR),
} as const;

/** What the people cases name, made in the run's registry: the values of their placeholders. */
export async function peopleFixtures(db: PgQueryable): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [who, p] of Object.entries(CORPUS_PEOPLE)) {
    const { person } = await ensurePerson(db, {
      email: p.email,
      name: who,
      passwordHash: await hashPassword(p.password),
    });
    await addMembership(db, { tenantId: DEFAULT_TENANT, personId: person.id, role: p.role, createdBy: 'corpus' });
    const s = await createSession(db, {
      personId: person.id,
      tenantId: DEFAULT_TENANT,
      method: 'password',
      ip: '127.0.0.1',
      userAgent: 'corpus',
      maxSeconds: 3600,
    });
    Object.assign(out, { [`${who}Id`]: person.id, [`${who}Session`]: s.token, [`${who}Csrf`]: s.csrfToken });
  }
  for (const [state, i] of Object.entries(CORPUS_INVITATIONS))
    await db.query(
      `INSERT INTO invitations (invitation_id, tenant_id, email, role, invited_by, created_at, expires_at,
                                accepted_at, accepted_by, revoked_at)
       VALUES ($1, $2, $3, $4, $5, to_timestamp($6 / 1000.0) - interval '2 days', to_timestamp($6 / 1000.0),
               CASE WHEN $7 = 'accepted' THEN now() END, CASE WHEN $7 = 'accepted' THEN $8 END,
               CASE WHEN $7 = 'revoked' THEN now() END)`,
      [i.id, i.tenantId, i.email, i.role, out.ownerId, i.expiresAtMs, state, out.viewerId],
    );
  return out;
}

const MISSING_PERSON = 'per_00000000000000000000';
const MISSING_INVITATION = 'inv_00000000000000000000';
const MISSING_KEY = '0000000000000000';
const strong = 'corpus bad but long passphrase 51d0';
const longEmail = `${'a'.repeat(60)}@${'b'.repeat(200)}.example.com`;
const json = { 'content-type': 'application/json' };
const noKey = { authorization: '' };
/** A person's session cookie, with its CSRF token unless told. */
const cookie = (who: 'viewer' | 'owner', csrf = `@${who}Csrf`): Record<string, string> => ({
  authorization: '',
  cookie: `telemetry_session=@${who}Session`,
  'x-csrf-token': csrf,
});
const deadCookie = { authorization: '', cookie: `telemetry_session=${'A'.repeat(43)}`, 'x-csrf-token': 'x' };

/** A request with the every-scope key (`@people`) unless told. */
const ppl = (...[name, method, path, b, status, code, headers = {}]: Parameters<typeof mon>): Case =>
  mon(name, method, path, b, status, code, { authorization: 'Bearer @people', ...headers });
/**
 * A request to the query service with single sign-on configured (its issuer is a loopback
 * port nothing listens on: these cases are refused before discovery would reach it), as
 * an API client asks (Accept: application/json) unless told.
 */
const sso = (name: string, path: string, status: number, code?: string, headers = {}): Case => ({
  name: `GET ${path.split('?')[0]!}: ${name}`,
  service: 'sso',
  method: 'GET',
  path,
  headers: { accept: 'application/json', ...headers },
  expect: { status, code },
});
/** A public route's request: no key. */
const pub = (...[name, method, path, b, status, code, headers = {}]: Parameters<typeof mon>): Case =>
  ppl(name, method, path, b, status, code, { ...noKey, ...headers });
/** A state-changing request a session cookie authenticates, refused by the CSRF check. */
const csrfRefused = (name: string, method: string, path: string, headers: Record<string, string>, b?: unknown): Case =>
  pub(name, method, path, b, 403, 'CSRF_FAILED', b === undefined ? headers : { ...json, ...headers });

export const peopleCases = (): Case[] => {
  const links = new InvitationLinks(parseSealingKeys(RUN_SECRETS_KEYS), 'http://127.0.0.1');
  const other = new InvitationLinks(parseSealingKeys('corpus-other:' + 'A'.repeat(43) + '='), 'http://127.0.0.1');
  const I = CORPUS_INVITATIONS;
  const genuine = links.token(I.pending);
  const forged = `${genuine.split('.')[0]!}.${'A'.repeat(43)}`;
  // Signed by the ring, but for another role than the invitation's row says.
  const tampered = links.token({ ...I.pending, role: 'admin' });
  const byAnotherKey = other.token(I.pending);
  // Genuine, for an invitation nobody stored.
  const unknown = links.token({ ...I.pending, id: MISSING_INVITATION });
  const preview = (name: string, token: string, status = 400, code = 'INVITATION_INVALID'): Case =>
    pub(
      `preview, ${name}`,
      'GET',
      `/api/invitations/preview?token=${encodeURIComponent(token)}`,
      undefined,
      status,
      code,
    );
  const accept = (name: string, b: unknown, status = 400, code = 'INVITATION_INVALID', headers = {}): Case =>
    pub(`accept, ${name}`, 'POST', '/api/invitations/accept', b, status, code, headers);
  const invite = (name: string, b: unknown, status = 400, code = 'VALIDATION_FAILED', headers = {}): Case =>
    ppl(`invite, ${name}`, 'POST', '/api/invitations', b, status, code, headers);
  const signIn = (name: string, b: unknown, status = 400, code = 'VALIDATION_FAILED', headers = {}): Case =>
    pub(`sign in, ${name}`, 'POST', '/api/session/password', b, status, code, headers);
  const newKey = (name: string, b: unknown, status = 400, code = 'VALIDATION_FAILED', headers = {}): Case =>
    ppl(`new key, ${name}`, 'POST', '/api/keys', b, status, code, headers);
  const audit = (name: string, query: string, status = 400, code = 'INVALID_PARAMETER', headers = {}): Case =>
    ppl(`audit, ${name}`, 'GET', `/api/audit?${query}`, undefined, status, code, headers);
  const settings = (name: string, b: unknown, status = 400, code = 'VALIDATION_FAILED', headers = {}): Case =>
    ppl(`settings, ${name}`, 'PATCH', '/api/settings', b, status, code, headers);
  const role = (name: string, id: string, b: unknown, status: number, code: string, headers = {}): Case =>
    ppl(`role, ${name}`, 'PATCH', `/api/members/${id}`, b, status, code, headers);
  return [
    // --- members: credentials and scopes
    ppl('no key', 'GET', '/api/members', undefined, 401, 'MISSING_CREDENTIALS', noKey),
    ppl('a revoked key', 'GET', '/api/members', undefined, 401, 'INVALID_CREDENTIALS', {
      authorization: 'Bearer @revoked',
    }),
    ppl('a checks:read key', 'GET', '/api/members', undefined, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @api',
    }),
    ppl('a viewer key', 'GET', '/api/invitations', undefined, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @viewer',
    }),
    ppl('unknown parameter', 'GET', '/api/members?role=owner', undefined, 400, 'INVALID_PARAMETER'),
    role('a viewer key', '@viewerId', { role: 'editor' }, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @viewer',
    }),
    role('no key', '@viewerId', { role: 'editor' }, 401, 'MISSING_CREDENTIALS', noKey),
    // --- members: bodies and ids
    role('a role that does not exist', '@viewerId', { role: 'superuser' }, 400, 'VALIDATION_FAILED'),
    role('role a number', '@viewerId', { role: 3 }, 400, 'VALIDATION_FAILED'),
    role('no role', '@viewerId', {}, 400, 'VALIDATION_FAILED'),
    role('an unknown field', '@viewerId', { role: 'viewer', admin: true }, 400, 'VALIDATION_FAILED'),
    role('not JSON', '@viewerId', 'role=admin', 400, 'INVALID_JSON'),
    role('an unknown person', MISSING_PERSON, { role: 'editor' }, 404, 'MEMBER_NOT_FOUND'),
    role('a malformed person id', 'per_..%2F..', { role: 'editor' }, 404, 'MEMBER_NOT_FOUND'),
    role('a person id of upper case', 'PER_00000000000000000000', { role: 'editor' }, 404, 'MEMBER_NOT_FOUND'),
    // An API key is never an owner: it may not grant, take or remove the owner role.
    role('a key granting owner', '@viewerId', { role: 'owner' }, 403, 'ROLE_NOT_ALLOWED'),
    role('a key demoting the owner', '@ownerId', { role: 'admin' }, 403, 'ROLE_NOT_ALLOWED'),
    ppl('a key removing the owner', 'DELETE', '/api/members/@ownerId', undefined, 403, 'ROLE_NOT_ALLOWED'),
    ppl('remove an unknown person', 'DELETE', `/api/members/${MISSING_PERSON}`, undefined, 404, 'MEMBER_NOT_FOUND'),
    ppl('remove the owner with a viewer key', 'DELETE', '/api/members/@ownerId', undefined, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @viewer',
    }),
    // The last owner can neither step down nor leave.
    role('the last owner steps down', '@ownerId', { role: 'admin' }, 409, 'LAST_OWNER', cookie('owner')),
    ppl('the last owner leaves', 'DELETE', '/api/members/@ownerId', undefined, 409, 'LAST_OWNER', cookie('owner')),
    role('a viewer promotes themself', '@viewerId', { role: 'owner' }, 403, 'INSUFFICIENT_SCOPE', cookie('viewer')),
    ppl(
      'a viewer removes the owner',
      'DELETE',
      '/api/members/@ownerId',
      undefined,
      403,
      'INSUFFICIENT_SCOPE',
      cookie('viewer'),
    ),
    ppl('PUT', 'PUT', '/api/members', [], 405, 'METHOD_NOT_ALLOWED'),
    ppl('POST to a member', 'POST', '/api/members/@viewerId', { role: 'admin' }, 405, 'METHOD_NOT_ALLOWED'),
    // --- invitations
    invite('not an email', { email: 'nobody', role: 'viewer' }),
    invite('an email with a space', { email: 'a b@example.com', role: 'viewer' }),
    invite('an email without a domain dot', { email: 'a@localhost', role: 'viewer' }),
    invite('an email over 254 characters', { email: longEmail, role: 'viewer' }),
    invite('an email an array', { email: ['a@example.com'], role: 'viewer' }),
    invite('a role that does not exist', { email: `${MARK}@example.com`, role: 'root' }),
    invite('no role', { email: `${MARK}@example.com` }),
    invite('an unknown field', { email: `${MARK}@example.com`, role: 'viewer', expires_in: '100y' }),
    invite('null', null),
    invite('not JSON', 'email=a', 415, 'UNSUPPORTED_MEDIA_TYPE', { 'content-type': 'text/plain' }),
    invite('a member already', { email: CORPUS_PEOPLE.viewer.email, role: 'editor' }, 409, 'ALREADY_MEMBER'),
    invite('an owner, by a key', { email: `${MARK}-owner@example.com`, role: 'owner' }, 403, 'ROLE_NOT_ALLOWED'),
    invite('a viewer key', { email: `${MARK}@example.com`, role: 'viewer' }, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @viewer',
    }),
    invite('no key', { email: `${MARK}@example.com`, role: 'viewer' }, 401, 'MISSING_CREDENTIALS', noKey),
    invite(
      'a viewer signed in',
      { email: `${MARK}@example.com`, role: 'viewer' },
      403,
      'INSUFFICIENT_SCOPE',
      cookie('viewer'),
    ),
    ppl(
      'revoke an unknown invitation',
      'DELETE',
      `/api/invitations/${MISSING_INVITATION}`,
      undefined,
      404,
      'INVITATION_NOT_FOUND',
    ),
    ppl('revoke a malformed id', 'DELETE', '/api/invitations/..%2Fmembers', undefined, 404, 'INVITATION_NOT_FOUND'),
    ppl(
      'revoke one revoked already',
      'DELETE',
      `/api/invitations/${I.revoked.id}`,
      undefined,
      404,
      'INVITATION_NOT_FOUND',
    ),
    ppl(
      'revoke one accepted already',
      'DELETE',
      `/api/invitations/${I.accepted.id}`,
      undefined,
      404,
      'INVITATION_NOT_FOUND',
    ),
    ppl('GET one invitation', 'GET', `/api/invitations/${I.pending.id}`, undefined, 405, 'METHOD_NOT_ALLOWED'),
    // --- invitation links: preview and accept
    pub('preview without a token', 'GET', '/api/invitations/preview', undefined, 400, 'INVITATION_INVALID'),
    pub(
      'preview, an unknown parameter',
      'GET',
      `/api/invitations/preview?token=${genuine}&as=owner`,
      undefined,
      400,
      'INVALID_PARAMETER',
    ),
    preview('garbage', 'garbage'),
    preview('forged signature', forged),
    preview('signed for another role', tampered),
    preview('signed by a key not in the ring', byAnotherKey),
    preview('an invitation nobody made', unknown),
    preview('expired', links.token(I.expired)),
    preview('revoked', links.token(I.revoked)),
    preview('accepted already (replayed)', links.token(I.accepted)),
    preview('over-long', `${genuine}${'A'.repeat(5000)}`),
    accept('garbage', { token: 'garbage', password: strong }),
    accept('forged signature', { token: forged, password: strong }),
    accept('signed for another role', { token: tampered, password: strong }),
    accept('expired', { token: links.token(I.expired), password: strong }),
    accept('revoked', { token: links.token(I.revoked), password: strong }),
    accept('accepted already (replayed)', { token: links.token(I.accepted), password: CORPUS_PEOPLE.viewer.password }),
    accept('a token over 200 characters', { token: 'A'.repeat(201), password: strong }, 400, 'VALIDATION_FAILED'),
    accept('no token', { password: strong }, 400, 'VALIDATION_FAILED'),
    accept('a token a number', { token: 42, password: strong }, 400, 'VALIDATION_FAILED'),
    accept('an unknown field', { token: genuine, password: strong, role: 'owner' }, 400, 'VALIDATION_FAILED'),
    accept(
      'a name with a control character',
      { token: genuine, password: strong, name: 'a\u0007b' },
      400,
      'VALIDATION_FAILED',
    ),
    accept(
      'a name over 200 characters',
      { token: genuine, password: strong, name: 'n'.repeat(201) },
      400,
      'VALIDATION_FAILED',
    ),
    accept('not JSON', '{token', 400, 'INVALID_JSON'),
    accept('a new person without a password', { token: genuine }, 400, 'VALIDATION_FAILED'),
    accept('a new person, a short password', { token: genuine, password: 'short' }, 400, 'WEAK_PASSWORD'),
    accept('a new person, a common password', { token: genuine, password: 'qwerty123456' }, 400, 'WEAK_PASSWORD'),
    accept(
      'a new person, a password over 256 characters',
      { token: genuine, password: 'p'.repeat(257) },
      400,
      'WEAK_PASSWORD',
    ),
    accept('signed in, without the CSRF token', { token: genuine }, 403, 'CSRF_FAILED', cookie('viewer', '')),
    accept('a cookie naming no session', { token: genuine }, 401, 'SESSION_EXPIRED', deadCookie),
    accept('signed in as another email', { token: genuine }, 400, 'INVITATION_INVALID', cookie('viewer')),
    pub('GET accept', 'GET', '/api/invitations/accept', undefined, 405, 'METHOD_NOT_ALLOWED'),
    // --- settings
    settings('a domain with a space', { auto_admit_domains: ['exa mple.com'] }),
    settings('a domain with a scheme', { auto_admit_domains: ['https://example.com'] }),
    settings('a domain of upper case', { auto_admit_domains: ['Example.COM'] }),
    settings('an address, not a domain', { auto_admit_domains: ['a@example.com'] }),
    settings('a domain over 253 characters', { auto_admit_domains: [`${'a'.repeat(250)}.com`] }),
    settings('domains a string', { auto_admit_domains: 'example.com' }),
    settings('51 domains', { auto_admit_domains: Array.from({ length: 51 }, (_, i) => `d${i}.example.com`) }),
    settings('auto_admit_role owner', { auto_admit_role: 'owner' }),
    settings('auto_admit_role unknown', { auto_admit_role: 'root' }),
    settings('an empty name', { name: '' }),
    settings('a blank name', { name: '   ' }),
    settings('a name over 200 characters', { name: 'n'.repeat(201) }),
    settings('an unknown field', { sso: true }),
    settings('nothing to change', {}),
    settings('not JSON', 'name=x', 400, 'INVALID_JSON'),
    settings('a viewer key', { name: `${MARK}` }, 403, 'INSUFFICIENT_SCOPE', { authorization: 'Bearer @viewer' }),
    settings('a viewer signed in', { name: `${MARK}` }, 403, 'INSUFFICIENT_SCOPE', cookie('viewer')),
    ppl('settings, a viewer key', 'GET', '/api/settings', undefined, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @viewer',
    }),
    ppl('settings, unknown parameter', 'GET', '/api/settings?all=1', undefined, 400, 'INVALID_PARAMETER'),
    ppl('settings, DELETE', 'DELETE', '/api/settings', undefined, 405, 'METHOD_NOT_ALLOWED'),
    // --- sessions: the cookie and its CSRF token
    pub('the session, no cookie', 'GET', '/api/session', undefined, 401, 'MISSING_CREDENTIALS'),
    pub('the session, with an API key', 'GET', '/api/session', undefined, 401, 'MISSING_CREDENTIALS', {
      authorization: 'Bearer @people',
    }),
    pub(
      'the session, a cookie naming no session',
      'GET',
      '/api/session',
      undefined,
      401,
      'SESSION_EXPIRED',
      deadCookie,
    ),
    pub('members, a cookie naming no session', 'GET', '/api/members', undefined, 401, 'SESSION_EXPIRED', deadCookie),
    pub('the session, a cookie over 200 characters', 'GET', '/api/session', undefined, 401, 'MISSING_CREDENTIALS', {
      cookie: `telemetry_session=${'A'.repeat(300)}`,
    }),
    csrfRefused('sign out without the CSRF token', 'DELETE', '/api/session', cookie('viewer', '')),
    csrfRefused('sign out with a wrong CSRF token', 'DELETE', '/api/session', cookie('viewer', 'A'.repeat(43))),
    csrfRefused('sign out with the owner’s CSRF token', 'DELETE', '/api/session', cookie('viewer', '@ownerCsrf')),
    csrfRefused(
      'sign out everywhere without the CSRF token',
      'POST',
      '/api/session/sign-out-everywhere',
      cookie('viewer', ''),
    ),
    csrfRefused('sign out everywhere from another port of the host', 'POST', '/api/session/sign-out-everywhere', {
      ...cookie('viewer'),
      origin: 'http://127.0.0.1:1',
    }),
    csrfRefused('sign out everywhere from a sibling site', 'POST', '/api/session/sign-out-everywhere', {
      ...cookie('viewer'),
      'sec-fetch-site': 'same-site',
    }),
    pub(
      'switch to a tenant not theirs',
      'POST',
      '/api/session/tenant',
      { tenant_id: FOREIGN_TENANT },
      403,
      'NOT_A_MEMBER',
      { ...json, ...cookie('viewer') },
    ),
    pub('switch to a malformed tenant', 'POST', '/api/session/tenant', { tenant_id: '../x' }, 403, 'NOT_A_MEMBER', {
      ...json,
      ...cookie('viewer'),
    }),
    csrfRefused(
      'switch tenant without the CSRF token',
      'POST',
      '/api/session/tenant',
      { ...json, ...cookie('viewer', '') },
      { tenant_id: DEFAULT_TENANT },
    ),
    pub(
      'switch tenant with an API key',
      'POST',
      '/api/session/tenant',
      { tenant_id: DEFAULT_TENANT },
      401,
      'MISSING_CREDENTIALS',
      { authorization: 'Bearer @people' },
    ),
    // A viewer calling an editor's route: refused, with the CSRF token or without.
    mon(
      'a viewer signed in creates a monitor',
      'POST',
      '/api/monitors',
      { name: MARK, url: `https://${MARK}.example/` },
      403,
      'INSUFFICIENT_SCOPE',
      cookie('viewer'),
    ),
    mon(
      'a viewer signed in changes a monitor',
      'PATCH',
      '/api/monitors/m1',
      { paused: true },
      403,
      'INSUFFICIENT_SCOPE',
      cookie('viewer'),
    ),
    mon(
      'a viewer signed in deletes a monitor, no CSRF token',
      'DELETE',
      '/api/monitors/m1',
      undefined,
      403,
      'CSRF_FAILED',
      cookie('viewer', ''),
    ),
    mon(
      'the owner changes a monitor, no CSRF token',
      'PATCH',
      '/api/monitors/m1',
      { paused: true },
      403,
      'CSRF_FAILED',
      cookie('owner', ''),
    ),
    mon(
      'the owner changes a monitor from another origin',
      'PATCH',
      '/api/monitors/m1',
      { paused: true },
      403,
      'CSRF_FAILED',
      {
        ...cookie('owner'),
        origin: 'http://127.0.0.1:1',
      },
    ),
    mon(
      'a viewer key creates a monitor',
      'POST',
      '/api/monitors',
      { name: MARK, url: `https://${MARK}.example/` },
      403,
      'INSUFFICIENT_SCOPE',
      {
        authorization: 'Bearer @viewer',
      },
    ),
    // --- password sign-in
    signIn('empty body', '', 400, 'INVALID_JSON'),
    signIn('nothing', {}),
    signIn('no password', { email: CORPUS_PEOPLE.viewer.email }),
    signIn('no email', { password: strong }),
    signIn('email a number', { email: 42, password: strong }),
    signIn('password a number', { email: CORPUS_PEOPLE.viewer.email, password: 12345678901234 }),
    signIn('password an object', { email: CORPUS_PEOPLE.viewer.email, password: { $ne: '' } }),
    signIn('an email over 1024 characters', { email: `${'a'.repeat(1020)}@example.com`, password: strong }),
    signIn('a password over 1024 characters', { email: CORPUS_PEOPLE.viewer.email, password: 'p'.repeat(1025) }),
    signIn('a TOTP code a number', { email: CORPUS_PEOPLE.viewer.email, password: strong, totp: 123456 }),
    signIn('a tenant a number', { email: CORPUS_PEOPLE.viewer.email, password: strong, tenant_id: 42 }),
    signIn('an unknown field', { email: CORPUS_PEOPLE.viewer.email, password: strong, remember: true }),
    signIn('not JSON', 'email=a&password=b', 415, 'UNSUPPORTED_MEDIA_TYPE', {
      'content-type': 'application/x-www-form-urlencoded',
    }),
    signIn('a wrong password', { email: CORPUS_PEOPLE.viewer.email, password: strong }, 401, 'SIGN_IN_FAILED'),
    signIn('an unknown email', { email: `${MARK}-nobody@example.com`, password: strong }, 401, 'SIGN_IN_FAILED'),
    pub('GET the sign-in', 'GET', '/api/session/password', undefined, 405, 'METHOD_NOT_ALLOWED'),
    // --- password resets
    pub('reset, email a number', 'POST', '/api/password-resets', { email: 42 }, 400, 'VALIDATION_FAILED'),
    pub('reset, no email', 'POST', '/api/password-resets', {}, 400, 'VALIDATION_FAILED'),
    pub(
      'reset, an unknown field',
      'POST',
      '/api/password-resets',
      { email: `${MARK}@example.com`, to: 'x@example.com' },
      400,
      'VALIDATION_FAILED',
    ),
    pub(
      'reset, an email over 254 characters',
      'POST',
      '/api/password-resets',
      { email: longEmail },
      400,
      'VALIDATION_FAILED',
    ),
    pub(
      'confirm, garbage token',
      'POST',
      '/api/password-resets/confirm',
      { token: 'garbage', password: strong },
      400,
      'RESET_LINK_INVALID',
    ),
    pub(
      'confirm, a token nobody issued',
      'POST',
      '/api/password-resets/confirm',
      { token: 'A'.repeat(43), password: strong },
      400,
      'RESET_LINK_INVALID',
    ),
    pub(
      'confirm, a weak password',
      'POST',
      '/api/password-resets/confirm',
      { token: 'A'.repeat(43), password: 'short' },
      400,
      'WEAK_PASSWORD',
    ),
    pub(
      'confirm, a common password',
      'POST',
      '/api/password-resets/confirm',
      { token: 'A'.repeat(43), password: 'qwerty123456' },
      400,
      'WEAK_PASSWORD',
    ),
    pub(
      'confirm, no password',
      'POST',
      '/api/password-resets/confirm',
      { token: 'A'.repeat(43) },
      400,
      'VALIDATION_FAILED',
    ),
    pub(
      'confirm, an unknown field',
      'POST',
      '/api/password-resets/confirm',
      { token: 'A'.repeat(43), password: strong, email: 'a@example.com' },
      400,
      'VALIDATION_FAILED',
    ),
    // --- the signed-in person's own account
    csrfRefused(
      'change password, no CSRF token',
      'PUT',
      '/api/me/password',
      { ...json, ...cookie('viewer', '') },
      { current_password: strong, password: strong },
    ),
    pub(
      'change password, a weak new one',
      'PUT',
      '/api/me/password',
      { current_password: CORPUS_PEOPLE.viewer.password, password: 'short' },
      400,
      'WEAK_PASSWORD',
      { ...json, ...cookie('viewer') },
    ),
    pub(
      'change password, a wrong current one',
      'PUT',
      '/api/me/password',
      { current_password: strong, password: strong },
      400,
      'VALIDATION_FAILED',
      { ...json, ...cookie('viewer') },
    ),
    pub(
      'change password, an API key',
      'PUT',
      '/api/me/password',
      { current_password: strong, password: strong },
      401,
      'MISSING_CREDENTIALS',
      { authorization: 'Bearer @people' },
    ),
    pub('TOTP, a code of letters', 'POST', '/api/me/totp/enable', { code: 'abcdef' }, 400, 'VALIDATION_FAILED', {
      ...json,
      ...cookie('viewer'),
    }),
    // Turning TOTP on or off asks for the current password too (a stolen session cannot).
    pub('TOTP, no current password', 'POST', '/api/me/totp/enable', { code: '123456' }, 400, 'VALIDATION_FAILED', {
      ...json,
      ...cookie('viewer'),
    }),
    pub(
      'TOTP, a current password a number',
      'POST',
      '/api/me/totp/enable',
      { code: '123456', current_password: 42 },
      400,
      'VALIDATION_FAILED',
      { ...json, ...cookie('viewer') },
    ),
    pub('TOTP off, no current password', 'DELETE', '/api/me/totp', { code: '123456' }, 400, 'VALIDATION_FAILED', {
      ...json,
      ...cookie('viewer'),
    }),
    csrfRefused('TOTP, no CSRF token', 'POST', '/api/me/totp', cookie('viewer', '')),
    // --- single sign-on: not configured (OIDC_ISSUER empty), and configured (service `sso`)
    pub('SSO start, not configured', 'GET', '/auth/oidc/start', undefined, 404, 'SSO_NOT_CONFIGURED', {
      accept: 'application/json',
    }),
    pub(
      'SSO callback, not configured',
      'GET',
      '/auth/oidc/callback?code=abc&state=x',
      undefined,
      404,
      'SSO_NOT_CONFIGURED',
      { accept: 'application/json' },
    ),
    sso('no state', '/auth/oidc/callback?code=abc', 400, 'OIDC_FAILED'),
    sso('an unknown state', '/auth/oidc/callback?code=abc&state=corpus-unknown-state', 400, 'OIDC_FAILED'),
    sso('a state over 200 characters', `/auth/oidc/callback?code=abc&state=${'s'.repeat(201)}`, 400, 'OIDC_FAILED'),
    sso('two states', '/auth/oidc/callback?code=abc&state=a&state=b', 400, 'OIDC_FAILED'),
    sso(
      'the provider’s error',
      '/auth/oidc/callback?error=access_denied&state=corpus-unknown-state',
      400,
      'OIDC_FAILED',
    ),
    sso('an unknown state, from a browser', '/auth/oidc/callback?state=corpus-unknown-state', 302, undefined, {
      accept: 'text/html',
    }),
    { ...sso('POST', '/auth/oidc/callback', 405, 'METHOD_NOT_ALLOWED'), method: 'POST' },
    // --- the tenant's keys
    newKey('kind unknown', { kind: 'root', name: MARK }),
    newKey('no kind', { name: MARK }),
    newKey('no name', { kind: 'api' }),
    newKey('an empty name', { kind: 'api', name: '' }),
    newKey('a name over 200 characters', { kind: 'api', name: 'n'.repeat(201) }),
    newKey('an unknown scope', { kind: 'api', name: MARK, scopes: ['root:all'] }),
    newKey('scopes a string', { kind: 'api', name: MARK, scopes: 'monitors:read' }),
    newKey('expires_in not a duration', { kind: 'api', name: MARK, expires_in: 'forever' }),
    newKey('an unknown field', { kind: 'api', name: MARK, secret: 'mine' }),
    newKey('not JSON', 'kind=api', 400, 'INVALID_JSON'),
    newKey(
      'a scope the key lacks',
      { kind: 'api', name: MARK, scopes: ['monitors:write'] },
      403,
      'INSUFFICIENT_SCOPE',
      {
        authorization: 'Bearer @keyMaker',
      },
    ),
    newKey(
      'every scope, by a key that lacks them',
      { kind: 'api', name: MARK, scopes: [...SCOPES] },
      403,
      'INSUFFICIENT_SCOPE',
      {
        authorization: 'Bearer @keyMaker',
      },
    ),
    newKey('a viewer key', { kind: 'api', name: MARK }, 403, 'INSUFFICIENT_SCOPE', { authorization: 'Bearer @viewer' }),
    newKey('a viewer signed in', { kind: 'api', name: MARK }, 403, 'INSUFFICIENT_SCOPE', cookie('viewer')),
    newKey('no key', { kind: 'api', name: MARK }, 401, 'MISSING_CREDENTIALS', noKey),
    ppl('keys, a viewer key', 'GET', '/api/keys', undefined, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @viewer',
    }),
    ppl('revoke an unknown key', 'DELETE', `/api/keys/${MISSING_KEY}`, undefined, 404, 'KEY_NOT_FOUND'),
    ppl('revoke a malformed key id', 'DELETE', '/api/keys/..%2Fmembers', undefined, 404, 'KEY_NOT_FOUND'),
    ppl('revoke another tenant’s key', 'DELETE', '/api/keys/@foreignKeyId', undefined, 404, 'KEY_NOT_FOUND'),
    ppl('revoke a key with a viewer key', 'DELETE', `/api/keys/${MISSING_KEY}`, undefined, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @viewer',
    }),
    ppl('keys, PUT', 'PUT', '/api/keys', [], 405, 'METHOD_NOT_ALLOWED'),
    // --- a key's ip_storage (docs/enrichment.md)
    newKey('ip_storage not a mode', { kind: 'telemetry', name: MARK, ip_storage: 'partial' }),
    newKey('ip_storage on an API key', { kind: 'api', name: MARK, ip_storage: 'full' }),
    ppl('change an unknown key', 'PATCH', `/api/keys/${MISSING_KEY}`, { ip_storage: 'full' }, 404, 'KEY_NOT_FOUND'),
    ppl(
      'change another tenant’s key',
      'PATCH',
      '/api/keys/@foreignKeyId',
      { ip_storage: 'none' },
      404,
      'KEY_NOT_FOUND',
    ),
    ppl(
      'change a key, ip_storage not a mode',
      'PATCH',
      `/api/keys/${MISSING_KEY}`,
      { ip_storage: 'most' },
      400,
      'VALIDATION_FAILED',
    ),
    ppl(
      'change a key, another field',
      'PATCH',
      `/api/keys/${MISSING_KEY}`,
      { ip_storage: 'full', name: MARK },
      400,
      'VALIDATION_FAILED',
    ),
    ppl('change a key, no body', 'PATCH', `/api/keys/${MISSING_KEY}`, {}, 400, 'VALIDATION_FAILED'),
    ppl(
      'change a key with a viewer key',
      'PATCH',
      `/api/keys/${MISSING_KEY}`,
      { ip_storage: 'full' },
      403,
      'INSUFFICIENT_SCOPE',
      {
        authorization: 'Bearer @viewer',
      },
    ),
    ppl('a key, PUT', 'PUT', `/api/keys/${MISSING_KEY}`, { ip_storage: 'full' }, 405, 'METHOD_NOT_ALLOWED'),
    // --- the audit log
    audit('from not a time', 'from=yesterday'),
    audit('to not a time', 'to=2026-13-45'),
    audit('limit 0', 'limit=0'),
    audit('limit over the page', `limit=501`),
    audit('limit not a number', 'limit=ten'),
    audit('a cursor we did not issue', 'cursor=abc'),
    audit('an outcome that does not exist', 'outcome=maybe'),
    audit('an unknown parameter', 'tenant_id=ten_other'),
    audit('a viewer key', 'limit=1', 403, 'INSUFFICIENT_SCOPE', { authorization: 'Bearer @viewer' }),
    audit('a viewer signed in', 'limit=1', 403, 'INSUFFICIENT_SCOPE', cookie('viewer')),
    audit('no key', 'limit=1', 401, 'MISSING_CREDENTIALS', noKey),
    ppl('audit, POST', 'POST', '/api/audit', {}, 405, 'METHOD_NOT_ALLOWED'),
  ];
};
