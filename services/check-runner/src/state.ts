import type { StateAlertType, CheckStatus } from '@telemetry/contract';

/**
 * A monitor's alerting state. `unknown` until its first verdict (a new monitor, or a
 * runner that took it over and found no alert for it): a first passing check makes it
 * `up` without an alert; failing checks open an incident as from `up`.
 */
export interface AlertState {
  state: 'unknown' | 'up' | 'down';
  /** Consecutive failing checks (status down). */
  failures: number;
  /** Consecutive passing checks (up or degraded). */
  passes: number;
  /** The first failing check of the current streak: the id of the incident it opens. */
  streakStart?: string;
  /** While down: the open incident. */
  incidentId?: string;
  /** While down: the incident opened in a maintenance window (nobody was paged for it). */
  held?: boolean;
}

export const INITIAL_STATE: AlertState = { state: 'unknown', failures: 0, passes: 0 };

export interface Transition {
  type: StateAlertType;
  incidentId: string;
}

export interface Thresholds {
  failure_threshold: number;
  recovery_threshold: number;
}

/**
 * The next state after a check (pure). A monitor goes down after `failure_threshold`
 * consecutive failing checks and comes back up after `recovery_threshold` passing
 * ones; `degraded` counts as passing (slow is not down). Each change is one transition.
 */
export function decide(
  s: AlertState,
  check: { id: string; status: CheckStatus },
  t: Thresholds,
): { next: AlertState; transition?: Transition } {
  if (check.status === 'down') {
    const failures = s.failures + 1;
    const streakStart = s.failures === 0 ? check.id : (s.streakStart ?? check.id);
    if (s.state !== 'down' && failures >= t.failure_threshold) {
      return {
        next: { state: 'down', failures, passes: 0, streakStart, incidentId: streakStart },
        transition: { type: 'monitor.down', incidentId: streakStart },
      };
    }
    return { next: { ...s, failures, passes: 0, streakStart } };
  }
  const passes = s.passes + 1;
  if (s.state === 'down') {
    if (passes >= t.recovery_threshold) {
      const incidentId = s.incidentId ?? s.streakStart ?? check.id;
      return {
        next: { state: 'up', failures: 0, passes },
        transition: { type: 'monitor.up', incidentId },
      };
    }
    return { next: { ...s, failures: 0, passes, streakStart: undefined } };
  }
  return { next: { state: 'up', failures: 0, passes } };
}

/** The state a runner starts from when it takes a monitor over: its last alert. */
export function stateFromLastAlert(
  last: { type: string; incident_id: string; maintenance?: boolean } | undefined,
): AlertState {
  if (last?.type === 'monitor.down') {
    return { state: 'down', failures: 0, passes: 0, incidentId: last.incident_id, held: last.maintenance === true };
  }
  return last ? { state: 'up', failures: 0, passes: 0 } : INITIAL_STATE;
}
