import type { CheckMessage, ScreenshotMessage } from '@telemetry/contract';
import { sleepOn, type Clock, type Logger } from '@telemetry/platform';
import type { StoredMonitor } from '@telemetry/store';
import type { SchedulerMetrics } from './metrics.js';
import { isPending, storedCallCheck } from './probes/heartbeat.js';
import type { ProbeContext, SlotResult } from './probes/index.js';
import { checkMessage } from './probes/verdict.js';
import { checkIdFor } from './slots.js';

export interface CheckDeps {
  /** Runs one check (the service binds the egress policy). */
  probe(m: StoredMonitor, ctx: Omit<ProbeContext, 'policy'>): Promise<SlotResult>;
  publishCheck(check: CheckMessage): Promise<void>;
  /** A browser check's failure screenshot, after its check (the screenshots topic). */
  publishScreenshot?(shot: ScreenshotMessage): Promise<void>;
  logger: Logger;
  runnerId: string;
  /** RUNNER_LOCATION: recorded in every check. */
  location: string;
  maxBodyBytes: number;
}

/**
 * Runs the check of `m`'s slot: the probe, its confirmation, and the publication of the
 * result (acknowledged by Kafka). Resolves to the check the monitor's state moves on and
 * when it started, or undefined when there is none: nothing to judge yet, not
 * published, or the monitor handed over while it ran (`stillOwned` false).
 */
export async function runCheck(
  deps: CheckDeps & { clock: Clock; metrics: SchedulerMetrics },
  m: StoredMonitor,
  slot: number,
  signal: AbortSignal,
  stillOwned: () => boolean,
): Promise<{ check: CheckMessage; startedAt: Date } | undefined> {
  const { clock, metrics, location } = deps;
  const id = checkIdFor(m.id, slot, location);
  const startedAt = new Date(clock.now());
  const ctx = {
    userAgent: `telemetry-check-runner/0.1 (+runner=${deps.runnerId}; location=${location})`,
    checkId: id,
    monitorId: m.id,
    maxBodyBytes: deps.maxBodyBytes,
    signal,
  };
  let result = await deps.probe(m, ctx);
  // Confirmation (docs/monitors.md): a failure counts only if a second try after
  // confirm_delay_ms fails too; that try is the slot's check. A refused target is final.
  // (Heartbeat monitors refuse confirm_delay_ms: their downs come from no call.)
  const failing = !isPending(result) && result.status === 'down' && result.error !== 'target_not_allowed';
  if (failing && m.confirm_delay_ms > 0) {
    // A handover or stop ends the wait at once.
    await sleepUnlessAborted(clock, m.confirm_delay_ms, signal);
    if (!signal.aborted) {
      result = await deps.probe(m, ctx);
      metrics.confirmations.inc({
        outcome: !isPending(result) && result.status === 'down' ? 'confirmed' : 'recovered',
      });
    }
  }
  if (signal.aborted || !stillOwned()) {
    // Handed over (or removed) while it ran: the new owner runs the next slot.
    metrics.skipped.inc({ reason: 'handed_over' });
    return undefined;
  }
  if (isPending(result)) return undefined;
  // A heartbeat's up rests on its call, already stored: nothing to publish.
  const stored = storedCallCheck(m, result, location);
  if (stored) return { check: stored, startedAt };
  const check = checkMessage(m, id, startedAt, result, location);
  try {
    await deps.publishCheck(check);
  } catch (err) {
    metrics.skipped.inc({ reason: 'unpublished' });
    deps.logger.warn('check result not published', { monitor_id: m.id, check_id: id, err: String(err) });
    return undefined;
  }
  const png = (result as { png?: Buffer }).png;
  if (png && deps.publishScreenshot) {
    try {
      await deps.publishScreenshot({
        check_id: id,
        monitor_id: m.id,
        tenant_id: m.tenant_id,
        created_at: check.created_at,
        png_base64: png.toString('base64'),
      });
    } catch (err) {
      // The check stands (screenshot: true, but nothing to serve): the next failure brings one.
      deps.logger.warn('check screenshot not published', { monitor_id: m.id, check_id: id, err: String(err) });
    }
  }
  metrics.checks.inc({ status: result.status });
  metrics.duration.observe({ status: result.status }, result.response_time / 1000);
  return { check, startedAt };
}

/** Waits `ms`; a handover or stop ends the wait at once. */
async function sleepUnlessAborted(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  await Promise.race([
    sleepOn(clock, ms),
    new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })),
  ]);
}
