import type { AlertMessage, CheckMessage, EventMessage, Validators } from '@telemetry/contract';

/** A row of `events` as inserted (JSONEachRow). DateTimes are unix seconds, UTC. */
export interface EventRow {
  event_id: string;
  key_id: string;
  source: string;
  category: string;
  payload: string;
  client_event_id: string;
  event_time: number;
  client_ts: number | null;
  sent_at: number | null;
  received_at: number;
  inserted_at: number;
}

export interface CheckRow {
  monitor_id: string;
  created_at: number;
  id: string;
  status: string;
  response_time: number;
  status_code: number;
  error: string;
  inserted_at: number;
}

/** A row of `alerts`: one state change of a monitor. */
export interface AlertRow {
  id: string;
  monitor_id: string;
  incident_id: string;
  type: string;
  created_at: number;
  check_id: string;
  status: string;
  status_code: number;
  error: string;
  response_time: number;
  inserted_at: number;
}

/**
 * NOTE: sent explicitly: ClickHouse 18.16's JSONEachRow does not apply a column's
 * DEFAULT (now()) to a field the row leaves out; it would store 1970-01-01.
 */
function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

// ClickHouse DateTime covers 1970-01-01 .. 2105; outside that a value is not stored.
const MIN_TS = 0;
const MAX_TS = 4_294_967_295;

function toUnix(iso: string | undefined): number | null {
  if (iso === undefined) return null;
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) return null;
  const s = Math.floor(ms / 1000);
  return s >= MIN_TS && s <= MAX_TS ? s : null;
}

/**
 * When the event happened, on the server's clock. With a client timestamp and the
 * client's `sent_at`, the client clock's offset (received_at - sent_at) is added to
 * the client timestamp (the same correction Snowplow and PostHog make). With a client
 * timestamp alone it is taken as is; without one, the receive time is used.
 */
export function eventTime(receivedAt: number, clientTs: number | null, sentAt: number | null): number {
  if (clientTs === null) return receivedAt;
  const t = sentAt === null ? clientTs : clientTs + (receivedAt - sentAt);
  return t >= MIN_TS && t <= MAX_TS ? t : receivedAt;
}

export type Decoded<T> = { ok: true; row: T } | { ok: false; reason: string };

/** A compiled schema (ajv's ValidateFunction has this shape). */
interface Validate<T> {
  (data: unknown): data is T;
  errors?: { instancePath: string; message?: string }[] | null;
}

/** JSON, then the schema: the message, or why it can never be written. */
function parseMessage<T>(
  validate: Validate<T>,
  kind: string,
  value: Buffer | null,
): { ok: true; m: T } | { ok: false; reason: string } {
  let m: unknown;
  try {
    m = parseJson(value);
  } catch (err) {
    return { ok: false, reason: `not JSON: ${(err as Error).message}` };
  }
  if (!validate(m)) {
    const e = validate.errors?.[0];
    return { ok: false, reason: `invalid ${kind} message: ${e?.instancePath} ${e?.message}` };
  }
  return { ok: true, m };
}

function parseJson(value: Buffer | null): unknown {
  if (value === null) throw new Error('empty message');
  return JSON.parse(value.toString('utf8')) as unknown;
}

export function decodeEvent(v: Validators, value: Buffer | null): Decoded<EventRow> {
  const parsed = parseMessage(v.eventMessage, 'event', value);
  if (!parsed.ok) return parsed;
  const e: EventMessage = parsed.m;
  const receivedAt = toUnix(e.received_at);
  if (receivedAt === null) return { ok: false, reason: 'received_at out of range' };
  const clientTs = toUnix(e.client_ts);
  const sentAt = toUnix(e.sent_at);
  return {
    ok: true,
    row: {
      event_id: e.event_id,
      key_id: e.key_id,
      source: e.source,
      category: e.category,
      payload: JSON.stringify(e.payload),
      client_event_id: e.client_event_id ?? '',
      event_time: eventTime(receivedAt, clientTs, sentAt),
      client_ts: clientTs,
      sent_at: sentAt,
      received_at: receivedAt,
      inserted_at: nowSeconds(),
    },
  };
}

export function decodeCheck(v: Validators, value: Buffer | null): Decoded<CheckRow> {
  const parsed = parseMessage(v.checkMessage, 'check', value);
  if (!parsed.ok) return parsed;
  const c: CheckMessage = parsed.m;
  const createdAt = toUnix(c.created_at);
  if (createdAt === null) return { ok: false, reason: 'created_at out of range' };
  return {
    ok: true,
    row: {
      monitor_id: c.monitor_id,
      created_at: createdAt,
      id: c.id,
      status: c.status,
      response_time: c.response_time,
      status_code: c.status_code,
      error: c.error ?? '',
      inserted_at: nowSeconds(),
    },
  };
}

export function decodeAlert(v: Validators, value: Buffer | null): Decoded<AlertRow> {
  const parsed = parseMessage(v.alertMessage, 'alert', value);
  if (!parsed.ok) return parsed;
  const a: AlertMessage = parsed.m;
  const createdAt = toUnix(a.created_at);
  if (createdAt === null) return { ok: false, reason: 'created_at out of range' };
  return {
    ok: true,
    row: {
      id: a.id,
      monitor_id: a.monitor_id,
      incident_id: a.incident_id,
      type: a.type,
      created_at: createdAt,
      check_id: a.check.id,
      status: a.check.status,
      status_code: a.check.status_code,
      error: a.check.error ?? '',
      response_time: a.check.response_time,
      inserted_at: nowSeconds(),
    },
  };
}
