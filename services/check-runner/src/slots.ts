import { createHash } from 'node:crypto';
import { DEFAULT_LOCATION } from '@telemetry/contract';

/** Where a monitor's checks fall within its interval: spreads monitors over time. */
export function phaseOf(monitorId: string, intervalMs: number): number {
  return createHash('sha1').update(monitorId).digest().readUInt32BE(4) % intervalMs;
}

/**
 * The start of the first slot after `now`. Slots are `interval` apart at the monitor's
 * phase, the same on every runner: a runner taking a monitor over continues its grid,
 * so the slot the previous owner ran is not run again.
 */
export function nextSlot(monitorId: string, intervalSeconds: number, now: number): number {
  const interval = intervalSeconds * 1000;
  const phase = phaseOf(monitorId, interval);
  return (Math.floor((now - phase) / interval) + 1) * interval + phase;
}

/**
 * The id of the check of `monitorId` in the slot starting at `slotStartMs` from
 * `location`: the same on every runner of the location, so a check run twice (a
 * handover) is stored once.
 */
export function checkIdFor(monitorId: string, slotStartMs: number, location = DEFAULT_LOCATION): string {
  // Each location checks the slot: its id is its own (the default location's as before locations).
  const text =
    location === DEFAULT_LOCATION ? `${monitorId}\n${slotStartMs}` : `${monitorId}\n${slotStartMs}\n${location}`;
  return `chk_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
}
