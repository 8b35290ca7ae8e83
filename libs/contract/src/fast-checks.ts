import { LIMITS, NAME_PATTERN, TENANT_ID_PATTERN } from './limits.js';
import type { EventMessage } from './types.js';

/**
 * Checks of the messages the stream consumer reads most, written by hand for speed.
 * Each answers true only for a message its schema accepts; false means "not sure", and
 * the caller then asks the compiled schema (ajv), whose answer counts. A unit test holds
 * them to that against ajv on valid and invalid messages. They cover the canonical form
 * our own producers write (times as `Date.toISOString()` gives them); anything else
 * takes the schema's slower path.
 */

const NAME = new RegExp(NAME_PATTERN);
const TENANT = new RegExp(TENANT_ID_PATTERN);
// ajv-formats' "uuid"
const UUID = /^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$/i;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const EVENT_FIELDS = new Set([
  'v',
  'event_id',
  'key_id',
  'tenant_id',
  'source',
  'category',
  'payload',
  'client_event_id',
  'client_ts',
  'sent_at',
  'received_at',
]);

/** A time exactly as toISOString() writes it, which is a valid RFC 3339 date-time. */
function canonicalTime(v: unknown): boolean {
  if (typeof v !== 'string' || !ISO.test(v)) return false;
  const ms = Date.parse(v);
  return Number.isFinite(ms) && new Date(ms).toISOString() === v;
}

function name(v: unknown): boolean {
  // The pattern admits ASCII only, so .length counts what maxLength counts.
  return typeof v === 'string' && v.length <= LIMITS.maxNameLength && NAME.test(v);
}

/** True only if eventMessageSchema accepts `m` (false: ask the schema). */
export function isCanonicalEventMessage(m: unknown): m is EventMessage {
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return false;
  const e = m as Record<string, unknown>;
  for (const k in e) if (!EVENT_FIELDS.has(k)) return false;
  return (
    e.v === 1 &&
    typeof e.event_id === 'string' &&
    UUID.test(e.event_id) &&
    typeof e.key_id === 'string' &&
    e.key_id.length >= 1 &&
    e.key_id.length <= 64 &&
    (e.tenant_id === undefined || (typeof e.tenant_id === 'string' && TENANT.test(e.tenant_id))) &&
    name(e.source) &&
    name(e.category) &&
    typeof e.payload === 'object' &&
    e.payload !== null &&
    !Array.isArray(e.payload) &&
    // UTF-16 units are at least as many as code points (what maxLength counts).
    (e.client_event_id === undefined ||
      (typeof e.client_event_id === 'string' &&
        e.client_event_id.length >= 1 &&
        e.client_event_id.length <= LIMITS.maxClientIdLength)) &&
    (e.client_ts === undefined || canonicalTime(e.client_ts)) &&
    (e.sent_at === undefined || canonicalTime(e.sent_at)) &&
    canonicalTime(e.received_at)
  );
}
