import { pendingChannel } from './pending.js';

export const slackChannel = pendingChannel('slack');
