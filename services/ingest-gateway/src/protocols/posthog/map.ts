import { AppError } from '@telemetry/platform';
import type { CompatEvent } from '../compat.js';

type Obj = Record<string, unknown>;

/** A PostHog request's events, each with its JSON pointer in the request, its key and send time. */
export interface PosthogBatch {
  events: Obj[];
  /** JSON pointer of event i: `/batch/i` (`{batch: [...]}`), `/i` (an array) or `` (one event). */
  pathOf: (index: number) => string;
  /** The one project token (our access key) the request carries; undefined: none. */
  key: string | undefined;
  /** The batch's `sent_at` (posthog-node, Python, posthog-js's capture body). */
  sentAt: unknown;
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The events of a decoded body: `{batch: [...]}` (with `api_key`/`token`, `sent_at`), an
 * array of events, or one event. Each must be an object. The key is every `api_key` and
 * `token` the request carries (top level, each event's, each event's `properties.token`):
 * two different ones are refused (INVALID_CREDENTIALS) rather than one picked.
 */
export function posthogBatch(body: unknown, maxEvents: number): PosthogBatch {
  let events: unknown[];
  let pathOf: (i: number) => string;
  let sentAt: unknown;
  const keys = new Set<string>();
  if (Array.isArray(body)) {
    events = body;
    pathOf = (i) => `/${i}`;
  } else if (isObj(body) && 'batch' in body) {
    if (!Array.isArray(body.batch)) throw invalid('/batch', 'must be an array of events');
    events = body.batch;
    pathOf = (i) => `/batch/${i}`;
    sentAt = body.sent_at;
    addKeys(keys, body);
  } else if (isObj(body)) {
    events = [body];
    pathOf = () => '';
  } else {
    throw invalid('', 'must be an event, an array of events or {"batch": [...]}');
  }
  if (events.length === 0) throw invalid(Array.isArray(body) ? '' : '/batch', 'has no events');
  if (events.length > maxEvents) {
    throw new AppError('BATCH_TOO_LARGE', `at most ${maxEvents} events in one request`, {
      limit: 'maxEventsPerRequest',
      max: maxEvents,
    });
  }
  events.forEach((e, i) => {
    if (!isObj(e)) throw invalid(pathOf(i), 'must be an object');
    addKeys(keys, e);
    if (isObj(e.properties)) addKeys(keys, { token: e.properties.token });
  });
  if (keys.size > 1) throw new AppError('INVALID_CREDENTIALS', 'the request carries two different project tokens');
  return { events: events as Obj[], pathOf, key: keys.values().next().value, sentAt };
}

function addKeys(keys: Set<string>, o: Obj): void {
  for (const v of [o.api_key, o.token]) if (typeof v === 'string' && v !== '') keys.add(v);
}

function invalid(path: string, message: string): AppError {
  return new AppError('VALIDATION_FAILED', `the request is invalid; nothing was accepted: ${path || '/'} ${message}`, {
    problems: [{ path, message }],
  });
}

/** The send time the request states in milliseconds (`_`, `sent_at` query parameters), as ISO. */
export function msTime(v: string | undefined): string | undefined {
  if (v === undefined || !/^\d{1,15}$/.test(v)) return undefined;
  const d = new Date(Number(v));
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/**
 * The identity rule (docs/compat.md, "Identity"). PostHog's `distinct_id` is one id for
 * anonymous and identified people alike; which it is, the SDK says:
 * - posthog-js sends `$is_identified` on every event: false, the distinct id is the
 *   browser's anonymous id (`anonymous_id`); true, it is the user's (`user_id`), and the
 *   anonymous id is `$anon_distinct_id` (the `$identify` event: the anonymous id it
 *   merges) or else `$device_id` (the browser's first anonymous id, kept after identify).
 * - posthog-node and Python send no `$is_identified`: the distinct id is the one the
 *   server code gave, the known user (`user_id`), with `$anon_distinct_id` or
 *   `$device_id` as the anonymous id when given; except a personless event
 *   (`$process_person_profile: false`, the SDK made the id up): `anonymous_id`.
 */
export function posthogIdentity(e: Obj): { anonymousId?: unknown; userId?: unknown } {
  const p = isObj(e.properties) ? e.properties : {};
  const distinct = e.distinct_id ?? p.distinct_id ?? p.$distinct_id;
  const identified = typeof p.$is_identified === 'boolean' ? p.$is_identified : p.$process_person_profile !== false;
  if (!identified) return { anonymousId: distinct };
  const anonymous = p.$anon_distinct_id ?? p.$device_id;
  return { userId: distinct, anonymousId: anonymous === distinct ? undefined : anonymous };
}

/**
 * One PostHog event as a CompatEvent: `uuid` the id, `event` the category, `timestamp`
 * (else `offset` ms before the send time), the event's or the batch's `sent_at` (else the
 * request's `_`/`sent_at` query time in ms), `$lib`, `$ip`, `$raw_user_agent`. The payload
 * is the event as sent without its project token (a credential is never stored).
 */
export function posthogCompatEvent(
  e: Obj,
  batchSentAt: unknown,
  querySentAt: string | undefined,
  receivedMs: number,
): CompatEvent {
  const p = isObj(e.properties) ? e.properties : {};
  const sentAt = e.sent_at ?? batchSentAt ?? querySentAt;
  let timestamp = e.timestamp;
  if ((timestamp === undefined || timestamp === null) && typeof e.offset === 'number' && Number.isFinite(e.offset)) {
    // The offset is measured on the client's clock up to its send time; without one, up to now.
    const sent = typeof sentAt === 'string' ? Date.parse(sentAt) : NaN;
    const at = (Number.isFinite(sent) ? sent : receivedMs) - Math.max(0, e.offset);
    // An offset that leaves the range of dates is no time: compatTime refuses it (400 at its path).
    timestamp = Math.abs(at) <= 8.64e15 ? new Date(at).toISOString() : `invalid offset ${e.offset}`;
  }
  return {
    protocol: 'posthog',
    clientId: e.uuid,
    category: e.event,
    library: p.$lib,
    payload: withoutToken(e),
    timestamp,
    sentAt,
    ...posthogIdentity(e),
    clientIp: p.$ip,
    addressAt: ['properties', '$ip'],
    userAgent: p.$raw_user_agent,
  };
}

function withoutToken(e: Obj): Obj {
  const hasOwn = (o: Obj, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
  const p = e.properties;
  const inProps = isObj(p) && hasOwn(p, 'token');
  if (!hasOwn(e, 'api_key') && !hasOwn(e, 'token') && !inProps) return e;
  const { api_key: _a, token: _t, ...rest } = e;
  if (inProps) {
    const { token: _p, ...props } = p;
    rest.properties = props;
  }
  return rest;
}

/** Our field names in compatMessages' problem paths as PostHog's clients name them. */
export function posthogProblemPath(path: string): string {
  return path.replace(/\/sentAt$/, '/sent_at').replace(/\/(anonymousId|userId)$/, '/distinct_id');
}
