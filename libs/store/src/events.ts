import {
  CLIENT_TIME_WINDOW,
  DEFAULT_TENANT,
  isCanonicalEventMessage,
  type EventMessage,
  type Validators,
} from '@telemetry/contract';
import { sqlNumber, sqlString, type Engine, type MigrationsByVersion, type Statement } from '@telemetry/platform';
import { effectiveClient, NO_AGENT, NO_GEO, storedIp, type Enricher } from './event-enrichment.js';
import { decodeTimed, MAX_TS, MIN_TS, toMillis, type Decoded } from './rows.js';
import { tableRef, type TableLayout } from './layout.js';

/**
 * The `events` table and its `events_per_minute` rollup (docs/clickhouse.md): their
 * migrations, the row the stream consumer inserts, and how a Kafka event message
 * becomes that row.
 */

/** Statements per migration version (see migrations.ts). */
export const eventsMigrations: MigrationsByVersion = {
  1: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.events (
        event_id UUID, key_id String, source String, category String, payload String,
        client_event_id String, event_time DateTime('UTC'), client_ts Nullable(DateTime('UTC')),
        sent_at Nullable(DateTime('UTC')), received_at DateTime('UTC'),
        inserted_at DateTime('UTC') DEFAULT now()
      ) ENGINE = ReplacingMergeTree(inserted_at)
      PARTITION BY toYYYYMMDD(received_at)
      ORDER BY (source, category, received_at, event_id)`,
  ],
  // Rollups count distinct ids (uniqExact), so a row Kafka delivered twice counts once.
  2: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.events_per_minute (
        minute DateTime('UTC'), source String, category String,
        events AggregateFunction(uniqExact, UUID)
      ) ENGINE = AggregatingMergeTree()
      PARTITION BY toYYYYMMDD(minute)
      ORDER BY (source, category, minute)`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.events_per_minute_mv TO ${db}.events_per_minute AS
      SELECT toStartOfMinute(received_at) AS minute, source, category, uniqExactState(event_id) AS events
      FROM ${db}.events
      GROUP BY minute, source, category`,
  ],
  // Tenants lead both sort keys. The rollup's view is re-made over the new tables; the
  // copy of `events` feeds the new rollup through it, and the old rollup is copied only
  // for the minutes older than any event still kept (retention may have dropped those).
  4: (db) => [
    `DROP TABLE IF EXISTS ${db}.events_per_minute_mv`,
    { setAside: { table: 'events_per_minute', marker: 'tenant_id' } },
    `CREATE TABLE IF NOT EXISTS ${db}.events_per_minute (
        tenant_id String, minute DateTime('UTC'), source String, category String,
        events AggregateFunction(uniqExact, UUID)
      ) ENGINE = AggregatingMergeTree()
      PARTITION BY toYYYYMMDD(minute)
      ORDER BY (tenant_id, source, category, minute)`,
    { setAside: { table: 'events', marker: 'tenant_id' } },
    `CREATE TABLE IF NOT EXISTS ${db}.events (
        tenant_id String, event_id UUID, key_id String, source String, category String, payload String,
        client_event_id String, event_time DateTime('UTC'), client_ts Nullable(DateTime('UTC')),
        sent_at Nullable(DateTime('UTC')), received_at DateTime('UTC'),
        inserted_at DateTime('UTC') DEFAULT now()
      ) ENGINE = ReplacingMergeTree(inserted_at)
      PARTITION BY toYYYYMMDD(received_at)
      ORDER BY (tenant_id, source, category, received_at, event_id)`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.events_per_minute_mv TO ${db}.events_per_minute AS
      SELECT tenant_id, toStartOfMinute(received_at) AS minute, source, category, uniqExactState(event_id) AS events
      FROM ${db}.events
      GROUP BY tenant_id, minute, source, category`,
    {
      copyBack: {
        table: 'events_per_minute',
        sql: (from) => `INSERT INTO ${db}.events_per_minute (tenant_id, minute, source, category, events)
          SELECT '${DEFAULT_TENANT}', minute, source, category, events FROM ${from}
          WHERE minute < (SELECT if(count() = 0, toDateTime(4294967295), toStartOfMinute(min(received_at)))
                          FROM ${db}.events__old)`,
      },
    },
    {
      copyBack: {
        table: 'events',
        sql: (from) => `INSERT INTO ${db}.events (tenant_id, event_id, key_id, source, category, payload,
            client_event_id, event_time, client_ts, sent_at, received_at, inserted_at)
          SELECT '${DEFAULT_TENANT}', event_id, key_id, source, category, payload, client_event_id, event_time,
            client_ts, sent_at, received_at, inserted_at FROM ${from}`,
      },
    },
  ], // Copies of an event (a client's retry, a message Kafka delivered twice, a replay) must
  // share every value of the sort and partition keys, or ReplacingMergeTree never merges
  // them and FINAL counts them twice. received_at differs between a request and its
  // retry, so both keys now use id_time (clientTimeZone): the UUIDv7 id's time, else the
  // client's timestamp as sent, else the first copy's receive time (event_first_seen).
  // The copy keeps every row, computing id_time the way the consumer does; copies already
  // stored get the same keys and are read once. On current ClickHouse the table takes the
  // modern shape (docs/clickhouse.md, "Two engines").
  7: (db, _name, engine) => {
    const t = engine.modern ? "DateTime64(3, 'UTC')" : "DateTime('UTC')";
    const lc = engine.modern ? 'LowCardinality(String)' : 'String';
    const zstd = (type: string): string => (engine.modern ? `${type} CODEC(ZSTD(1))` : type);
    const time = (type: string): string => (engine.modern ? `${type} CODEC(Delta, ZSTD(1))` : type);
    return [
      `CREATE TABLE IF NOT EXISTS ${db}.event_first_seen (
          tenant_id String, event_id UUID, id_time ${t}
        ) ENGINE = MergeTree()
        PARTITION BY toYYYYMM(id_time)
        ORDER BY event_id
        SETTINGS index_granularity = 1024`,
      `DROP TABLE IF EXISTS ${db}.events_per_minute_mv`,
      { setAside: { table: 'events', marker: 'id_time' } },
      // The rollup's minutes become id_time's: rebuilt with the events.
      { setAside: { table: 'events_per_minute', whileRebuilding: 'events' } },
      `CREATE TABLE IF NOT EXISTS ${db}.events_per_minute (
          tenant_id ${lc}, minute DateTime('UTC'), source ${lc}, category ${lc},
          events AggregateFunction(uniqExact, UUID)
        ) ENGINE = AggregatingMergeTree()
        PARTITION BY toYYYYMMDD(minute)
        ORDER BY (tenant_id, source, category, minute)`,
      `CREATE TABLE IF NOT EXISTS ${db}.events (
          tenant_id ${lc}, event_id UUID, key_id ${lc}, source ${lc}, category ${lc},
          payload ${zstd('String')}, client_event_id ${zstd('String')},
          id_time ${time(t)}, event_time ${time(t)}, client_ts ${zstd(`Nullable(${t})`)},
          sent_at ${zstd(`Nullable(${t})`)}, received_at ${time(t)},
          inserted_at DateTime('UTC') DEFAULT now()${engine.modern ? ' CODEC(Delta, ZSTD(1))' : ''}
        ) ENGINE = ReplacingMergeTree(inserted_at)
        PARTITION BY toYYYYMM(id_time)
        ORDER BY (tenant_id, id_time, event_id)`,
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.events_per_minute_mv TO ${db}.events_per_minute AS
        SELECT tenant_id, toStartOfMinute(toDateTime(id_time)) AS minute, source, category,
          uniqExactState(event_id) AS events
        FROM ${db}.events
        GROUP BY tenant_id, minute, source, category`,
      {
        copyBack: {
          table: 'events',
          sql: (from) => `INSERT INTO ${db}.events (tenant_id, event_id, key_id, source, category, payload,
              client_event_id, id_time, event_time, client_ts, sent_at, received_at, inserted_at)
            SELECT tenant_id, event_id, key_id, source, category, payload, client_event_id,
              ${idTimeSql(engine, 'client_event_id', 'client_ts', 'first_seen', 'received_at')} AS id_time,
              event_time, client_ts, sent_at, received_at, inserted_at
            FROM ${from} ANY LEFT JOIN (
              SELECT event_id, min(received_at) AS first_seen FROM ${from}
              WHERE client_event_id != '' GROUP BY event_id
            ) AS firsts USING event_id${engine.modern ? '\n            SETTINGS max_partitions_per_insert_block = 0' : ''}`,
        },
      },
      // After the events (whose copy fed the new rollup through its view): the old rollup's
      // minutes older than any event kept (retention dropped those events).
      {
        copyBack: {
          table: 'events_per_minute',
          sql: (from) => `INSERT INTO ${db}.events_per_minute (tenant_id, minute, source, category, events)
            SELECT tenant_id, minute, source, category, events FROM ${from}
            WHERE minute < (SELECT if(count() = 0, toDateTime(4294967295), toStartOfMinute(toDateTime(min(received_at))))
                            FROM ${db}.events)`,
        },
      },
      // Retries after the migration of events stored before it find their first copy's time.
      `INSERT INTO ${db}.event_first_seen (tenant_id, event_id, id_time)
        SELECT tenant_id, event_id, min(id_time) FROM ${db}.events
        WHERE client_event_id != '' AND client_ts IS NULL AND NOT (${isV7Sql('client_event_id')})
          AND event_id NOT IN (SELECT event_id FROM ${db}.event_first_seen)
        GROUP BY tenant_id, event_id`,
    ];
  },
  // The trackers' protocols (docs/compat.md): which protocol an event came in, who it is
  // about, and what the client reported of itself. Rows stored before read '' (and
  // 'telemetry'), which is what they were.
  15: (_db, _name, engine) => {
    const lc = engine.modern ? 'LowCardinality(String)' : 'String';
    const zstd = engine.modern ? ' CODEC(ZSTD(1))' : '';
    return [
      { addColumn: { table: 'events', column: 'protocol', type: `${lc} DEFAULT 'telemetry'` } },
      { addColumn: { table: 'events', column: 'anonymous_id', type: `String DEFAULT ''${zstd}` } },
      { addColumn: { table: 'events', column: 'user_id', type: `String DEFAULT ''${zstd}` } },
      { addColumn: { table: 'events', column: 'client_ip', type: `String DEFAULT ''${zstd}` } },
      { addColumn: { table: 'events', column: 'user_agent', type: `String DEFAULT ''${zstd}` } },
    ];
  },
  // Enrichment (docs/enrichment.md): where the client was and what it was, from the
  // address and user agent the consumer chose (effectiveClient). Rows stored before read
  // '' and is_bot = 0. The rollup gains is_bot in its sort key, so humans are counted
  // from it (ClickHouse can only append columns added in the same ALTER to a sort key,
  // and 18.16 cannot do even that): it is set aside and rebuilt as in migration 7, its
  // old rows copied back as humans, and its view re-made to group by is_bot.
  17: (db, _name, engine) => {
    const lc = engine.modern ? 'LowCardinality(String)' : 'String';
    const zstd = engine.modern ? ' CODEC(ZSTD(1))' : '';
    const column = (column: string, type: string): Statement => ({ addColumn: { table: 'events', column, type } });
    return [
      column('geo_country', `${lc} DEFAULT ''`),
      column('geo_region', `${lc} DEFAULT ''`),
      column('geo_city', `String DEFAULT ''${zstd}`),
      column('browser', `${lc} DEFAULT ''`),
      column('browser_version', `String DEFAULT ''${zstd}`),
      column('os', `${lc} DEFAULT ''`),
      column('os_version', `String DEFAULT ''${zstd}`),
      column('device_type', `${lc} DEFAULT ''`),
      column('is_bot', 'UInt8 DEFAULT 0'),
      `DROP TABLE IF EXISTS ${db}.events_per_minute_mv`,
      { setAside: { table: 'events_per_minute', marker: 'is_bot' } },
      `CREATE TABLE IF NOT EXISTS ${db}.events_per_minute (
          tenant_id ${lc}, minute DateTime('UTC'), source ${lc}, category ${lc}, is_bot UInt8,
          events AggregateFunction(uniqExact, UUID)
        ) ENGINE = AggregatingMergeTree()
        PARTITION BY toYYYYMMDD(minute)
        ORDER BY (tenant_id, source, category, is_bot, minute)`,
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.events_per_minute_mv TO ${db}.events_per_minute AS
        SELECT tenant_id, toStartOfMinute(toDateTime(id_time)) AS minute, source, category, is_bot,
          uniqExactState(event_id) AS events
        FROM ${db}.events
        GROUP BY tenant_id, minute, source, category, is_bot`,
      {
        copyBack: {
          table: 'events_per_minute',
          sql: (from) => `INSERT INTO ${db}.events_per_minute (tenant_id, minute, source, category, is_bot, events)
            SELECT tenant_id, minute, source, category, 0, events FROM ${from}`,
        },
      },
    ];
  },
};

