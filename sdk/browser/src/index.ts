import { TelemetryClient } from './client.js';
import type { TelemetryOptions, TelemetryStats } from './options.js';

export { TelemetryClient } from './client.js';
export type { TelemetryError, TelemetryOptions, TelemetryStats, TrackedEvent } from './options.js';

/** What `<script src="…/sdk/v1.js">` puts on `window.Telemetry`, and the package exports as `Telemetry`. */
export interface TelemetryApi {
  /** Starts sending; events tracked before it wait for it (up to 1000). A second call is ignored. */
  init(options: TelemetryOptions): void;
  /** Queues an event; returns its id (undefined before `init`, or when the event is invalid). */
  track(category: string, payload?: Record<string, unknown>, time?: Date | number): string | undefined;
  /** The user id of the events tracked from now on (before `init`: of those tracked after this call). */
  identify(userId: string): void;
  /** Forgets the user id and the anonymous id: later events are a new visitor's. */
  reset(): void;
  /** Who the next event is about (undefined before `init`): Segment's `user().anonymousId()`, PostHog's `get_distinct_id()`. */
  user(): { anonymousId: string; userId: string | undefined } | undefined;
  /** Sends what waits now; resolves when it is sent or kept for a retry. */
  flush(): Promise<void>;
  stats(): TelemetryStats;
}

/** A facade that can be used before `init` (a bundler's import order or the snippet's queue). */
export function createTelemetry(): TelemetryApi {
  let client: TelemetryClient | undefined;
  // Calls before init, replayed in their order (an identify applies to the tracks after it).
  const early: ((c: TelemetryClient) => unknown)[] = [];
  const later = (call: (c: TelemetryClient) => unknown): void => {
    if (client) call(client);
    else if (early.length < 1000) early.push(call);
  };
  return {
    init(options) {
      if (client) return;
      client = new TelemetryClient(options);
      for (const call of early.splice(0)) call(client);
    },
    track(category, payload, time = Date.now()) {
      if (client) return client.track(category, payload, time);
      const at = +time;
      later((c) => c.track(category, payload, at));
      return undefined;
    },
    identify: (userId) => later((c) => c.identify(userId)),
    reset: () => later((c) => c.reset()),
    user: () => client?.user(),
    flush: () => client?.flush() ?? Promise.resolve(),
    stats: () => client?.stats() ?? { queued: 0, dropped: 0 },
  };
}

/** The page's default instance, the package's `Telemetry` export. */
export const Telemetry: TelemetryApi = createTelemetry();
