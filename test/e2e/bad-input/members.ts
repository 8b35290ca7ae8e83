/**
 * Bad-input cases: members, invitations and settings (docs/access.md, "People and
 * memberships"). The corpus's keys hold no members or settings scope: those routes refuse
 * them; the invitation links' routes take no key and refuse malformed, forged and unknown links.
 */
import { type Case, MARK, mon } from './case.js';

const FORGED = `inv_00000000000000000000.${'A'.repeat(43)}`;

/** A request without a key (the public invitation routes): `mon` without its Authorization. */
const open = (...[name, method, path, b, status, code, headers = {}]: Parameters<typeof mon>): Case =>
  mon(name, method, path, b, status, code, { authorization: '', ...headers });
const accept = (name: string, b: unknown, status: number, code?: string, headers?: Record<string, string>): Case =>
  open(name, 'POST', '/api/invitations/accept', b, status, code, headers);
const preview = (name: string, query: string, status: number, code?: string): Case =>
  open(name, 'GET', `/api/invitations/preview${query}`, undefined, status, code);

export const memberCases = (): Case[] => [
  // --- the scopes: the corpus's keys have none of these routes' scopes
  mon('a monitors key', 'GET', '/api/members', undefined, 403, 'INSUFFICIENT_SCOPE'),
  mon('a monitors key', 'PATCH', '/api/members/per_00000000000000000000', { role: 'owner' }, 403, 'INSUFFICIENT_SCOPE'),
  mon(
    'a monitors key',
    'POST',
    '/api/invitations',
    { email: `${MARK}@example.com`, role: 'owner' },
    403,
    'INSUFFICIENT_SCOPE',
  ),
  mon('a monitors key', 'DELETE', '/api/invitations/inv_00000000000000000000', undefined, 403, 'INSUFFICIENT_SCOPE'),
  mon('a monitors key', 'PATCH', '/api/settings', { name: MARK }, 403, 'INSUFFICIENT_SCOPE'),
  mon(
    'a monitors key removing a member',
    'DELETE',
    '/api/members/per_00000000000000000000',
    undefined,
    403,
    'INSUFFICIENT_SCOPE',
  ),
  open('no key', 'GET', '/api/members', undefined, 401, 'MISSING_CREDENTIALS'),
  open('a made-up session cookie', 'GET', '/api/settings', undefined, 401, 'SESSION_EXPIRED', {
    cookie: 'telemetry_session=corpus-made-up-session-token',
  }),
  open(
    'a made-up session cookie',
    'DELETE',
    '/api/members/per_00000000000000000000',
    undefined,
    401,
    'SESSION_EXPIRED',
    {
      cookie: 'telemetry_session=corpus-made-up-session-token',
      'x-csrf-token': 'corpus',
    },
  ),
  mon('PUT', 'PUT', '/api/members', {}, 405, 'METHOD_NOT_ALLOWED'),
  mon('GET one', 'GET', '/api/invitations/inv_00000000000000000000', undefined, 405, 'METHOD_NOT_ALLOWED'),

  // --- the preview of a link
  preview('no token', '', 400, 'INVITATION_INVALID'),
  preview('garbage', '?token=%00%ff', 400, 'INVITATION_INVALID'),
  preview('forged', `?token=${FORGED}`, 400, 'INVITATION_INVALID'),
  preview('an acknowledge link’s shape', `?token=eyJ4IjoxfQ.${'A'.repeat(43)}`, 400, 'INVITATION_INVALID'),
  preview('a megabyte', `?token=${'A'.repeat(4000)}`, 400, 'INVITATION_INVALID'),
  preview('an unknown parameter', `?token=${FORGED}&email=a@example.com`, 400, 'INVALID_PARAMETER'),

  // --- the acceptance: the body first, then the link
  accept('empty body', '', 400, 'INVALID_JSON'),
  accept('null', 'null', 400, 'VALIDATION_FAILED'),
  accept('an array', [{ token: FORGED }], 400, 'VALIDATION_FAILED'),
  accept('not JSON', 'token=x', 415, 'UNSUPPORTED_MEDIA_TYPE', { 'content-type': 'text/plain' }),
  accept('no token', { password: 'corpus bad password 1' }, 400, 'VALIDATION_FAILED'),
  accept('token not a string', { token: 42 }, 400, 'VALIDATION_FAILED'),
  accept('token too long', { token: 'A'.repeat(201) }, 400, 'VALIDATION_FAILED'),
  accept('a field not allowed', { token: FORGED, role: 'owner' }, 400, 'VALIDATION_FAILED'),
  accept('a name with a control character', { token: FORGED, name: 'a\u0007b' }, 400, 'VALIDATION_FAILED'),
  accept('forged', { token: FORGED, password: 'corpus bad password 1' }, 400, 'INVITATION_INVALID'),
  accept('garbage token', { token: '../../etc/passwd', password: 'corpus bad password 1' }, 400, 'INVITATION_INVALID'),
  accept('a made-up session cookie', { token: FORGED }, 401, 'SESSION_EXPIRED', {
    cookie: 'telemetry_session=corpus-made-up-session-token',
  }),
];
