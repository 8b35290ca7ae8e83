/**
 * The four server-side tracker SDKs of docs/compat.md as test/e2e/compat-clients.int.test.ts
 * drives them: which program runs each (test/fixtures/clients/), the request it batches
 * in, and what each event it sends must become in `events` (docs/compat.md, "One mapping").
 */
import type { ClickHouseClient } from '@telemetry/platform';
import { sqlString } from '@telemetry/platform';
import { selectRows } from './fixtures.js';

/** One event a client program sends (ClientReport.ids names it) and the row it must become. */
export interface ExpectedEvent {
  what: string;
  category: string;
  anonymous_id: string;
  user_id: string;
}

export interface ClientSpec {
  /** The SDK and its pinned version. */
  name: string;
  script: string;
  protocol: 'segment' | 'posthog';
  /** The source its events get from a key without allowed sources (its library name, docs/compat.md "Source"). */
  source: string;
  /** `METHOD path` of the request it sends its batches in (RecordingProxy.failNext). */
  batch: RegExp;
  /** Whether its batch bodies are gzip (the proxy records them as text, so the test does not read them). */
  gzip: boolean;
  events(tag: string): ExpectedEvent[];
  /** The client's time of an event as the payload carries it: client_ts (docs/compat.md). */
  clientTime(payload: Record<string, unknown>): string;
  /** A line the SDK logs at ERROR for a failed attempt it then retries (not a failure). */
  retryLog?: RegExp;
  oversized: {
    /** Characters of a property (that do not compress) making one event too large. */
    bytes: number;
    /** What the SDK says when it refuses that event itself (it then sends nothing); none: it sends it. */
    refusedLocally?: RegExp;
    /** The gateway's status and answer to that SDK's request with such an event. */
    status: number;
    answer: RegExp;
    /** An event the SDK's own size check refuses, when that check is not by bytes (analytics-node's). */
    refusedWhen?: { text: 'accented'; bytes: number; error: RegExp };
  };
}

const segmentEvents = (tag: string): ExpectedEvent[] => [
  { what: 'track', category: 'Order Completed', anonymous_id: `anon-${tag}`, user_id: `user-${tag}` },
  { what: 'identify', category: 'identify', anonymous_id: '', user_id: `user-${tag}` },
  { what: 'page', category: 'page', anonymous_id: `anon-${tag}`, user_id: '' },
];

const segmentTime = (p: Record<string, unknown>): string => String(p.originalTimestamp ?? p.timestamp);

// Segment's documented limit is 32 KB per message; 40 000 bytes of property is over it
// (and under our own 64 KiB per event, so only Segment's limit refuses it).
const SEGMENT_OVERSIZED = 40_000;
// Over our per-event limit for PostHog (POSTHOG_MAX_EVENT_BYTES, 192 KiB); under posthog-python's own 900 KiB.
const POSTHOG_OVERSIZED = 250_000;
// What the gateway answers (docs/compat.md: Segment's 400; PostHog's error body with our code).
const SEGMENT_TOO_LARGE = { status: 400, answer: /EVENT_TOO_LARGE/ };
const POSTHOG_TOO_LARGE = {
  bytes: POSTHOG_OVERSIZED,
  status: 413,
  answer: /"type":"validation_error","code":"EVENT_TOO_LARGE"/,
};

