import type { ClickHouseClient } from '@clickhouse/client';
import {
  createClickHouse,
  runMigrations,
  columnsOf,
  sqlIdentifier,
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
 * The data tables analysts read, each with a Distributed table `<table>_all` over the
 * cluster (docs/clickhouse.md, "On a cluster"). With one shard every replica holds every
 * row and the services read their own tables; with several shards, `_all` reads them all.
 * Rows are spread by their id, so the copies of a row meet in one shard, where the
 * table's dedup (FINAL, LIMIT 1 BY) sees them.
 */
export const DISTRIBUTED_TABLES: Record<string, string> = {
  events: 'cityHash64(event_id)',
  checks: 'cityHash64(id)',
  alerts: 'cityHash64(id)',
  webhook_deliveries: 'cityHash64(id)',
  audit_log: 'cityHash64(id)',
};

/** The tables of DISTRIBUTED_TABLES that live in a sibling of the data database (databases.ts). */
const DISTRIBUTED_IN: Record<string, DatabaseRole> = { audit_log: 'audit' };

/**
 * Creates each `_all` table that is missing, and makes again one whose columns are no
 * longer its table's (a migration added one; a Distributed table holds no data).
 */
async function distributedTablesOn(client: ClickHouseClient, data: string, cluster: string): Promise<void> {
  const c = sqlIdentifier(cluster);
  for (const [table, key] of Object.entries(DISTRIBUTED_TABLES)) {
    const database = databasesOf(data)[DISTRIBUTED_IN[table] ?? 'data'];
    const db = sqlIdentifier(database);
    const all = `${table}_all`;
    const [want, have] = await Promise.all([columnsOf(client, database, table), columnsOf(client, database, all)]);
    if (have === want) continue;
    if (have !== '')
      await client.command({ query: `DROP TABLE IF EXISTS ${db}.${sqlIdentifier(all)} ON CLUSTER ${c}` });
    await client.command({
      query: `CREATE TABLE IF NOT EXISTS ${db}.${sqlIdentifier(all)} ON CLUSTER ${c} AS ${db}.${sqlIdentifier(table)}
        ENGINE = Distributed(${c}, ${db}, ${sqlIdentifier(table)}, ${key})`,
    });
  }
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
