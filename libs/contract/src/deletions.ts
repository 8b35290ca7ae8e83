import type { ValidateFunction } from 'ajv';
import { createAjv } from './ajv.js';
import { closedSchema, dateTime } from './schema-parts.js';
import { IDENTITY_SCHEMA } from './schemas.js';

/** Deletion on request (docs/deletions.md): limits, the request body, what the API shows. */
export const DELETION_LIMITS = {
  /** Ids (user ids and anonymous ids together) of one request. */
  maxIdsPerRequest: 1000,
  /** Pending and running deletions of one tenant at once (more: 429 RATE_LIMITED, Retry-After). */
  maxOpenPerTenant: 10,
  /** Seconds a refused request is told to wait (Retry-After) when maxOpenPerTenant are open. */
  retryAfterSeconds: 60,
  /** Suppressed ids (user ids and anonymous ids together) of one tenant (more: 403 QUOTA_EXCEEDED). */
  maxSuppressionsPerTenant: 100_000,
  /** Deletions per page of GET /api/deletions. */
  maxPage: 100,
  defaultPage: 20,
} as const;

export const DELETION_STATES = ['pending', 'running', 'done', 'failed'] as const;
export type DeletionState = (typeof DELETION_STATES)[number];

/** A deletion id: `del_` and 20 lower-case hex digits. */
export const DELETION_ID_PATTERN = '^del_[a-z0-9]{20}$';

/** Body of POST /api/deletions: at least one id, at most maxIdsPerRequest in all. */
export interface DeletionCreate {
  user_ids?: string[];
  anonymous_ids?: string[];
}

/** A deletion as the API shows it (POST, GET /api/deletions[/{id}]). */
export interface DeletionView {
  id: string;
  state: DeletionState;
  /** Who asked: a person's id (per_…) or key:<key id>, as the audit log names them. */
  requested_by: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  user_ids: string[];
  anonymous_ids: string[];
  /** Rows deleted so far per ClickHouse table; `rollup_minutes`: events_per_minute minutes recomputed. */
  counts: Record<string, number>;
  /** Why it failed (state failed), or the last transient error while it is retried. */
  error: string;
}

const ids = {
  type: 'array',
  minItems: 1,
  maxItems: DELETION_LIMITS.maxIdsPerRequest,
  uniqueItems: true,
  // An id as the event schemas define anonymous_id and user_id.
  items: IDENTITY_SCHEMA,
} as const;

export const deletionCreateSchema = {
  ...closedSchema('DeletionCreate', [], { user_ids: ids, anonymous_ids: ids }),
  description: `At least one id (a list given is not empty); at most ${DELETION_LIMITS.maxIdsPerRequest} user ids and anonymous ids together (more: 413 TOO_MANY_IDS). A tenant has at most ${DELETION_LIMITS.maxOpenPerTenant} deletions pending or running at once (more: 429 RATE_LIMITED with Retry-After) and at most ${DELETION_LIMITS.maxSuppressionsPerTenant} suppressed ids (more: 403 QUOTA_EXCEEDED).`,
  minProperties: 1,
} as const;

const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;
export const deletionViewSchema = closedSchema(
  'Deletion',
  [
    'id',
    'state',
    'requested_by',
    'created_at',
    'started_at',
    'finished_at',
    'user_ids',
    'anonymous_ids',
    'counts',
    'error',
  ],
  {
    id: { type: 'string', pattern: DELETION_ID_PATTERN },
    state: { type: 'string', enum: DELETION_STATES },
    requested_by: { type: 'string' },
    created_at: dateTime,
    started_at: nullableTime,
    finished_at: nullableTime,
    user_ids: { type: 'array', items: { type: 'string' } },
    anonymous_ids: { type: 'array', items: { type: 'string' } },
    counts: {
      type: 'object',
      additionalProperties: { type: 'integer', minimum: 0 },
      description: 'Rows deleted so far per table (events, failed_events); rollup_minutes: minutes recomputed.',
    },
    error: { type: 'string' },
  },
);

export const DELETION_SCHEMAS = [deletionCreateSchema, deletionViewSchema] as const;

/** Compiles the request body's schema once (a composition root calls it). */
export function createDeletionValidator(): ValidateFunction<DeletionCreate> {
  return createAjv(DELETION_SCHEMAS).getSchema<DeletionCreate>('DeletionCreate')!;
}
