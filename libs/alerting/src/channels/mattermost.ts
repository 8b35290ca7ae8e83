import { pendingChannel } from './pending.js';

export const mattermostChannel = pendingChannel('mattermost');
