import type { CheckError, CheckMessage, CheckStatus, CheckTimings, MonitorSettings } from '@telemetry/contract';

/** What one check found, whatever the monitor's type. */
export interface ProbeResult {
  status: CheckStatus;
  status_code: number;
  /** Milliseconds from the start of the request to the end of the (read part of the) body. */
  response_time: number;
  error?: CheckError;
  /** tls monitors: whole days until the certificate expires. */
  tls_days_left?: number;
  /** What failed, in words (a failed assertion, a browser step): at most MONITOR_LIMITS.maxCheckDetailLength. */
  detail?: string;
  /** Per-step, navigation, Web Vitals or packet timings, where the type measures them. */
  timings?: CheckTimings;
  /** A browser check kept a screenshot of its failure (published on the screenshots topic). */
  screenshot?: boolean;
}

/** Milliseconds since it was made, to a hundredth: a check's response time. */
export function stopwatch(): () => number {
  const started = performance.now();
  return () => Math.round((performance.now() - started) * 100) / 100;
}

/** A passing check: `degraded` when slower than the monitor's degraded_threshold_ms, else `up`. */
export function passed(
  m: Pick<MonitorSettings, 'degraded_threshold_ms'>,
  responseTime: number,
  extra: Partial<ProbeResult> = {},
): ProbeResult {
  const slow = m.degraded_threshold_ms !== null && responseTime > m.degraded_threshold_ms;
  return { status: slow ? 'degraded' : 'up', status_code: 0, response_time: responseTime, ...extra };
}

/**
 * A failing check. A refused target tells nothing more: no timing (it could time the address).
 * `extra` may carry `detail` (what failed, in words), `timings` or `screenshot`.
 */
export function failed(error: CheckError, responseTime: number, extra: Partial<ProbeResult> = {}): ProbeResult {
  return {
    status: 'down',
    status_code: 0,
    response_time: error === 'target_not_allowed' ? 0 : responseTime,
    error,
    ...extra,
  };
}

/**
 * What a check found, as a check message and a run-once reply both carry it: the status and
 * its numbers, and the optional fields only when the probe set them.
 */
export function findings(
  r: ProbeResult,
): Pick<CheckMessage, 'status' | 'response_time' | 'status_code' | 'error' | 'tls_days_left' | 'detail' | 'timings'> {
  return {
    status: r.status,
    response_time: r.response_time,
    status_code: r.status_code,
    ...(r.error ? { error: r.error } : {}),
    ...(r.tls_days_left !== undefined ? { tls_days_left: r.tls_days_left } : {}),
    ...(r.detail !== undefined ? { detail: r.detail } : {}),
    ...(r.timings !== undefined ? { timings: r.timings } : {}),
  };
}

/** The check message of a result: what the runner publishes to the check-results topic. */
export function checkMessage(
  monitor: { id: string; tenant_id: string },
  id: string,
  startedAt: Date,
  r: ProbeResult,
  location: string,
): CheckMessage {
  return {
    id,
    monitor_id: monitor.id,
    tenant_id: monitor.tenant_id,
    ...findings(r),
    location,
    ...(r.screenshot !== undefined ? { screenshot: r.screenshot } : {}),
    created_at: startedAt.toISOString(),
  };
}
