import { AppError, inTransaction, type PgClient, type PgPool } from '@telemetry/platform';
import { REGISTRY_WRITE_LOCK } from './schema.js';

/** 503 REGISTRY_UNAVAILABLE: PostgreSQL did not answer (nothing was changed). */
export class RegistryUnavailableError extends AppError {
  constructor(message = 'the registry (PostgreSQL) did not answer; nothing was changed, retry') {
    super('REGISTRY_UNAVAILABLE', message, undefined, { 'Retry-After': '1' });
  }
}

/** PostgreSQL's SQLSTATE of an error, if it has one. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** SQLSTATEs that are our request's fault or our answer, not PostgreSQL being away. */
const ANSWERS = new Set(['23505', '23503', '23514', '22P02', '42501']);

/** Runs `fn`; an error that says PostgreSQL is away (not an AppError, not a constraint) becomes REGISTRY_UNAVAILABLE. */
export async function registryCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError) throw err;
    const state = sqlState(err);
    if (state !== undefined && ANSWERS.has(state)) throw err;
    throw new RegistryUnavailableError();
  }
}

/**
 * A registry write: one transaction that first takes the registry's write lock, so that
 * writes (and the change log's sequence) go in commit order and a count read inside it
 * (a quota) still holds at COMMIT.
 */
export function registryWrite<T>(pool: PgPool, fn: (tx: PgClient) => Promise<T>): Promise<T> {
  return registryCall(() =>
    inTransaction(pool, async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [REGISTRY_WRITE_LOCK]);
      return fn(tx);
    }),
  );
}

/** A timestamptz column as unix seconds (SELECT list). */
export function epochOf(column: string): string {
  return `extract(epoch from ${column})::bigint`;
}

/** An epochOf column's value (unix seconds, as text or a number) as an ISO time with milliseconds. */
export function isoOfEpoch(unix: string | number): string {
  return new Date(Number(unix) * 1000).toISOString();
}
