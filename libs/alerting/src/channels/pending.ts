import { channelConfigProblems, type ChannelType, type ConfigOf } from '@telemetry/contract';
import type { Channel } from './channel.js';

/** TEMPORARY scaffold of a channel module not written yet: refuses every send. Deleted once each module exists. */
export function pendingChannel<T extends ChannelType>(type: T): Channel<ConfigOf<T>, null> {
  return {
    type,
    groups: false,
    paging: false,
    validate: (config, v) => channelConfigProblems(v, type, config),
    endpoint: () => type,
    shown: () => type,
    render: () => null,
    send: () => Promise.resolve({ statusCode: 0, error: 'network', detail: `${type} is not built yet` }),
    classify: () => 'give_up',
  };
}
