import { createHash } from 'node:crypto';
import { Gauge, type Counter, type Histogram, type Registry } from 'prom-client';
import type { AlertMessage, CheckMessage } from '@telemetry/contract';
import {
  counter,
  FairSlots,
  histogram,
  sleepOn,
  systemClock,
  type Clock,
  type Component,
  type Logger,
} from '@telemetry/platform';
import { maskUrl, type StoredMonitor } from '@telemetry/store';
import { isPending, storedCallCheck } from './probes/heartbeat.js';
import type { ProbeContext, SlotResult } from './probes/index.js';
import { checkMessage } from './probes/verdict.js';
import { checkIdFor, nextSlot } from './slots.js';
import { decide, INITIAL_STATE, type AlertState, type Transition } from './state.js';
import { inMaintenance } from './maintenance.js';
import { slotVerdict } from './quorum.js';

export { nextSlot, phaseOf } from './slots.js';

export interface SchedulerDeps {
  monitors: { all(): Iterable<StoredMonitor> };
  /** Does this runner own the monitor now (see GroupAssignment)? */
  owns(monitorId: string): boolean;
  /** Where each monitor's alerting state starts when this runner takes it on. */
  loadStates(ids: string[]): Promise<Map<string, AlertState>>;
  /** Runs one check (the service binds the egress policy). */
  probe(m: StoredMonitor, ctx: Omit<ProbeContext, 'policy'>): Promise<SlotResult>;
  publishCheck(check: CheckMessage): Promise<void>;
  /**
   * The stored checks of `m` among `ids` (other locations' checks of the slot starting at
   * `slot`): the runner of a monitor's first location decides on all of them.
   */
  slotChecks(m: StoredMonitor, ids: string[], slot: number): Promise<CheckMessage[]>;
  publishAlert(alert: AlertMessage): Promise<void>;
  logger: Logger;
  registry: Registry;
  runnerId: string;
  /** RUNNER_LOCATION: recorded in every check; the runner checks the monitors that list it. */
  location: string;
  maxConcurrentChecks: number;
  maxBodyBytes: number;
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
  /** Decisions of multi-location slots waiting for the other locations' checks, in slot order. */
  deciding?: Promise<void>;
  /** Their timers (cleared when the entry goes). */
  decisionTimers?: Set<object>;
}

/** Does the runner of `location` decide on `m` (it is the monitor's first location)? */
function decidesHere(m: StoredMonitor, location: string): boolean {
  return m.locations[0] === location;
}

export function alertIdFor(monitorId: string, t: Transition): string {
  const h = createHash('sha256').update(`${monitorId}\n${t.incidentId}\n${t.type}`).digest('hex');
  return `alr_${h.slice(0, 24)}`;
}

/**
 * Tenants named in runner_tenant_checks_skipped_total; the skips of any further tenant are
 * counted under `_other` (a label value per tenant would grow without bound).
 */
export const MAX_TENANT_LABELS = 100;

const CHECK_SECONDS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const LATE_SECONDS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];

/**
 * Runs the checks of the monitors this runner owns, each on its own slot grid, publishes
 * every result to the check-results topic and every state change to the alerts topic
 * (both acknowledged by Kafka before the next step).
 */
export class Scheduler implements Component {
  readonly name = 'scheduler';
  private readonly entries = new Map<string, Entry>();
  /** MAX_CONCURRENT_CHECKS, shared fairly among the tenants of the monitors scheduled here. */
  private readonly slots: FairSlots;
  private readonly tenantLabels = new Set<string>();
  private stopping = false;
  private loading: Promise<void> | undefined;
  private reloadAgain = false;
  private warnedNoMonitor = false;
  private readonly checks: Counter<'status'>;
  private readonly skipped: Counter<'reason'>;
  private readonly tenantSkipped: Counter<'tenant'>;
  private readonly confirmations: Counter<'outcome'>;
  private readonly alerts: Counter<'type'>;
  private readonly missingLocations: Counter;
  private readonly duration: Histogram<'status'>;
  private readonly lateness: Histogram;
  private readonly ownedGauge: Gauge;
  private readonly clock: Clock;

