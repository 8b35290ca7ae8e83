/**
 * The content check of `npm run bench:consume`: after the drains, whether our consumer and
 * the Kafka engine stored the same rows: counts, distinct event ids, a checksum over every
 * column but inserted_at (also of the comparison configuration's table), and the rollups.
 */
import { sqlIdentifier, type ClickHouseClient } from '@telemetry/platform';
import { scalar } from './context.js';
import { ENGINE_ROLLUP, ENGINE_TABLE } from './engine.js';
import { EVENTS, log } from './options.js';
import type { ConsumeReport } from './report.js';

/** Compares `database`.events (and `compareDatabase`.events when given) with the engine's copy. */
export async function sameRows(
  ch: ClickHouseClient,
  database: string,
  compareDatabase: string | undefined,
): Promise<ConsumeReport['check']> {
  const db = sqlIdentifier(database);
  const n = async (query: string): Promise<number> => Number(await scalar(ch, query));
  const checksumOf = (table: string): Promise<string> =>
    scalar(
      ch,
      `SELECT sum(cityHash64(toString(event_id), key_id, source, category, payload, client_event_id,
        toString(event_time), ifNull(toString(client_ts), ''), ifNull(toString(sent_at), ''), toString(received_at)))
      FROM ${table} FINAL`,
    );
  const rollupOf = (table: string): Promise<number> =>
    n(`SELECT sum(n) FROM (SELECT uniqExactMerge(events) AS n FROM ${table} GROUP BY minute, source, category)`);
  const check = {
    oursRows: await n(`SELECT count() FROM ${db}.events`),
    engineRows: await n(`SELECT count() FROM ${db}.${ENGINE_TABLE}`),
    oursDistinct: await n(`SELECT uniqExact(event_id) FROM ${db}.events`),
    engineDistinct: await n(`SELECT uniqExact(event_id) FROM ${db}.${ENGINE_TABLE}`),
    oursChecksum: await checksumOf(`${db}.events`),
    engineChecksum: await checksumOf(`${db}.${ENGINE_TABLE}`),
    compareChecksum: compareDatabase !== undefined ? await checksumOf(`${sqlIdentifier(compareDatabase)}.events`) : '',
    oursRollup: await rollupOf(`${db}.events_per_minute`),
    engineRollup: await rollupOf(`${db}.${ENGINE_ROLLUP}`),
    oursInsertedAtZero: await n(`SELECT countIf(toUInt32(inserted_at) = 0) FROM ${db}.events`),
    identical: false,
    oursComplete: false,
  };
  check.identical =
    [
      check.oursRows,
      check.engineRows,
      check.oursDistinct,
      check.engineDistinct,
      check.oursRollup,
      check.engineRollup,
    ].every((x) => x === EVENTS) &&
    check.oursChecksum === check.engineChecksum &&
    (compareDatabase === undefined || check.compareChecksum === check.oursChecksum);
  check.oursComplete =
    [check.oursRows, check.oursDistinct, check.oursRollup].every((x) => x === EVENTS) &&
    (compareDatabase === undefined || check.compareChecksum === check.oursChecksum);
  log(`content check: ${JSON.stringify(check)}`);
  return check;
}
