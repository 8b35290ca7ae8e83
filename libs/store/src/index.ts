export * from './alerts.js';
export * from './checks.js';
export * from './events.js';
export * from './keys.js';
export * from './migrations.js';
export * from './monitors.js';
export * from './provision.js';
export * from './retention.js';
export type { Decoded } from './rows.js';
