/**
 * npm run failed-events -- list   --tenant ten_… [--schema sch_…] [--since T] [--until T] [--event-id id]… [--state failed|replayed|any] [--max N]
 * npm run failed-events -- replay --tenant ten_… [--schema sch_…] [--since T] [--until T] [--event-id id]… [--max N] [--dry-run]
 *
 * Events that violated their event schema (action `route`) wait in ClickHouse's
 * `failed_events` (docs/event-schemas.md). `replay` re-validates each chosen row against
 * its schema's NEWEST version (read from the registry): one that passes now is published
 * to the events topic as the gateway published it (same event_id, so a second replay is
 * deduplicated like any retry; `schema_failure` removed) and its row marked `replayed`;
 * one that still fails stays; one whose schema is gone, or whose tenant has no schema for
 * its (source, category) any more, is published too (as the gateway would accept it now).
 * A row whose user_id or anonymous_id a deletion suppressed (docs/deletions.md) is never
 * published again: it is skipped and counted as `suppressed`.
 * Times are ISO 8601 or unix seconds. Needs CLICKHOUSE_URL, DATABASE_URL and KAFKA_BROKERS
 * (or the stack `npm start` runs); EVENTS_TOPIC (default telemetry.events).
 */
import { parseArgs } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { compileEventSchema } from '@telemetry/contract/event-schema';
import type { EventMessage } from '@telemetry/contract';
import {
  failedEventsSql,
  findTenant,
  insertSettingsOf,
  isSuppressedMessage,
  layoutOf,
  loadEventSchemaRecords,
  loadSuppressions,
  readSettingsOf,
  type EventSchemaRecord,
  tableRef,
  type FailedEventRow,
} from '@telemetry/store';
import { adminFromEnv, registryFromEnv, runCli } from './cli.js';
import { envWithLocalStack } from './local-env.js';

const out = (s: string): boolean => process.stdout.write(`${s}\n`);
const EVENT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SCHEMA_ID = /^sch_[a-z0-9]{20}$/;

