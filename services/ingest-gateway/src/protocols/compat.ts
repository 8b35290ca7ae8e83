import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import {
  type IpStorage,
  EVENT_NAME_PATTERN,
  ID_PATTERN,
  LIMITS,
  NAME_PATTERN,
  type EventMessage,
  type EventProtocol,
} from '@telemetry/contract';
import { AppError } from '@telemetry/platform';
import { parseClientAddress, storedIp, type VerifiedKey } from '@telemetry/store';
import { eventIdFor, producerMessage, type EventProducerMessage } from '../ingest.js';
import { NO_STAMP, stamp, type RequestStamp } from '../request-stamp.js';

/**
 * One event of a tracker's protocol (Segment's, PostHog's), as its module read it, before
 * it becomes our event message: the one mapping of docs/compat.md. Values are as the
 * client sent them; compatMessages() validates and normalises them.
 */
export interface CompatEvent {
  protocol: Exclude<EventProtocol, 'telemetry'>;
  /** Segment's `messageId`, PostHog's `uuid`: the client event id (retries are read once). */
  clientId?: unknown;
  /** The event's name (`track`'s `event`, PostHog's `event`) or its type (`identify`, `page`...): `category`. */
  category: unknown;
  /** The SDK's library name (Segment's `context.library.name`, PostHog's `$lib`): the source when the key does not fix one. */
  library?: unknown;
  /** The message as the client sent it: the `payload` column. */
  payload: Record<string, unknown>;
  /** When it happened by the client's clock (Segment's `originalTimestamp` or `timestamp`, PostHog's `timestamp`). */
  timestamp?: unknown;
  /** When the client sent it by the same clock (Segment's `sentAt`, PostHog's `sent_at`): corrects the skew. */
  sentAt?: unknown;
  anonymousId?: unknown;
  userId?: unknown;
  /** The address the client reported (`context.ip`, `$ip`): kept only if it is an IP literal. */
  clientIp?: unknown;
  /**
   * Where the payload holds that address (`['context', 'ip']`, `['properties', '$ip']`): the
   * payload keeps it only as the key's ip_storage allows (docs/enrichment.md).
   */
  addressAt?: readonly [string, string];
  /** The user agent the client reported (`context.userAgent`, `$raw_user_agent`): kept only if printable and at most maxUserAgentLength. */
  userAgent?: unknown;
}

const ID = new RegExp(ID_PATTERN);
const NAME = new RegExp(NAME_PATTERN);
const PRINTABLE = new RegExp(EVENT_NAME_PATTERN, 'u');

/** A problem with one event: `path` is a JSON pointer into the request as the protocol's client sent it. */
export interface CompatProblem {
  index: number;
  path: string;
  message: string;
}

/**
 * The source of a tracker's event (docs/compat.md, "Source"): the key's one allowed
 * source if it allows exactly one; else the library's name made a NAME_PATTERN name
 * (other characters become `-`), else the protocol's name. A key restricted to several
 * sources refuses a library outside them (SOURCE_NOT_ALLOWED), as our endpoint does.
 */
export function compatSource(key: Pick<VerifiedKey, 'allowedSources'>, protocol: string, library: unknown): string {
  if (key.allowedSources.size === 1) return key.allowedSources.values().next().value as string;
  let name =
    typeof library === 'string' ? library.replace(/[^A-Za-z0-9._:/-]/g, '-').replace(/^[^A-Za-z0-9]+/, '') : '';
  name = name.slice(0, LIMITS.maxNameLength);
  return name !== '' && NAME.test(name) ? name : protocol;
}

/**
 * The client event id as we keep it: an id that fits ID_PATTERN and maxClientIdLength as
 * is; any other string (or number) as `h:` and the first 32 hex digits of its SHA-256,
 * so a retry still maps to the same id; nothing else is an id.
 */
export function compatClientId(v: unknown): string | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) v = String(v);
  if (typeof v !== 'string' || v === '') return undefined;
  if (v.length <= LIMITS.maxClientIdLength && ID.test(v)) return v;
  return `h:${createHash('sha256').update(v).digest('hex').slice(0, 32)}`;
}

/**
 * A client time as toISOString() writes it: any string Date.parse reads with an explicit
 * zone (RFC 3339 / ISO 8601, with any number of fraction digits), or a Date the client
 * serialised. undefined: absent. null: present but not a time.
 */
