import { pendingChannel } from './pending.js';

export const pagerdutyChannel = pendingChannel('pagerduty');