function timeArg(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const s = /^\d{1,10}$/.test(v) ? Number(v) : Date.parse(v) / 1000;
  if (!Number.isFinite(s)) throw new Error(`--${name} is an ISO 8601 time or unix seconds`);
  return Math.floor(s);
}

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      tenant: { type: 'string' },
      schema: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      'event-id': { type: 'string', multiple: true },
      state: { type: 'string' },
      max: { type: 'string' },
      'dry-run': { type: 'boolean' },
    },
  });
  const [cmd] = positionals;
  if (cmd !== 'list' && cmd !== 'replay') {
    process.stderr.write(
      'usage: npm run failed-events -- list|replay --tenant ten_… [options] (see the file header)\n',
    );
    return 2;
  }
  if (values.tenant === undefined) throw new Error('--tenant ten_… is required (npm run tenants -- list)');
  if (values.schema !== undefined && !SCHEMA_ID.test(values.schema)) throw new Error('--schema is a schema id: sch_…');
  const eventIds = values['event-id'] ?? [];
  for (const id of eventIds) if (!EVENT_ID.test(id)) throw new Error(`--event-id ${id} is not an event id (a UUID)`);
  const state = values.state ?? (cmd === 'list' ? 'any' : 'failed');
  if (state !== 'failed' && state !== 'replayed' && state !== 'any')
    throw new Error('--state is failed, replayed or any');
  const max = values.max === undefined ? 10_000 : Number(values.max);
  if (!Number.isInteger(max) || max < 1 || max > 1_000_000) throw new Error('--max is a whole number 1..1000000');

  const db = registryFromEnv();
  const ch = adminFromEnv();
  if (!db || !ch) return 2;
  try {
    const tenant = await findTenant(db, values.tenant);
    if (!tenant) throw new Error(`no tenant ${values.tenant} (npm run tenants -- list)`);
    const rows = await (
      await ch.client.query({
        query: failedEventsSql(ch.database, ch.layout, {
          tenantId: tenant.tenant_id,
          schemaId: values.schema,
          since: timeArg('since', values.since),
          until: timeArg('until', values.until),
          eventIds,
          state: cmd === 'replay' ? 'failed' : state,
          limit: max,
        }),
        format: 'JSONEachRow',
        clickhouse_settings: readSettingsOf(ch.layout),
      })
    ).json<FailedEventRow>();

    if (cmd === 'list') {
      for (const r of rows) {
        out(
          [
            r.event_id,
            new Date(Number(r.received_at) * 1000).toISOString(),
            `${r.source}/${r.category}`,
            `${r.schema_id}@${r.schema_version}`,
            r.replay_state,
            r.violations,
          ].join('\t'),
        );
      }
      out(`${rows.length} row(s)`);
      return 0;
    }

    // The tenant's schemas with their newest versions, each compiled once.
    const schemas = (await loadEventSchemaRecords(db)).filter((s) => s.tenant_id === tenant.tenant_id);
    const byTarget = new Map(schemas.map((s) => [`${s.source}\u0000${s.category}`, s]));
    const checks = new Map<string, ReturnType<typeof compileEventSchema>>();
    const checkOf = (s: EventSchemaRecord) => {
      let c = checks.get(s.schema_id);
      if (!c) checks.set(s.schema_id, (c = compileEventSchema(s.schema)));
      return c;
    };
    // The tenant's suppressed ids (deletions), read once before the replay.
    const suppressions = (await loadSuppressions(db, [tenant.tenant_id]))[0];
    const isSuppressed = (tenantId: string, user: string | undefined, anon: string | undefined): boolean =>
      !!suppressions &&
      tenantId === suppressions.tenantId &&
      ((user !== undefined && suppressions.userIds.has(user)) ||
        (anon !== undefined && suppressions.anonymousIds.has(anon)));
    const replay: { row: FailedEventRow; msg: EventMessage }[] = [];
    let stillFailing = 0;
    let skipped = 0;
    let suppressed = 0;
    for (const row of rows) {
      if (isSuppressedMessage(row.raw, isSuppressed)) {
        suppressed++;
        continue;
      }
      let msg: EventMessage;
      try {
        msg = JSON.parse(row.raw) as EventMessage;
      } catch {
        skipped++;
        continue;
      }
      if (msg.event_id !== row.event_id || (msg.tenant_id ?? '') !== row.tenant_id) {
        skipped++;
        continue;
      }
      const schema = byTarget.get(`${msg.source}\u0000${msg.category}`);
      if (schema && checkOf(schema)(msg.payload).length > 0) {
        stillFailing++;
        continue;
      }
      delete msg.schema_failure;
      replay.push({ row, msg });
    }
    if (!values['dry-run'] && replay.length > 0) {
      const env = envWithLocalStack();
      if (!env.KAFKA_BROKERS) throw new Error('KAFKA_BROKERS is not set and no stack from `npm start` was found');
      const kafka = new Kafka({
        brokers: env.KAFKA_BROKERS.split(','),
        clientId: 'failed-events-replay',
        logLevel: logLevel.WARN,
      });
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      try {
        const topic = env.EVENTS_TOPIC ?? 'telemetry.events';
        for (let i = 0; i < replay.length; i += 500) {
          const part = replay.slice(i, i + 500);
          // acks: all: a row is marked only once Kafka holds its event.
          await producer.send({
            topic,
            acks: -1,
            messages: part.map(({ msg }) => ({ key: msg.event_id, value: JSON.stringify(msg) })),
          });
          const nowMs = Date.now();
          const now = Math.floor(nowMs / 1000);
          // On a cluster through failed_events_all: the new version lands on its event's shard.
          const layout = layoutOf({ clickhouseCluster: env.CLICKHOUSE_CLUSTER });
          await ch.client.insert({
            table: tableRef(ch.database, 'failed_events', layout),
            clickhouse_settings: insertSettingsOf(layout),
            format: 'JSONEachRow',
            values: part.map(({ row }) => ({
              ...row,
              received_at: Number(row.received_at),
              failed_at: Number(row.failed_at),
              replay_state: 'replayed',
              replayed_at: now,
              inserted_at: now,
              row_version: Math.max(nowMs, Number(row.row_version) + 1),
            })),
          });
        }
      } finally {
        await producer.disconnect();
      }
    }
    out(
      `${values['dry-run'] ? 'would replay' : 'replayed'} ${replay.length}, still failing ${stillFailing}, skipped ${skipped}, suppressed ${suppressed}`,
    );
    return 0;
  } finally {
    await Promise.all([db.end(), ch.client.close()]);
  }
}

runCli('failed-events', main);
