import { pendingChannel } from './pending.js';

export const discordChannel = pendingChannel('discord');