/** SQL: whether `col` is a UUIDv7 whose time fits ClickHouse's DateTime (as v7Millis). */
function isV7Sql(col: string): string {
  return `match(${col}, '${V7_PATTERN.source}') AND ${v7MillisSql(col)} <= ${MAX_TS * 1000 + 999}`;
}

/** SQL: the unix milliseconds in a UUIDv7's first 48 bits (as v7Millis). */
function v7MillisSql(col: string): string {
  return `reinterpretAsUInt64(reverse(unhex(concat(substring(${col}, 1, 8), substring(${col}, 10, 4)))))`;
}

/** SQL: id_time as the consumer computed it before the event-time window (migration 7), from columns (or expressions) of the previous shape (seconds). */
export function idTimeSql(
  engine: Engine,
  clientId: string,
  clientTs: string,
  firstSeen: string,
  receivedAt: string,
): string {
  const asTime = (x: string): string => (engine.modern ? `toDateTime64(${x}, 3, 'UTC')` : x);
  const v7 = engine.modern
    ? `fromUnixTimestamp64Milli(toInt64(${v7MillisSql(clientId)}), 'UTC')`
    : `toDateTime(intDiv(${v7MillisSql(clientId)}, 1000), 'UTC')`;
  return `multiIf(${isV7Sql(clientId)}, ${v7},
                isNotNull(${clientTs}), ${asTime(`assumeNotNull(${clientTs})`)},
                ${clientId} != '', ${asTime(firstSeen)},
                ${asTime(receivedAt)})`;
}

