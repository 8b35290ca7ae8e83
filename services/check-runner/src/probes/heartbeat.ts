import { DEFAULT_HEARTBEAT_GRACE_SECONDS, type CheckMessage } from '@telemetry/contract';
import type { StoredMonitor } from '@telemetry/store';
import type { Probe, SlotResult } from './types.js';
import { checkMessage, failed, type ProbeResult } from './verdict.js';

/** A heartbeat call, as stored in `checks`. */
export interface StoredCall {
  id: string;
  created_at: string;
}

/** The newest heartbeat call of a monitor since a time (unix seconds), as stored in `checks`. */
export type LastCall = (m: StoredMonitor, sinceSeconds: number) => Promise<StoredCall | undefined>;

/**
 * What a heartbeat slot finds besides a `down` of the runner's own (`heartbeat_missing`,
 * a plain ProbeResult, published as any check): up, resting on the newest call, which is
 * already stored (nothing is published); or nothing to judge yet (a new monitor whose
 * first call is not due): no check, no verdict.
 */
export type HeartbeatFinding = (ProbeResult & { stored: StoredCall }) | { pending: true };

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
): Promise<ProbeResult | HeartbeatFinding> {
  const graceSeconds = m.heartbeat_grace_seconds ?? DEFAULT_HEARTBEAT_GRACE_SECONDS;
  const allowedMs = (m.interval_seconds + graceSeconds) * 1000 + settleMs;
  // Stored times are whole seconds: a call is taken as made at the end of its second.
  const last = await lastCall(m, Math.floor((now - allowedMs) / 1000));
  if (last && Date.parse(last.created_at) + 1000 + allowedMs > now) {
    return { status: 'up', status_code: 0, response_time: 0, stored: last };
  }
  if (!last && Date.parse(m.created_at) + allowedMs > now) return { pending: true };
  return failed('heartbeat_missing', 0);
}

export interface HeartbeatDeps {
  lastCall: LastCall;
  /** RUNNER_STATE_SETTLE_MS. */
  settleMs: number;
  now(): number;
}

/** The heartbeat type's entry in the probe map: what it does at a slot is read the calls. */
export function heartbeatProbeWith(deps: HeartbeatDeps): Probe {
  return (m) => heartbeatProbe(m, deps.now(), deps.lastCall, deps.settleMs);
}

/** Nothing to judge at this slot (see HeartbeatFinding). */
export function isPending(r: SlotResult): r is { pending: true } {
  return 'pending' in r;
}

/** The slot's check when it rests on a stored call (nothing to publish), else undefined. */
export function storedCallCheck(
  m: { id: string; tenant_id: string },
  r: ProbeResult | (ProbeResult & { stored: StoredCall }),
  location: string,
): CheckMessage | undefined {
  if (!('stored' in r)) return undefined;
  return checkMessage(m, r.stored.id, new Date(r.stored.created_at), r, location);
}
