/**
 * ClickHouse's own Kafka table engine, as the comparison point of `npm run bench:consume`.
 *
 * On ClickHouse 18.16 the engine cannot read our messages with JSONEachRow: `payload`
 * is a JSON object and 18.16 parses only a quoted string into a String column (leaving
 * the column out would drop the payload), and date_time_input_format comes from the
 * server's profile, not from the table. So the Kafka table reads each message as one TSV
 * line (`raw String`, kafka_row_delimiter '\n') and the materialized views extract the
 * fields with visitParamExtract* and parseDateTimeBestEffort, computing event_time the
 * way the consumer's rows.ts does. BENCHMARKS.md lists what that does differently.
 */
import type { Kafka } from 'kafkajs';
import { sqlIdentifier, sqlNumber, sqlString, type Engine } from '@telemetry/platform';
import { idTimeSql, MIGRATIONS } from '@telemetry/store';

export const ENGINE_TABLE = 'events_kafka_engine';
export const ENGINE_ROLLUP = 'events_per_minute_kafka_engine';
export const ENGINE_QUEUE = 'events_kafka_queue';
export const ENGINE_VIEW = 'events_kafka_engine_mv';
export const ENGINE_ROLLUP_VIEW = 'events_per_minute_kafka_engine_mv';

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `events` and the table of its rollup (`events_per_minute`) copied under new names, from
 * the very statements of the migrations, so the engine's rows land in identical tables.
 */
export function copyTablesStatements(database: string, engine: Engine): string[] {
  const db = sqlIdentifier(database);
  const statements = MIGRATIONS.flatMap((m) => m.statements(db, database, engine)).filter((s) => typeof s === 'string');
  const events = new RegExp(`^\\s*CREATE TABLE IF NOT EXISTS ${escapeRe(db)}\\.events \\(`);
  const rollup = new RegExp(`^\\s*CREATE TABLE IF NOT EXISTS ${escapeRe(db)}\\.events_per_minute \\(`);
  // The newest shape of each (a later migration may rebuild a table).
  const last = (re: RegExp): string | undefined => statements.filter((s) => re.test(s)).pop();
  const [e, r] = [last(events), last(rollup)];
  if (e === undefined || r === undefined) throw new Error('expected the events and rollup tables to copy');
  return [
    e.replace(`${db}.events (`, `${db}.${ENGINE_TABLE} (`),
    r.replace(`${db}.events_per_minute (`, `${db}.${ENGINE_ROLLUP} (`),
  ];
}

export interface EngineOptions {
  database: string;
  brokers: string;
  topic: string;
  group: string;
  consumers: number;
}

/** The Kafka engine table: one `raw String` per message (TSV, one line per message). */
export function queueTableStatement(o: EngineOptions): string {
  const db = sqlIdentifier(o.database);
  return `CREATE TABLE ${db}.${ENGINE_QUEUE} (raw String) ENGINE = Kafka SETTINGS
    kafka_broker_list = ${sqlString(o.brokers)},
    kafka_topic_list = ${sqlString(o.topic)},
    kafka_group_name = ${sqlString(o.group)},
    kafka_format = 'TSV',
    kafka_row_delimiter = '\\n',
    kafka_num_consumers = ${sqlNumber(o.consumers)}`;
}

const field = (name: string): string => `visitParamExtractString(raw, '${name}')`;
// parseDateTimeBestEffortOrNull('') is 2000-01-01 on 18.16, not NULL: test presence first.
const ts = (name: string): string =>
  `if(visitParamHas(raw, '${name}'), parseDateTimeBestEffortOrNull(${field(name)}), NULL)`;
/** id_time as the migration computes it (the first copy is the only copy here), straight from a message. */
const idTime = (): string => {
  const received = `parseDateTimeBestEffort(${field('received_at')})`;
  return idTimeSql({ version: '18.16', modern: false }, field('client_event_id'), ts('client_ts'), received, received);
};

/**
 * The materialized view that moves rows from the Kafka table into the copy of `events`.
 * Same columns and the same event_time rule as services/stream-consumer/src/rows.ts
 * (client time corrected by received_at - sent_at; received_at without a client time).
 * 18.16 wants every column of the target from the view ("Expected column inserted_at"),
 * so inserted_at is the view's now(), which is what the column's DEFAULT gives ours.
 */
