import { createHash } from 'node:crypto';
import type { AlertMessage, CheckMessage, StateAlert } from '@telemetry/contract';
import type { Logger } from '@telemetry/platform';
import { maskUrl, type StoredMonitor } from '@telemetry/store';
import type { SchedulerMetrics } from './metrics.js';
import type { Transition } from './state.js';

/** The id of the alert of a change: the same on every runner, so a change published twice is stored once. */
export function alertIdFor(monitorId: string, t: Transition): string {
  const h = createHash('sha256').update(`${monitorId}\n${t.incidentId}\n${t.type}`).digest('hex');
  return `alr_${h.slice(0, 24)}`;
}

/** One state change to publish (see transition.ts). */
export interface AlertChange {
  transition: Transition;
  /** Made in a maintenance window: published marked, not delivered to webhooks. */
  maintenance: boolean;
  /** Dated this much before the decision (a held incident's up precedes the new down). */
  earlierMs?: number;
}

/** What the alerts topic carries for `change`, decided at `now` on `check` (pure). */
export function alertOf(
  m: Pick<StoredMonitor, 'id' | 'tenant_id' | 'name' | 'url'>,
  check: CheckMessage,
  change: AlertChange,
  now: number,
): StateAlert {
  const { transition, maintenance } = change;
  return {
    id: alertIdFor(m.id, transition),
    type: transition.type,
    monitor_id: m.id,
    tenant_id: m.tenant_id,
    incident_id: transition.incidentId,
    ...(maintenance ? { maintenance: true } : {}),
    created_at: new Date(now - (change.earlierMs ?? 0)).toISOString(),
    check: {
      id: check.id,
      status: check.status,
      response_time: check.response_time,
      status_code: check.status_code,
      ...(check.error ? { error: check.error } : {}),
      created_at: check.created_at,
    },
    // Only the URL as shown goes to Kafka and webhook bodies: no userinfo, query values masked.
    monitor: { name: m.name, url: maskUrl(m.url) },
  };
}

/**
 * Publishes a change's alerts in order (each acknowledged by Kafka before the next).
 * False when one was not taken: the caller then keeps the old state, so the next check
 * makes the change again (one already published is stored once: its id is the same).
 */
export async function publishAlerts(
  deps: { publishAlert(alert: AlertMessage): Promise<void>; logger: Logger; metrics: SchedulerMetrics },
  alerts: readonly AlertMessage[],
): Promise<boolean> {
  for (const alert of alerts) {
    try {
      await deps.publishAlert(alert);
    } catch (err) {
      deps.logger.warn('alert not published; retrying with the next check', {
        monitor_id: alert.monitor_id,
        type: alert.type,
        err: String(err),
      });
      return false;
    }
    deps.metrics.alerts.inc({ type: alert.type });
    deps.logger.info('monitor state changed', {
      monitor_id: alert.monitor_id,
      type: alert.type,
      incident_id: alert.incident_id,
      ...(alert.maintenance ? { maintenance: true } : {}),
    });
  }
  return true;
}
