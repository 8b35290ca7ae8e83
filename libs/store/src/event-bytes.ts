import { isUtf8 } from 'node:buffer';
import { EVENT_MESSAGE_FIELDS, isCanonicalEventMessage, type EventMessage } from '@telemetry/contract';
import { eventRowBuilder, type EventRow } from './events.js';
import type { Enricher } from './event-enrichment.js';
import { MAX_TS, MIN_TS, nowSeconds, type Decoded } from './rows.js';

/**
 * The stream consumer's fast path for event messages (issue 48): the row read straight
 * from the message's bytes, without JSON.parse of the message, without the payload as an
 * object and without JSON.stringify of it again, and the ISO times read by their digits
 * instead of Date.parse. A profile of a drain gave those steps about a third of the
 * consumer's busy time, and their garbage much of the collector's.
 *
 * It takes only what it can prove gives the row the general path (decodeTimed over
 * JSON.parse, the schema and `JSON.stringify(payload)`) would give, byte for byte:
 *
 * - the message is one JSON object with no whitespace, each field of the event message
 *   at most once, `v` written `1`, no `schema_failure`, string fields without escapes or
 *   control characters, and the hand check of the schema (isCanonicalEventMessage) passes
 *   on the fields it read;
 * - the payload is an object in JSON.stringify's own form, so its text is what
 *   `JSON.stringify(JSON.parse(text))` writes: no whitespace, numbers as `String(n)`
 *   writes them, only the escapes JSON.stringify writes, no key twice in an object, and
 *   no key starting with a digit (an integer-like key would be moved first);
 * - `received_at` is in ClickHouse's DateTime range.
 *
 * Anything else (answer undefined) takes the general path, which decides: a row, or a
 * dead letter with its reason. Bytes above 0x7f pass through as they are: the text
 * decoded is the same substring JSON.parse saw (UTF-8 never folds an ASCII byte into a
 * sequence), and JSON.stringify writes every such character unescaped (a lone
 * surrogate, the one it escapes, is never what decoding UTF-8 gives); a payload that is
 * not valid UTF-8 takes the general path. The gateway writes
 * its messages in exactly this form (`JSON.stringify` of the message), so they all take
 * this path.
 */

/** The top-level fields of an event message this path reads (isCanonicalEventMessage's). */
const FIELDS = EVENT_MESSAGE_FIELDS;
const V = 0;
const PAYLOAD = 6;
const KEY_BYTES = FIELDS.map((f) => Buffer.from(f, 'latin1'));
/** Field indexes by the length of their name. */
const BY_LENGTH: number[][] = [];
KEY_BYTES.forEach((k, i) => (BY_LENGTH[k.length] ??= []).push(i));

/** Stands in for the payload in the hand check (it asks only that the payload is an object). */
const PAYLOAD_OBJECT = Object.freeze({});

/** Buffer's own slicers, without toString's checks of its arguments (the scanner's bounds are its own). */
interface Slicers {
  latin1Slice(start: number, end: number): string;
  utf8Slice(start: number, end: number): string;
}
const latin1 = (b: Buffer, start: number, end: number): string => (b as unknown as Slicers).latin1Slice(start, end);
const utf8 = (b: Buffer, start: number, end: number): string => (b as unknown as Slicers).utf8Slice(start, end);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
/** Deeper payloads take the general path (JSON.parse has no such limit; this scanner recurses). */
const MAX_DEPTH = 64;

/** The field whose name is b[start, end), or -1. */
function fieldAt(b: Buffer, start: number, end: number): number {
  const candidates = BY_LENGTH[end - start];
  if (candidates === undefined) return -1;
  for (const i of candidates) {
    const k = KEY_BYTES[i]!;
    let j = 0;
    while (j < k.length && b[start + j] === k[j]) j++;
    if (j === k.length) return i;
  }
  return -1;
}

/** Whether a string stringEnd passed held a byte above 0x7f (reset by scanEventMessage). */
let highBytes = false;

/**
 * The end (after the closing quote) of the string whose text starts at `p` if it is in
 * JSON.stringify's form, else -1. Escapes allowed: the short ones JSON.stringify writes
 * (\" \\ \b \f \n \r \t) and \u00xx (lower-case hex) for the other control characters.
 */
