import { AppError, type PgQueryable } from '@telemetry/platform';
import { sqlState } from './pg.js';
import type { CONFIG_KEY_TABLES } from './schema-config-keys.js';

/**
 * Runs a write that stores a configuration key on a row of `table`: PostgreSQL's unique
 * violation of `<table>_config_key` (migration 9) becomes 409 KEY_TAKEN; every other
 * error goes on as it was. Inside a caller's transaction the violation has aborted it,
 * so the error must reach the transaction's end (it does: it is thrown).
 */
export async function refuseTakenKey<T>(
  table: (typeof CONFIG_KEY_TABLES)[number],
  key: string | null | undefined,
  what: string,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (sqlState(err) === '23505' && (err as { constraint?: unknown }).constraint === `${table}_config_key`) {
      throw new AppError('KEY_TAKEN', `another ${what} of this tenant has the key ${String(key)}`, {
        key: key ?? null,
      });
    }
    throw err;
  }
}

/** The column that names a row of each table of CONFIG_KEY_TABLES (a status page's slug). */
const ID_COLUMNS = { monitors: 'id', channels: 'id', escalation_policies: 'id', status_pages: 'slug' } as const;

/**
 * Stores `key` on the tenant's row `id` of `table` in `tx` (POST /api/config/adopt); its
 * version moves on, as its answers change. False when the row is gone; 409 KEY_TAKEN.
 */
export async function setConfigKeyIn(
  tx: PgQueryable,
  table: (typeof CONFIG_KEY_TABLES)[number],
  what: string,
  tenantId: string,
  id: string,
  key: string,
): Promise<boolean> {
  const { rowCount } = await refuseTakenKey(table, key, what, () =>
    tx.query(
      `UPDATE ${table} SET config_key = $1, version = version + 1, updated_at = now()
       WHERE tenant_id = $2 AND ${ID_COLUMNS[table]} = $3`,
      [key, tenantId, id],
    ),
  );
  return rowCount === 1;
}
