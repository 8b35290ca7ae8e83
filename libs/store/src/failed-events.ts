import { DEFAULT_TENANT, type EventMessage, type Validators } from '@telemetry/contract';
import { sqlNumber, sqlString, type MigrationsByVersion } from '@telemetry/platform';
import { parseMessage, toMillis, type Decoded } from './rows.js';
import { parseClientAddress, storedIp } from './event-enrichment.js';
import { isCanonicalEventMessage } from '@telemetry/contract';
import { tableRef, type TableLayout } from './layout.js';

/**
 * The `failed_events` table (docs/event-schemas.md, docs/clickhouse.md): events that
 * violated their (source, category)'s event schema whose action is `route`. Never in
 * `events`: a replay (`npm run failed-events -- replay`) publishes the ones that now pass
 * to the events topic and marks their row `replayed` by inserting it again with a higher
 * `row_version` (the ReplacingMergeTree keeps the newest copy of (tenant_id, event_id);
 * read it with FINAL). Same statements on 18.16 and current ClickHouse. In the data
 * database: the consumer writes it, analysts and the query service read it (databases.ts).
 */
export const failedEventsMigrations: MigrationsByVersion = {
  18: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.failed_events (
      tenant_id String, event_id String, source String, category String,
      anonymous_id String, user_id String, schema_id String, schema_version UInt32, violations String, raw String,
      received_at DateTime('UTC'), failed_at DateTime('UTC'),
      replay_state String, replayed_at DateTime('UTC'),
      inserted_at DateTime('UTC'), row_version UInt64
    ) ENGINE = ReplacingMergeTree(row_version)
    PARTITION BY toYYYYMM(received_at)
    ORDER BY (tenant_id, event_id)`,
  ],
};

/** A `failed_events` row as inserted. */
export interface FailedEventRow {
  tenant_id: string;
  event_id: string;
  source: string;
  category: string;
  /** Who the event is about, as in `events` (a deletion on request finds the row by them). */
  anonymous_id: string;
  user_id: string;
  schema_id: string;
  schema_version: number;
  /** The violations as JSON text: [{path, message}]. */
  violations: string;
  /**
   * The event message as it came (JSON text), schema_failure included, with its addresses
   * (`request_ip`, `client_ip`) kept only as the key's ip_storage allows, as in `events`.
   */
  raw: string;
  received_at: number;
  failed_at: number;
  /** `failed` (as routed) or `replayed` (sent to `events` by a replay). */
  replay_state: 'failed' | 'replayed';
  replayed_at: number;
  inserted_at: number;
  /** Milliseconds: the newest copy of a row wins. */
  row_version: number;
}

const MARK = Buffer.from('"schema_failure"');

/**
 * An events-topic message that carries `schema_failure`, as its failed_events row;
 * undefined when it carries none (decode it as an event). The byte search keeps the
 * common case (no schema) to one parse, in decodeEvent.
 */
export function decodeFailedEvent(v: Validators, value: Buffer | null): Decoded<FailedEventRow> | undefined {
  if (value === null || !value.includes(MARK)) return undefined;
  const parsed = parseMessage<EventMessage>(v.eventMessage, 'event', value, isCanonicalEventMessage);
  if (!parsed.ok) return parsed;
  const e = parsed.m;
  if (e.schema_failure === undefined) return undefined;
  const ms = toMillis(e.received_at);
  if (ms === null) return { ok: false, reason: 'received_at out of range' };
  const nowMs = Date.now();
  const now = Math.floor(nowMs / 1000);
  return {
    ok: true,
    row: {
      tenant_id: e.tenant_id ?? DEFAULT_TENANT,
      event_id: e.event_id,
      source: e.source,
      category: e.category,
      anonymous_id: e.anonymous_id ?? '',
      user_id: e.user_id ?? '',
      schema_id: e.schema_failure.schema_id,
      schema_version: e.schema_failure.version,
      violations: JSON.stringify(e.schema_failure.violations),
      raw: keepsFullAddress(e) ? value.toString('utf8') : JSON.stringify(withStoredAddresses(e)),
      received_at: Math.floor(ms / 1000),
      failed_at: now,
      replay_state: 'failed',
      replayed_at: 0,
      inserted_at: now,
      row_version: nowMs,
    },
  };
}

/** Whether the message's addresses may be kept as they came (none, or the key keeps them whole). */
function keepsFullAddress(e: EventMessage): boolean {
  return e.ip_storage === 'full' || (e.request_ip === undefined && e.client_ip === undefined);
}

/**
 * The message with `request_ip` and `client_ip` as the key's ip_storage keeps an address
 * (truncated, or left out for none): the events topic's retention stays the only place a
 * full address lives (docs/enrichment.md). A replay sends what is kept.
 */
function withStoredAddresses(e: EventMessage): EventMessage {
  const out: EventMessage = { ...e };
  for (const k of ['request_ip', 'client_ip'] as const) {
    const raw = out[k];
    if (raw === undefined) continue;
    const kept = storedIp(parseClientAddress(raw), e.ip_storage);
    if (kept === '') delete out[k];
    else out[k] = kept;
  }
  return out;
}

/** Is this row of the events topic's route a failed event (else an events row)? */
export function isFailedEventRow(row: object): row is FailedEventRow {
  return 'schema_version' in row;
}

/** What `npm run failed-events` chooses (every value validated by the CLI; escaped here). */
export interface FailedEventsQuery {
  tenantId: string;
  schemaId?: string;
  /** Unix seconds, inclusive. */
  since?: number;
  /** Unix seconds, exclusive. */
  until?: number;
  eventIds?: readonly string[];
  /** Only rows in this state (default: failed). */
  state?: 'failed' | 'replayed' | 'any';
  limit: number;
}

/** The newest copy of each chosen row (FINAL), oldest first. */
export function failedEventsSql(database: string, layout: TableLayout, q: FailedEventsQuery): string {
  const where = [`tenant_id = ${sqlString(q.tenantId)}`];
  if (q.schemaId !== undefined) where.push(`schema_id = ${sqlString(q.schemaId)}`);
  if (q.since !== undefined) where.push(`received_at >= toDateTime(${sqlNumber(q.since)})`);
  if (q.until !== undefined) where.push(`received_at < toDateTime(${sqlNumber(q.until)})`);
  if (q.eventIds !== undefined && q.eventIds.length > 0) {
    where.push(`event_id IN (${q.eventIds.map(sqlString).join(', ')})`);
  }
  if ((q.state ?? 'failed') !== 'any') where.push(`replay_state = ${sqlString(q.state ?? 'failed')}`);
  return `SELECT tenant_id, event_id, source, category, schema_id, schema_version, violations, raw,
      toUInt32(received_at) AS received_at, toUInt32(failed_at) AS failed_at, replay_state,
      toUInt32(replayed_at) AS replayed_at, toUInt32(inserted_at) AS inserted_at, row_version
    FROM ${tableRef(database, 'failed_events', layout)} FINAL
    WHERE ${where.join(' AND ')}
    ORDER BY received_at, event_id
    LIMIT ${sqlNumber(q.limit)}`;
}