  constructor(private readonly deps: SchedulerDeps) {
    this.clock = deps.clock ?? systemClock;
    this.slots = new FairSlots(deps.maxConcurrentChecks);
    const r = deps.registry;
    this.checks = counter(r, 'runner_checks_total', 'Checks run and published, by status', ['status']);
    // reason: overlap, busy, tenant_share, unpublished, handed_over
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
    this.missingLocations = counter(
      r,
      'runner_location_checks_missing_total',
      "Another location's check of a slot not stored in time for the decision (a listed location without runners, or late)",
      [],
    );
    this.duration = histogram(r, 'runner_check_duration_seconds', 'Response time of checks', ['status'], CHECK_SECONDS);
    this.lateness = histogram(r, 'runner_check_start_delay_seconds', 'Check start after its slot', [], LATE_SECONDS);
    this.ownedGauge = new Gauge({
      name: 'runner_monitors_owned',
      help: 'Monitors whose checks this runner runs',
      registers: [r],
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
        const wasDecider = decidesHere(e.monitor, this.deps.location);
        e.monitor = m;
        if (wasDecider !== decidesHere(m, this.deps.location)) {
          // It decides here now (or no longer): start from its last alert, as on a handover.
          this.clearDecisions(e);
          this.clock.clearTimeout(e.timer);
          e.state = undefined;
          pending = true;
        } else if (e.state) this.arm(id, e);
      }
    }
    this.ownedGauge.set(this.entries.size);
    this.warnIfNoMonitorHere();
    if (pending) this.loadPending();
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
    for (const e of this.entries.values()) {
      this.clock.clearTimeout(e.timer);
      this.clearDecisions(e);
    }
    const running = [...this.entries.values()].flatMap((e) => [e.running, e.deciding].filter((p) => p !== undefined));
    // Checks in flight finish (and publish) if they can within 5 s; then they are cut.
    const grace = new Promise((r) => this.clock.setTimeout(() => r(undefined), 5000, { unref: true }));
    await Promise.race([Promise.all(running), grace]);
    for (const e of this.entries.values()) e.abort?.abort();
    await Promise.all(running);
    this.entries.clear();
  }

  /** The tenant's label in runner_tenant_checks_skipped_total. */
  private tenantLabel(tenant: string): string {
    if (this.tenantLabels.has(tenant)) return tenant;
    if (this.tenantLabels.size >= MAX_TENANT_LABELS) return '_other';
    this.tenantLabels.add(tenant);
    return tenant;
  }

  /** Monitors scheduled here now (for tests and logs). */
  scheduled(): string[] {
    return [...this.entries.keys()];
  }

  private drop(id: string, e: Entry): void {
    this.clock.clearTimeout(e.timer);
    this.clearDecisions(e);
    e.abort?.abort();
    this.entries.delete(id);
  }

  /** Loads the alerting state of new entries (one load at a time), then arms them. */
  private loadPending(): void {
    if (this.loading) {
      this.reloadAgain = true;
      return;
    }
    if (![...this.entries.values()].some((e) => !e.state)) return;
    this.loading = this.loadStates().finally(() => {
      this.loading = undefined;
      if (this.reloadAgain) {
        this.reloadAgain = false;
        this.loadPending();
      }
    });
  }

