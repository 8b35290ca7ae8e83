import type { Counter, Registry } from 'prom-client';
import { counter, PeriodicJob, type Logger } from '@telemetry/platform';
import type { StateAlert } from '@telemetry/contract';
import type { IncidentAlertState, StoredChannel } from '@telemetry/store';
import { isSilenced, type AlertingData, type Notifier } from './notify.js';
import { channelsUpTo, planDue } from './steps.js';

export interface EscalationClockDeps {
  data: AlertingData;
  notifier: Pick<Notifier, 'notify' | 'paging'>;
  logger: Logger;
  registry: Registry;
  /** Names this runner's leases. */
  owner: string;
  /** How often due rows are looked for (ESCALATION_TICK_MS). */
  tickMs: number;
  /** How long a claimed row is this runner's: longer than the longest delivery (with its group's wait). */
  leaseMs: number;
  /** ALERT_MIN_DELAY_SECONDS: shorter delays of old rows are raised to it. */
  minDelaySeconds: number;
  /** Rows worked on at once (100). */
  batch?: number;
  /** Counted when a silenced monitor's notification is not sent. */
  silenced: Counter<'kind'>;
  /** Cuts deliveries' retry waits short (Delivery.stop), so that stopping does not wait for them. */
  stopDeliveries: () => void;
  now?: () => number;
}

/**
 * The escalation clock (docs/alerting.md, "Escalation" and "Reminders"): every
 * ESCALATION_TICK_MS it claims the incident rows with something due (under a lease, so two
 * runners never send the same step; acknowledged and resolved rows are never claimed), sends
 * what is due (the next step when nobody acknowledged within its delay, each channel's
 * reminder up to its remind_max) through the same grouping, queues, retries and records as
 * the dispatcher, and writes the row's progress back once every send is delivered or given
 * up. A runner that dies mid-way leaves its lease to expire, and another sends again (the
 * notification ids are the same).
 */
export class EscalationClock extends PeriodicJob {
  private readonly now: () => number;
  private readonly ticks: Counter<'outcome'>;
  /** Rows being worked on (claimed, not yet finished), by incident id. */
  private readonly working = new Map<string, Promise<void>>();

  constructor(private readonly deps: EscalationClockDeps) {
    // Each tick only claims and starts: a row waiting on a slow provider never holds another's.
    super('escalation-clock', deps.tickMs, () => this.startDue(), deps.logger);
    this.now = deps.now ?? Date.now;
    this.ticks = counter(
      deps.registry,
      'runner_escalation_rows_total',
      'Due incident rows worked by the escalation clock',
      ['outcome'],
    );
  }

  override async stop(): Promise<void> {
    // A row cut short is not finished: its lease expires and another runner sends again.
    this.deps.stopDeliveries();
    await super.stop();
    await Promise.allSettled([...this.working.values()]);
  }

  /** Works every due row once and resolves when all are finished (tests; the ticks do not wait). */
  async sweep(): Promise<void> {
    await Promise.allSettled(await this.startDue());
  }

  /**
   * Renews the leases of the rows still being sent for (a provider's Retry-After or a slow
   * queue may outlast one lease: no other runner may take the row meanwhile), then claims
   * the due rows (as many as there is room for, never one of its own in work) and starts
   * working on each.
   */
  private async startDue(): Promise<Promise<void>[]> {
    const { incidents } = this.deps.data;
    const now = this.now();
    const inWork = [...this.working.keys()];
    await incidents.renew(this.deps.owner, inWork, now, this.deps.leaseMs);
    const room = (this.deps.batch ?? 100) - this.working.size;
    if (room <= 0) return [];
    const rows = await incidents.claimDue(this.deps.owner, now, this.deps.leaseMs, room, inWork);
    return rows.map((row) => {
      const p = this.work(row, now).catch((err: unknown) => {
        this.ticks.inc({ outcome: 'failed' });
        // Its lease expires and a later tick (here or on another runner) sends again.
        this.deps.logger.warn('escalation row not finished', { incident_id: row.incident_id, err: String(err) });
      });
      this.working.set(row.incident_id, p);
      void p.finally(() => this.working.delete(row.incident_id));
      return p;
    });
  }

