import type { ErrorCode } from '../error-codes.js';
import { ACCESS_LIMITS, ROLES, SCOPES } from '../access.js';
import {
  EMAIL_PATTERN,
  INVITATION_ID_PATTERN,
  invitationAcceptSchema,
  invitationCreateSchema,
  memberPatchSchema,
  PERSON_ID_PATTERN,
  settingsPatchSchema,
} from '../people-schemas.js';
import { queryParam } from './parameters.js';
import { bodyErrors, component, envelopeOf, errors, jsonOk, keyErrors, type Json } from './responses.js';

/**
 * The members, invitations and settings routes in the OpenAPI document (docs/access.md,
 * "People and memberships"): an API key with the scope, or a session cookie (with
 * X-CSRF-Token on a change); the preview and the acceptance of an invitation take neither.
 */

const role = { type: 'string', enum: ROLES };
const email = { type: 'string', maxLength: ACCESS_LIMITS.maxEmailLength, pattern: EMAIL_PATTERN };
const at = { type: 'string', format: 'date-time' };
const body = (schema: Json): Json => ({
  required: true,
  content: { 'application/json': { schema: component(schema) } },
});
const security = (scope: (typeof SCOPES)[number]): Json[] => [{ apiKey: [scope] }, { sessionCookie: [] }];
const sessionErrors: ErrorCode[] = ['SESSION_EXPIRED', 'CSRF_FAILED', 'REGISTRY_UNAVAILABLE'];
const routeErrors = (...more: ErrorCode[]): Json => keyErrors(...sessionErrors, ...more);
const done = jsonOk('Done.', envelopeOf({ type: 'object', additionalProperties: false }));
const pathParam = (name: string, description: string, pattern: string): Json => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string', pattern },
});
const personPath = pathParam('person_id', 'The member’s person id (per_…).', PERSON_ID_PATTERN);
const invitationPath = pathParam('id', 'The invitation’s id (inv_…).', INVITATION_ID_PATTERN);

const member: Json = {
  type: 'object',
  required: ['id', 'email', 'name', 'role', 'joined_at', 'password', 'totp'],
  properties: {
    id: { type: 'string', pattern: PERSON_ID_PATTERN },
    email,
    name: { type: 'string' },
    role,
    joined_at: at,
    password: { type: 'boolean', description: 'Whether they can sign in with a password.' },
    totp: { type: 'boolean', description: 'Whether their password sign-in takes a TOTP code.' },
  },
};
const invitationProps: Json = {
  id: { type: 'string', pattern: INVITATION_ID_PATTERN },
  email,
  role,
  invited_by: { type: 'string', description: 'The person (per_…) or API key (key id) that invited.' },
  created_at: at,
  expires_at: at,
};
const invitation: Json = { type: 'object', required: Object.keys(invitationProps), properties: invitationProps };
const settings: Json = {
  type: 'object',
  required: ['name', 'auto_admit_domains', 'auto_admit_role'],
  properties: {
    name: { type: 'string' },
    auto_admit_domains: { type: 'array', items: { type: 'string' } },
    auto_admit_role: { type: 'string', enum: ['viewer', 'editor', 'admin'] },
  },
};
const sessionView: Json = {
  type: 'object',
  required: ['person', 'tenant', 'role', 'scopes', 'tenants', 'csrf_token', 'expires_at'],
  properties: {
    person: { type: 'object' },
    tenant: { type: 'object' },
    role,
    scopes: { type: 'array', items: { type: 'string', enum: SCOPES } },
    tenants: { type: 'array', items: { type: 'object' } },
    csrf_token: { type: 'string' },
    expires_at: at,
  },
};
const setCookie = {
  'Set-Cookie': { description: 'The session cookie (HttpOnly, SameSite=Lax).', schema: { type: 'string' } },
};

