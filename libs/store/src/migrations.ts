import type { ClickHouseClient } from '@clickhouse/client';
import { runMigrations, type Logger, type Migration, type MigrationsByVersion } from '@telemetry/platform';
import { alertsMigrations } from './alerts.js';
import { checksMigrations } from './checks.js';
import { eventsMigrations } from './events.js';
import { keysMigrations } from './keys.js';
import { monitorsMigrations } from './monitors.js';

/**
 * Versioned ClickHouse migrations. Each table module (events, checks, alerts, monitors,
 * keys) holds its own statements per version; a version applies them in this order.
 * Each statement runs on ClickHouse 18.16 and on current ClickHouse (no TTL, CODEC,
 * DateTime64, LowCardinality) and is idempotent (IF NOT EXISTS), so two services
 * migrating at once is harmless. Never edit a released version: add one (a new name
 * below, and entries under that number in the modules it touches). The tables are a
 * public interface for analysts: see docs/clickhouse.md.
 */
const VERSIONS: Record<number, string> = {
  1: 'events, checks and access keys',
  2: 'rollups: events per minute, checks per hour',
  3: 'monitor registry, alerts, check errors',
};

const MODULES: readonly MigrationsByVersion[] = [
  eventsMigrations,
  checksMigrations,
  keysMigrations,
  monitorsMigrations,
  alertsMigrations,
];

export const MIGRATIONS: readonly Migration[] = Object.entries(VERSIONS).map(([v, name]) => ({
  version: Number(v),
  name,
  statements: (db) => MODULES.flatMap((m) => m[Number(v)]?.(db) ?? []),
}));

/** Applies every migration of MIGRATIONS not yet applied to `database`. */
export function migrate(client: ClickHouseClient, database: string, logger: Logger): Promise<number[]> {
  return runMigrations(client, database, MIGRATIONS, logger);
}