export function compatTime(v: unknown): string | undefined | null {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string' || v.length > 64) return null;
  // RFC 3339 with a zone (a time without one would be read in the gateway's own zone), any
  // number of fraction digits (Python sends microseconds), and a day the month has:
  // Date.parse alone would move 2026-02-30 to March.
  const m = RFC3339.exec(v.trim());
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  if (days === undefined || day < 1 || day > days || hour > 23 || minute > 59 || second > 59) return null;
  const zone = m[8]!.toUpperCase() === 'Z' ? 'Z' : `${m[8]!.slice(0, 3)}:${m[8]!.slice(-2)}`;
  const ms = Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${(m[7] ?? '').slice(0, 4)}${zone}`);
  if (!Number.isFinite(ms)) return null;
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  return y >= 1970 && y < 2106 ? d.toISOString() : null;
}

const RFC3339 = /^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(\.\d+)?([Zz]|[+-]\d\d:?\d\d)$/;

/**
 * The client's own address as we carry it: an IPv4 or IPv6 literal as the message
 * schema takes it (no zone id such as `%eth0`, at most 45 characters); anything else is
 * not carried (it stays in `payload`).
 */
export function compatIp(v: unknown): string | undefined {
  return typeof v === 'string' && v.length <= 45 && IP_TEXT.test(v) && isIP(v) !== 0 ? v : undefined;
}

const IP_TEXT = /^[0-9A-Fa-f:.]+$/;

/** `v` if it is text of 1 to `max` characters (code points, as the schema's maxLength) without control characters. */
function printable(v: unknown, max: number): v is string {
  return typeof v === 'string' && v !== '' && [...v].length <= max && PRINTABLE.test(v);
}

function identity(v: unknown): string | undefined | null {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'number' && Number.isFinite(v)) v = String(v);
  return printable(v, LIMITS.maxIdentityLength) ? v : null;
}

/**
 * Our event messages for a tracker's events, all or nothing: the first problems found
 * throw VALIDATION_FAILED (details.problems with each path, details.invalid_events);
 * an event whose message is over `maxEventBytes` throws EVENT_TOO_LARGE. `pathOf(i)` is
 * the JSON pointer of event i in the client's request (`/batch/3`, or `` for a single one).
 * `requestStamp`: the request's own address and user agent, kept beside what the event
 * reports (client_ip, user_agent take priority in the consumer), and the key's ip_storage.
 */
export function compatMessages(
  events: readonly CompatEvent[],
  key: Pick<VerifiedKey, 'keyId' | 'tenantId' | 'allowedSources'>,
  receivedAt: string,
  maxEventBytes: number,
  pathOf: (index: number) => string,
  requestStamp: RequestStamp = NO_STAMP,
): EventProducerMessage[] {
  const problems: CompatProblem[] = [];
  const messages: EventProducerMessage[] = [];
  events.forEach((e, index) => {
    const at = pathOf(index);
    const problem = (field: string, message: string): void => {
      problems.push({ index, path: `${at}${field}`, message });
    };
    const category = printable(e.category, LIMITS.maxEventNameLength) ? e.category : undefined;
    if (category === undefined) {
      problem('', `needs an event name of 1 to ${LIMITS.maxEventNameLength} characters without control characters`);
    }
    const source = compatSource(key, e.protocol, e.library);
    if (key.allowedSources.size > 1 && !key.allowedSources.has(source)) {
      throw new AppError('SOURCE_NOT_ALLOWED', 'this access key may not send events of that source', {
        invalid_events: [index],
      });
    }
    const timestamp = compatTime(e.timestamp);
    if (timestamp === null) problem('/timestamp', 'must be a date-time with a zone (RFC 3339)');
    const sentAt = compatTime(e.sentAt);
    if (sentAt === null) problem('/sentAt', 'must be a date-time with a zone (RFC 3339)');
    const anonymousId = identity(e.anonymousId);
    if (anonymousId === null) problem('/anonymousId', `must be 1 to ${LIMITS.maxIdentityLength} printable characters`);
    const userId = identity(e.userId);
    if (userId === null) problem('/userId', `must be 1 to ${LIMITS.maxIdentityLength} printable characters`);
    if (problems.length > 0 || category === undefined) return;

    const clientId = compatClientId(e.clientId);
    const msg: EventMessage = {
      v: 1,
      event_id: eventIdFor(key.keyId, clientId),
      key_id: key.keyId,
      tenant_id: key.tenantId,
      source,
      category,
      payload: e.addressAt ? withKeptAddress(e.payload, e.addressAt, requestStamp.ip_storage) : e.payload,
      received_at: receivedAt,
      protocol: e.protocol,
    };
    if (clientId !== undefined) msg.client_event_id = clientId;
    if (timestamp) msg.client_ts = timestamp;
    if (timestamp && sentAt) msg.sent_at = sentAt;
    if (anonymousId) msg.anonymous_id = anonymousId;
    if (userId) msg.user_id = userId;
    const clientIp = compatIp(e.clientIp);
    if (clientIp !== undefined) msg.client_ip = clientIp;
    if (printable(e.userAgent, LIMITS.maxUserAgentLength)) msg.user_agent = e.userAgent;
    stamp(msg, requestStamp);
    messages.push(producerMessage(msg, index, maxEventBytes));
  });
  if (problems.length > 0) throw validationFailed(problems);
  return messages;
}

/**
 * The payload with the address it reports (`context.ip`, `properties.$ip`) kept as the
 * key's ip_storage keeps `client_ip` in ClickHouse (truncated, the default; left out for
 * none), so that the payload column holds no more of it than the address columns: a copy,
 * the client's objects untouched. The message's own `client_ip` stays whole, for the
 * consumer's look-up (the events topic's retention is where a full address lives).
 */
export function withKeptAddress(
  payload: Record<string, unknown>,
  [outer, field]: readonly [string, string],
  storage: IpStorage | undefined,
): Record<string, unknown> {
  if (storage === 'full') return payload;
  const inner = payload[outer];
  if (inner === null || typeof inner !== 'object' || Array.isArray(inner) || !Object.hasOwn(inner, field)) {
    return payload;
  }
  const { [field]: raw, ...rest } = inner as Record<string, unknown>;
  const kept = typeof raw === 'string' ? storedIp(parseClientAddress(raw), storage) : '';
  return { ...payload, [outer]: kept === '' ? rest : { ...rest, [field]: kept } };
}

/** VALIDATION_FAILED for `problems` (at least one): the first 20 with their paths, and every event they name. */
export function validationFailed(problems: readonly CompatProblem[]): AppError {
  return new AppError('VALIDATION_FAILED', 'the request is invalid; nothing was accepted', {
    problems: problems.slice(0, 20).map(({ path, message }) => ({ path, message })),
    invalid_events: [...new Set(problems.map((p) => p.index))],
  });
}
