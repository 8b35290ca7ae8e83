import { ACCESS_LIMITS, AUDIT_OUTCOMES, SCOPES } from './access.js';
import { ID_PATTERN, LIMITS, TENANT_ID_PATTERN } from './limits.js';
import { closed, closedSchema, dateTime } from './schema-parts.js';
import { IP_STORAGE_MODES, type IpStorage } from './types.js';

/**
 * The access API's JSON Schemas: the audit entry's and a new key's (POST /api/keys).
 *
 * The audit entry's JSON Schema (docs/access.md, "Audit log"): what the query service
 * publishes to AUDIT_TOPIC, what the stream consumer accepts into `audit_log` (anything
 * else is dead-lettered) and what GET /api/audit answers.
 */

/** `<object>.<verb>`: lower-case words joined by dots (monitor.update, access.denied). */
export const AUDIT_ACTION_PATTERN = '^[a-z][a-z_]*(\\.[a-z][a-z_]*)+$';
/** GET /api/audit's `action`: an action, or a prefix of one ending in `.` (`monitor.`). */
export const AUDIT_ACTION_FILTER_PATTERN = '^[a-z][a-z_]*(\\.[a-z][a-z_]*)*\\.?$';

/** A printable text of at most `max` characters (empty allowed). */
const text = (max: number) => ({ type: 'string', maxLength: max }) as const;

export const auditEntrySchema = closedSchema(
  'AuditEntry',
  ['id', 'tenant_id', 'at', 'actor', 'action', 'target', 'outcome', 'changes', 'ip', 'user_agent', 'request_id'],
  {
    id: { type: 'string', pattern: '^aud_[0-9a-f]{24}$' },
    tenant_id: { type: 'string', pattern: TENANT_ID_PATTERN, maxLength: 36 },
    /** When the write was committed (UTC, milliseconds). */
    at: dateTime,
    /** Who: a person (`per_…` and their email), an API key (its id), the operator, or nobody known. */
    actor: closed(['type', 'id', 'email'], {
      type: { type: 'string', enum: ['person', 'api_key', 'operator', 'anonymous'] },
      id: text(200),
      email: text(254),
    }),
    action: { type: 'string', minLength: 3, maxLength: 64, pattern: AUDIT_ACTION_PATTERN },
    /** What was acted on: its kind (monitor, channel, key, route, …) and id. */
    target: closed(['type', 'id'], { type: text(64), id: text(300) }),
    outcome: { type: 'string', enum: AUDIT_OUTCOMES },
    /** Each changed field's before and after (absent before on a create, after on a delete), secrets masked. */
    changes: {
      type: 'object',
      maxProperties: 200,
      additionalProperties: { type: 'object', additionalProperties: false, properties: { before: {}, after: {} } },
    },
    ip: text(64),
    user_agent: text(512),
    request_id: text(200),
  },
);

/** How long a key lives: `90d`, `12h`, `30m`, `3600s` (the store's parseDuration). */
export const KEY_DURATION_PATTERN = '^[1-9][0-9]{0,5}[smhd]$';

/** Body of POST /api/keys (keyCreateSchema). */
export interface KeyCreate {
  kind: 'api' | 'telemetry';
  name: string;
  scopes?: (typeof SCOPES)[number][];
  monitor_ids?: string[];
  allowed_origins?: string[];
  allowed_sources?: string[];
  expires_in?: string;
  ip_storage?: IpStorage;
}

/** Body of PATCH /api/keys/{key_id} (keyPatchSchema). */
export interface KeyPatch {
  ip_storage: IpStorage;
}

/** A key as GET /api/keys shows it (never its secret, nor its hash). */
export interface KeyView {
  id: string;
  kind: 'api' | 'telemetry';
  name: string;
  scopes: string[];
  monitor_ids: string[];
  allowed_origins: string[];
  allowed_sources: string[];
  created_at: string;
  /** A person's id (`per_…`), `key:<key id>`, `operator` (npm run keys), or '' for keys made before people. */
  created_by: string;
  expires_at: string | null;
  revoked: boolean;
  /** What ClickHouse keeps of a telemetry key's events' client addresses (docs/enrichment.md). */
  ip_storage: IpStorage;
}

/** A telemetry key's events: what ClickHouse keeps of the client's address (docs/enrichment.md). */
const ipStorage = { type: 'string', enum: IP_STORAGE_MODES } as const;

/** Body of POST /api/keys (docs/access.md, "API keys"). */
export const keyCreateSchema = closedSchema('KeyCreate', ['kind', 'name'], {
  /** `api`: an API key (ak_…) with scopes; `telemetry`: an access key (tk_…) that sends events. */
  kind: { type: 'string', enum: ['api', 'telemetry'] },
  name: {
    type: 'string',
    minLength: 1,
    maxLength: ACCESS_LIMITS.maxNameLength,
    pattern: '^[^\\u0000-\\u001f\\u007f]+$',
  },
  /** An API key's scopes (default checks:read); none of them beyond the creator's own. */
  scopes: { type: 'array', maxItems: SCOPES.length, uniqueItems: true, items: { type: 'string', enum: SCOPES } },
  /** Limits an API key to these monitors. */
  monitor_ids: {
    type: 'array',
    maxItems: 1000,
    uniqueItems: true,
    items: { type: 'string', minLength: 1, maxLength: LIMITS.maxMonitorIdLength, pattern: ID_PATTERN },
  },
  /** A telemetry key's allowed browser origins (scheme://host[:port]). */
  allowed_origins: {
    type: 'array',
    maxItems: 100,
    uniqueItems: true,
    items: { type: 'string', maxLength: 300, pattern: '^https?://[^/\\s]+$' },
  },
  /** A telemetry key's allowed `source` values. */
  allowed_sources: {
    type: 'array',
    maxItems: 100,
    uniqueItems: true,
    items: { type: 'string', minLength: 1, maxLength: LIMITS.maxNameLength, pattern: '^[^\\u0000-\\u001f\\u007f]+$' },
  },
  expires_in: { type: 'string', pattern: KEY_DURATION_PATTERN },
  /** A telemetry key's: `full`, `truncated` (the default: IPv4 /24, IPv6 /48) or `none`. */
  ip_storage: ipStorage,
});

/** Body of PATCH /api/keys/{key_id}: what a telemetry key keeps of addresses from now on. */
export const keyPatchSchema = closedSchema('KeyPatch', ['ip_storage'], {
  ip_storage: ipStorage,
});

export const ACCESS_SCHEMAS = [auditEntrySchema, keyCreateSchema, keyPatchSchema] as const;
