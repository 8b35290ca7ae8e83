import { EVENT_NAME_PATTERN, EVENT_PROTOCOLS, LIMITS, NAME_PATTERN, TENANT_ID_PATTERN } from './limits.js';
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
const PRINTABLE = new RegExp(EVENT_NAME_PATTERN);
const PROTOCOLS = new Set<unknown>(EVENT_PROTOCOLS);
const TENANT = new RegExp(TENANT_ID_PATTERN);
// ajv-formats' "uuid"
const UUID = /^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$/i;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The top-level fields of an event message (the gateway writes them in this order; `schema_failure` is not one). */
export const EVENT_MESSAGE_FIELDS = [
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
  'protocol',
  'anonymous_id',
  'user_id',
  'client_ip',
  'user_agent',
  'request_ip',
  'request_user_agent',
  'ip_storage',
] as const;
const EVENT_FIELDS = new Set<string>(EVENT_MESSAGE_FIELDS);
const IP_STORAGE = new Set<unknown>(['full', 'truncated', 'none']);
const IP_LITERAL = /^[0-9A-Fa-f:.]{2,45}$/;

/** The number the `n` ASCII digits of `s` from `at` spell. */
function digits(s: string, at: number, n: number): number {
  let v = 0;
  for (let i = at; i < at + n; i++) v = v * 10 + s.charCodeAt(i) - 48;
  return v;
}

/**
 * A time in toISOString()'s form (YYYY-MM-DDTHH:MM:SS.sssZ) naming a real instant:
 * month 1-12, a day the month has (leap years counted), hour < 24, minute and second
 * < 60, which RFC 3339's date-time accepts.
 */
function canonicalTime(v: unknown): boolean {
  if (typeof v !== 'string' || !ISO.test(v)) return false;
  const year = digits(v, 0, 4);
  const month = digits(v, 5, 2);
  const day = digits(v, 8, 2);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
  return (
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= days &&
    digits(v, 11, 2) < 24 &&
    digits(v, 14, 2) < 60 &&
    digits(v, 17, 2) < 60
  );
}

function name(v: unknown): boolean {
  // The pattern admits ASCII only, so .length counts what maxLength counts.
  return typeof v === 'string' && v.length <= LIMITS.maxNameLength && NAME.test(v);
}

/** Text of 1 to `max` UTF-16 units without control characters (a pattern of the schema's; maxLength counts code points, never more). */
function printable(v: unknown, max: number): boolean {
  return typeof v === 'string' && v.length >= 1 && v.length <= max && PRINTABLE.test(v);
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
    (name(e.category) || printable(e.category, LIMITS.maxEventNameLength)) &&
    (e.protocol === undefined || PROTOCOLS.has(e.protocol)) &&
    (e.anonymous_id === undefined || printable(e.anonymous_id, LIMITS.maxIdentityLength)) &&
    (e.user_id === undefined || printable(e.user_id, LIMITS.maxIdentityLength)) &&
    (e.user_agent === undefined || printable(e.user_agent, LIMITS.maxUserAgentLength)) &&
    // Rare (a client-reported address): the schema decides.
    e.client_ip === undefined &&
    (e.request_ip === undefined || (typeof e.request_ip === 'string' && IP_LITERAL.test(e.request_ip))) &&
    (e.request_user_agent === undefined || printable(e.request_user_agent, LIMITS.maxUserAgentLength)) &&
    (e.ip_storage === undefined || IP_STORAGE.has(e.ip_storage)) &&
    // Rare (an event that failed its schema): the schema decides.
    e.schema_failure === undefined &&
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
