import { Gauge, type Counter, type Registry } from 'prom-client';
import type { AlertMessage, CheckMessage } from '@telemetry/contract';
import { counter, sleepOn, type Clock, type Logger } from '@telemetry/platform';
import type { StoredMonitor } from '@telemetry/store';
import { publishAlerts } from './alerts.js';
import type { SchedulerMetrics } from './metrics.js';
import { slotVerdict } from './quorum.js';
import { checkIdFor, nextSlot } from './slots.js';
import { INITIAL_STATE, type AlertState } from './state.js';
import { StateLoader } from './state-loader.js';
import { transition } from './transition.js';

/**
 * Who decides a monitor's slots (docs/monitors.md, "Who decides"): a monitor of one
 * location is decided by the runner that checks it, as its check ends; one of several
 * locations by the owner of its partition in the decide group (decideGroupId), whatever
 * that runner's location, from every location's stored checks.
 */
export function decidedByChecker(m: Pick<StoredMonitor, 'locations'>): boolean {
  return m.locations.length <= 1;
}

/**
 * The Kafka consumer group every runner joins, whatever its location, over the
 * monitor-changes topic: the owner of a monitor's partition in it decides the monitor's
 * slots when it lists several locations. Two dots: a location has none, so no location's
 * group (`<group>.<location>`), nor its browser (`<group>.<location>.browser`) or run-once (`.run`) groups,
 * can be named so.
 */
export function decideGroupId(groupId: string): string {
  return `${groupId}.all.decide`;
}

/**
 * Does this runner decide `m` now: a monitor of several locations, not paused, whose
 * partition it owns in the decide group (`ownsInDecideGroup`). Kafka gives each partition
 * to one member at a time, and a member drops it before it rejoins (assignment.ts), so
 * two runners never hold the same monitor at once by this rule; a runner whose ownership
 * lapsed (no heartbeat for half a session) no longer passes it.
 */
export function decidesHere(
  m: Pick<StoredMonitor, 'id' | 'locations' | 'paused'>,
  ownsInDecideGroup: (monitorId: string) => boolean,
): boolean {
  return !m.paused && !decidedByChecker(m) && ownsInDecideGroup(m.id);
}

/** The longest a slot's check can run: timeout_ms, or the confirmation and a second timeout. */
function longestCheckMs(m: Pick<StoredMonitor, 'confirm_delay_ms' | 'timeout_ms'>): number {
  return m.confirm_delay_ms > 0 ? m.confirm_delay_ms + 2 * m.timeout_ms : m.timeout_ms;
}

/**
 * When a slot of a monitor with several locations is decided: once the slowest possible
 * check of it has ended (timeout_ms, or the confirmation and a second timeout) and
 * `settleMs` (RUNNER_STATE_SETTLE_MS) more have passed for it to reach ClickHouse.
 */
export function decisionAt(
  m: Pick<StoredMonitor, 'confirm_delay_ms' | 'timeout_ms'>,
  slot: number,
  settleMs: number,
): number {
  return slot + longestCheckMs(m) + settleMs;
}

/**
 * The first slot of `m` a decider that has its state now decides: the first whose decision
 * time is still ahead (earlier ones were the previous decider's to decide, or nobody's),
 * and never one at or before `after` (the last it handed to its decisions).
 */
export function firstUndecidedSlot(
  m: Pick<StoredMonitor, 'id' | 'interval_seconds' | 'confirm_delay_ms' | 'timeout_ms'>,
  now: number,
  settleMs: number,
  after?: number,
): number {
  const from = now - longestCheckMs(m) - settleMs;
  return nextSlot(m.id, m.interval_seconds, after === undefined ? from : Math.max(from, after));
}

