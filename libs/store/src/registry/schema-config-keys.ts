import type { PgMigration } from '@telemetry/platform';

/**
 * The objects a configuration file manages (docs/as-code.md): each has a `key`, unique
 * within its tenant and kind, stored in the `config_key` column. An object without one
 * (made in the console, or by the API without a key) is never touched by `apply`, not
 * even by `--prune`.
 */
export const CONFIG_KEY_TABLES = ['monitors', 'channels', 'escalation_policies', 'status_pages'] as const;

/** A key as the file and the API have it: 1 to 63 of a-z, 0-9, '.', '_', '-', starting with a letter or digit. */
export const CONFIG_KEY_CHECK = `config_key ~ '^[a-z0-9][a-z0-9._-]{0,62}$'`;

/** Migration 9: `config_key` on each table of CONFIG_KEY_TABLES, unique per tenant where set. */
export const CONFIG_KEYS_MIGRATION: PgMigration = {
  version: 9,
  name: 'configuration keys',
  statements: CONFIG_KEY_TABLES.flatMap((table) => [
    `ALTER TABLE ${table} ADD COLUMN config_key text CHECK (${CONFIG_KEY_CHECK})`,
    `CREATE UNIQUE INDEX ${table}_config_key ON ${table} (tenant_id, config_key) WHERE config_key IS NOT NULL`,
  ]),
};
