import type { ClickHouseClient } from '@clickhouse/client';
import {
  createClickHouse,
  runMigrations,
  columnsOf,
  sqlIdentifier,
  sqlString,
  type ClickHouseConfig,
  type Logger,
  type Migration,
  type MigrationsByVersion,
} from '@telemetry/platform';
import { alertsMigrations } from './alerts.js';
import { checksMigrations } from './checks.js';
import { eventsMigrations } from './events.js';
import { freshnessMigrations } from './freshness.js';
import { keysMigrations } from './legacy/keys.js';
import { monitorsMigrations } from './legacy/monitors.js';
import { statusPagesMigrations } from './legacy/status-pages.js';
import { tenantsMigrations } from './legacy/tenants.js';
import { webhookDeliveriesMigrations } from './webhook-deliveries.js';
import { monitorDimensionMigrations } from './monitor-dimension.js';
import { auditLogMigrations } from './audit-log.js';
import { failedEventsMigrations } from './failed-events.js';
import { screenshotsMigrations } from './screenshots.js';
import { databasesOf, type DatabaseRole } from './databases.js';

/**
 * Versioned ClickHouse migrations. Each table module (events, checks, alerts, webhook
 * deliveries, monitors, keys) holds its own statements per version; a version applies them in this order.
 * A version's statements may depend on the engine (the modern shapes of migrations 7
 * and 8 on current ClickHouse, docs/clickhouse.md "Two engines"); each is idempotent (IF NOT EXISTS; a rebuilt table is set
 * aside and copied back, see the platform's SetAside), so a migration that stopped
 * half-way resumes. Version 4 rebuilds tables: run it with writers stopped or let them
 * retry (docs/operations.md), and not from two processes at once. Never edit a released version: add one (a new name
 * below, and entries under that number in the modules it touches). The tables are a
 * public interface for analysts: see docs/clickhouse.md.
 */
const VERSIONS: Record<number, string> = {
  1: 'events, checks and access keys',
  2: 'rollups: events per minute, checks per hour',
  3: 'monitor registry, alerts, check errors',
  4: 'tenants: tenant_id leads every table; sealed monitor secrets; key expiry',
  5: 'least privilege: monitors to <db>_registry, tenants and access keys to <db>_keys',
  6: 'webhook delivery attempts; freshness',
  7: 'events keyed by what every copy shares (id_time); first-seen times; the modern shape on current ClickHouse',
  8: 'LowCardinality statuses of checks, alerts and webhook deliveries on current ClickHouse',
  9: 'public status pages',
  10: 'checks: location and tls_days_left',
  11: 'alerts: maintenance',
  12: 'webhook deliveries: channel',
  13: 'the monitors dimension table (the registry moved to PostgreSQL)',
  14: 'alerting: who acknowledged an incident; the channel and kind of each delivery attempt',
  15: "events: the trackers' protocols (protocol, anonymous_id, user_id, client_ip, user_agent)",
  16: 'the audit log, in <db>_audit',
  17: 'events: enrichment (geo, browser, OS, device, is_bot); is_bot in the events_per_minute rollup',
  18: 'failed_events: events that violated their event schema (action route)',
  19: 'checks: detail, timings and screenshot (assertions, api flows, browser checks, ping)',
  20: "check_screenshots: browser checks' failure screenshots",
};

const MODULES: readonly MigrationsByVersion[] = [
  tenantsMigrations,
  eventsMigrations,
  checksMigrations,
  keysMigrations,
  monitorsMigrations,
  alertsMigrations,
  webhookDeliveriesMigrations,
  freshnessMigrations,
  statusPagesMigrations,
  monitorDimensionMigrations,
  auditLogMigrations,
  failedEventsMigrations,
  screenshotsMigrations,
];

export const MIGRATIONS: readonly Migration[] = Object.entries(VERSIONS).map(([v, name]) => ({
  version: Number(v),
  name,
  statements: (db, name, engine) => MODULES.flatMap((m) => m[Number(v)]?.(db, name, engine) ?? []),
}));

/** Applies every migration of MIGRATIONS not yet applied to `database`. */
export async function migrate(
  client: ClickHouseClient,
  database: string,
  logger: Logger,
  cluster = '',
): Promise<number[]> {
  const applied = await runMigrations(client, database, MIGRATIONS, logger, { cluster });
  if (cluster !== '') await distributedTablesOn(client, database, cluster);
  return applied;
}

/**
 * Every ClickHouse data table a service reads or writes, with the sharding key of its
 * Distributed table `<table>_all` (docs/clickhouse.md, "On a cluster"). In cluster mode
 * (CLICKHOUSE_CLUSTER) the services insert and read through `_all` (layout.ts), and the
 * key decides which shard a row lands on. Rows that must dedup or merge together share
 * their key, so they meet in one shard, where the table's FINAL, LIMIT 1 BY and merges see
 * them:
 *
 * - the copies of an event (and its first-seen time) by its id;
 * - a monitor's checks, hourly rollup rows, screenshots and alerts by the monitor's id,
 *   so a monitor's history reads from one shard (and its rollup rows, which the view
 *   writes on the shard of the checks, sit beside them);
 * - the rest by the columns that identify a row (their ReplacingMergeTree key's id).
 *
 * events_per_minute is written by its view on each shard's own events, so a minute's
 * states are spread over the shards whatever its key; reads merge them (uniqExactMerge
 * of the `_all` table: a set union). Its key only places the rows a deletion's recompute
 * inserts (event-deletions.ts): one minute of a tenant on one shard.
 *
 * NOTE: 18.16's cityHash64 takes no UUID: the event ids are hashed as text.
 */
