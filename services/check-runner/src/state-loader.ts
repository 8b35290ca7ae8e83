/**
 * Loading the alerting state of monitors newly taken over, shared by the scheduler (the
 * monitors it checks) and the slot decisions (the monitors it decides): after the settle
 * time (the previous owner's last alert must reach ClickHouse first, or it would be made
 * again), one load at a time, each loaded entry then armed.
 */
import { sleepOn, type Clock, type Logger } from '@telemetry/platform';
import { INITIAL_STATE, type AlertState } from './state.js';

export interface StateLoaderDeps<E extends { state?: AlertState }> {
  clock: Clock;
  settleMs: number;
  logger: Logger;
  /** The entries by monitor id; those without a state are loaded. */
  entries: Map<string, E>;
  /** Each monitor's last alert as a state (missing: none yet). */
  load: (ids: string[]) => Promise<Map<string, AlertState>>;
  stopping: () => boolean;
  /** An entry just given its state. */
  arm: (id: string, entry: E) => void;
  /** What the warning says when the load fails (the entries then start from unknown). */
  failure: string;
}

export class StateLoader<E extends { state?: AlertState }> {
  private loading: Promise<void> | undefined;
  private again = false;

  constructor(private readonly deps: StateLoaderDeps<E>) {}

  /** Loads the states of entries that have none (once the current load ends, if one runs). */
  request(): void {
    if (this.loading) {
      this.again = true;
      return;
    }
    if (![...this.deps.entries.values()].some((e) => !e.state)) return;
    this.loading = this.load().finally(() => {
      this.loading = undefined;
      if (this.again) {
        this.again = false;
        this.request();
      }
    });
  }

  private async load(): Promise<void> {
    const { entries } = this.deps;
    await sleepOn(this.deps.clock, this.deps.settleMs);
    const ids = [...entries].filter(([, e]) => !e.state).map(([id]) => id);
    if (ids.length === 0 || this.deps.stopping()) return;
    let states: Map<string, AlertState>;
    try {
      states = await this.deps.load(ids);
    } catch (err) {
      // Checking and deciding matter more than the state: start from unknown (a monitor
      // that was already down may then alert once more).
      this.deps.logger.warn(this.deps.failure, { err: String(err) });
      states = new Map();
    }
    for (const id of ids) {
      const e = entries.get(id);
      if (!e || e.state) continue;
      e.state = states.get(id) ?? INITIAL_STATE;
      this.deps.arm(id, e);
    }
  }
}
