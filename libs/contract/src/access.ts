/**
 * People, roles, scopes, sessions and the audit log (docs/access.md): the one definition
 * every service, the console and the docs read.
 *
 * A request is made by a principal: an API key (its scopes, as issued) or a person signed
 * in to one tenant (the scopes of their role there, read again on every request, so that
 * a role change or a removal takes effect on the next one).
 */

/** Every scope a route can need; API keys take any of them, roles map to them (ROLE_SCOPES). */
export const SCOPES = [
  'checks:read',
  'monitors:read',
  'monitors:write',
  'events:read',
  'channels:read',
  'channels:write',
  'members:read',
  'members:write',
  'keys:read',
  'keys:write',
  'audit:read',
  'settings:read',
  'settings:write',
  'deletions:read',
  'deletions:write',
  'event_schemas:read',
  'event_schemas:write',
] as const;
export type Scope = (typeof SCOPES)[number];

/** A scope's one-line meaning (docs/access.md's matrix). */
export const SCOPE_DESCRIPTIONS: Record<Scope, string> = {
  'checks:read': "read monitors' check history, summaries and exports",
  'monitors:read': 'read monitors, their incidents and webhook deliveries, and status pages',
  'monitors:write': 'create, change and delete monitors and status pages; acknowledge incidents',
  'events:read': 'read event counts',
  'channels:read': 'read alert channels and escalation policies',
  'channels:write': 'create, change, test and delete alert channels and escalation policies',
  'members:read': "list the tenant's members and pending invitations",
  'members:write': 'invite members, change their roles, remove them',
  'keys:read': "list the tenant's API and telemetry keys (never their secrets)",
  'keys:write': 'create and revoke API and telemetry keys',
  'audit:read': 'read the audit log',
  'settings:read': "read the tenant's settings (its name, the sign-in domain rule)",
  'settings:write': "change the tenant's settings",
  'deletions:read': "read the tenant's deletion requests and their progress",
  'deletions:write':
    'delete the events of user ids and anonymous ids and suppress their new events (docs/deletions.md)',
  'event_schemas:read': "read the tenant's event schemas and their versions",
  'event_schemas:write': 'create event schemas, add versions, change their action, delete them',
};

/**
 * API keys made before the channels scopes existed reached channels with the monitors
 * scopes: a key's monitors scope carries its channels scope (docs/access.md).
 */
export const IMPLIED_SCOPES: Partial<Record<Scope, readonly Scope[]>> = {
  'monitors:read': ['channels:read'],
  'monitors:write': ['channels:write'],
};

/** A scope set with what its scopes imply. */
export function withImpliedScopes(scopes: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const s of scopes) {
    out.add(s);
    for (const i of IMPLIED_SCOPES[s as Scope] ?? []) out.add(i);
  }
  return out;
}

/** A member's role in a tenant, from least to most. */
export const ROLES = ['viewer', 'editor', 'admin', 'owner'] as const;
export type Role = (typeof ROLES)[number];

const VIEWER: readonly Scope[] = [
  'checks:read',
  'monitors:read',
  'events:read',
  'channels:read',
  'members:read',
  'event_schemas:read',
];
const EDITOR: readonly Scope[] = [...VIEWER, 'monitors:write', 'channels:write', 'event_schemas:write'];
const ADMIN: readonly Scope[] = [
  ...EDITOR,
  'members:write',
  'keys:read',
  'keys:write',
  'audit:read',
  'settings:read',
  'settings:write',
  // Deleting a person's history is not undone: admins and owners only (docs/deletions.md).
  'deletions:read',
  'deletions:write',
];

/**
 * The role matrix (docs/access.md). Owners hold what admins hold; what only an owner may
 * do is a rule, not a scope: grant or take the owner role, and remove an owner.
 */
export const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  viewer: VIEWER,
  editor: EDITOR,
  admin: ADMIN,
  owner: ADMIN,
};

/** Whether `role` is at least `least`. */
export function roleAtLeast(role: Role, least: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(least);
}

/** Limits of people, sessions and sign-in (docs/access.md, "Limits"). */
export const ACCESS_LIMITS = {
  minPasswordLength: 12,
  maxPasswordLength: 256,
  maxEmailLength: 254,
  maxNameLength: 200,
  /** Pending invitations per tenant. */
  maxPendingInvitations: 500,
  /** Audit entries per page of GET /api/audit. */
  maxAuditPage: 500,
  defaultAuditPage: 100,
} as const;

/** A person as the API shows them. */
export interface PersonView {
  id: string;
  email: string;
  name: string;
}

/** A member of the tenant (GET /api/members). */
export interface MemberView extends PersonView {
  role: Role;
  joined_at: string;
  /** Whether they can sign in with a password, and whether it takes a TOTP code. */
  password: boolean;
  totp: boolean;
}

/** A pending invitation (GET /api/invitations); its link is shown once, when it is made. */
export interface InvitationView {
  id: string;
  email: string;
  role: Role;
  invited_by: string;
  created_at: string;
  expires_at: string;
}

/** GET /api/session: who is signed in, where, with what. */
export interface SessionView {
  person: PersonView;
  tenant: { id: string; name: string };
  role: Role;
  scopes: Scope[];
  /** Every tenant the person belongs to (POST /api/session/tenant switches). */
  tenants: { id: string; name: string; role: Role }[];
  /** Send it as `X-CSRF-Token` with every state-changing request this cookie authenticates. */
  csrf_token: string;
  expires_at: string;
}

/** The session cookie's name (`__Host-` prefixed when it is `Secure`). */
export const SESSION_COOKIE = 'telemetry_session';
/** The header a cookie-authenticated state-changing request carries its CSRF token in. */
export const CSRF_HEADER = 'x-csrf-token';

/** Who did something, as the audit log records it. */
export type ActorType = 'person' | 'api_key' | 'operator' | 'anonymous';

/** How an audited request ended. */
export const AUDIT_OUTCOMES = ['ok', 'denied', 'failed'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

/**
 * One audit entry, as the query service publishes it to AUDIT_TOPIC and GET /api/audit
 * answers it. `changes` holds each changed field's before and after, secrets masked.
 */
export interface AuditEntry {
  id: string;
  tenant_id: string;
  at: string;
  actor: { type: ActorType; id: string; email: string };
  /** `<object>.<verb>`: monitor.update, member.role_change, session.sign_in, … (docs/access.md). */
  action: string;
  target: { type: string; id: string };
  outcome: AuditOutcome;
  changes: Record<string, { before?: unknown; after?: unknown }>;
  ip: string;
  user_agent: string;
  request_id: string;
}
