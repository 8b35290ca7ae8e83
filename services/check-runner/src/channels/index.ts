import type { AlertMessage, AnyChannelTarget, ChannelTarget, ChannelType, ConfigOf } from '@telemetry/contract';
import type { StoredMonitor } from '@telemetry/store';
import type { Channel } from './channel.js';
import { webhookChannel } from './webhook.js';

export type { Answer, Channel, ChannelContext, ChannelHttp, Notification, Verdict } from './channel.js';

/** One channel per type: a type of CHANNEL_TYPES without its channel here does not compile. */
export type ChannelRegistry = { readonly [T in ChannelType]: Channel<ConfigOf<T>> };

/** The alert channels (a new one: its module, and one line here). */
export const CHANNELS: ChannelRegistry = {
  webhook: webhookChannel,
};

/** The channel of a target, typed by the target's type (so its config fits). */
export function channelFor<T extends ChannelType>(
  channels: ChannelRegistry,
  target: ChannelTarget<T>,
): Channel<ConfigOf<T>> {
  return channels[target.type];
}

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
