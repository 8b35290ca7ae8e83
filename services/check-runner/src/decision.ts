import type { Counter, Registry } from 'prom-client';
import type { CheckMessage } from '@telemetry/contract';
import { counter, sleepOn, type Clock, type Logger } from '@telemetry/platform';
import type { StoredMonitor } from '@telemetry/store';
import { slotVerdict } from './quorum.js';
import { checkIdFor } from './slots.js';

/** Does the runner of `location` decide on `m` (it is the monitor's first location)? */
export function decidesHere(m: Pick<StoredMonitor, 'locations'>, location: string): boolean {
  return m.locations[0] === location;
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
  const longest = m.confirm_delay_ms > 0 ? m.confirm_delay_ms + 2 * m.timeout_ms : m.timeout_ms;
  return slot + longest + settleMs;
}

export interface DecisionDeps {
  /** The stored checks of `m` among `ids` (other locations' checks of the slot starting at `slot`). */
  slotChecks(m: StoredMonitor, ids: string[], slot: number): Promise<CheckMessage[]>;
  logger: Logger;
  registry: Registry;
  clock: Clock;
  /** RUNNER_LOCATION. */
  location: string;
  /** RUNNER_STATE_SETTLE_MS. */
  settleMs: number;
}

/** One monitor's slot decisions waiting for the other locations' checks. */
export interface PendingDecisions {
  /** The decisions, run in slot order. */
  chain?: Promise<void>;
  /** Their timers (cleared when the monitor goes). */
  timers: Set<object>;
}

/**
 * The multi-location decision (docs/monitors.md, "Locations and quorum"): at decisionAt,
 * the other locations' checks of the slot are read (once, and once more after the settle
 * time for those missing) and judged with this runner's by the monitor's quorum.
 * Decisions run in slot order and hold no check slot.
 */
export class SlotDecider {
  private readonly missing: Counter;

  constructor(private readonly deps: DecisionDeps) {
    this.missing = counter(
      deps.registry,
      'runner_location_checks_missing_total',
      "Another location's check of a slot not stored in time for the decision (a listed location without runners, or late)",
      [],
    );
  }

  /**
   * Decides `m`'s slot later on `own` and the other locations' checks, then hands the
   * verdict's check to `apply`, unless `live` says the monitor is no longer decided here
   * (stopped, handed over, removed).
   */
  later(
    d: PendingDecisions,
    m: StoredMonitor,
    slot: number,
    own: CheckMessage,
    live: () => boolean,
    apply: (check: CheckMessage) => Promise<void>,
  ): void {
    const { clock, location, settleMs, logger } = this.deps;
    const timer = clock.setTimeout(
      () => {
        d.timers.delete(timer);
        d.chain = (d.chain ?? Promise.resolve())
          .then(async () => {
            if (!live()) return;
            const others = new Map(
              m.locations.filter((l) => l !== location).map((l) => [checkIdFor(m.id, slot, l), l]),
            );
            let found = await this.readSlot(m, others, slot);
            if (found.length < others.size && live()) {
              await sleepOn(clock, settleMs);
              found = await this.readSlot(m, others, slot);
            }
            if (!live()) return;
            const verdict = slotVerdict(m, [own, ...found]);
            if (verdict.missing.length > 0) {
              this.missing.inc(verdict.missing.length);
              logger.warn('checks of some locations missing from a slot', {
                monitor_id: m.id,
                locations: verdict.missing,
              });
            }
            await apply(verdict.check);
          })
          .catch((err: unknown) => {
            logger.error('slot decision failed', { monitor_id: m.id, err: String(err) });
          });
      },
      Math.max(0, decisionAt(m, slot, settleMs) - clock.now()),
    );
    d.timers.add(timer);
  }

  /** Drops the decisions not yet started (one running finishes, or sees `live` false). */
  clear(d: PendingDecisions): void {
    for (const t of d.timers) this.deps.clock.clearTimeout(t);
    d.timers.clear();
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
}