export interface DecisionDeps {
  monitors: { all(): Iterable<StoredMonitor> };
  /** Does this runner own the monitor's partition in the decide group now (GroupAssignment.owns)? */
  decides(monitorId: string): boolean;
  /** Where each monitor's alerting state starts when this runner takes its decisions on: its last alert. */
  loadStates(ids: string[]): Promise<Map<string, AlertState>>;
  /** The stored checks of `m` among `ids` (every location's check of the slot starting at `slot`). */
  slotChecks(m: StoredMonitor, ids: string[], slot: number): Promise<CheckMessage[]>;
  publishAlert(alert: AlertMessage): Promise<void>;
  logger: Logger;
  registry: Registry;
  clock: Clock;
  /** RUNNER_STATE_SETTLE_MS. */
  settleMs: number;
  /** The scheduler's (runner_alerts_total). */
  metrics: SchedulerMetrics;
}

/** One monitor this runner decides. */
interface Deciding {
  monitor: StoredMonitor;
  /** Undefined until loaded; nothing is decided before. */
  state?: AlertState;
  /** The timer of the next slot's decision. */
  timer?: object;
  /** The last slot handed to `chain`. */
  last?: number;
  /** The decisions, run in slot order. */
  chain?: Promise<void>;
}

/**
 * The decisions of the monitors of several locations this runner owns in the decide
 * group (docs/monitors.md, "Locations and quorum"). At decisionAt of each slot, every
 * location's check of the slot is read (once, and once more after the settle time for
 * those missing) and judged by the monitor's quorum; the verdict's check moves the
 * monitor's state (transition.ts) and its alerts are published.
 *
 * Hand-over (the partition moves: a runner left, was killed or lost Kafka): the old
 * decider drops the monitor before the group can give it to another (assignment.ts), and
 * a decision already under way publishes nothing once it sees that. The new decider waits
 * the settle time, starts from the monitor's last alert (so an alert the old one published
 * just before is not made again), and decides only slots whose decision time is still
 * ahead. Should both still publish the same change (the old one's publication in flight),
 * the alert is the same message: its incident id is the slot's verdict check's id (the
 * first agreeing check in the order of `locations`, the same on every runner) and its id
 * derives from the incident and the change (alertIdFor), so it is stored once.
 */
export class SlotDecisions {
  private readonly entries = new Map<string, Deciding>();
  private readonly missing: Counter;
  private readonly decided: Gauge;
  private stopping = false;
  private readonly states: StateLoader<Deciding>;

  constructor(private readonly deps: DecisionDeps) {
    this.states = new StateLoader({
      clock: deps.clock,
      settleMs: deps.settleMs,
      logger: deps.logger,
      entries: this.entries,
      load: (ids) => deps.loadStates(ids),
      stopping: () => this.stopping,
      arm: (_id, e) => this.arm(e),
      failure: 'could not load alert states of decided monitors; starting from unknown',
    });
    this.missing = counter(
      deps.registry,
      'runner_location_checks_missing_total',
      "A location's check of a slot not stored in time for the decision (a listed location without runners, or late)",
      [],
    );
    this.decided = new Gauge({
      name: 'runner_monitors_decided',
      help: 'Monitors of several locations whose slots this runner decides (its share in the decide group)',
      registers: [deps.registry],
    });
  }

  /** Matches the decisions to the registry and the decide group's ownership; call after either changes. */
  reconcile(): void {
    if (this.stopping) return;
    const desired = new Map<string, StoredMonitor>();
    for (const m of this.deps.monitors.all()) if (decidesHere(m, (id) => this.deps.decides(id))) desired.set(m.id, m);
    for (const [id, e] of this.entries) {
      if (!desired.has(id)) {
        // A decision under way sees the entry gone and publishes nothing.
        this.deps.clock.clearTimeout(e.timer);
        this.entries.delete(id);
      }
    }
    let pending = false;
    for (const [id, m] of desired) {
      const e = this.entries.get(id);
      if (!e) {
        this.entries.set(id, { monitor: m });
        pending = true;
      } else if (e.monitor.version !== m.version) {
        // Decided on the settings as they are now; the grid may have moved (interval).
        e.monitor = m;
        if (e.state) this.arm(e);
      }
    }
    this.decided.set(this.entries.size);
    if (pending) this.states.request();
  }