function stringEnd(b: Buffer, p: number): number {
  const n = b.length;
  while (p < n) {
    const c = b[p]!;
    if (c === QUOTE) return p + 1;
    if (c < 0x20) return -1;
    if (c !== BACKSLASH) {
      if (c > 0x7f) highBytes = true;
      p++;
      continue;
    }
    const e = b[p + 1];
    if (e === QUOTE || e === BACKSLASH || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
      p += 2;
      continue;
    }
    // \u00xx: only a control character without a short escape (not 08 09 0a 0c 0d).
    if (e !== 0x75 || b[p + 2] !== ZERO || b[p + 3] !== ZERO) return -1;
    const hi = b[p + 4];
    const lo = b[p + 5]!;
    const low = lo >= ZERO && lo <= NINE ? lo - ZERO : lo >= 0x61 && lo <= 0x66 ? lo - 0x61 + 10 : -1;
    if ((hi !== ZERO && hi !== 0x31) || low < 0) return -1;
    const code = (hi - ZERO) * 16 + low;
    if (code === 8 || code === 9 || code === 10 || code === 12 || code === 13) return -1;
    p += 6;
  }
  return -1;
}

/** The end of the number at `p` if JSON.stringify would write it so (`String(n)`), else -1. */
function numberEnd(b: Buffer, p: number): number {
  const start = p;
  let simple = true;
  for (; p < b.length; p++) {
    const c = b[p]!;
    if (c >= ZERO && c <= NINE) continue;
    if (c === MINUS && p === start) continue;
    if (c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === MINUS) simple = false;
    else break;
  }
  const digits = b[start] === MINUS ? start + 1 : start;
  // An integer: canonical without a leading zero ("0" alone; never "-0") and short enough to be exact.
  if (simple && p > digits && p - digits <= 15 && (b[digits] !== ZERO || (p - digits === 1 && digits === start))) {
    return p;
  }
  const text = latin1(b, start, p);
  const n = Number(text);
  return Number.isFinite(n) && String(n) === text ? p : -1;
}

/** Whether two of the keys (start, end pairs) are the same bytes. */
function hasDuplicate(b: Buffer, keys: number[]): boolean {
  const n = keys.length;
  if (n <= 2) return false;
  if (n > 32) {
    const seen = new Set<string>();
    for (let i = 0; i < n; i += 2) seen.add(latin1(b, keys[i]!, keys[i + 1]!));
    return seen.size !== n / 2;
  }
  for (let i = 0; i < n; i += 2) {
    const len = keys[i + 1]! - keys[i]!;
    for (let j = i + 2; j < n; j += 2) {
      if (keys[j + 1]! - keys[j]! !== len) continue;
      let k = 0;
      while (k < len && b[keys[i]! + k] === b[keys[j]! + k]) k++;
      if (k === len) return true;
    }
  }
  return false;
}

/** The end of the JSON value at `p` if it is in JSON.stringify's form (see the module's note), else -1. */
export function canonicalValueEnd(b: Buffer, p: number, depth = 0): number {
  const c = b[p];
  if (c === QUOTE) return stringEnd(b, p + 1);
  if (c === OPEN_BRACE) {
    if (depth >= MAX_DEPTH) return -1;
    p++;
    if (b[p] === CLOSE_BRACE) return p + 1;
    const keys: number[] = [];
    for (;;) {
      if (b[p] !== QUOTE) return -1;
      const start = p + 1;
      const first = b[start]!;
      // An integer-like key ("0", "12") is moved before the others by JSON.parse.
      if (first >= ZERO && first <= NINE) return -1;
      p = stringEnd(b, start);
      if (p < 0 || b[p] !== COLON) return -1;
      keys.push(start, p - 1);
      p = canonicalValueEnd(b, p + 1, depth + 1);
      if (p < 0) return -1;
      if (b[p] === COMMA) p++;
      else if (b[p] === CLOSE_BRACE) return hasDuplicate(b, keys) ? -1 : p + 1;
      else return -1;
    }
  }
  if (c === OPEN_BRACKET) {
    if (depth >= MAX_DEPTH) return -1;
    p++;
    if (b[p] === CLOSE_BRACKET) return p + 1;
    for (;;) {
      p = canonicalValueEnd(b, p, depth + 1);
      if (p < 0) return -1;
      if (b[p] === COMMA) p++;
      else if (b[p] === CLOSE_BRACKET) return p + 1;
      else return -1;
    }
  }
  if (c === MINUS || (c !== undefined && c >= ZERO && c <= NINE)) return numberEnd(b, p);
  if (c === 0x74) return literal(b, p, 'true');
  if (c === 0x66) return literal(b, p, 'false');
  if (c === 0x6e) return literal(b, p, 'null');
  return -1;
}

function literal(b: Buffer, p: number, word: string): number {
  for (let i = 0; i < word.length; i++) if (b[p + i] !== word.charCodeAt(i)) return -1;
  return p + word.length;
}

/** Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function digitsAt(s: string, at: number, n: number): number {
  let v = 0;
  for (let i = at; i < at + n; i++) v = v * 10 + s.charCodeAt(i) - 48;
  return v;
}

/**
 * A time in toISOString()'s form that names a real instant (isCanonicalEventMessage checked
 * both) as unix milliseconds, or null outside DateTime's range: what toMillis (Date.parse)
 * answers for it.
 */
