export * from './keys.js';
export * from './migrations.js';
export * from './monitors.js';
export * from './provision.js';
export * from './retention.js';
