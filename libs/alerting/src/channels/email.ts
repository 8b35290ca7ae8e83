import { pendingChannel } from './pending.js';

export const emailChannel = pendingChannel('email');