export function viewStatement(database: string): string {
  const db = sqlIdentifier(database);
  return `CREATE MATERIALIZED VIEW ${db}.${ENGINE_VIEW} TO ${db}.${ENGINE_TABLE} AS
    SELECT
      ${field('tenant_id')} AS tenant_id,
      toUUID(${field('event_id')}) AS event_id,
      ${field('key_id')} AS key_id,
      ${field('source')} AS source,
      ${field('category')} AS category,
      visitParamExtractRaw(raw, 'payload') AS payload,
      ${field('client_event_id')} AS client_event_id,
      parseDateTimeBestEffort(${field('received_at')}) AS received_at,
      ${ts('client_ts')} AS client_ts,
      ${ts('sent_at')} AS sent_at,
      ${idTime()} AS id_time,
      if(isNull(client_ts), received_at,
        if(isNull(sent_at), assumeNotNull(client_ts),
          toDateTime(toInt64(assumeNotNull(client_ts)) + (toInt64(received_at) - toInt64(assumeNotNull(sent_at)))))) AS event_time,
      now() AS inserted_at
    FROM ${db}.${ENGINE_QUEUE}`;
}

/**
 * The rollup, fed from the Kafka table itself: on 18.16 a view on the copy of `events`
 * never sees the rows another view inserts there (checked: it stays empty), so the
 * rollup's view reads the messages directly, with the same grouping as migration 7 (minutes of id_time); the engine path enriches
 * nothing, so every event counts as a human (is_bot = 0, migration 17).
 */
export function rollupViewStatement(database: string): string {
  const db = sqlIdentifier(database);
  return `CREATE MATERIALIZED VIEW ${db}.${ENGINE_ROLLUP_VIEW} TO ${db}.${ENGINE_ROLLUP} AS
    SELECT ${field('tenant_id')} AS tenant_id,
      toStartOfMinute(${idTime()}) AS minute,
      ${field('source')} AS source,
      ${field('category')} AS category,
      toUInt8(0) AS is_bot,
      uniqExactState(toUUID(${field('event_id')})) AS events
    FROM ${db}.${ENGINE_QUEUE}
    GROUP BY tenant_id, minute, source, category, is_bot`;
}

/**
 * Both views exist before the Kafka table starts reading: 18.16 streams to the views
 * attached when a read cycle starts, so a view created a moment later would miss up to
 * 7.5 s of messages. The views are created on a Null table of the same name and columns,
 * which is then dropped (18.16 keeps the views' dependency on the name); the Kafka table
 * created under that name (queueTableStatement) streams to both from its first block.
 */
export function viewsSetupStatements(database: string): string[] {
  const db = sqlIdentifier(database);
  return [
    `CREATE TABLE ${db}.${ENGINE_QUEUE} (raw String) ENGINE = Null`,
    viewStatement(database),
    rollupViewStatement(database),
    `DROP TABLE ${db}.${ENGINE_QUEUE}`,
  ];
}

export function dropStatements(database: string): string[] {
  const db = sqlIdentifier(database);
  return [
    `DROP TABLE IF EXISTS ${db}.${ENGINE_VIEW}`,
    `DROP TABLE IF EXISTS ${db}.${ENGINE_ROLLUP_VIEW}`,
    `DROP TABLE IF EXISTS ${db}.${ENGINE_QUEUE}`,
  ];
}

/**
 * Commits offsets for a consumer group that has no member: the topic's first offsets
 * (`start`) or its current ends (`end`).
 *
 * A new group starts at the end of the topic in librdkafka (auto.offset.reset is
 * `largest`, and 18.16 has no table setting for it), while ours reads a new group from the
 * beginning: the engine's group gets the first offsets committed before its table exists,
 * so it drains the same backlog ours did. `end` lets a consumer group that is behind
 * start a freshness run with no backlog.
 */
export async function seedGroup(kafka: Kafka, group: string, topic: string, at: 'start' | 'end'): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = (await admin.fetchTopicOffsets(topic)).map((o) => ({
      partition: o.partition,
      offset: at === 'start' ? o.low : o.high,
    }));
    await admin.setOffsets({ groupId: group, topic, partitions: offsets });
    const committed = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    const got = committed[0]?.partitions ?? [];
    const bad = got.filter((p) => p.offset !== offsets.find((o) => o.partition === p.partition)?.offset);
    if (bad.length > 0 || got.length !== offsets.length) {
      throw new Error(`could not commit the offsets of group ${group}: ${JSON.stringify(committed)}`);
    }
  } finally {
    await admin.disconnect();
  }
}