  /** Monitors decided here now (for tests and logs). */
  deciding(): string[] {
    return [...this.entries.keys()];
  }

  /** Stops deciding: timers cleared; the decisions under way, to wait for (they see `stopping`). */
  stop(): Promise<void>[] {
    this.stopping = true;
    for (const e of this.entries.values()) this.deps.clock.clearTimeout(e.timer);
    const chains = [...this.entries.values()].flatMap((e) => (e.chain ? [e.chain] : []));
    this.entries.clear();
    this.decided.set(0);
    return chains;
  }

  /** Sets the timer of the next slot's decision. */
  private arm(e: Deciding): void {
    const { clock, settleMs } = this.deps;
    clock.clearTimeout(e.timer);
    if (this.stopping) return;
    const slot = firstUndecidedSlot(e.monitor, clock.now(), settleMs, e.last);
    e.timer = clock.setTimeout(
      () => {
        e.timer = undefined;
        if (this.entries.get(e.monitor.id) !== e || this.stopping) return;
        e.last = slot;
        this.arm(e);
        e.chain = (e.chain ?? Promise.resolve())
          .then(() => this.decide(e, slot))
          .catch((err: unknown) => {
            this.deps.logger.error('slot decision failed', { monitor_id: e.monitor.id, err: String(err) });
          });
      },
      Math.max(0, decisionAt(e.monitor, slot, settleMs) - clock.now()),
    );
  }

  /** Still this monitor's decider: not stopped, not handed over, not removed. */
  private live(e: Deciding): boolean {
    const m = e.monitor;
    return !this.stopping && this.entries.get(m.id) === e && this.deps.decides(m.id) && e.state !== undefined;
  }

  private async decide(e: Deciding, slot: number): Promise<void> {
    if (!this.live(e)) return;
    // Decided on the monitor's settings as they are now (a change may have come in meanwhile).
    const m = e.monitor;
    const ids = new Map(m.locations.map((l) => [checkIdFor(m.id, slot, l), l]));
    let found = await this.readSlot(m, ids, slot);
    if (found.length < ids.size && this.live(e)) {
      await sleepOn(this.deps.clock, this.deps.settleMs);
      found = await this.readSlot(m, ids, slot);
    }
    if (!this.live(e)) return;
    if (found.length === 0) {
      // No location's check (all gone, or ClickHouse away): nothing to judge; the state holds.
      this.missing.inc(ids.size);
      this.deps.logger.warn('no check of a slot stored by any location: slot not decided', { monitor_id: m.id });
      return;
    }
    const verdict = slotVerdict(m, found);
    if (verdict.missing.length > 0) {
      this.missing.inc(verdict.missing.length);
      this.deps.logger.warn('checks of some locations missing from a slot', {
        monitor_id: m.id,
        locations: verdict.missing,
      });
    }
    // Maintenance windows are judged at the slot: the same instant whichever runner decides.
    const { next, alerts } = transition(e.state ?? INITIAL_STATE, verdict.check, m, {
      startedAt: new Date(slot),
      now: this.deps.clock.now(),
    });
    if (await publishAlerts(this.deps, alerts)) e.state = next;
  }

  /** Every location's stored check of a slot (none when ClickHouse does not answer). */
  private async readSlot(m: StoredMonitor, ids: Map<string, string>, slot: number): Promise<CheckMessage[]> {
    try {
      const found = await this.deps.slotChecks(m, [...ids.keys()], slot);
      return found.map((c) => ({ ...c, location: ids.get(c.id) ?? c.location }));
    } catch (err) {
      this.deps.logger.warn("could not read the locations' checks of a slot", { monitor_id: m.id, err: String(err) });
      return [];
    }
  }
}