export const DISTRIBUTED_TABLES: Record<string, string> = {
  events: 'cityHash64(toString(event_id))',
  event_first_seen: 'cityHash64(toString(event_id))',
  events_per_minute: 'cityHash64(tenant_id, minute)',
  checks: 'cityHash64(monitor_id)',
  checks_hourly: 'cityHash64(monitor_id)',
  check_screenshots: 'cityHash64(monitor_id)',
  alerts: 'cityHash64(monitor_id)',
  webhook_deliveries: 'cityHash64(id)',
  failed_events: 'cityHash64(event_id)',
  freshness: 'cityHash64(table_name, consumer)',
  monitors: 'cityHash64(id)',
  audit_log: 'cityHash64(id)',
};

/** The tables of DISTRIBUTED_TABLES that live in a sibling of the data database (databases.ts). */
const DISTRIBUTED_IN: Record<string, DatabaseRole> = { audit_log: 'audit' };

/** The engine of `table`'s Distributed table in `database` on `cluster`, as CREATE TABLE says it. */
export function distributedEngine(cluster: string, database: string, table: string): string {
  const key = DISTRIBUTED_TABLES[table];
  if (key === undefined) throw new Error(`no Distributed table for ${table}`);
  return `Distributed(${sqlIdentifier(cluster)}, ${sqlIdentifier(database)}, ${sqlIdentifier(table)}, ${key})`;
}

/**
 * An engine as text with its quoting and spacing taken out: 18.16 prints
 * `Distributed(telemetry, db, events, cityHash64(…))`, current ClickHouse quotes the names.
 */
export function engineText(engine: string): string {
  return engine.replace(/[`'"\s]/g, '');
}

/**
 * Creates each `_all` table that is missing, and makes again one whose columns are no
 * longer its table's (a migration added one) or whose engine is not the one wanted (a
 * new sharding key, an older release's): a Distributed table holds no data. Its table
 * missing (a migration not applied yet on an older version), it is skipped.
 */
async function distributedTablesOn(client: ClickHouseClient, data: string, cluster: string): Promise<void> {
  const c = sqlIdentifier(cluster);
  for (const table of Object.keys(DISTRIBUTED_TABLES)) {
    const database = databasesOf(data)[DISTRIBUTED_IN[table] ?? 'data'];
    const db = sqlIdentifier(database);
    const all = `${table}_all`;
    const engine = distributedEngine(cluster, database, table);
    const [want, have, engineHad] = await Promise.all([
      columnsOf(client, database, table),
      columnsOf(client, database, all),
      engineOf(client, database, all),
    ]);
    if (want === '') continue;
    if (have === want && engineText(engineHad) === engineText(engine)) continue;
    if (have !== '')
      await client.command({ query: `DROP TABLE IF EXISTS ${db}.${sqlIdentifier(all)} ON CLUSTER ${c}` });
    await client.command({
      query: `CREATE TABLE IF NOT EXISTS ${db}.${sqlIdentifier(all)} ON CLUSTER ${c} AS ${db}.${sqlIdentifier(table)}
        ENGINE = ${engine}`,
    });
  }
}

/** A table's engine_full ('' when it does not exist). */
async function engineOf(client: ClickHouseClient, database: string, table: string): Promise<string> {
  const rs = await client.query({
    query: `SELECT engine_full FROM system.tables WHERE database = ${sqlString(database)} AND name = ${sqlString(table)}`,
    format: 'JSONEachRow',
  });
  return (await rs.json<{ engine_full: string }>())[0]?.engine_full ?? '';
}

/**
 * How long one DDL statement may take on a cluster: ON CLUSTER waits for every server
 * (distributed_ddl_task_timeout is 180 s), far beyond the client's usual 30 s.
 */
export const CLUSTER_DDL_TIMEOUT_MS = 200_000;

/** A client as CLICKHOUSE_USER on the `default` database: provisioning steps name every table with its database. */
export function provisioningClient(config: ClickHouseConfig): ClickHouseClient {
  return createClickHouse({
    url: config.clickhouseUrl,
    username: config.clickhouseUser,
    password: config.clickhousePassword,
    database: 'default',
    ...((config.clickhouseCluster ?? '') !== '' ? { requestTimeoutMs: CLUSTER_DDL_TIMEOUT_MS } : {}),
  });
}

/**
 * migrate() with a client of its own on the `default` database, as CLICKHOUSE_USER
 * (which must then be allowed to create databases and tables): a service's own client
 * is bound to one of its databases, which may not exist yet.
 */
export async function migrateWith(config: ClickHouseConfig, logger: Logger): Promise<number[]> {
  const client = provisioningClient(config);
  try {
    return await migrate(client, config.clickhouseDatabase, logger, config.clickhouseCluster ?? '');
  } finally {
    await client.close();
  }
}
