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
  /** Sends what waits now; resolves when it is sent or kept for a retry. */
  flush(): Promise<void>;
  stats(): TelemetryStats;
}

/** A facade that can be used before `init` (a bundler's import order or the snippet's queue). */
export function createTelemetry(): TelemetryApi {
  let client: TelemetryClient | undefined;
  const early: [string, Record<string, unknown> | undefined, number][] = [];
  return {
    init(options) {
      if (client) return;
      client = new TelemetryClient(options);
      for (const [category, payload, time] of early.splice(0)) client.track(category, payload, time);
    },
    track(category, payload, time = Date.now()) {
      if (client) return client.track(category, payload, time);
      if (early.length < 1000) early.push([category, payload, +time]);
      return undefined;
    },
    flush: () => client?.flush() ?? Promise.resolve(),
    stats: () => client?.stats() ?? { queued: 0, dropped: 0 },
  };
}

/** The page's default instance, the package's `Telemetry` export. */
export const Telemetry: TelemetryApi = createTelemetry();
