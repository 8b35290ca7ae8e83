import { pendingChannel } from './pending.js';

export const googleChatChannel = pendingChannel('google_chat');
