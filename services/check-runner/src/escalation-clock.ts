import type { Counter, Registry } from 'prom-client';
import { counter, PeriodicJob, type Logger } from '@telemetry/platform';
import type { IncidentAlertState, StoredChannel } from '@telemetry/store';
import { isSilenced, type AlertingData, type Notifier } from './notify.js';
import { channelsUpTo, planDue } from './steps.js';

export interface EscalationClockDeps {
  data: AlertingData;
  notifier: Pick<Notifier, 'notify'>;
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
  /** Rows being worked on (claimed, not yet finished). */
  private readonly working = new Set<Promise<void>>();

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
    await Promise.allSettled([...this.working]);
  }

  /** Works every due row once and resolves when all are finished (tests; the ticks do not wait). */
  async sweep(): Promise<void> {
    await Promise.allSettled(await this.startDue());
  }

  /** Claims the due rows (as many as there is room for) and starts working on each. */
  private async startDue(): Promise<Promise<void>[]> {
    const room = (this.deps.batch ?? 100) - this.working.size;
    if (room <= 0) return [];
    const now = this.now();
    const rows = await this.deps.data.incidents.claimDue(this.deps.owner, now, this.deps.leaseMs, room);
    return rows.map((row) => {
      const p = this.work(row, now).catch((err: unknown) => {
        this.ticks.inc({ outcome: 'failed' });
        // Its lease expires and a later tick (here or on another runner) sends again.
        this.deps.logger.warn('escalation row not finished', { incident_id: row.incident_id, err: String(err) });
      });
      this.working.add(p);
      void p.finally(() => this.working.delete(p));
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
    const sends: Promise<void>[] = [];
    if (plan.escalateTo !== undefined) {
      const step = row.steps[plan.escalateTo]!;
      this.deps.logger.info('incident escalated', { incident_id: row.incident_id, step: plan.escalateTo + 1 });
      sends.push(
        this.deps.notifier.notify(of(step.channels), {
          kind: 'escalation',
          alert: row.alert,
          step: plan.escalateTo + 1,
        }),
      );
    }
    for (const r of plan.reminders) {
      sends.push(this.deps.notifier.notify(of([r.channelId]), { kind: 'reminder', alert: row.alert, reminder: r.n }));
    }
    await Promise.all(sends);
    await this.finish(row, plan.progress);
  }

  private async finish(row: IncidentAlertState, p: Parameters<AlertingData['incidents']['finish']>[2]): Promise<void> {
    const kept = await this.deps.data.incidents.finish(row.incident_id, this.deps.owner, p);
    this.ticks.inc({ outcome: kept ? 'finished' : 'lease_lost' });
  }
}
