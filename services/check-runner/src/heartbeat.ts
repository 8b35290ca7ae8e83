import { DEFAULT_HEARTBEAT_GRACE_SECONDS } from '@telemetry/contract';
import type { StoredMonitor } from '@telemetry/store';
import { failed, type ProbeResult } from './verdict.js';

/** The newest heartbeat call of a monitor since a time (unix seconds), as stored in `checks`. */
export type LastCall = (
  m: StoredMonitor,
  sinceSeconds: number,
) => Promise<{ id: string; created_at: string } | undefined>;

/**
 * The verdict on a heartbeat monitor at `now` (docs/monitors.md, "Heartbeat monitors"):
 * up, resting on its newest call, when one came within interval_seconds +
 * heartbeat_grace_seconds; nothing yet while a new monitor's first call is not due;
 * else down (`heartbeat_missing`). Its calls are its `up` checks: the runner stores only
 * the downs.
 */
export async function heartbeatProbe(
  m: StoredMonitor,
  now: number,
  lastCall: LastCall,
  /** RUNNER_STATE_SETTLE_MS: a call needs that long to reach ClickHouse, so it is given that much more. */
  settleMs: number,
): Promise<ProbeResult> {
  const graceSeconds = m.heartbeat_grace_seconds ?? DEFAULT_HEARTBEAT_GRACE_SECONDS;
  const allowedMs = (m.interval_seconds + graceSeconds) * 1000 + settleMs;
  // Stored times are whole seconds: a call is taken as made at the end of its second.
  const last = await lastCall(m, Math.floor((now - allowedMs) / 1000));
  if (last && Date.parse(last.created_at) + 1000 + allowedMs > now) {
    return { status: 'up', status_code: 0, response_time: 0, stored: last };
  }
  if (!last && Date.parse(m.created_at) + allowedMs > now) return { ...failed('heartbeat_missing', 0), pending: true };
  return failed('heartbeat_missing', 0);
}