/**
 * A time as a row carries it: unix seconds for DateTime('UTC') (ClickHouse 18.16), or
 * "seconds.millis" as text for DateTime64(3) (current ClickHouse reads a bare number
 * there as ticks or seconds depending on its digits, text it always reads the same).
 */
export type RowTime = number | string;

export function rowTime(ms: number, modern: boolean): RowTime {
  const s = Math.floor(ms / 1000);
  return modern ? `${s}.${String(ms - s * 1000).padStart(3, '0')}` : s;
}

/** A row of `events` as inserted (JSONEachRow). Times are UTC, as rowTime() writes them. */
export interface EventRow {
  tenant_id: string;
  event_id: string;
  key_id: string;
  source: string;
  category: string;
  payload: string;
  client_event_id: string;
  /** The time in both keys: the same for every copy of the event (clientTimeZone). */
  id_time: RowTime;
  event_time: RowTime;
  client_ts: RowTime | null;
  sent_at: RowTime | null;
  received_at: RowTime;
  inserted_at: number;
  protocol: string;
  anonymous_id: string;
  user_id: string;
  /** What the key's ip_storage keeps of the effective address: all of it, its /24 or /48, or ''. */
  client_ip: string;
  /** The effective user agent: the protocol's, else the request's. */
  user_agent: string;
  geo_country: string;
  geo_region: string;
  geo_city: string;
  browser: string;
  browser_version: string;
  os: string;
  os_version: string;
  device_type: string;
  is_bot: number;
}