export const memberPaths: Json = {
  '/api/members': {
    get: {
      operationId: 'listMembers',
      summary: "The tenant's members, oldest first",
      security: security('members:read'),
      responses: {
        '200': jsonOk('Every member.', envelopeOf({ type: 'array', items: member })),
        ...routeErrors('INVALID_PARAMETER'),
      },
    },
  },
  '/api/members/{person_id}': {
    patch: {
      operationId: 'changeMemberRole',
      summary: "Change a member's role",
      description:
        'Only an owner grants or takes the owner role (403 ROLE_NOT_ALLOWED); the last owner keeps it (409 LAST_OWNER). Audited as member.role_change.',
      security: security('members:write'),
      parameters: [personPath],
      requestBody: body(memberPatchSchema),
      responses: {
        '200': jsonOk('The member.', envelopeOf(member)),
        ...routeErrors(...bodyErrors, 'INVALID_PARAMETER', 'MEMBER_NOT_FOUND', 'ROLE_NOT_ALLOWED', 'LAST_OWNER'),
      },
    },
    delete: {
      operationId: 'removeMember',
      summary: 'Remove a member (or leave: any member may remove themself)',
      description:
        'Their sessions in this tenant end at once. Only an owner removes another owner (403 ROLE_NOT_ALLOWED); the last owner stays (409 LAST_OWNER). Audited as member.remove.',
      security: security('members:write'),
      parameters: [personPath],
      responses: {
        '200': done,
        ...routeErrors('INVALID_PARAMETER', 'MEMBER_NOT_FOUND', 'ROLE_NOT_ALLOWED', 'LAST_OWNER'),
      },
    },
  },
  '/api/invitations': {
    get: {
      operationId: 'listInvitations',
      summary: "The tenant's pending invitations, newest first",
      security: security('members:read'),
      responses: {
        '200': jsonOk('Every pending invitation.', envelopeOf({ type: 'array', items: invitation })),
        ...routeErrors('INVALID_PARAMETER'),
      },
    },
    post: {
      operationId: 'inviteMember',
      summary: 'Invite an email with a role: the link is mailed (answered only when the mail could not be sent)',
      description:
        'Only an owner invites an owner (403 ROLE_NOT_ALLOWED). The link is `${PUBLIC_URL}/console/#/invite/<token>`; `mail_sent` says whether the mail server took the mail. The link proves control of the invited email, so the answer has `link` only when `mail_sent` is false (no SMTP_URL, or the server refused): then the inviter must hand it to the invitee, and to nobody else. Audited as member.invite.',
      security: security('members:write'),
      requestBody: body(invitationCreateSchema),
      responses: {
        '201': jsonOk(
          'The invitation and whether it was mailed; its link only when it was not.',
          envelopeOf({
            type: 'object',
            required: [...Object.keys(invitationProps), 'mail_sent'],
            properties: {
              ...invitationProps,
              link: { type: 'string', description: 'Only when mail_sent is false: hand it to the invitee alone.' },
              mail_sent: { type: 'boolean' },
            },
          }),
        ),
        ...routeErrors(...bodyErrors, 'INVALID_PARAMETER', 'ALREADY_MEMBER', 'ROLE_NOT_ALLOWED', 'QUOTA_EXCEEDED'),
      },
    },
  },
  '/api/invitations/{id}': {
    delete: {
      operationId: 'revokeInvitation',
      summary: 'Revoke a pending invitation: its link stops working',
      security: security('members:write'),
      parameters: [invitationPath],
      responses: { '200': done, ...routeErrors('INVALID_PARAMETER', 'INVITATION_NOT_FOUND') },
    },
  },
  '/api/invitations/preview': {
    get: {
      operationId: 'previewInvitation',
      summary: 'What an invitation link offers (no key: the token is the credential)',
      security: [],
      parameters: [queryParam('token', { type: 'string', maxLength: 200 }, 'The token of the link.')],
      responses: {
        '200': jsonOk(
          'The invitation.',
          envelopeOf({
            type: 'object',
            required: ['tenant', 'email', 'role', 'expires_at', 'sso', 'has_account'],
            properties: {
              tenant: {
                type: 'object',
                required: ['id', 'name'],
                properties: { id: { type: 'string' }, name: { type: 'string' } },
              },
              email,
              role,
              expires_at: at,
              sso: { type: 'boolean' },
              has_account: { type: 'boolean' },
            },
          }),
        ),
        ...errors(['INVALID_PARAMETER', 'INVITATION_INVALID', ...sessionErrors, 'INTERNAL_ERROR']),
      },
    },
  },
  '/api/invitations/accept': {
    post: {
      operationId: 'acceptInvitation',
      summary: 'Accept an invitation, once, and be signed in to its tenant',
      description:
        'A new person sends a password (the password rules: 400 WEAK_PASSWORD); an existing one their password, or accepts signed in (session cookie and X-CSRF-Token). Their email must be the invited one. Audited as invitation.accept; a genuine link refused as invitation.refused.',
      security: [],
      requestBody: body(invitationAcceptSchema),
      responses: {
        '200': jsonOk('Signed in.', envelopeOf(sessionView), setCookie),
        ...errors([
          ...bodyErrors,
          'INVALID_PARAMETER',
          'INVITATION_INVALID',
          'WEAK_PASSWORD',
          'SIGN_IN_FAILED',
          'ALREADY_MEMBER',
          ...sessionErrors,
          'INTERNAL_ERROR',
        ]),
      },
    },
  },
  '/api/settings': {
    get: {
      operationId: 'getSettings',
      summary: "The tenant's name and single sign-on domain rule",
      security: security('settings:read'),
      responses: { '200': jsonOk('The settings.', envelopeOf(settings)), ...routeErrors('INVALID_PARAMETER') },
    },
    patch: {
      operationId: 'updateSettings',
      summary: "Change the tenant's name or domain rule",
      description: 'Audited as settings.update with each changed field.',
      security: security('settings:write'),
      requestBody: body(settingsPatchSchema),
      responses: {
        '200': jsonOk('The settings.', envelopeOf(settings)),
        ...routeErrors(...bodyErrors, 'INVALID_PARAMETER'),
      },
    },
  },
};
