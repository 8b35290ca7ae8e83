import { pendingChannel } from './pending.js';

export const opsgenieChannel = pendingChannel('opsgenie');
