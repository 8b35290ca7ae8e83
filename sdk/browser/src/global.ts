import { createTelemetry, type TelemetryOptions } from './index.js';

/**
 * The `<script>` build (served at /sdk/v1.js): puts the API on `window.Telemetry` and
 * replays what the snippet queued before this file arrived, with the times of the calls.
 */
type Call = [name: string, args: ArrayLike<unknown>, time?: number];
const w = window as unknown as { Telemetry?: { q?: Call[]; init?: unknown } };
const stub = w.Telemetry;
// Loaded twice (two snippets): the first one stays.
if (!stub?.init || stub.q) {
  const api = createTelemetry();
  w.Telemetry = api;
  for (const [name, args, time] of stub?.q ?? []) {
    if (name === 'init') api.init(args[0] as TelemetryOptions);
    if (name === 'track')
      api.track(args[0] as string, args[1] as Record<string, unknown>, (args[2] as number | undefined) ?? time);
    if (name === 'identify') api.identify(args[0] as string);
    if (name === 'reset') api.reset();
    if (name === 'flush') void api.flush();
  }
}
