import type { ValidateFunction } from 'ajv';
import { ACCESS_LIMITS, ROLES, type Role } from './access.js';
import { createAjv } from './ajv.js';
import { closedSchema, patchSchema } from './schema-parts.js';

/**
 * The members, invitations and settings API's JSON Schemas (docs/access.md, "Members").
 *
 * An email is checked with a deliberately simple pattern (docs/access.md): no spaces or control characters, one
 * `@`, at most 64 characters before it, a dot in the domain, at most
 * ACCESS_LIMITS.maxEmailLength in all. Whether it receives mail is what the invitation tests.
 */
export const EMAIL_PATTERN =
  '^[^\\s@\\u0000-\\u001f\\u007f]{1,64}@[^\\s@.\\u0000-\\u001f\\u007f]+(\\.[^\\s@.\\u0000-\\u001f\\u007f]+)+$';
/** A domain of the sign-in rule: lower-case letters, digits and hyphens, dot-separated labels. */
export const DOMAIN_PATTERN = '^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$';
/** A person's id. */
export const PERSON_ID_PATTERN = '^per_[a-z0-9]{20}$';
/** An invitation's id. */
export const INVITATION_ID_PATTERN = '^inv_[a-z0-9]{20}$';
/** At most this many domains in the sign-in rule. */
export const MAX_AUTO_ADMIT_DOMAINS = 50;

const email = {
  type: 'string',
  minLength: 3,
  maxLength: ACCESS_LIMITS.maxEmailLength,
  pattern: EMAIL_PATTERN,
} as const;
const role = { type: 'string', enum: ROLES } as const;
const printable = '^[^\\u0000-\\u001f\\u007f]*$';

/** Body of PATCH /api/members/{person_id}. */
export const memberPatchSchema = closedSchema('MemberPatch', ['role'], { role });

/** Body of POST /api/invitations. */
export const invitationCreateSchema = closedSchema('InvitationCreate', ['email', 'role'], { email, role });

/** Body of POST /api/invitations/accept. */
export const invitationAcceptSchema = closedSchema('InvitationAccept', ['token'], {
  token: { type: 'string', minLength: 1, maxLength: 200 },
  name: { type: 'string', maxLength: ACCESS_LIMITS.maxNameLength, pattern: printable },
  password: { type: 'string', minLength: 1, maxLength: ACCESS_LIMITS.maxPasswordLength * 4 },
});

/** Body of PATCH /api/settings. */
export const settingsPatchSchema = patchSchema('SettingsPatch', {
  name: {
    type: 'string',
    minLength: 1,
    maxLength: 200,
    pattern: '^[^\\u0000-\\u001f\\u007f]*[^\\s\\u0000-\\u001f\\u007f][^\\u0000-\\u001f\\u007f]*$',
  },
  auto_admit_domains: {
    type: 'array',
    maxItems: MAX_AUTO_ADMIT_DOMAINS,
    items: { type: 'string', maxLength: 253, pattern: DOMAIN_PATTERN },
  },
  auto_admit_role: { type: 'string', enum: ['viewer', 'editor', 'admin'] },
});

export const PEOPLE_SCHEMAS = [
  memberPatchSchema,
  invitationCreateSchema,
  invitationAcceptSchema,
  settingsPatchSchema,
] as const;

export interface PeopleValidators {
  memberPatch: ValidateFunction<{ role: Role }>;
  invitationCreate: ValidateFunction<{ email: string; role: Role }>;
  invitationAccept: ValidateFunction<{ token: string; name?: string; password?: string }>;
  settingsPatch: ValidateFunction<{
    name?: string;
    auto_admit_domains?: string[];
    auto_admit_role?: Exclude<Role, 'owner'>;
  }>;
}

/** Compiles the people schemas once (a composition root calls it). */
export function createPeopleValidators(): PeopleValidators {
  const ajv = createAjv(PEOPLE_SCHEMAS);
  const get = <T>(id: string): ValidateFunction<T> => ajv.getSchema<T>(id)!;
  return {
    memberPatch: get('MemberPatch'),
    invitationCreate: get('InvitationCreate'),
    invitationAccept: get('InvitationAccept'),
    settingsPatch: get('SettingsPatch'),
  };
}
