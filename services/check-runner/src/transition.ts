import type { AlertMessage, CheckMessage } from '@telemetry/contract';
import type { StoredMonitor } from '@telemetry/store';
import { alertOf, type AlertChange } from './alerts.js';
import { inMaintenance } from '@telemetry/contract';
import { decide, type AlertState } from './state.js';

/** What a monitor's state moves on, besides the check: the settings that judge it. */
export type TransitionMonitor = Pick<
  StoredMonitor,
  'id' | 'tenant_id' | 'name' | 'url' | 'failure_threshold' | 'recovery_threshold' | 'maintenance_windows'
>;

export interface TransitionTimes {
  /** When the slot's check started: maintenance windows are judged at this instant. */
  startedAt: Date;
  /** Now (milliseconds): the alerts' created_at. */
  now: number;
}

/**
 * A monitor's next alerting state after the slot's check, and the alerts that change
 * publishes, in order (pure: no I/O, no clock). Thresholds as in `decide` (state.ts).
 * Maintenance windows (docs/monitors.md): changes made in one are published marked, and
 * not delivered to webhooks. An up is held exactly when its down was: a page that went
 * out gets its resolution. A monitor still down when its window ends closes that
 * incident and opens a new one, which pages.
 *
 * The caller keeps the old state unless every alert is published: the next check then
 * makes the change again (alert ids derive from the change: one already published is
 * stored once).
 */
export function transition(
  state: AlertState,
  check: CheckMessage,
  m: TransitionMonitor,
  at: TransitionTimes,
): { next: AlertState; alerts: AlertMessage[] } {
  const decided = decide(state, check, m);
  let next = decided.next;
  const inWindow = inMaintenance(m.maintenance_windows, at.startedAt);
  const changes: AlertChange[] = [];
  if (decided.transition) {
    const up = decided.transition.type === 'monitor.up';
    changes.push({ transition: decided.transition, maintenance: up ? state.held === true : inWindow });
    if (!up) next = { ...next, held: inWindow };
  } else if (!inWindow && next.state === 'down' && next.held && check.status === 'down') {
    // The held incident's up is dated a second before the new down: the last alert (the
    // monitor's status, and the state a new owner loads) is then the down, whatever the
    // order of two alerts made in the same second.
    changes.push({
      transition: { type: 'monitor.up', incidentId: next.incidentId ?? check.id },
      maintenance: true,
      earlierMs: 1000,
    });
    changes.push({ transition: { type: 'monitor.down', incidentId: check.id }, maintenance: false });
    next = { ...next, incidentId: check.id, streakStart: check.id, held: false };
  }
  return { next, alerts: changes.map((c) => alertOf(m, check, c, at.now)) };
}
