import type { Counter, Registry } from 'prom-client';
import { counter } from '@telemetry/platform';
import type { AckLinks } from '@telemetry/alerting';
import { Delivery, type DeliveryDeps } from './delivery.js';
import { Grouping } from './grouping.js';
import { Notifier } from './notify.js';

export interface ChannelAlertingDeps extends DeliveryDeps {
  registry: Registry;
  /** ALERT_GROUP_WAIT_MS, ALERT_GROUP_THRESHOLD. */
  groupWaitMs: number;
  groupThreshold: number;
  publicUrl: string;
  ackLinks: Pick<AckLinks, 'link'>;
}

/** What the dispatcher and the escalation clock share: one delivery (its queues), one grouping, one notifier. */
export interface ChannelAlerting {
  delivery: Delivery;
  grouping: Grouping;
  notifier: Notifier;
  /** runner_notifications_silenced_total. */
  silenced: Counter<'kind'>;
}

/** Builds the delivery path of channel notifications (the composition root's and the tests'). */
export function channelAlerting(deps: ChannelAlertingDeps): ChannelAlerting {
  const delivery = new Delivery(deps);
  const groupedMessages = counter(
    deps.registry,
    'runner_notifications_grouped_total',
    'Notifications that went as part of a grouped message',
  );
  const grouping = new Grouping({
    waitMs: deps.groupWaitMs,
    threshold: deps.groupThreshold,
    deliver: (job) => delivery.send(job),
    grouped: (n) => groupedMessages.inc(n),
  });
  const notifier = new Notifier({
    channels: deps.channels,
    deliver: (job) => delivery.send(job),
    group: (job) => grouping.add(job),
    publicUrl: deps.publicUrl,
    ackLinks: deps.ackLinks,
    now: deps.now ?? Date.now,
  });
  const silenced = counter(
    deps.registry,
    'runner_notifications_silenced_total',
    'Channel notifications not sent because the monitor is silenced (kind: down, up, acknowledged, clock)',
    ['kind'],
  );
  return { delivery, grouping, notifier, silenced };
}