  private async loadStates(): Promise<void> {
    await sleepOn(this.clock, this.deps.stateSettleMs);
    const ids = [...this.entries].filter(([, e]) => !e.state).map(([id]) => id);
    if (ids.length === 0 || this.stopping) return;
    let states: Map<string, AlertState>;
    try {
      states = await this.deps.loadStates(ids);
    } catch (err) {
      // Checking matters more than the state: start from unknown (a monitor that
      // was already down may then alert once more).
      this.deps.logger.warn('could not load alert states; starting from unknown', { err: String(err) });
      states = new Map();
    }
    for (const id of ids) {
      const e = this.entries.get(id);
      if (!e || e.state) continue;
      e.state = states.get(id) ?? INITIAL_STATE;
      this.arm(id, e);
    }
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
    this.lateness.observe(Math.max(0, now - slot) / 1000);
    this.arm(id, e, Math.max(now, slot));
    if (!this.deps.owns(id)) {
      // Ownership lapsed (no heartbeat): the group is about to move it.
      this.skipped.inc({ reason: 'handed_over' });
      return;
    }
    if (e.running) {
      this.skipped.inc({ reason: 'overlap' });
      return;
    }
    const tenant = e.monitor.tenant_id;
    const taken = this.slots.tryTake(tenant);
    if ('refused' in taken) {
      const reason = taken.refused === 'total' ? 'busy' : 'tenant_share';
      this.skipped.inc({ reason });
      this.tenantSkipped.inc({ tenant: this.tenantLabel(tenant) });
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
    const id = checkIdFor(m.id, slot, this.deps.location);
    const startedAt = new Date(this.clock.now());
    const ctx = {
      userAgent: `telemetry-check-runner/0.1 (+runner=${this.deps.runnerId}; location=${this.deps.location})`,
      checkId: id,
      monitorId: m.id,
      maxBodyBytes: this.deps.maxBodyBytes,
      signal,
    };
    let result = await this.deps.probe(m, ctx);
    // Confirmation (docs/monitors.md): a failure counts only if a second try after
    // confirm_delay_ms fails too; that try is the slot's check. A refused target is final.
    // (Heartbeat monitors refuse confirm_delay_ms: their downs come from no call.)
    const failing = !isPending(result) && result.status === 'down' && result.error !== 'target_not_allowed';
    if (failing && m.confirm_delay_ms > 0) {
      // A handover or stop ends the wait at once.
      await this.sleepUnlessAborted(m.confirm_delay_ms, signal);
      if (!signal.aborted) {
        result = await this.deps.probe(m, ctx);
        this.confirmations.inc({ outcome: !isPending(result) && result.status === 'down' ? 'confirmed' : 'recovered' });
      }
    }
    if (signal.aborted || this.entries.get(m.id) !== e || !this.deps.owns(m.id)) {
      // Handed over (or removed) while it ran: the new owner runs the next slot.
      this.skipped.inc({ reason: 'handed_over' });
      return;
    }
    if (isPending(result)) return;
    // A heartbeat's up rests on its call, already stored: nothing to publish.
    const stored = storedCallCheck(m, result, this.deps.location);
    const own = stored ?? checkMessage(m, id, startedAt, result, this.deps.location);
    if (!stored) {
      try {
        await this.deps.publishCheck(own);
      } catch (err) {
        this.skipped.inc({ reason: 'unpublished' });
        this.deps.logger.warn('check result not published', { monitor_id: m.id, check_id: id, err: String(err) });
        return;
      }
      this.checks.inc({ status: result.status });
      this.duration.observe({ status: result.status }, result.response_time / 1000);
    }
    // The runners of a monitor's first location decide; the others only check.
    if (!decidesHere(m, this.deps.location)) return;
    if (m.locations.length > 1) this.decideLater(e, slot, own, startedAt);
    else await this.apply(e, own, startedAt);
  }

  /** Moves the monitor's state on the slot's check, and publishes the alerts of the change. */
  private async apply(e: Entry, check: CheckMessage, startedAt: Date): Promise<void> {
    const m = e.monitor;
    const state = e.state ?? INITIAL_STATE;
    const decided = decide(state, check, m);
    let next = decided.next;
    // Maintenance windows (docs/monitors.md): changes made in one are published marked, and
    // not delivered to webhooks. A monitor still down when its window ends closes that
    // incident and opens a new one, which pages.
    const inWindow = inMaintenance(m.maintenance_windows, startedAt);
    const changes: { transition: Transition; maintenance: boolean; earlierMs?: number }[] = [];
    if (decided.transition) {
      const up = decided.transition.type === 'monitor.up';
      // An up is held exactly when its down was: a page that went out gets its resolution.
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
    for (const change of changes) {
      const alert = this.alertOf(m, check, change.transition, change.maintenance, change.earlierMs ?? 0);
      try {
        await this.deps.publishAlert(alert);
      } catch (err) {
        // Not published: keep the old state, so the next check makes the change again
        // (alert ids are derived from the change: one already published is stored once).
        this.deps.logger.warn('alert not published; retrying with the next check', {
          monitor_id: m.id,
          type: alert.type,
          err: String(err),
        });
        return;
      }
      this.alerts.inc({ type: alert.type });
      this.deps.logger.info('monitor state changed', {
        monitor_id: m.id,
        type: alert.type,
        incident_id: alert.incident_id,
        ...(alert.maintenance ? { maintenance: true } : {}),
      });
    }
    e.state = next;
  }

  /**
   * A slot of a monitor with several locations is decided once every location's check of
   * it can be stored: when the slowest possible check has ended (timeout_ms, or the
   * confirmation and a second timeout) and RUNNER_STATE_SETTLE_MS more have passed for
   * it to reach ClickHouse. Then the other locations' checks of the slot are read (once,
   * and once more after the settle time for those missing) and judged with this one by
   * the monitor's quorum. Decisions run in slot order and hold no check slot.
   */
  private decideLater(e: Entry, slot: number, own: CheckMessage, startedAt: Date): void {
    const m = e.monitor;
    const longest = m.confirm_delay_ms > 0 ? m.confirm_delay_ms + 2 * m.timeout_ms : m.timeout_ms;
    const settle = this.deps.stateSettleMs;
    const at = slot + longest + settle;
    const timers = (e.decisionTimers ??= new Set());
    const timer = this.clock.setTimeout(
      () => {
        timers.delete(timer);
        e.deciding = (e.deciding ?? Promise.resolve())
          .then(async () => {
            if (!this.stillDeciding(e)) return;
            const others = new Map(
              m.locations.filter((l) => l !== this.deps.location).map((l) => [checkIdFor(m.id, slot, l), l]),
            );
            let found = await this.readSlot(m, others, slot);
            if (found.length < others.size && this.stillDeciding(e)) {
              await sleepOn(this.clock, settle);
              found = await this.readSlot(m, others, slot);
            }
            if (!this.stillDeciding(e)) return;
            const verdict = slotVerdict(m, [own, ...found]);
            if (verdict.missing.length > 0) {
              this.missingLocations.inc(verdict.missing.length);
              this.deps.logger.warn('checks of some locations missing from a slot', {
                monitor_id: m.id,
                locations: verdict.missing,
              });
            }
            await this.apply(e, verdict.check, startedAt);
          })
          .catch((err: unknown) => {
            this.deps.logger.error('slot decision failed', { monitor_id: m.id, err: String(err) });
          });
      },
      Math.max(0, at - this.clock.now()),
    );
    timers.add(timer);
  }

  /** Still the monitor's decider here: not stopped, not handed over, not removed. */
  private stillDeciding(e: Entry): boolean {
    const m = e.monitor;
    return (
      !this.stopping &&
      this.entries.get(m.id) === e &&
      this.deps.owns(m.id) &&
      decidesHere(m, this.deps.location) &&
      e.state !== undefined
    );
  }

  /** The other locations' checks of a slot that are stored (none when ClickHouse does not answer). */
  private async readSlot(m: StoredMonitor, others: Map<string, string>, slot: number): Promise<CheckMessage[]> {
    try {
      const found = await this.deps.slotChecks(m, [...others.keys()], slot);
      return found.map((c) => ({ ...c, location: others.get(c.id) ?? c.location }));
    } catch (err) {
      this.deps.logger.warn("could not read the other locations' checks", { monitor_id: m.id, err: String(err) });
      return [];
    }
  }

  private clearDecisions(e: Entry): void {
    for (const t of e.decisionTimers ?? []) this.clock.clearTimeout(t);
    e.decisionTimers?.clear();
  }

  /** Waits `ms`; a handover or stop ends the wait at once. */
  private async sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
    await Promise.race([
      sleepOn(this.clock, ms),
      new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })),
    ]);
  }

  private alertOf(
    m: StoredMonitor,
    check: CheckMessage,
    transition: Transition,
    maintenance: boolean,
    earlierMs: number,
  ): AlertMessage {
    return {
      id: alertIdFor(m.id, transition),
      type: transition.type,
      monitor_id: m.id,
      tenant_id: m.tenant_id,
      incident_id: transition.incidentId,
      ...(maintenance ? { maintenance: true } : {}),
      created_at: new Date(this.clock.now() - earlierMs).toISOString(),
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
}
