import { pendingChannel } from './pending.js';

export const teamsChannel = pendingChannel('teams');
