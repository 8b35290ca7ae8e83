import { sqlIdentifier } from '@telemetry/platform';

/**
 * Where the tables live (docs/clickhouse.md, "Databases and users"). ClickHouse 18.16
 * grants access per database only (users.xml `allow_databases`), so the tables are
 * split by who needs them, and each service's ClickHouse user is given only its own:
 *
 * - `data`: CLICKHOUSE_DATABASE itself: events, checks, alerts and the rollups, the
 *   tables analysts read;
 * - `registry`: `<data>_registry`: monitors (their secrets sealed);
 * - `keys`: `<data>_keys`: tenants and access keys (hashes).
 *
 * Migration 5 moved monitors, tenants and access keys out of the data database.
 */
export interface Databases {
  data: string;
  registry: string;
  keys: string;
}

export type DatabaseRole = keyof Databases;

/** Longest CLICKHOUSE_DATABASE: its `_registry` sibling must still be a plain identifier. */
export const MAX_DATA_DATABASE_LENGTH = 55;

export function databasesOf(data: string): Databases {
  return { data, registry: registryDatabase(data), keys: keysDatabase(data) };
}

export function registryDatabase(data: string): string {
  return `${data}_registry`;
}

export function keysDatabase(data: string): string {
  return `${data}_keys`;
}

/** `db`.`table` in the data database's sibling `role`, quoted for SQL. */
export function tableIn(data: string, role: DatabaseRole, table: string): string {
  return `${sqlIdentifier(databasesOf(data)[role])}.${sqlIdentifier(table)}`;
}

/**
 * One ClickHouse user per service, with only what it needs (docs/operations.md,
 * "ClickHouse users"). `write` users may INSERT; `ddl` adds ALTER (the consumer drops
 * expired partitions); every other user is read-only (readonly=2: it may still set
 * query settings). The devstack creates these users for every database it provisions;
 * deploy/clickhouse/users.sql and the Kubernetes secrets do the same in production.
 */
export interface ServiceAccess {
  /** Which databases the user may use. */
  databases: readonly DatabaseRole[];
  write: boolean;
  ddl: boolean;
  /** The service (and variable) that uses it. */
  usedBy: string;
}

export const SERVICE_USERS = {
  ingest: { databases: ['keys'], write: false, ddl: false, usedBy: 'ingest gateway (CLICKHOUSE_USER)' },
  consumer: { databases: ['data'], write: true, ddl: true, usedBy: 'stream consumer (CLICKHOUSE_USER)' },
  query: {
    databases: ['data', 'registry', 'keys'],
    write: false,
    ddl: false,
    usedBy: 'query service (CLICKHOUSE_USER)',
  },
  registry: {
    databases: ['registry'],
    write: true,
    ddl: false,
    usedBy: 'query service (REGISTRY_CLICKHOUSE_USER): writes monitors',
  },
  runner: { databases: ['registry', 'data'], write: false, ddl: false, usedBy: 'check runner (CLICKHOUSE_USER)' },
  analyst: { databases: ['data'], write: false, ddl: false, usedBy: 'people and dashboards reading the tables' },
} as const satisfies Record<string, ServiceAccess>;

export type ServiceUser = keyof typeof SERVICE_USERS;

export const SERVICE_USER_NAMES = Object.keys(SERVICE_USERS) as ServiceUser[];
