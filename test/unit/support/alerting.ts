import { Registry } from 'prom-client';
import { createValidators, type AnyChannelTarget, type AlertMessage } from '@telemetry/contract';
import { AckLinks } from '@telemetry/alerting';
import type { GroupConsumerFactory } from '@telemetry/platform';
import type { IncidentAlertState, IncidentProgress, PolicyStep, StoredChannel } from '@telemetry/store';
import { AlertDispatcher } from '../../../services/check-runner/src/dispatcher.js';
import { channelAlerting, type ChannelAlerting } from '../../../services/check-runner/src/channel-alerting.js';
import type { DeliveryDeps } from '../../../services/check-runner/src/delivery.js';
import type { AlertingData, AlertingMonitor, IncidentRows } from '../../../services/check-runner/src/notify.js';
import { silentLogger } from './fakes.js';

/**
 * The incident rows of IncidentAlertStore, in memory, with the store's semantics: open once,
 * resolve, claim due rows (never acknowledged or resolved ones) under a lease, finish.
 */
export class FakeIncidentRows implements IncidentRows {
  readonly rows = new Map<string, IncidentAlertState & { lease_owner?: string | undefined; lease_until?: number }>();

  open(
    s: Pick<
      IncidentAlertState,
      'incident_id' | 'tenant_id' | 'monitor_id' | 'opened_at' | 'alert' | 'steps' | 'next_due_at'
    >,
  ): Promise<{ state: IncidentAlertState; created: boolean }> {
    const had = this.rows.get(s.incident_id);
    if (had) return Promise.resolve({ state: structuredClone(had), created: false });
    const row: IncidentAlertState = {
      ...s,
      step: 0,
      step_at: s.opened_at,
      reminders: {},
      acknowledged_at: null,
      acknowledged_by: null,
      resolved_at: null,
    };
    this.rows.set(s.incident_id, row);
    return Promise.resolve({ state: structuredClone(row), created: true });
  }

  get(id: string): Promise<IncidentAlertState | undefined> {
    const r = this.rows.get(id);
    return Promise.resolve(r && structuredClone(r));
  }

  resolve(id: string, at: number): Promise<IncidentAlertState | undefined> {
    const r = this.rows.get(id);
    if (r) Object.assign(r, { resolved_at: r.resolved_at ?? at, next_due_at: null });
    return Promise.resolve(r && structuredClone(r));
  }

  /** What the query service does on POST /api/incidents/{id}/acknowledge. */
  acknowledge(id: string, by: string, at: number): void {
    Object.assign(this.rows.get(id)!, { acknowledged_at: at, acknowledged_by: by });
  }

  claimDue(
    owner: string,
    now: number,
    leaseMs: number,
    limit: number,
    working: readonly string[] = [],
  ): Promise<IncidentAlertState[]> {
    const due = [...this.rows.values()]
      .filter(
        (r) =>
          !working.includes(r.incident_id) &&
          r.resolved_at === null &&
          r.acknowledged_at === null &&
          r.next_due_at !== null &&
          r.next_due_at <= now &&
          (r.lease_until === undefined || r.lease_until < now),
      )
      .slice(0, limit);
    for (const r of due) Object.assign(r, { lease_owner: owner, lease_until: now + leaseMs });
    return Promise.resolve(due.map((r) => structuredClone(r)));
  }

  renew(owner: string, ids: readonly string[], now: number, leaseMs: number): Promise<void> {
    for (const id of ids) {
      const r = this.rows.get(id);
      if (r && r.lease_owner === owner) r.lease_until = now + leaseMs;
    }
    return Promise.resolve();
  }

  finish(id: string, owner: string, p: IncidentProgress): Promise<boolean> {
    const r = this.rows.get(id);
    if (!r || r.lease_owner !== owner) return Promise.resolve(false);
    Object.assign(r, p, {
      next_due_at: r.resolved_at === null ? p.next_due_at : null,
      lease_owner: undefined,
      lease_until: undefined,
    });
    return Promise.resolve(true);
  }
}

/** Monitors, policies and channels of one tenant, in memory. */
export class FakeAlertingData implements AlertingData {
  readonly monitors = new Map<string, AlertingMonitor>();
  readonly policies = new Map<string, PolicyStep[]>();
  readonly channelsById = new Map<string, StoredChannel>();
  readonly incidents = new FakeIncidentRows();

  monitor(id: string): Promise<AlertingMonitor | undefined> {
    return Promise.resolve(this.monitors.get(id));
  }
  policy(_tenant: string, id: string): Promise<PolicyStep[] | undefined> {
    return Promise.resolve(this.policies.get(id));
  }
  channels(_tenant: string, ids: readonly string[]): Promise<StoredChannel[]> {
    return Promise.resolve(ids.flatMap((id) => (this.channelsById.has(id) ? [this.channelsById.get(id)!] : [])));
  }

  /** Adds a channel object with the defaults and `over`. */
  channel(id: string, target: AnyChannelTarget, over: Partial<StoredChannel> = {}): StoredChannel {
    const c: StoredChannel = {
      id,
      tenant_id: 'ten_a',
      key: null,
      name: id,
      target,
      send_resolved: true,
      remind_every_seconds: 0,
      remind_max: 3,
      templates: {},
      version: 1,
      created_at: '2026-11-22T00:00:00Z',
      updated_at: '2026-11-22T00:00:00Z',
      ...over,
    };
    this.channelsById.set(id, c);
    return c;
  }
}

export const testAckLinks = new AckLinks(
  [{ id: 'k1', key: Buffer.alloc(32, 7) }],
  'https://console.example.test',
  3600,
);

export interface TestDispatcherOptions extends Omit<DeliveryDeps, 'logger' | 'registry'> {
  consumers: GroupConsumerFactory;
  topic: string;
  groupId: string;
  maxPending: number;
  targets: (alert: AlertMessage) => Promise<readonly AnyChannelTarget[]>;
  data?: AlertingData;
  registry?: Registry;
  groupWaitMs?: number;
  groupThreshold?: number;
  minDelaySeconds?: number;
}

/** A dispatcher wired as the composition root wires it, over fakes of our own interfaces. */
export function buildDispatcher(o: TestDispatcherOptions): AlertDispatcher {
  return buildAlerting(o).dispatcher;
}

/** The dispatcher and what it shares with the escalation clock. */
export function buildAlerting(o: TestDispatcherOptions): { dispatcher: AlertDispatcher; alerting: ChannelAlerting } {
  const registry = o.registry ?? new Registry();
  const alerting = channelAlerting({
    ...o,
    logger: silentLogger,
    registry,
    groupWaitMs: o.groupWaitMs ?? 20,
    groupThreshold: o.groupThreshold ?? 3,
    publicUrl: 'https://console.example.test',
    ackLinks: testAckLinks,
  });
  const dispatcher = new AlertDispatcher({
    consumers: o.consumers,
    logger: silentLogger,
    registry,
    validators: createValidators(),
    topic: o.topic,
    groupId: o.groupId,
    targets: o.targets,
    data: o.data ?? new FakeAlertingData(),
    delivery: alerting.delivery,
    notifier: alerting.notifier,
    minDelaySeconds: o.minDelaySeconds ?? 1,
    silenced: alerting.silenced,
    maxPending: o.maxPending,
    ...(o.now === undefined ? {} : { now: o.now }),
  });
  return { dispatcher, alerting };
}
