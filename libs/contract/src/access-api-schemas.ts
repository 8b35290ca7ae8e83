import { ACCESS_LIMITS as L, ROLES, SCOPES } from './access.js';
import { TENANT_ID_PATTERN } from './limits.js';
import { PERSON_ID_PATTERN } from './people-schemas.js';
import { closed, closedSchema, dateTime } from './schema-parts.js';

/**
 * The access API's JSON Schemas beside people-schemas.ts's (members, invitations, settings)
 * and access-schemas.ts's (the audit entry, a new key): the closed bodies of the sign-in,
 * session and password routes, and the session they answer (SessionView of access.ts).
 * The OpenAPI document shows them as components (openapi/sessions.ts refers to them).
 */

const password = { type: 'string', minLength: 1, maxLength: L.maxPasswordLength } as const;
/** A new password: WEAK_PASSWORD (400) below the minimum or on the common list. */
const newPassword = { type: 'string', maxLength: L.maxPasswordLength } as const;
const role = { type: 'string', enum: ROLES } as const;
const scope = { type: 'string', enum: SCOPES } as const;
const tenantId = { type: 'string', pattern: TENANT_ID_PATTERN } as const;
const totpCode = { type: 'string', pattern: '^[0-9]{6}$' } as const;
/** A signed link's token (invitation, password reset): opaque, bounded. */
const linkToken = { type: 'string', minLength: 1, maxLength: 1024 } as const;
const tenantRef = closed(['id', 'name'], { id: { type: 'string' }, name: { type: 'string' } });

// --- request bodies

/**
 * Sign-in takes any text up to SIGN_IN_FIELD_MAX in its fields (longer: 400): an email or a
 * password no account can have is SIGN_IN_FAILED like a wrong one, a `totp` is read only
 * for an account with two-step sign-in, and a `tenant_id` the person is not a member of
 * gives way to their oldest membership.
 */
export const SIGN_IN_FIELD_MAX = 1024;
export const passwordSignInSchema = closedSchema('PasswordSignIn', ['email', 'password'], {
  email: { type: 'string', maxLength: L.maxEmailLength },
  password,
  totp: { type: 'string', maxLength: SIGN_IN_FIELD_MAX, description: 'The current code of the authenticator app.' },
  tenant_id: { type: 'string', maxLength: SIGN_IN_FIELD_MAX },
});
export const tenantSwitchSchema = closedSchema('TenantSwitch', ['tenant_id'], { tenant_id: tenantId });
/** Any text up to maxEmailLength: the answer is 202 whether or not it is an account's email. */
export const passwordResetRequestSchema = closedSchema('PasswordResetRequest', ['email'], {
  email: { type: 'string', maxLength: L.maxEmailLength },
});
export const passwordResetConfirmSchema = closedSchema('PasswordResetConfirm', ['token', 'password'], {
  token: linkToken,
  password: newPassword,
});
export const passwordChangeSchema = closedSchema('PasswordChange', ['current_password', 'password'], {
  current_password: password,
  password: newPassword,
});
/** Turning two-step sign-in on or off: a current code and the current password (a stolen session cannot). */
export const totpCodeSchema = closedSchema('TotpCode', ['code', 'current_password'], {
  code: totpCode,
  current_password: password,
});
// --- answers

export const personSchema = closedSchema('Person', ['id', 'email', 'name'], {
  id: { type: 'string', pattern: PERSON_ID_PATTERN },
  email: { type: 'string' },
  name: { type: 'string' },
});
export const sessionSchema = closedSchema(
  'Session',
  ['person', 'tenant', 'role', 'scopes', 'tenants', 'csrf_token', 'expires_at'],
  {
    person: { $ref: 'Person' },
    tenant: tenantRef,
    role,
    scopes: { type: 'array', items: scope },
    tenants: {
      type: 'array',
      items: closed(['id', 'name', 'role'], { id: { type: 'string' }, name: { type: 'string' }, role }),
    },
    csrf_token: { type: 'string', description: 'Send it as X-CSRF-Token with every state-changing request.' },
    expires_at: dateTime,
  },
);
export const ACCESS_API_SCHEMAS = [
  passwordSignInSchema,
  tenantSwitchSchema,
  passwordResetRequestSchema,
  passwordResetConfirmSchema,
  passwordChangeSchema,
  totpCodeSchema,
  personSchema,
  sessionSchema,
] as const;
