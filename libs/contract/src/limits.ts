/**
 * Ingestion limits. Each is documented in docs/api.md; a 413 names the limit it hit.
 * They are defaults: the gateway's config can lower (not raise past sanity) some of them.
 */
export const LIMITS = {
  /** Events in one POST /api/telemetry/events request. */
  maxEventsPerRequest: 500,
  /** Bytes of one request body after decompression. */
  maxBodyBytes: 1024 * 1024,
  /** Bytes of one event, serialized as JSON. */
  maxEventBytes: 64 * 1024,
  /** Nesting depth of objects and arrays anywhere in the body. */
  maxJsonDepth: 32,
  /** Length of `source` and `category`. */
  maxNameLength: 128,
  /** Length of a client event id. */
  maxClientIdLength: 128,
  /** Length of a monitor id. */
  maxMonitorIdLength: 128,
} as const;

/** `source`, `category`: start with a letter or digit, then letters, digits and . _ : / - */
export const NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:/-]*$';
/** Client event ids and monitor ids: letters, digits and . _ : - */
export const ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]*$';

/** Check statuses. `up` is the seed's; the rest are ours (docs/api.md). */
export const CHECK_STATUSES = ['up', 'down', 'degraded'] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];
