import type { CheckMessage } from '@telemetry/contract';
import { quorumOf, type StoredMonitor } from '@telemetry/store';

/** What the checks of one slot from every location say (docs/monitors.md, "Locations and quorum"). */
export interface SlotVerdict {
  /** The check the monitor's state moves on: a failing one when the quorum failed, else a passing one. */
  check: CheckMessage;
  /** Locations whose check failed, and those whose check did not arrive in time. */
  down: string[];
  missing: string[];
}

/**
 * The slot's verdict over its checks (pure): down when at least `quorum` locations'
 * checks are down; else it passes, so one location with a bad network path opens no
 * incident. A location whose check is missing counts as not failing. The check it
 * returns is the first (in the monitor's order of locations) that agrees with the
 * verdict; its id is then the incident's, the same whichever runner decides.
 */
export function slotVerdict(
  m: Pick<StoredMonitor, 'locations' | 'quorum'>,
  checks: readonly CheckMessage[],
): SlotVerdict {
  const byLocation = new Map(checks.map((c) => [c.location ?? '', c]));
  const ordered = m.locations.flatMap((l) => byLocation.get(l) ?? []);
  const down = ordered.filter((c) => c.status === 'down').map((c) => c.location ?? '');
  const missing = m.locations.filter((l) => !byLocation.has(l));
  const failing = down.length >= quorumOf(m);
  const agreeing = ordered.find((c) => (c.status === 'down') === failing) ?? ordered[0] ?? checks[0]!;
  if (failing || agreeing.status !== 'down') return { check: agreeing, down, missing };
  // Every check there failed, below the quorum: the slot passes, without their error.
  const { error: _error, ...passing } = agreeing;
  return { check: { ...passing, status: 'up' }, down, missing };
}
