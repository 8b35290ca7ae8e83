import type { Scope } from '../access.js';
import type { ErrorCode } from '../error-codes.js';
import { INVITATION_ID_PATTERN, PERSON_ID_PATTERN } from '../people-schemas.js';
import { header } from './parameters.js';
import {
  bodyErrors,
  envelopeOf,
  errors,
  jsonBody,
  jsonOk,
  keyErrors,
  ref,
  storeErrors,
  type Json,
} from './responses.js';

/**
 * The people routes in the OpenAPI document (docs/access.md): members, invitations and
 * the tenant's settings (sessions.ts has the session and password routes, sso.ts single
 * sign-on's, access.ts the audit log and the keys). A route taking `auth(scope)` lists the API key scheme; openapi.ts adds the
 * session cookie beside it, and the X-CSRF-Token header on writes, for every such route.
 */

const idPath = (name: string, description: string, pattern: string): Json => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string', pattern },
});
const personPath = idPath('person_id', "The member's person id (per_…).", PERSON_ID_PATTERN);
const invitationPath = idPath('id', 'The invitation id (inv_…).', INVITATION_ID_PATTERN);

const auth = (scope: Scope): Json[] => [{ apiKey: [scope] }];
const setCookie = {
  'Set-Cookie': header('The session cookie (HttpOnly, SameSite=Lax; Secure and __Host- outside loopback).'),
};
const empty = envelopeOf({ type: 'object', additionalProperties: false, maxProperties: 0 });
const done = (description: string): Json => jsonOk(description, empty);
const sessionOk = (description: string): Json => jsonOk(description, envelopeOf(ref('Session')), setCookie);
const listOf = (name: string): Json => envelopeOf({ type: 'array', items: ref(name) });
/** The refusals of a public route. */
const publicErrors = (...more: ErrorCode[]): Json => errors([...more, ...storeErrors]);

const memberPaths: Json = {
  '/api/members': {
    get: {
      operationId: 'listMembers',
      summary: "The tenant's members",
      security: auth('members:read'),
      responses: { '200': jsonOk('Every member.', listOf('Member')), ...keyErrors('INVALID_PARAMETER') },
    },
  },
  '/api/members/{person_id}': {
    patch: {
      operationId: 'changeMemberRole',
      summary: "Change a member's role",
      description:
        'Only an owner grants or takes the owner role (403 ROLE_NOT_ALLOWED); the last owner stays one (409 LAST_OWNER).',
      security: auth('members:write'),
      parameters: [personPath],
      requestBody: jsonBody('MemberPatch'),
      responses: {
        '200': jsonOk('The member with the new role.', envelopeOf(ref('Member'))),
        ...keyErrors(...bodyErrors, 'INVALID_PARAMETER', 'MEMBER_NOT_FOUND', 'ROLE_NOT_ALLOWED', 'LAST_OWNER'),
      },
    },
    delete: {
      operationId: 'removeMember',
      summary: 'Remove a member (or leave the tenant: any member may remove themself); their sessions here end',
      description: 'Removing another member takes members:write (403 INSUFFICIENT_SCOPE); leaving takes members:read.',
      security: auth('members:read'),
      parameters: [personPath],
      responses: {
        '200': done('Removed.'),
        ...keyErrors('INVALID_PARAMETER', 'MEMBER_NOT_FOUND', 'ROLE_NOT_ALLOWED', 'LAST_OWNER'),
      },
    },
  },
  '/api/invitations': {
    get: {
      operationId: 'listInvitations',
      summary: "The tenant's pending invitations",
      security: auth('members:read'),
      responses: {
        '200': jsonOk('Every pending invitation.', listOf('Invitation')),
        ...keyErrors('INVALID_PARAMETER'),
      },
    },
    post: {
      operationId: 'invite',
      summary: 'Invite a person by email: a signed, expiring link, mailed and answered once',
      security: auth('members:write'),
      requestBody: jsonBody('InvitationCreate'),
      responses: {
        '201': jsonOk('Invited.', envelopeOf(ref('InvitationCreated'))),
        ...keyErrors(...bodyErrors, 'INVALID_PARAMETER', 'ALREADY_MEMBER', 'ROLE_NOT_ALLOWED', 'QUOTA_EXCEEDED'),
      },
    },
  },
  '/api/invitations/{id}': {
    delete: {
      operationId: 'revokeInvitation',
      summary: 'Revoke a pending invitation: its link no longer works',
      security: auth('members:write'),
      parameters: [invitationPath],
      responses: { '200': done('Revoked.'), ...keyErrors('INVALID_PARAMETER', 'INVITATION_NOT_FOUND') },
    },
  },
  '/api/invitations/preview': {
    get: {
      operationId: 'previewInvitation',
      summary: "What an invitation link is for (no key: the link's token is the credential)",
      security: [],
      parameters: [
        {
          name: 'token',
          in: 'query',
          required: true,
          description: "The link's token.",
          schema: { type: 'string', minLength: 1, maxLength: 512 },
        },
      ],
      responses: {
        '200': jsonOk('The invitation.', envelopeOf(ref('InvitationPreview'))),
        ...publicErrors('INVALID_PARAMETER', 'INVITATION_INVALID'),
      },
    },
  },
  '/api/invitations/accept': {
    post: {
      operationId: 'acceptInvitation',
      summary: 'Accept an invitation and sign in',
      description:
        'A new person sets a password (WEAK_PASSWORD rules); an existing person with a password gives it; with a session cookie (and X-CSRF-Token), the person signed in accepts it (their email must be the invitation’s).',
      security: [],
      requestBody: jsonBody('InvitationAccept'),
      responses: {
        '200': sessionOk('Accepted: a member, and signed in.'),
        ...publicErrors(
          ...bodyErrors,
          'INVALID_PARAMETER',
          'INVITATION_INVALID',
          'WEAK_PASSWORD',
          'SIGN_IN_FAILED',
          'ALREADY_MEMBER',
          // with the session cookie: the person signed in accepts
          'INVALID_CREDENTIALS',
          'KEY_EXPIRED',
          'SESSION_EXPIRED',
          'CSRF_FAILED',
        ),
      },
    },
  },
  '/api/settings': {
    get: {
      operationId: 'getSettings',
      summary: "The tenant's settings: its name and the sign-in domain rule",
      security: auth('settings:read'),
      responses: { '200': jsonOk('The settings.', envelopeOf(ref('Settings'))), ...keyErrors('INVALID_PARAMETER') },
    },
    patch: {
      operationId: 'updateSettings',
      summary: "Change the tenant's settings",
      description:
        'A person whose verified single sign-on email is in one of auto_admit_domains joins the tenant as auto_admit_role (never owner) when they first sign in.',
      security: auth('settings:write'),
      requestBody: jsonBody('SettingsPatch'),
      responses: {
        '200': jsonOk('The changed settings.', envelopeOf(ref('Settings'))),
        ...keyErrors(...bodyErrors, 'INVALID_PARAMETER'),
      },
    },
  },
};

export const peoplePaths: Json = memberPaths;
