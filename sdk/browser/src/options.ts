import { LIMITS, NAME_PATTERN } from '@telemetry/contract/limits';

/**
 * What a page may pass to the SDK and what it is told back: the options of a client and
 * their defaults, the event as the gateway receives it, the error given to `onError`, and
 * the checks that refuse bad input before anything is stored (a bad option throws at
 * construction; a bad event is reported and never queued). The limits are the gateway's
 * (libs/contract/src/limits.ts), so what passes here is not refused there.
 */

export interface TelemetryOptions {
  /** A telemetry access key (`tk_…`). It is sent as `?key=`: a page cannot hide it anyway. */
  key: string;
  /** The gateway's base URL, e.g. `https://collect.example`. */
  endpoint: string;
  /** The `source` of every event, e.g. the shop's host name. */
  source: string;
  /** Send as soon as this many events wait (default 20). */
  batchSize?: number;
  /** Send an event at most this long after it was tracked (default 2000 ms). */
  flushIntervalMs?: number;
  /** Unsent events kept (default 1000); beyond it the oldest are dropped, and counted. */
  maxQueuedEvents?: number;
  /** First retry delay after a failure (default 1000 ms); doubled per failure, jittered. */
  retryMinMs?: number;
  /** Longest retry delay (default 60000 ms). */
  retryMaxMs?: number;
  /**
   * Where the anonymous id and the user id are kept: `localStorage` (the default: the
   * visitor keeps one anonymous id across visits) or `memory` (a new one each page load;
   * nothing about the visitor is stored). Unsent events are kept in localStorage either way.
   */
  persistence?: 'localStorage' | 'memory';
  /** Told about events dropped for good: refused by the gateway (a 4xx other than 408 and 429) or invalid at `track`. */
  onError?: (error: TelemetryError) => void;
}

/** One event as the gateway receives it. */
export interface TrackedEvent {
  source: string;
  category: string;
  payload: Record<string, unknown>;
  /** UUIDv7: every retry carries it, so the gateway stores the event once. */
  id: string;
  /** When it was tracked, by this browser's clock (the request's `sent_at` corrects the skew). */
  timestamp: string;
  /** The visitor's anonymous id (`anonymous_id` column); absent in events stored by an older SDK. */
  anonymous_id?: string;
  /** The user id `identify` set (`user_id` column); absent before identify and after reset. */
  user_id?: string;
}

export interface TelemetryError {
  /** The gateway's HTTP status; 0 when `track` refused the event before sending it. */
  status: number;
  /** The gateway's error code (docs/errors.md), `INVALID_EVENT` from `track` or `INVALID_USER_ID` from `identify`. */
  code: string;
  message: string;
  /** The events dropped (none for `INVALID_USER_ID`). */
  events: TrackedEvent[];
}

export interface TelemetryStats {
  /** Unsent events of this site and key, in every tab. */
  queued: number;
  /** Events dropped because the queue was full, since the storage was new. */
  dropped: number;
}

/** The options with every default filled in. */
export type ResolvedOptions = Required<Omit<TelemetryOptions, 'onError'>> & Pick<TelemetryOptions, 'onError'>;

const NAME = new RegExp(NAME_PATTERN);
/** Depth of a payload such that the request's JSON stays within the gateway's depth limit. */
const MAX_PAYLOAD_DEPTH = LIMITS.maxJsonDepth - 4;

/** Checks the options and fills in the defaults; throws a TypeError naming the bad one. */
export function resolveOptions(options: TelemetryOptions): ResolvedOptions {
  const { key, endpoint, source } = options;
  if (typeof key !== 'string' || key === '') throw new TypeError('Telemetry: key is required');
  if (typeof endpoint !== 'string' || !/^https?:\/\/[^/]/.test(endpoint))
    throw new TypeError('Telemetry: endpoint must be an http(s) URL');
  if (typeof source !== 'string' || !NAME.test(source) || source.length > LIMITS.maxNameLength)
    throw new TypeError(`Telemetry: source must match ${NAME_PATTERN}`);
  const persistence = options.persistence ?? 'localStorage';
  if (persistence !== 'localStorage' && persistence !== 'memory')
    throw new TypeError("Telemetry: persistence must be 'localStorage' or 'memory'");
  const num = (name: keyof TelemetryOptions, fallback: number, min: number): number => {
    const v = options[name] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min)
      throw new TypeError(`Telemetry: ${name} must be a number of at least ${min}`);
    return v;
  };
  return {
    key,
    endpoint,
    source,
    onError: options.onError,
    persistence,
    batchSize: num('batchSize', 20, 1),
    flushIntervalMs: num('flushIntervalMs', 2000, 0),
    maxQueuedEvents: num('maxQueuedEvents', 1000, 1),
    retryMinMs: num('retryMinMs', 1000, 1),
    retryMaxMs: num('retryMaxMs', 60_000, 1),
  };
}

/** Why `track` refuses an event with these arguments, or undefined (its size is checked once it is JSON). */
export function trackProblem(category: string, payload: Record<string, unknown>, at: Date): string | undefined {
  return typeof category !== 'string' || !NAME.test(category) || category.length > LIMITS.maxNameLength
    ? `category must match ${NAME_PATTERN}, at most ${LIMITS.maxNameLength} characters`
    : typeof payload !== 'object' || payload === null || Array.isArray(payload)
      ? 'payload must be an object'
      : !Number.isFinite(+at)
        ? 'time must be a valid date'
        : depth(payload) > MAX_PAYLOAD_DEPTH
          ? `payload may nest at most ${MAX_PAYLOAD_DEPTH} levels`
          : undefined;
}

/** How deeply objects and arrays nest in `v` (1 for a flat object), stopping past the limit. */
function depth(v: unknown, level = 0): number {
  if (typeof v !== 'object' || v === null || level > MAX_PAYLOAD_DEPTH) return level;
  let max = level + 1;
  for (const x of Object.values(v)) max = Math.max(max, depth(x, level + 1));
  return max;
}
