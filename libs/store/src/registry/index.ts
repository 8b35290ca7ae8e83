export * from './copy-from-clickhouse.js';
export * from './feed.js';
export * from './keys.js';
export * from './monitors.js';
export * from './pg.js';
export * from './schema.js';
export * from './status-pages.js';
export * from './tenants.js';
