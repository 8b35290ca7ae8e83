import type { AlertMessage, AnyChannelTarget } from '@telemetry/contract';
import type { StoredMonitor } from '@telemetry/store';

/**
 * Where a monitor's alerts go: each of its `webhooks` URLs, a webhook signed with its
 * `webhook_secret`. The one place a monitor's settings become channel targets.
 */
export function targetsOf(m: Pick<StoredMonitor, 'webhooks' | 'webhook_secret'>): AnyChannelTarget[] {
  return m.webhooks.map((url) => ({ type: 'webhook', config: { url, secret: m.webhook_secret } }));
}

/**
 * The targets of an alert's monitor, from the runner's registry copy; a monitor it does
 * not hold yet (created a moment ago) is loaded first. None: a monitor deleted since.
 */
export function monitorTargets(monitors: {
  get(id: string): StoredMonitor | undefined;
  reload(id: string): Promise<void>;
}): (alert: AlertMessage) => Promise<AnyChannelTarget[]> {
  return async (alert) => {
    let m = monitors.get(alert.monitor_id);
    if (!m) {
      await monitors.reload(alert.monitor_id).catch(() => undefined);
      m = monitors.get(alert.monitor_id);
    }
    return m ? targetsOf(m) : [];
  };
}
