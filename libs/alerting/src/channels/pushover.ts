import { pendingChannel } from './pending.js';

export const pushoverChannel = pendingChannel('pushover');
