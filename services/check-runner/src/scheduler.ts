import type { AlertMessage } from '@telemetry/contract';
import { FairSlots, systemClock, type Clock, type Component } from '@telemetry/platform';
import type { StoredMonitor } from '@telemetry/store';
import { publishAlerts } from './alerts.js';
import { runCheck, type CheckDeps } from './check.js';
import { decidedByChecker, SlotDecisions, type DecisionDeps } from './decision.js';
import { SchedulerMetrics } from './metrics.js';
import { nextSlot } from './slots.js';
import { INITIAL_STATE, type AlertState } from './state.js';
import { StateLoader } from './state-loader.js';
import { transition } from './transition.js';

// Where it was before slots.ts: test/e2e/fair-checks.int.test.ts reads the slot grid from here.
export { phaseOf } from './slots.js';

export interface SchedulerDeps extends CheckDeps, Omit<DecisionDeps, 'clock' | 'settleMs' | 'metrics'> {
  monitors: { all(): Iterable<StoredMonitor> };
  /** Does this runner check the monitor now (its location's group, or the browser group: see GroupAssignment)? */
  owns(monitorId: string): boolean;
  /** Does this runner own the monitor in the decide group (decision.ts), whatever its location? */
  decides(monitorId: string): boolean;
  /** Where each monitor's alerting state starts when this runner takes it on. */
  loadStates(ids: string[]): Promise<Map<string, AlertState>>;
  publishAlert(alert: AlertMessage): Promise<void>;
  /** RUNNER_LOCATION: the runner checks the monitors that list it. */
  location: string;
  maxConcurrentChecks: number;
  /**
   * Wait before reading the state of monitors just taken on: an alert the previous owner
   * published moments before handing over must reach ClickHouse first (the consumer
   * writes within BATCH_MAX_AGE_MS), or it would be made again. Also the time other
   * locations' checks of a slot are given to reach ClickHouse before the slot is decided.
   */
  stateSettleMs: number;
  /** Time and timers (the system clock; a fake in unit tests). */
  clock?: Clock;
}

interface Entry {
  monitor: StoredMonitor;
  timer?: object;
  /** Undefined until loaded; no check runs before. */
  state?: AlertState;
  running?: Promise<void>;
  abort?: AbortController;
}

/**
 * Runs the checks of the monitors this runner owns, each on its own slot grid (slots.ts):
 * timers, ownership and the fair share of check slots. What a slot does lives beside it:
 * the check (check.ts, probes/), the state change (transition.ts) and its alerts
 * (alerts.ts), each published to Kafka and acknowledged before the next step. The slots
 * of monitors of several locations are decided apart from their checks, by whichever
 * runner owns them in the decide group (decision.ts, run from here).
 */
export class Scheduler implements Component {
  readonly name = 'scheduler';
  private readonly entries = new Map<string, Entry>();
  /** MAX_CONCURRENT_CHECKS, shared fairly among the tenants of the monitors scheduled here. */
  private readonly slots: FairSlots;
  private stopping = false;
  private readonly states: StateLoader<Entry>;
  private warnedNoMonitor = false;
  private readonly metrics: SchedulerMetrics;
  private readonly decisions: SlotDecisions;
  private readonly clock: Clock;
  /** What a slot's check and its alerts are run with (check.ts, alerts.ts). */
  private readonly slotDeps: SchedulerDeps & { clock: Clock; metrics: SchedulerMetrics };

  constructor(private readonly deps: SchedulerDeps) {
    this.clock = deps.clock ?? systemClock;
    this.slots = new FairSlots(deps.maxConcurrentChecks);
    this.metrics = new SchedulerMetrics(deps.registry);
    this.decisions = new SlotDecisions({
      ...deps,
      clock: this.clock,
      settleMs: deps.stateSettleMs,
      metrics: this.metrics,
    });
    this.slotDeps = { ...deps, clock: this.clock, metrics: this.metrics };
    this.states = new StateLoader({
      clock: this.clock,
      settleMs: deps.stateSettleMs,
      logger: deps.logger,
      entries: this.entries,
      load: (ids) => deps.loadStates(ids),
      stopping: () => this.stopping,
      arm: (id, e) => this.arm(id, e),
      failure: 'could not load alert states; starting from unknown',
    });
  }

  start(): Promise<void> {
    this.reconcile();
    return Promise.resolve();
  }

  health(): boolean {
    return !this.stopping;
  }