  private async work(row: IncidentAlertState, now: number): Promise<void> {
    const { data, minDelaySeconds: min } = this.deps;
    const monitor = await data.monitor(row.monitor_id);
    const progress = { step: row.step, step_at: row.step_at, reminders: row.reminders };
    if (!monitor) {
      // Deleted: nothing more is due.
      await this.finish(row, { ...progress, next_due_at: null });
      return;
    }
    if (isSilenced(monitor, now)) {
      // Nothing goes out while silenced; what fell due is sent when the silence ends.
      this.deps.silenced.inc({ kind: 'clock' });
      this.deps.logger.info('notifications silenced', { monitor_id: monitor.id, incident_id: row.incident_id });
      await this.finish(row, { ...progress, next_due_at: Date.parse(monitor.silenced_until!) });
      return;
    }
    const ids = channelsUpTo(row.steps, row.step + 1);
    const channels = new Map<string, StoredChannel>(
      (await data.channels(row.tenant_id, ids)).map((c) => [c.id, c] as const),
    );
    const plan = planDue(row, channels, now, min);
    const of = (list: readonly string[]): StoredChannel[] =>
      list.flatMap((id) => (channels.has(id) ? [channels.get(id)!] : []));
    // Acknowledged or resolved since it was claimed: nothing more goes out.
    if (await this.settled(row)) {
      await this.finish(row, { ...progress, next_due_at: null });
      return;
    }
    const sends: Promise<void>[] = [];
    const escalated = plan.escalateTo === undefined ? [] : of(row.steps[plan.escalateTo]!.channels);
    if (plan.escalateTo !== undefined) {
      this.deps.logger.info('incident escalated', { incident_id: row.incident_id, step: plan.escalateTo + 1 });
      sends.push(
        this.deps.notifier.notify(escalated, { kind: 'escalation', alert: row.alert, step: plan.escalateTo + 1 }),
      );
    }
    for (const r of plan.reminders) {
      sends.push(this.deps.notifier.notify(of([r.channelId]), { kind: 'reminder', alert: row.alert, reminder: r.n }));
    }
    await Promise.all(sends);
    await this.finish(row, plan.progress);
    await this.passOn(row, escalated);
  }

  /** Has the row been acknowledged or resolved since it was claimed? */
  private async settled(row: IncidentAlertState): Promise<boolean> {
    const now = await this.deps.data.incidents.get(row.incident_id);
    return !now || now.acknowledged_at !== null || now.resolved_at !== null;
  }

  /**
   * An acknowledgement or a resolve that came while a step was being notified reached only
   * the steps before it: the paging services of the new step are told now, or their
   * incident would stay open there.
   */
  private async passOn(row: IncidentAlertState, escalated: readonly StoredChannel[]): Promise<void> {
    const paging = escalated.filter((c) => this.deps.notifier.paging(c));
    if (paging.length === 0) return;
    const now = await this.deps.data.incidents.get(row.incident_id);
    if (!now) return;
    if (now.resolved_at !== null) {
      await this.deps.notifier.notify(paging, {
        kind: 'up',
        alert: resolvedAlert(row.alert, now.resolved_at),
        opening: row.alert,
      });
    } else if (now.acknowledged_at !== null) {
      await this.deps.notifier.notify(paging, {
        kind: 'acknowledged',
        alert: row.alert,
        ...(now.acknowledged_by === null ? {} : { acknowledged_by: now.acknowledged_by }),
      });
    }
  }

  private async finish(row: IncidentAlertState, p: Parameters<AlertingData['incidents']['finish']>[2]): Promise<void> {
    const kept = await this.deps.data.incidents.finish(row.incident_id, this.deps.owner, p);
    this.ticks.inc({ outcome: kept ? 'finished' : 'lease_lost' });
  }
}

/** The up of an incident resolved at `at` (ms), for a paging service that must close it: its down alert, as an up. */
function resolvedAlert(down: StateAlert, at: number): StateAlert {
  return { ...down, type: 'monitor.up', created_at: new Date(at).toISOString() };
}