const V7_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-7[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$/;

/** The unix milliseconds a UUIDv7 carries, if `id` is one and its time fits DateTime. */
export function v7Millis(id: string): number | null {
  if (!V7_PATTERN.test(id)) return null;
  const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
  return ms <= MAX_TS * 1000 + 999 ? ms : null;
}

/**
 * The time every copy of an event shares comes from what the client sent: a UUIDv7 id's
 * time, else the client's `timestamp` as sent (not skew-corrected: `sent_at` may differ
 * between a request and its retry); an event without either with a client id takes its
 * first copy's receive time (FirstSeen), one without takes its own (a message Kafka
 * delivers twice or a consumer replays carries the same receive time).
 *
 * Where a client's time lies against CLIENT_TIME_WINDOW around the receive time:
 * `inside` (it is the event's id_time), `edge` (it is, unless an earlier copy recorded
 * another: the first copy's choice is recorded in FirstSeen), `outside` (it is ignored;
 * the event is kept as one without a time).
 */
export type ClientTimeZone = 'inside' | 'edge' | 'outside';

export function clientTimeZone(clientMs: number, receivedMs: number): ClientTimeZone {
  const { pastMs, futureMs, edgeMs } = CLIENT_TIME_WINDOW;
  const ahead = clientMs - receivedMs;
  if (ahead > futureMs || ahead < -pastMs) return 'outside';
  return ahead > futureMs - edgeMs || ahead < -pastMs + edgeMs ? 'edge' : 'inside';
}

/** A row time (rowTime's form) as unix milliseconds. */
function rowTimeMillis(t: RowTime): number {
  return typeof t === 'number' ? t * 1000 : Math.round(Number(t) * 1000);
}

/** The client's time of a row (its UUIDv7 id's, else its `timestamp`) and its zone, if it has one. */
function clientTimeOf(row: EventRow): { ms: number; zone: ClientTimeZone } | null {
  const ms = v7Millis(row.client_event_id) ?? (row.client_ts === null ? null : rowTimeMillis(row.client_ts));
  return ms === null ? null : { ms, zone: clientTimeZone(ms, rowTimeMillis(row.received_at)) };
}

/**
 * Whether the row's id_time must be its first copy's (see FirstSeen): an event with a
 * client id whose own time is missing, outside the window or near its edge. The row's
 * id_time then holds what it would record as the first copy.
 */
export function needsFirstSeen(row: EventRow): boolean {
  if (row.client_event_id === '') return false;
  const c = clientTimeOf(row);
  return c === null || c.zone !== 'inside';
}

/**
 * When the event happened, on the server's clock. With a client timestamp and the
 * client's `sent_at`, the client clock's offset (received_at - sent_at) is added to
 * the client timestamp (the same correction Snowplow and PostHog make). With a client
 * timestamp alone it is taken as is; without one, the receive time is used.
 */
export function eventTime(receivedAt: number, clientTs: number | null, sentAt: number | null, perSecond = 1): number {
  if (clientTs === null) return receivedAt;
  const t = sentAt === null ? clientTs : clientTs + (receivedAt - sentAt);
  return t >= MIN_TS * perSecond && t < (MAX_TS + 1) * perSecond ? t : receivedAt;
}

/**
 * A Kafka event message as its row: times in seconds for 18.16's DateTime, or with
 * milliseconds for the modern shape's DateTime64(3) (`modern`, see Engine).
 */
export function decodeEvent(v: Validators, value: Buffer | null, modern = false): Decoded<EventRow> {
  const toRow = modern ? modernEventRow : eventRow18;
  return decodeTimed(v.eventMessage, 'event', value, 'received_at', toRow, isCanonicalEventMessage);
}

/**
 * The decoder of event messages into rows, enriched by `enricher` (without one, the
 * enrichment columns stay ''): made once, so a batch's rows share it.
 */
export function eventDecoder(
  v: Validators,
  modern: boolean,
  enricher?: Enricher,
): (value: Buffer | null) => Decoded<EventRow> {
  const toRow = eventRow(modern, enricher);
  return (value) => decodeTimed(v.eventMessage, 'event', value, 'received_at', toRow, isCanonicalEventMessage);
}

const eventRow18 = eventRow(false);
const modernEventRow = eventRow(true);

function eventRow(modern: boolean, enricher?: Enricher) {
  const build = eventRowBuilder(modern, enricher);
  return (e: EventMessage, _s: number, now: number, receivedMs: number): EventRow =>
    build(e, JSON.stringify(e.payload), now, receivedMs, toMillis(e.client_ts), toMillis(e.sent_at));
}

/**
 * Builds an event's row from its message, its payload as JSON text (what
 * `JSON.stringify(e.payload)` gives) and its times in milliseconds (`toMillis` of each);
 * both decoders (decodeTimed's and canonicalEventDecoder's) end here, so their rows agree.
 */
export type EventRowBuilder = (
  e: EventMessage,
  payload: string,
  now: number,
  receivedMs: number,
  clientTsMs: number | null,
  sentAtMs: number | null,
) => EventRow;

export function eventRowBuilder(modern: boolean, enricher?: Enricher): EventRowBuilder {
  return (e, payload, now, receivedMs, clientTsMs, sentAtMs) => {
    const { address, userAgent } = effectiveClient(e);
    const geo = enricher && address ? enricher.geo(address.ip, address.family) : NO_GEO;
    const agent = enricher && userAgent !== '' ? enricher.agent(userAgent) : NO_AGENT;
    const t = (ms: number): RowTime => rowTime(ms, modern);
    const row: EventRow = {
      tenant_id: e.tenant_id ?? DEFAULT_TENANT,
      event_id: e.event_id,
      key_id: e.key_id,
      source: e.source,
      category: e.category,
      payload,
      client_event_id: e.client_event_id ?? '',
      id_time: t(receivedMs),
      // Not a key: the skew-corrected time is kept whatever the window says of the raw one.
      event_time: t(eventTime(receivedMs, clientTsMs, sentAtMs, 1000)),
      client_ts: clientTsMs === null ? null : t(clientTsMs),
      sent_at: sentAtMs === null ? null : t(sentAtMs),
      received_at: t(receivedMs),
      inserted_at: now,
      protocol: e.protocol ?? 'telemetry',
      anonymous_id: e.anonymous_id ?? '',
      user_id: e.user_id ?? '',
      client_ip: storedIp(address, e.ip_storage),
      user_agent: userAgent,
      geo_country: geo.country,
      geo_region: geo.region,
      geo_city: geo.city,
      browser: agent.browser,
      browser_version: agent.browser_version,
      os: agent.os,
      os_version: agent.os_version,
      device_type: agent.device_type,
      is_bot: agent.is_bot,
    };
    // NOTE: the zone is judged on the row's own values (whole seconds on 18.16), as
    // needsFirstSeen judges it, so both always agree.
    const c = clientTimeOf(row);
    if (c !== null && c.zone !== 'outside') row.id_time = t(c.ms);
    return row;
  };
}

/** Which events a count includes: all of them, humans only (is_bot = 0), or bots only. */
export const BOT_FILTERS = ['include', 'exclude', 'only'] as const;
export type BotFilter = (typeof BOT_FILTERS)[number];

/**
 * Events per minute, source and category of `tenantId` over [from, to) (unix seconds),
 * from the `events_per_minute` rollup: columns t (the minute), source, category, n.
 * `is_bot` is in the rollup's key but not in this GROUP BY: with bots included, the
 * states of humans and bots merge, so each event counts once.
 */
export function eventsPerMinuteSql(
  database: string,
  layout: TableLayout,
  tenantId: string,
  from: number,
  to: number,
  limit: number,
  bots: BotFilter = 'include',
): string {
  const isBot = bots === 'include' ? '' : `\n      AND is_bot = ${bots === 'only' ? 1 : 0}`;
  return `SELECT toUInt32(minute) AS t, source, category, uniqExactMerge(events) AS n
    FROM ${tableRef(database, 'events_per_minute', layout)}
    WHERE tenant_id = ${sqlString(tenantId)}
      AND minute >= toDateTime(${sqlNumber(from)}) AND minute < toDateTime(${sqlNumber(to)})${isBot}
    GROUP BY t, source, category
    ORDER BY t, source, category
    LIMIT ${sqlNumber(limit)}`;
}

/** A row of eventsPerMinuteSql's result. */
export interface EventsPerMinuteRow {
  t: number | string;
  source: string;
  category: string;
  n: number | string;
}
