import { pendingChannel } from './pending.js';

export const ntfyChannel = pendingChannel('ntfy');
