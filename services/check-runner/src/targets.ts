import type { AlertMessage, AnyChannelTarget } from '@telemetry/contract';
import type { ChannelStore, EscalationPolicyStore, StoredMonitor } from '@telemetry/store';
import type { AlertingData, IncidentRows } from './notify.js';

/**
 * Where a monitor's alerts go: each of its `webhooks` URLs, a webhook signed with its
 * `webhook_secret`. The one place a monitor's settings become channel targets.
 */
export function targetsOf(m: Pick<StoredMonitor, 'webhooks' | 'webhook_secret'>): AnyChannelTarget[] {
  return m.webhooks.map((url) => ({ type: 'webhook', config: { url, secret: m.webhook_secret } }));
}

/** The runner's registry copy: a monitor it does not hold yet (created a moment ago) is loaded first. */
export interface MonitorCopy {
  get(id: string): StoredMonitor | undefined;
  reload(id: string): Promise<void>;
}

/** The monitor of `id` from the copy, loaded first when missing; undefined: deleted (or PostgreSQL away). */
async function monitorOf(monitors: MonitorCopy, id: string): Promise<StoredMonitor | undefined> {
  const m = monitors.get(id);
  if (m) return m;
  await monitors.reload(id).catch(() => undefined);
  return monitors.get(id);
}

/** The targets of an alert's monitor's own `webhooks`. None: a monitor deleted since. */
export function monitorTargets(monitors: MonitorCopy): (alert: AlertMessage) => Promise<AnyChannelTarget[]> {
  return async (alert) => {
    const m = await monitorOf(monitors, alert.monitor_id);
    return m ? targetsOf(m) : [];
  };
}

/** What alerting reads, from the registry copy (monitors) and PostgreSQL (channels, policies, incident rows). */
export function alertingData(d: {
  monitors: MonitorCopy;
  channels: Pick<ChannelStore, 'list'>;
  policies: Pick<EscalationPolicyStore, 'get'>;
  incidents: IncidentRows;
}): AlertingData {
  return {
    monitor: (id) => monitorOf(d.monitors, id),
    policy: async (tenantId, id) => (await d.policies.get(tenantId, id))?.steps,
    channels: (tenantId, ids) => (ids.length === 0 ? Promise.resolve([]) : d.channels.list(tenantId, ids)),
    incidents: d.incidents,
  };
}
