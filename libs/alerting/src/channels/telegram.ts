import { pendingChannel } from './pending.js';

export const telegramChannel = pendingChannel('telegram');
