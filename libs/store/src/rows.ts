/**
 * What every table module shares to turn a Kafka message into a row: JSON, then the
 * schema, then unix seconds in ClickHouse's DateTime range.
 */

import { sqlNumber, sqlString } from '@telemetry/platform';

export type Decoded<T> = { ok: true; row: T } | { ok: false; reason: string };

/** A compiled schema (ajv's ValidateFunction has this shape). */
export interface Validate<T> {
  (data: unknown): data is T;
  errors?: { instancePath: string; message?: string }[] | null;
}

/**
 * The conditions of a keyset page newest first, after a cursor: rows before (ms, id), on a
 * table ordered by a DateTime column `seconds` and its milliseconds `ms` (then id). The
 * first condition lets the sort key skip what comes after the cursor.
 */
export function beforeCursor(seconds: string, ms: string, cursor: { ms: number; id: string }): string[] {
  const at = sqlNumber(cursor.ms);
  return [
    `${seconds} <= toDateTime(${sqlNumber(Math.floor(cursor.ms / 1000))})`,
    `(${ms} < ${at} OR (${ms} = ${at} AND id < ${sqlString(cursor.id)}))`,
  ];
}

/**
 * NOTE: sent explicitly: ClickHouse 18.16's JSONEachRow does not apply a column's
 * DEFAULT (now()) to a field the row leaves out; it would store 1970-01-01.
 */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

// ClickHouse DateTime covers 1970-01-01 .. 2105; outside that a value is not stored.
export const MIN_TS = 0;
export const MAX_TS = 4_294_967_295;

/** An ISO time as unix milliseconds, if it is one within DateTime's range. */
export function toMillis(iso: string | undefined): number | null {
  if (iso === undefined) return null;
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) return null;
  return ms >= MIN_TS * 1000 && ms < (MAX_TS + 1) * 1000 ? ms : null;
}

/**
 * JSON, then the schema: the message, or why it can never be written. `fast`, a hand
 * check that answers true only for what the schema accepts (fast-checks.ts in the
 * contract), spares the schema for the messages it recognises.
 */
export function parseMessage<T>(
  validate: Validate<T>,
  kind: string,
  value: Buffer | null,
  fast?: (m: unknown) => m is T,
): { ok: true; m: T } | { ok: false; reason: string } {
  let m: unknown;
  try {
    if (value === null) throw new Error('empty message');
    m = JSON.parse(value.toString('utf8')) as unknown;
  } catch (err) {
    return { ok: false, reason: `not JSON: ${(err as Error).message}` };
  }
  if (fast?.(m)) return { ok: true, m };
  if (!validate(m)) {
    const e = validate.errors?.[0];
    return { ok: false, reason: `invalid ${kind} message: ${e?.instancePath} ${e?.message}` };
  }
  return { ok: true, m };
}

/**
 * A message as its row: JSON, the schema, then `timeField` as unix seconds in range
 * (else the reason), then `toRow` with that time, the insert time and the time in
 * milliseconds. `fast`: as parseMessage's.
 */
export function decodeTimed<M, R>(
  validate: Validate<M>,
  kind: string,
  value: Buffer | null,
  timeField: keyof M & string,
  toRow: (m: M, time: number, now: number, timeMs: number) => R,
  fast?: (m: unknown) => m is M,
): Decoded<R> {
  const parsed = parseMessage(validate, kind, value, fast);
  if (!parsed.ok) return parsed;
  const ms = toMillis(parsed.m[timeField] as string | undefined);
  if (ms === null) return { ok: false, reason: `${timeField} out of range` };
  return { ok: true, row: toRow(parsed.m, Math.floor(ms / 1000), nowSeconds(), ms) };
}