export const CLIENTS: ClientSpec[] = [
  {
    name: '@segment/analytics-node 3.1.0',
    script: 'segment-node.ts',
    protocol: 'segment',
    source: 'segment/analytics-node',
    batch: /^POST \/v1\/batch$/,
    gzip: false,
    events: segmentEvents,
    clientTime: segmentTime,
    oversized: {
      bytes: SEGMENT_OVERSIZED,
      ...SEGMENT_TOO_LARGE,
      // NOTE: analytics-node 3.1.0 "measures" an event as the pieces of encodeURI(JSON) split at
      // each %XX escape and each letter i: 40 000 ASCII characters pass its 32 KB check (it
      // sends them; the gateway answers 400), 17 000 'é' (34 000 bytes, 34 000 escapes) do not.
      refusedWhen: { text: 'accented', bytes: 17_000, error: /Event exceeds maximum event size of 32 KB/ },
    },
  },
  {
    name: 'segment-analytics-python 2.4.0',
    script: 'segment-python.py',
    protocol: 'segment',
    source: 'analytics-python',
    batch: /^POST \/v1\/batch$/,
    gzip: false,
    events: segmentEvents,
    clientTime: segmentTime,
    // It logs "Unknown error: [503] Service Unavailable" for the attempt it then retries.
    retryLog: /^Unknown error: \[503\] Service Unavailable$/,
    oversized: { bytes: SEGMENT_OVERSIZED, refusedLocally: /Message exceeds 32kb limit/, ...SEGMENT_TOO_LARGE },
  },
  {
    name: 'posthog-node 5.70.0',
    script: 'posthog-node.ts',
    protocol: 'posthog',
    source: 'posthog-node',
    batch: /^POST \/batch\/$/,
    gzip: true,
    events: (tag) => [
      { what: 'capture', category: 'signed_up', anonymous_id: '', user_id: `anon-${tag}` },
      { what: 'identify', category: '$identify', anonymous_id: `anon-${tag}`, user_id: `user-${tag}` },
      { what: 'page', category: '$pageview', anonymous_id: '', user_id: `user-${tag}` },
    ],
    clientTime: (p) => String(p.timestamp),
    oversized: POSTHOG_TOO_LARGE,
  },
  {
    name: 'posthog (Python) 7.91.1',
    script: 'posthog-python.py',
    protocol: 'posthog',
    source: 'posthog-python',
    batch: /^POST \/batch\/$/,
    gzip: false,
    events: (tag) => [
      { what: 'capture', category: 'signed_up', anonymous_id: '', user_id: `anon-${tag}` },
      { what: 'identify', category: '$set', anonymous_id: '', user_id: `user-${tag}` },
      { what: 'page', category: '$pageview', anonymous_id: '', user_id: `user-${tag}` },
    ],
    clientTime: (p) => String(p.timestamp),
    oversized: POSTHOG_TOO_LARGE,
  },
];

/** A row of `events` as the tests compare it: times in unix seconds. */
export interface EventRow {
  tenant_id: string;
  event_id: string;
  protocol: string;
  category: string;
  source: string;
  client_event_id: string;
  anonymous_id: string;
  user_id: string;
  event_time: number;
  client_ts: number | null;
  sent_at: number | null;
  received_at: number;
  payload: string;
}

/** The rows, as read (FINAL), of the events whose message carries `tag`. */
export function rowsTagged(ch: ClickHouseClient, db: string, tag: string): Promise<EventRow[]> {
  return selectRows<EventRow>(
    ch,
    `SELECT tenant_id, toString(event_id) AS event_id, protocol, category, source, client_event_id,
            anonymous_id, user_id, toUnixTimestamp(event_time) AS event_time,
            toUnixTimestamp(client_ts) AS client_ts, toUnixTimestamp(sent_at) AS sent_at,
            toUnixTimestamp(received_at) AS received_at, payload
       FROM ${db}.events FINAL WHERE position(payload, ${sqlString(tag)}) > 0 ORDER BY client_event_id`,
  );
}

/** Rows of `tag` as stored (copies included), as read (FINAL), and their distinct event ids. */
export async function copiesTagged(
  ch: ClickHouseClient,
  db: string,
  tag: string,
): Promise<{ stored: number; asRead: number; distinct: number }> {
  const where = `position(payload, ${sqlString(tag)}) > 0`;
  const [r] = await selectRows<Record<string, string>>(
    ch,
    `SELECT (SELECT count() FROM ${db}.events WHERE ${where}) AS stored,
            (SELECT count() FROM ${db}.events FINAL WHERE ${where}) AS asRead,
            (SELECT uniqExact(event_id) FROM ${db}.events WHERE ${where}) AS distinct`,
  );
  return { stored: Number(r!.stored), asRead: Number(r!.asRead), distinct: Number(r!.distinct) };
}

/** Unix seconds of an ISO time (ClickHouse's DateTime keeps whole seconds). */
export const seconds = (iso: string | number): number => Math.floor(new Date(iso).getTime() / 1000);
