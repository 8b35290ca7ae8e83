import { Gauge, type Counter, type Histogram, type Registry } from 'prom-client';
import { counter, histogram } from '@telemetry/platform';

/**
 * Tenants named in runner_tenant_checks_skipped_total; the skips of any further tenant are
 * counted under `_other` (a label value per tenant would grow without bound).
 */
export const MAX_TENANT_LABELS = 100;

const CHECK_SECONDS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const LATE_SECONDS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];

/** The scheduler's metrics (services/check-runner/README.md), shared by the checks and the alerts it publishes. */
export class SchedulerMetrics {
  readonly checks: Counter<'status'>;
  /** reason: overlap, busy, tenant_share, unpublished, handed_over */
  readonly skipped: Counter<'reason'>;
  readonly confirmations: Counter<'outcome'>;
  readonly alerts: Counter<'type'>;
  readonly duration: Histogram<'status'>;
  readonly lateness: Histogram;
  readonly owned: Gauge;
  private readonly tenantSkipped: Counter<'tenant'>;
  private readonly tenantLabels = new Set<string>();

  constructor(r: Registry) {
    this.checks = counter(r, 'runner_checks_total', 'Checks run and published, by status', ['status']);
    this.skipped = counter(r, 'runner_checks_skipped_total', 'Check slots not run or not published', ['reason']);
    this.tenantSkipped = counter(
      r,
      'runner_tenant_checks_skipped_total',
      `Check slots skipped for want of a check slot (busy or tenant_share), by tenant (the first ${MAX_TENANT_LABELS} tenants skipped; then _other)`,
      ['tenant'],
    );
    this.confirmations = counter(
      r,
      'runner_check_confirmations_total',
      'Failing checks tried again after confirm_delay_ms, by what the second try found (confirmed: down again)',
      ['outcome'],
    );
    this.alerts = counter(r, 'runner_alerts_total', 'State changes published to the alerts topic', ['type']);
    this.duration = histogram(r, 'runner_check_duration_seconds', 'Response time of checks', ['status'], CHECK_SECONDS);
    this.lateness = histogram(r, 'runner_check_start_delay_seconds', 'Check start after its slot', [], LATE_SECONDS);
    this.owned = new Gauge({
      name: 'runner_monitors_owned',
      help: 'Monitors whose checks this runner runs',
      registers: [r],
    });
  }

  /** A slot of `tenant` skipped for want of a check slot. */
  tenantSkip(tenant: string, reason: 'busy' | 'tenant_share'): void {
    this.skipped.inc({ reason });
    this.tenantSkipped.inc({ tenant: this.tenantLabel(tenant) });
  }

  /** The tenant's label in runner_tenant_checks_skipped_total. */
  private tenantLabel(tenant: string): string {
    if (this.tenantLabels.has(tenant)) return tenant;
    if (this.tenantLabels.size >= MAX_TENANT_LABELS) return '_other';
    this.tenantLabels.add(tenant);
    return tenant;
  }
}