export function canonicalMillis(iso: string | undefined): number | null {
  if (iso === undefined) return null;
  const days = daysFromCivil(digitsAt(iso, 0, 4), digitsAt(iso, 5, 2), digitsAt(iso, 8, 2));
  const ms =
    ((days * 24 + digitsAt(iso, 11, 2)) * 60 + digitsAt(iso, 14, 2)) * 60_000 +
    digitsAt(iso, 17, 2) * 1000 +
    digitsAt(iso, 20, 3);
  return ms >= MIN_TS * 1000 && ms < (MAX_TS + 1) * 1000 ? ms : null;
}

/**
 * The message's fields (the payload as its JSON text) if the message is in the form
 * above, else undefined.
 */
export function scanEventMessage(b: Buffer): { message: EventMessage; payload: string } | undefined {
  const n = b.length;
  if (b[0] !== OPEN_BRACE || b[n - 1] !== CLOSE_BRACE) return undefined;
  const m: Record<string, unknown> = {};
  let seen = 0;
  let payload: string | undefined;
  let p = 1;
  for (;;) {
    if (b[p] !== QUOTE) return undefined;
    const start = p + 1;
    let q = start;
    while (q < n && b[q] !== QUOTE && b[q] !== BACKSLASH) q++;
    if (b[q] !== QUOTE || b[q + 1] !== COLON) return undefined;
    const field = fieldAt(b, start, q);
    if (field < 0 || (seen & (1 << field)) !== 0) return undefined;
    seen |= 1 << field;
    p = q + 2;
    if (field === V) {
      if (b[p] !== 0x31) return undefined;
      m.v = 1;
      p++;
    } else if (field === PAYLOAD) {
      if (b[p] !== OPEN_BRACE) return undefined;
      highBytes = false;
      const end = canonicalValueEnd(b, p);
      if (end < 0) return undefined;
      // Invalid UTF-8 decodes to U+FFFD: two keys of different bytes could then be the same key.
      if (highBytes && !isUtf8(b.subarray(p, end))) return undefined;
      payload = highBytes ? utf8(b, p, end) : latin1(b, p, end);
      m.payload = PAYLOAD_OBJECT;
      p = end;
    } else {
      if (b[p] !== QUOTE) return undefined;
      const s = p + 1;
      let ascii = true;
      q = s;
      for (; q < n; q++) {
        const c = b[q]!;
        if (c === QUOTE) break;
        if (c === BACKSLASH || c < 0x20) return undefined;
        if (c > 0x7f) ascii = false;
      }
      if (q >= n) return undefined;
      m[FIELDS[field]!] = ascii ? latin1(b, s, q) : utf8(b, s, q);
      p = q + 1;
    }
    if (b[p] === COMMA) p++;
    else if (b[p] === CLOSE_BRACE && p === n - 1) break;
    else return undefined;
  }
  if (payload === undefined || !isCanonicalEventMessage(m)) return undefined;
  return { message: m, payload };
}

/**
 * The fast decoder of event messages into rows (see the module's note): a row, or
 * undefined when the message must take the general path (decodeFailedEvent, then
 * eventDecoder), which then decides.
 */
export function canonicalEventDecoder(
  modern: boolean,
  enricher?: Enricher,
): (value: Buffer | null) => Decoded<EventRow> | undefined {
  const build = eventRowBuilder(modern, enricher);
  return (value) => {
    if (value === null) return undefined;
    const scanned = scanEventMessage(value);
    if (scanned === undefined) return undefined;
    const e = scanned.message;
    const receivedMs = canonicalMillis(e.received_at);
    if (receivedMs === null) return undefined;
    const row = build(
      e,
      scanned.payload,
      nowSeconds(),
      receivedMs,
      canonicalMillis(e.client_ts),
      canonicalMillis(e.sent_at),
    );
    return { ok: true, row };
  };
}

/** EVENT_DECODER's values: `bytes` (the fast path first) or `json` (every message the general path). */
export const EVENT_DECODERS = ['bytes', 'json'] as const;
export type EventDecoderKind = (typeof EVENT_DECODERS)[number];

/**
 * The events topic's decode as EVENT_DECODER picks it: with `bytes`, `fast` reads the
 * messages it can and `general` decides the rest; with `json`, every message takes
 * `general` (the consumer before the fast path: the kill switch, and bench:consume's
 * comparison).
 */
export function eventsTopicDecoder<R>(
  kind: EventDecoderKind,
  fast: (value: Buffer | null) => Decoded<R> | undefined,
  general: (value: Buffer | null) => Decoded<R>,
): (value: Buffer | null) => Decoded<R> {
  return kind === 'json' ? general : (value) => fast(value) ?? general(value);
}
