import { AUDIT_OUTCOMES } from './access.js';
import { TENANT_ID_PATTERN } from './limits.js';
import { closed, closedSchema, dateTime } from './schema-parts.js';

/**
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

export const ACCESS_SCHEMAS = [auditEntrySchema] as const;
