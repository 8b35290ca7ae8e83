import { sqlIdentifier, type Engine, type Statement } from '@telemetry/platform';

/**
 * Turns low-cardinality `String` columns (statuses, kinds) into `LowCardinality(String)`
 * on current ClickHouse (docs/clickhouse.md, "Two engines"); 18.16 keeps `String`, so
 * there this is no statement at all. Only columns outside the sort key: ClickHouse
 * does not change the type of a key column in place. Idempotent: a column already of
 * that type is left as it is.
 */
export function lowCardinality(db: string, engine: Engine, table: string, columns: string[]): Statement[] {
  if (!engine.modern) return [];
  const changes = columns.map((c) => `MODIFY COLUMN ${sqlIdentifier(c)} LowCardinality(String)`).join(', ');
  return [`ALTER TABLE ${db}.${sqlIdentifier(table)} ${changes}`];
}
