import { createHash } from 'node:crypto';
import type { AlertMessage, NotificationKind, StateAlert } from '@telemetry/contract';
import type { AckLinks, ChannelRegistry, NotifiedAlert } from '@telemetry/alerting';
import type { IncidentAlertStore, PolicyStep, StoredChannel, StoredMonitor } from '@telemetry/store';
import type { Job } from './delivery.js';

/** What of a monitor alerting reads. */
export type AlertingMonitor = Pick<
  StoredMonitor,
  'id' | 'tenant_id' | 'channels' | 'escalation_policy' | 'silenced_until'
>;

/** The incident rows the runner keeps (IncidentAlertStore in production). */
export type IncidentRows = Pick<IncidentAlertStore, 'open' | 'get' | 'resolve' | 'claimDue' | 'renew' | 'finish'>;

/** Where the runner reads what alerting needs (the registry copy and PostgreSQL in production). */
export interface AlertingData {
  /** The monitor as the runner holds it (loaded first when it does not hold it yet); undefined: deleted. */
  monitor(id: string): Promise<AlertingMonitor | undefined>;
  /** The steps of a tenant's policy; undefined when it is gone. */
  policy(tenantId: string, id: string): Promise<readonly PolicyStep[] | undefined>;
  /** The tenant's channels of `ids` (deleted ones left out). */
  channels(tenantId: string, ids: readonly string[]): Promise<StoredChannel[]>;
  incidents: IncidentRows;
}

/** Is the monitor's alerting silenced at `now` (silenced_until in the future)? */
export function isSilenced(m: Pick<AlertingMonitor, 'silenced_until'>, now: number): boolean {
  return m.silenced_until !== null && m.silenced_until !== undefined && Date.parse(m.silenced_until) > now;
}

/**
 * A notification's id: stable per incident, kind, step or reminder number, and channel, so
 * a redelivery carries the same (email Message-ID, PagerDuty dedup per event, log lines).
 */
export function notificationId(incidentId: string, kind: NotificationKind, n: number, channelId: string): string {
  const h = createHash('sha256').update(`${incidentId}\n${kind}\n${n}\n${channelId}`).digest('hex');
  return `ntf_${h.slice(0, 32)}`;
}

/** One incident's notification before it is addressed to a channel. */
export interface Notice {
  kind: NotificationKind;
  /** The incident's down alert (or its up alert, for `up`). */
  alert: StateAlert;
  /** 1-based step (escalation) or reminder number (reminder). */
  step?: number;
  reminder?: number;
  acknowledgement?: AlertMessage;
  acknowledged_by?: string;
  /** For `up`: the down alert that opened the incident (its start and its cause). */
  opening?: StateAlert;
}

export interface NotifierDeps {
  channels: ChannelRegistry;
  /** Delivers one job (Delivery.send). */
  deliver: (job: Job) => Promise<void>;
  /** Holds a job for its channel's group (Grouping.add). */
  group: (job: Job) => Promise<void>;
  /** PUBLIC_URL: the base of console links. */
  publicUrl: string;
  ackLinks: Pick<AckLinks, 'link'>;
  now: () => number;
}

/** Kinds sent while the incident is open: their messages carry an acknowledge link. */
const OPEN_KINDS: ReadonlySet<NotificationKind> = new Set(['down', 'reminder', 'escalation']);

/**
 * Addresses an incident's notification to channel objects and hands each to delivery:
 * through grouping for channels that group, straight to their queue for the rest (paging
 * channels, webhooks). Resolves once every one is delivered or given up.
 */
export class Notifier {
  constructor(private readonly deps: NotifierDeps) {}

  /** Does `c` page (PagerDuty, Opsgenie: always resolved and acknowledged, never grouped)? */
  paging(c: StoredChannel): boolean {
    return this.deps.channels[c.target.type].paging;
  }

  async notify(to: readonly StoredChannel[], n: Notice): Promise<void> {
    await Promise.all(to.map((c) => this.send(c, n)));
  }

  /** The job of `n` to channel `c` (pure but for the clock of its acknowledge links). */
  job(c: StoredChannel, n: Notice): Job {
    const a = n.alert;
    const base = this.deps.publicUrl.replace(/\/+$/, '');
    const tenant = a.tenant_id ?? c.tenant_id;
    // Every attempt of the notification carries the same link (its expiry counts from now).
    const at = this.deps.now();
    const item: NotifiedAlert = {
      kind: n.kind,
      alert: a,
      // The console routes in the fragment (services/query-service/console/src/main.ts).
      monitorLink: `${base}/#/monitors/${encodeURIComponent(a.monitor_id)}`,
      ...(n.step === undefined ? {} : { step: n.step }),
      ...(n.reminder === undefined ? {} : { reminder: n.reminder }),
      ...(n.acknowledgement === undefined ? {} : { acknowledgement: n.acknowledgement }),
      ...(n.acknowledged_by === undefined ? {} : { acknowledged_by: n.acknowledged_by }),
      ...(n.opening === undefined ? {} : { opening: n.opening }),
      ...(OPEN_KINDS.has(n.kind)
        ? {
            ackLink: (recipient: string) =>
              this.deps.ackLinks.link({ tenant_id: tenant, incident_id: a.incident_id, recipient }, at),
          }
        : {}),
    };
    return {
      target: c.target,
      channelId: c.id,
      templates: c.templates,
      name: c.name,
      notification: {
        id: notificationId(a.incident_id, n.kind, n.step ?? n.reminder ?? 0, c.id),
        kind: n.kind,
        items: [item],
      },
    };
  }

  private send(c: StoredChannel, n: Notice): Promise<void> {
    const job = this.job(c, n);
    const channel = this.deps.channels[c.target.type];
    return channel.groups && !channel.paging ? this.deps.group(job) : this.deps.deliver(job);
  }
}