  /** Matches the schedule to the registry and the ownership; call after either changes. */
  reconcile(): void {
    if (this.stopping) return;
    const desired = new Map<string, StoredMonitor>();
    for (const m of this.deps.monitors.all()) {
      if (!m.paused && m.locations.includes(this.deps.location) && this.deps.owns(m.id)) desired.set(m.id, m);
    }
    for (const [id, e] of this.entries) {
      if (!desired.has(id)) this.drop(id, e);
    }
    const perTenant = new Map<string, number>();
    for (const m of desired.values()) perTenant.set(m.tenant_id, (perTenant.get(m.tenant_id) ?? 0) + 1);
    this.slots.setDemand(perTenant);
    let pending = false;
    for (const [id, m] of desired) {
      const e = this.entries.get(id);
      if (!e) {
        this.entries.set(id, { monitor: m });
        pending = true;
      } else if (e.monitor.version !== m.version) {
        const wasDecider = decidedByChecker(e.monitor);
        e.monitor = m;
        if (wasDecider !== decidedByChecker(m)) {
          // Its checker decides now (one location left), or no longer: start from its last
          // alert, as on a handover (the decide group's owner starts from it too).
          this.clock.clearTimeout(e.timer);
          e.state = undefined;
          pending = true;
        } else if (e.state) this.arm(id, e);
      }
    }
    this.metrics.owned.set(this.entries.size);
    this.warnIfNoMonitorHere();
    if (pending) this.states.request();
    this.decisions.reconcile();
  }

  /** Once: a runner whose location no monitor lists checks nothing (RUNNER_LOCATION set after monitors were made?). */
  private warnIfNoMonitorHere(): void {
    if (this.warnedNoMonitor) return;
    const all = [...this.deps.monitors.all()];
    if (all.length === 0 || all.some((m) => m.locations.includes(this.deps.location))) return;
    this.warnedNoMonitor = true;
    this.deps.logger.warn("no monitor lists this runner's location: it checks nothing until one does", {
      location: this.deps.location,
      hint: 'set the monitors\' locations, or RUNNER_LOCATION (docs/monitors.md, "Locations and quorum")',
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const e of this.entries.values()) this.clock.clearTimeout(e.timer);
    const running = [
      ...[...this.entries.values()].flatMap((e) => (e.running ? [e.running] : [])),
      ...this.decisions.stop(),
    ];
    // Checks in flight finish (and publish) if they can within 5 s; then they are cut.
    const grace = new Promise((r) => this.clock.setTimeout(() => r(undefined), 5000, { unref: true }));
    await Promise.race([Promise.all(running), grace]);
    for (const e of this.entries.values()) e.abort?.abort();
    await Promise.all(running);
    this.entries.clear();
  }

  /** Monitors scheduled here now (for tests and logs). */
  scheduled(): string[] {
    return [...this.entries.keys()];
  }

  /** Monitors of several locations decided here now (for tests and logs). */
  deciding(): string[] {
    return this.decisions.deciding();
  }

  private drop(id: string, e: Entry): void {
    this.clock.clearTimeout(e.timer);
    e.abort?.abort();
    this.entries.delete(id);
  }

  private arm(id: string, e: Entry, now = this.clock.now()): void {
    this.clock.clearTimeout(e.timer);
    if (this.stopping) return;
    const slot = nextSlot(id, e.monitor.interval_seconds, now);
    e.timer = this.clock.setTimeout(() => this.fire(id, slot), slot - now);
  }

  private fire(id: string, slot: number): void {
    const e = this.entries.get(id);
    if (!e || this.stopping) return;
    const now = this.clock.now();
    this.metrics.lateness.observe(Math.max(0, now - slot) / 1000);
    this.arm(id, e, Math.max(now, slot));
    if (!this.deps.owns(id)) {
      // Ownership lapsed (no heartbeat): the group is about to move it.
      this.metrics.skipped.inc({ reason: 'handed_over' });
      return;
    }
    if (e.running) {
      this.metrics.skipped.inc({ reason: 'overlap' });
      return;
    }
    const tenant = e.monitor.tenant_id;
    const taken = this.slots.tryTake(tenant);
    if ('refused' in taken) {
      const reason = taken.refused === 'total' ? 'busy' : 'tenant_share';
      this.metrics.tenantSkip(tenant, reason);
      // A tenant beyond its share is the expected case (the metric counts it): not a warning.
      if (reason === 'busy')
        this.deps.logger.warn('check skipped: too many in flight', { monitor_id: id, tenant_id: tenant });
      else
        this.deps.logger.debug("check skipped: the free check slots are other tenants' share", {
          monitor_id: id,
          tenant_id: tenant,
        });
      return;
    }
    const abort = new AbortController();
    e.abort = abort;
    e.running = this.run(e, slot, abort.signal)
      .catch((err: unknown) => {
        this.deps.logger.error('check failed unexpectedly', { monitor_id: id, err: String(err) });
      })
      .finally(() => {
        taken.release();
        e.running = undefined;
        e.abort = undefined;
      });
  }

  private async run(e: Entry, slot: number, signal: AbortSignal): Promise<void> {
    const m = e.monitor;
    const ran = await runCheck(
      this.slotDeps,
      m,
      slot,
      signal,
      () => this.entries.get(m.id) === e && this.deps.owns(m.id),
    );
    // A monitor of several locations is decided by the decide group's owner (decision.ts):
    // its checkers only check.
    if (!ran || !decidedByChecker(m)) return;
    // Moves the monitor's state on the slot's check once its alerts are published.
    const { next, alerts } = transition(e.state ?? INITIAL_STATE, ran.check, e.monitor, {
      startedAt: ran.startedAt,
      now: this.clock.now(),
    });
    if (await publishAlerts(this.slotDeps, alerts)) e.state = next;
  }
}
